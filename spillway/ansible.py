"""Run one of the project's playbooks against a cluster inventory and summarise the outcome."""
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from run_layout import writing
from spillway import PLAYBOOKS, REPO

RECAP = re.compile(r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
                   r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)")
FAILURE_START = re.compile(r"^(fatal|failed): \[(?P<host>[^\]]+)\]")
UNREACHABLE = re.compile(r"^fatal: \[(?P<host>[^\]]+)\]: UNREACHABLE!")
CHANGED = re.compile(r"^changed: \[(?P<host>[^\]]+)\]")
TASK_START = re.compile(r"^TASK \[")
PLAY_START = re.compile(r"^PLAY \[(?P<name>.*)\] \**$")
# the spillway_timing callback's line (playbooks/callback_plugins/spillway_timing.py)
TIMING = re.compile(r"^timing:\s+[\d.]+ s  ")
# Seconds an interrupted ansible-playbook gets to stop its tasks before its process group is killed.
STOP_GRACE_S = 30


@dataclass
class PlaybookResult:
    returncode: int
    log_path: Path
    changed: int = 0
    failures: list = field(default_factory=list)   # one readable excerpt per failed task
    unreachable: list = field(default_factory=list)  # hosts that SSH lost during the play

    @property
    def ok(self):
        return self.returncode == 0


def _failures(lines):
    """Excerpts of the failed tasks: the TASK line, the fatal line and the indented details below."""
    excerpts, task = [], ""
    for i, line in enumerate(lines):
        if line.startswith("TASK ["):
            task = line.strip(" *")
        if FAILURE_START.match(line) and "...ignoring" not in "".join(lines[i + 1:i + 30]):
            block = [task, line.rstrip()]
            for follow in lines[i + 1:i + 40]:
                if follow and not follow.startswith(" "):
                    break
                block.append(follow.rstrip())
            excerpts.append("\n".join(block))
    return excerpts


def _command_and_env(inventory, playbook, extra_vars, vars_file, check=False):
    """The ansible-playbook command line and environment for a playbook run, its extra vars written to vars_file."""
    writing.write_text(vars_file, json.dumps(extra_vars, indent=2, default=str))
    command = [str(Path(sys.executable).parent / "ansible-playbook"),
               "-i", str(REPO / "inventories" / inventory),
               str(PLAYBOOKS / playbook), "-e", f"@{vars_file}"]
    if check:
        command.append("--check")
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", "PYTHONUNBUFFERED": "1"}
    return command, env


def _start(command, env, stdout):
    # Its own process group: a stop signal sent to the bench alone (or to the bench's group, which no longer
    # holds it) reaches Ansible only as the Ctrl-C the bench forwards, so every stop ends Ansible the same way.
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=stdout, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def run_playbook(inventory, playbook, extra_vars, log_path, check=False):
    """ansible-playbook -i inventories/<inventory> playbooks/<playbook> with extra vars; output to log_path."""
    log_path = Path(log_path)
    writing.directory(log_path.parent)
    command, env = _command_and_env(inventory, playbook, extra_vars, log_path.with_suffix(".vars.json"), check)
    with writing.appending(log_path) as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        proc = _start(command, env, log)
        try:
            returncode = proc.wait()
        except BaseException:
            stop_process_group(proc)
            raise
    return summarise(log_path.read_text(errors="replace").splitlines(), returncode, log_path)


@dataclass
class PartEvent:
    """A part of a playbook run in parts (run_playbook_in_parts): its start (`result` None), or its end."""
    part: str
    result: PlaybookResult | None = None


def run_playbook_in_parts(inventory, playbook, extra_vars, parts, part_of_play, log_path_of):
    """One ansible-playbook run whose plays make up `parts` (names, in the order the plays run; `part_of_play(play
    name)` gives a play's part, or None for a play that belongs to the part before it). Each part's output goes to a
    log of its own, `log_path_of(part)`, as if it had been a playbook run of its own, and a PartEvent is yielded as
    each part starts and as it ends, while the run goes on. The first part starts with the run; its log holds the
    command line, and its extra vars are beside it. A part that failed on a host ends the parts: the run's later
    output stays in that part's log (the plays after it end themselves, see workload-step.yml). Ctrl-C
    (KeyboardInterrupt) stops the run as run_playbook does and goes on, the open part's log holding what was
    written."""
    first = Path(log_path_of(parts[0]))
    writing.directory(first.parent)
    command, env = _command_and_env(inventory, playbook, extra_vars, first.with_suffix(".vars.json"))
    part, lines, log = parts[0], [], writing.appending(first)

    def write(line):
        log.write(line + "\n")
        log.flush()
        lines.append(line)

    write(f"$ {' '.join(command)}")
    proc, ended = None, False
    coming, held = None, []  # a later part whose play began, and its lines until it starts

    def switch():
        """The part whose play began starts (and the one before ends), unless the one before failed."""
        nonlocal part, lines, log, ended, coming, held
        result = summarise_part(lines, 0, log_path_of(part))
        if result.ok:
            yield PartEvent(part, result)
            log.close()
            part, lines, log = coming, [], writing.appending(log_path_of(coming))
            yield PartEvent(part)
        else:
            ended = True
        for line in held:
            write(line)
        coming, held = None, []

    try:
        proc = _start(command, env, subprocess.PIPE)
        yield PartEvent(part)
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            play = PLAY_START.match(line)
            if coming is None:
                if play and not ended and part_of_play(play["name"]) in parts[parts.index(part) + 1:]:
                    coming, held = part_of_play(play["name"]), [line]
                else:
                    write(line)
            elif TIMING.match(line):
                # The timing callback times a task once the next one's header is out: the first timing line in a
                # part's play is of the last task of the part before.
                write(line)
                yield from switch()
            elif TASK_START.match(line) and any(TASK_START.match(earlier) for earlier in held):
                yield from switch()  # a second task began and no timing line was due
                write(line)
            else:
                held.append(line)
        returncode = proc.wait()
        if coming is not None:
            yield from switch()
    except BaseException:
        if proc is not None:
            stop_process_group(proc)
        raise
    finally:
        log.close()
    yield PartEvent(part, summarise_part(lines, returncode, log_path_of(part)))


def stop_process_group(proc, grace_s=STOP_GRACE_S):
    """Ctrl-C to the process group `proc` leads, as a terminal would send it; SIGKILL to the group if it has not
    ended within `grace_s`. Then SIGTERM to what it had started in process groups of their own and is still running
    (Ansible's workers, each in a session of its own; a command under timeout(1)). A workload command that starts
    after this snapshot, or runs on another host, is ended by its run's record (playbooks/workload-end.yml)."""
    started = descendants(proc.pid)
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    own = os.getpgrp()
    for pid in started:
        try:
            group = os.getpgid(pid)
            if group not in (own, proc.pid):
                os.killpg(group, signal.SIGTERM)
        except ProcessLookupError:
            continue


def descendants(pid):
    """The processes below `pid` now, from /proc (children before grandchildren)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            found.append(child)
            todo.append(child)
    return found


def summarise(lines, returncode, log_path):
    """The outcome of a playbook from its output's lines: failed tasks, changes and unreachable hosts."""
    result = PlaybookResult(returncode=returncode, log_path=log_path, failures=_failures(lines))
    for line in lines:
        match = RECAP.match(line)
        if match:
            result.changed += int(match["changed"])
            if int(match["unreachable"]):
                result.unreachable.append(match["host"])
    return result


def summarise_part(lines, returncode, log_path):
    """summarise() for a part of a playbook run (run_playbook_in_parts), which has no recap of its own: changes
    counted as the recap counts them (a task that changed a host once, whatever its loop items), unreachable hosts
    from their task results. Failed when a task failed in it, or when it is the run's last part and the run did."""
    result = PlaybookResult(returncode=returncode, log_path=Path(log_path), failures=_failures(lines))
    task, changed = 0, set()
    for line in lines:
        if TASK_START.match(line):
            task += 1
        elif match := CHANGED.match(line):
            changed.add((task, match["host"]))
        elif (match := UNREACHABLE.match(line)) and match["host"] not in result.unreachable:
            result.unreachable.append(match["host"])
    result.changed = len(changed)
    if result.returncode == 0 and (result.failures or result.unreachable):
        result.returncode = 2  # ansible-playbook's code for failed hosts, which the run will end with
    return result


def first_message(failures):
    """The `msg:` of the first failed task, joined when Ansible's YAML output wraps it over lines."""
    for block in failures:
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith("msg:"):
                depth = len(line) - len(line.lstrip())
                parts = [line.strip()[4:].strip().lstrip("|>-").strip()]
                for follow in lines[i + 1:]:
                    if len(follow) - len(follow.lstrip()) <= depth:
                        break
                    parts.append(follow.strip())
                return " ".join(p for p in parts if p)
    return "see the log"


# Causes that a failed task's output shows and a user can fix without reading the log: (pattern, what it means).
KNOWN_CAUSES = [
    (re.compile(r"No space left on device|ENOSPC|DiskOutOfSpaceException"), "a disk is full (No space left on device)"),
]


def known_causes(failures):
    """'<what it means> on <hosts>' for each known cause in the failed tasks' output."""
    found = {}
    for block in failures:
        hosts = [m["host"] for m in map(FAILURE_START.match, block.splitlines()) if m]
        for pattern, meaning in KNOWN_CAUSES:
            if pattern.search(block):
                found.setdefault(meaning, []).extend(h for h in hosts if h not in found.get(meaning, []))
    return [f"{meaning} on {', '.join(hosts) or 'a host'}" for meaning, hosts in found.items()]
