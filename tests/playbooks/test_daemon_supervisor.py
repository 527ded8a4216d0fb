"""Role hadoop's spillway-daemon, the supervisor of every long-lived process of a cluster: a start reports
"started" for a process that comes up, even when its command line only matches again after a chain of execs, and
"failed" for one that dies while settling. Real processes, a private SPILLWAY_ROOT per test."""
import os
import signal
import subprocess
import textwrap
import time

from spillway import PLAYBOOKS

SUPERVISOR = PLAYBOOKS / "roles/hadoop/files/spillway-daemon"


def supervise(root, *args, **run):
    return subprocess.run([str(SUPERVISOR), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SPILLWAY_ROOT": str(root)}, **run)


def script(path, body):
    path.write_text("#!/bin/bash\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def test_a_daemon_whose_match_lapses_during_an_exec_chain_is_started_not_called_dead(tmp_path):
    # The shape of `setsid -> env -> python3 <script>` slowed down: the command line names the script, then for
    # 0.6 s a process that does not (an exec in between; the kernel's image swap does the same for an instant),
    # then the script again. One look after --settle fell into such a gap and failed a running page cache dropper
    # (bench 20261127-132026-local).
    daemon = script(tmp_path / "re-exec-daemon", """\
        if [ "${1:-}" = final ]; then sleep 30; exit; fi
        sleep 0.2
        SELF="$0" exec bash -c 'sleep 0.6; exec "$SELF" final'
        """)
    started = supervise(tmp_path, "start", "d", "--settle", "0.4", "--match", str(daemon), "--", str(daemon))
    try:
        assert started.returncode == 0, started.stdout
        assert started.stdout.startswith("started d pid ")
        assert supervise(tmp_path, "status", "d").stdout.startswith("running d pid ")
    finally:
        supervise(tmp_path, "stop", "d", "--timeout", "5")


def test_a_daemon_that_dies_while_settling_fails_the_start_with_its_log(tmp_path):
    daemon = script(tmp_path / "short-lived-daemon", """\
        echo "port 8042 in use"
        sleep 0.3
        exit 1
        """)
    started = supervise(tmp_path, "start", "d", "--settle", "1", "--match", str(daemon), "--", str(daemon))
    assert started.returncode == 1
    assert started.stdout.startswith("failed d:")
    assert "port 8042 in use" in started.stdout
    assert supervise(tmp_path, "status", "d").returncode == 3


def test_a_daemon_gets_every_signal_unblocked_at_its_default_whatever_its_starter_had(tmp_path):
    # A task over Mitogen (provision.yml) may run the supervisor with every signal blocked, and a shell's background
    # job ignores SIGINT: a daemon that inherited either would not end on its stop's SIGTERM or on a Ctrl-C sent to it.
    status = tmp_path / "status"
    daemon = tmp_path / "signal-daemon"
    daemon.write_text(textwrap.dedent(f"""\
        #!/usr/bin/env python3
        import signal, time
        with open({str(status)!r}, "w") as out:
            print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), file=out)
            print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
                  file=out)
        time.sleep(30)
        """))
    daemon.chmod(0o755)

    def blocked_and_ignoring():
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    started = supervise(tmp_path, "start", "d", "--settle", "0.3", "--match", str(daemon), "--", str(daemon),
                        preexec_fn=blocked_and_ignoring)
    try:
        assert started.returncode == 0, started.stdout
        deadline = time.monotonic() + 20
        while len(status.read_text().splitlines() if status.exists() else []) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        blocked, flags = status.read_text().splitlines()
        assert blocked == "[]"                   # no signal blocked
        assert flags == "False True"             # Ctrl-C not ignored, SIGTERM at its default: the process ends
        stopped = supervise(tmp_path, "stop", "d", "--timeout", "5")
        assert stopped.stdout.startswith("stopped d"), stopped.stdout
    finally:
        supervise(tmp_path, "stop", "d", "--timeout", "5")
