"""Role collectors' module (playbooks/roles/collectors/library/spillway_collectors.py), run as Ansible runs a module
(its arguments in a file), on collectors that are test scripts of the collector contract (docs/collectors.md): the
collectors of a host run all at once, each with its own time and its own problems."""
import grp
import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from spillway import PLAYBOOKS

MODULE = PLAYBOOKS / "roles/collectors/library/spillway_collectors.py"
# Each waits for the other's mark before it writes its own output: run one after the other, the first would wait
# for the second until its 20 s are up and fail.
MEETS = """#!/bin/sh
touch "$SPILLWAY_OUT/../../{me}.here"
for _ in $(seq 200); do [ -e "$SPILLWAY_OUT/../../{other}.here" ] && {{ echo met > "$SPILLWAY_OUT/met"; exit 0; }}; sleep 0.1; done
echo "{me} never met {other}" >&2; exit 1
"""


def run_module(tmp_path, action, collectors, user="root", group="root", unprivileged=()):
    """The module run on the collectors installed below tmp_path, each declaring needs_root but the `unprivileged`."""
    arguments = tmp_path / f"{action}.json"
    arguments.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "action": action,
        "collectors": [{"name": name, **({} if name in unprivileged else {"needs_root": "test"})} for name in collectors],
        "install_dir": str(tmp_path / "collectors"), "run_root": str(tmp_path / "run"),
        "storage_json": str(tmp_path / "storage.json"), "user": user, "group": group,
        "contract_env": {"SPILLWAY_ROOT": str(tmp_path), "SPILLWAY_RUN_ID": "r", "SPILLWAY_WORKLOAD_ID": "w",
                         "SPILLWAY_WINDOW_START": "0"}}}))
    proc = subprocess.run([sys.executable, str(MODULE), str(arguments)], capture_output=True, text=True, timeout=120)
    return json.loads(proc.stdout)


def install(tmp_path, name, action, script):
    path = tmp_path / "collectors" / name / action
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)


def test_a_hosts_collectors_start_all_at_once_each_timed(tmp_path):
    install(tmp_path, "one", "start", MEETS.format(me="one", other="two"))
    install(tmp_path, "two", "start", MEETS.format(me="two", other="one"))
    result = run_module(tmp_path, "start", ["one", "two"])
    assert result["problems"] == [] and not result.get("failed"), result
    assert [(c["name"], c["rc"]) for c in result["collectors"]] == [("one", 0), ("two", 0)]
    assert all(0 < c["seconds"] < 20 for c in result["collectors"]), result["collectors"]
    for name in ("one", "two"):
        assert (tmp_path / "run" / name / "w" / "met").read_text() == "met\n"


def test_what_a_collector_says_on_stderr_and_its_exit_are_its_own_problem(tmp_path):
    install(tmp_path, "quiet", "stop", "#!/bin/sh\nexit 0\n")
    install(tmp_path, "loud", "stop", "#!/bin/sh\necho 'no trace to drain' >&2\nexit 3\n")
    result = run_module(tmp_path, "stop", ["quiet", "loud"])
    assert not result.get("failed") and result["changed"]
    assert result["problems"] == ["collector loud stop: exit 3: no trace to drain"]
    assert [(c["name"], c["rc"], c["stderr"]) for c in result["collectors"]] == [
        ("quiet", 0, ""), ("loud", 3, "no trace to drain")]


@pytest.mark.skipif(os.geteuid() != 0, reason="running a collector as another user needs root")
def test_a_collector_without_needs_root_runs_as_the_collect_user_with_no_way_back_to_root():
    """Each program writes who it runs as: the one without needs_root the given user and group (here nobody's), with
    no_new_privs, in an output folder that user owns; the one with needs_root, root. In a folder of /tmp that the
    user can reach (pytest's own are root's alone)."""
    nobody = pwd.getpwnam("nobody")
    group = grp.getgrgid(nobody.pw_gid).gr_name
    who = '#!/bin/sh\n{ id -un; id -gn; grep NoNewPrivs /proc/self/status; } > "$SPILLWAY_OUT/who"\n'
    with tempfile.TemporaryDirectory(prefix="spillway-collect-") as scratch:
        scratch = Path(scratch)
        scratch.chmod(0o755)
        for name in ("plain", "privileged"):
            install(scratch, name, "start", who)
        (scratch / "collectors").chmod(0o755)
        result = run_module(scratch, "start", ["plain", "privileged"], user="nobody", group=group,
                            unprivileged=("plain",))
        assert result["problems"] == [] and not result.get("failed"), result
        ran = {name: (scratch / "run" / name / "w" / "who").read_text().split("\n")
               for name in ("plain", "privileged")}
        assert ran["plain"][:2] == ["nobody", group] and ran["plain"][2].split() == ["NoNewPrivs:", "1"], ran
        assert ran["privileged"][:2] == ["root", "root"] and ran["privileged"][2].split() == ["NoNewPrivs:", "0"], ran
        assert (scratch / "run" / "plain" / "w").stat().st_uid == nobody.pw_uid
        assert (scratch / "run" / "privileged" / "w").stat().st_uid == 0


def test_stop_left_running_stops_each_folder_with_a_pid_file_with_its_own_ids(tmp_path):
    """Teardown's action: every <runs_dir>/<run>/<collector>/<workload>/.pid of the collectors given, each stop told
    its folder's run and workload; a folder without a pid file (stopped), a pid file deeper in an output folder (the
    collector's user writes there) and a collector not given are left alone."""
    install(tmp_path, "one", "stop", '#!/bin/sh\necho "$SPILLWAY_RUN_ID $SPILLWAY_WORKLOAD_ID" > "$SPILLWAY_OUT/stopped"\n')
    runs = tmp_path / "runs"
    for folder in ("r1/one/w1", "r2/one/w2", "r2/one/done", "r2/one/w3/one/deeper", "r2/other/w2"):
        (runs / folder).mkdir(parents=True)
        if folder != "r2/one/done":
            (runs / folder / ".pid").write_text("4000000 1\n")
    arguments = tmp_path / "left.json"
    arguments.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "action": "stop_left_running", "collectors": [{"name": "one", "needs_root": "test"}],
        "install_dir": str(tmp_path / "collectors"), "runs_dir": str(runs), "storage_json": str(tmp_path / "none.json"),
        "user": "root", "group": "root", "contract_env": {"SPILLWAY_ROOT": str(tmp_path), "SPILLWAY_WINDOW_START": ""}}}))
    proc = subprocess.run([sys.executable, str(MODULE), str(arguments)], capture_output=True, text=True, timeout=120)
    result = json.loads(proc.stdout)
    assert result["problems"] == [] and not result.get("failed"), result
    assert [(c["name"], c["out"]) for c in result["collectors"]] == [("one", str(runs / "r1/one/w1")),
                                                                     ("one", str(runs / "r2/one/w2"))]
    assert sorted(str(p.relative_to(runs)) for p in runs.rglob("stopped")) == ["r1/one/w1/stopped", "r2/one/w2/stopped"]
    assert (runs / "r2/one/w2/stopped").read_text() == "r2 w2\n"
