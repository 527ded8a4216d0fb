"""Who each collector runs as (docs/safety.md, "Least privilege"): root only with `needs_root` in its collector.yml, as
docs/safety.md's table says, else role collectors' collect user; and the sampler tests/integration/test_bench.py reads
the bench's collector processes with (tests/integration/collector_processes.py), on processes and files made here."""
import importlib.util
import os
import pwd
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

from spillway import REPO

sys.path.insert(0, str(REPO / "tests/integration"))  # its sibling periodic_sampler.py
_spec = importlib.util.spec_from_file_location("collector_processes", REPO / "tests/integration/collector_processes.py")
collector_processes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = collector_processes   # its dataclass looks its module up there
_spec.loader.exec_module(collector_processes)

COMMON_DEFAULTS = yaml.safe_load((REPO / "playbooks/roles/common/defaults/main/main.yml").read_text())
COLLECT_USER = COMMON_DEFAULTS["spillway_service_users"]["collect"]


def safety_table_rows():
    """runs-as text -> the collectors docs/safety.md's least-privilege table lists in its `collectors ...` row."""
    rows = {}
    for line in (REPO / "docs/safety.md").read_text().splitlines():
        found = re.match(r"\| collectors ([a-z, -]+) \| ([^|]+) \|", line)
        if found:
            rows[found.group(2).strip()] = {name.strip() for name in found.group(1).split(",")}
    return rows


def test_every_collectors_needs_root_is_as_docs_safety_md_says():
    declared = collector_processes.declared_users(COLLECT_USER)
    rows = safety_table_rows()
    as_root = next(names for runs_as, names in rows.items() if runs_as.startswith("root, declared"))
    unprivileged = next(names for runs_as, names in rows.items() if runs_as.startswith(f"`{COLLECT_USER}`"))
    assert {"iostat", "blocktrace", "pfs-client"} <= set(declared) and len(rows) == 2, (declared, rows)
    assert as_root == {name for name, user in declared.items() if user == "root"}
    assert unprivileged == {name for name, user in declared.items() if user == COLLECT_USER}


def test_role_collectors_gives_its_module_the_collect_user():
    tasks = yaml.safe_load((REPO / "playbooks/roles/collectors/tasks/run-action.yml").read_text())
    [task] = [t for t in tasks if "spillway_collectors" in t]
    assert task["spillway_collectors"]["user"] == "{{ spillway_service_users.collect }}"
    assert task["spillway_collectors"]["collectors"] == "{{ collectors_here }}"   # the manifests, needs_root and all


def test_a_collector_program_is_told_by_its_command_line_and_setpriv_is_not_one():
    program = "/var/lib/spillway/local/collectors/eventlog/start"
    assert collector_processes.collector_program(["/usr/bin/python3", program]) == ("eventlog", "start")
    assert collector_processes.collector_program([program.replace("start", "stop")]) == ("eventlog", "stop")
    assert collector_processes.collector_program(["/usr/bin/env", "python3", program]) == ("eventlog", "start")
    assert collector_processes.collector_program(["setpriv", "--reuid=spillway-collect", "--", program]) is None
    assert collector_processes.collector_program(["vim", program + ".orig"]) is None
    assert collector_processes.collector_program([]) is None
    # below the cluster's root only: another checkout's or a test's toy collector is not the cluster's
    root = Path(program).parents[2]
    assert collector_processes.collector_program([program], [root]) == ("eventlog", "start")
    assert collector_processes.collector_program(["/tmp/tree/collectors/toy-clock/start"], [root]) is None


def test_status_gives_the_four_users_and_no_new_privs():
    status = "Name:\tpython3\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNoNewPrivs:\t1\n"
    assert collector_processes.status_of(status) == (("root",) * 4, True)
    assert collector_processes.status_of(status.replace("NoNewPrivs:\t1\n", "")) == (("root",) * 4, False)
    assert collector_processes.status_of("Uid:\t0\t4000000\t0\t0\n")[0][1] == "4000000"   # an id with no name


def test_the_sampler_sees_a_program_and_a_background_process_with_their_users(tmp_path):
    """A collector `fake` under a root of tmp_path: its start program (a sleeping script) and the background process
    its pid file names, each seen with this process's users; a process of no collector is not."""
    start = tmp_path / "root/collectors/fake/start"
    start.parent.mkdir(parents=True)
    start.write_text("#!/bin/sh\nsleep 30\n")
    start.chmod(0o755)
    pid_file = tmp_path / "root/runs/r1/fake/w1/.pid"
    pid_file.parent.mkdir(parents=True)
    processes = [subprocess.Popen([str(start)]), subprocess.Popen(["sleep", "30"]), subprocess.Popen(["sleep", "31"])]
    # the pid file written once the background process runs `sleep` (between fork and exec, under load, its command
    # line is still empty: make test of 2026-11-29 sampled it so)
    exec_deadline = time.monotonic() + 10
    while not Path(f"/proc/{processes[1].pid}/cmdline").read_bytes().startswith(b"sleep") and \
            time.monotonic() < exec_deadline:
        time.sleep(0.01)
    pid_file.write_text(f"{processes[1].pid} 12345\n")
    try:
        sampler = collector_processes.CollectorSampler([tmp_path / "root"])
        deadline = time.monotonic() + 10
        while len(sampler.seen) < 2 and time.monotonic() < deadline:
            sampler.sample(time.monotonic())
            time.sleep(0.05)
    finally:
        for process in processes:
            process.kill()
            process.wait()
    me = pwd.getpwuid(os.getuid()).pw_name
    seen = {(p.collector, p.what): p for p in sampler.seen.values()}
    assert set(seen) == {("fake", "start"), ("fake", "background")}, sampler.seen
    assert all(p.users == (me,) * 4 for p in seen.values()) and seen["fake", "background"].command == "sleep 30"
