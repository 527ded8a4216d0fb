"""playbooks/set-aside.yml, which a resume runs on remote hosts, moves a workload run's earlier outputs exactly as
spillway.run_record.move_outputs_aside does on the machine (here both on the local inventory, over a scratch root)."""
import json
import subprocess

from spillway import REPO
from spillway.run_record import move_outputs_aside

RUN_ID = "20260101-000000-local"
LAYOUT = ["iostat/terasort/iostat.json", "blocktrace/terasort/blocktrace.tsv", "workload/terasort/run.log",
          "iostat/tpch/iostat.json", ".attempts/terasort.attempt-1/iostat/terasort/old.json"]


def lay_out(root):
    runs = root / "runs" / RUN_ID
    for path in LAYOUT:
        (runs / path).parent.mkdir(parents=True, exist_ok=True)
        (runs / path).write_text(path)
    return runs


def tree(runs):
    return sorted(str(p.relative_to(runs)) for p in runs.rglob("*") if p.is_file())


def test_the_playbook_moves_what_the_machine_would(tmp_path):
    by_python = lay_out(tmp_path / "python")
    move_outputs_aside(by_python, "terasort", by_python / ".attempts/terasort.attempt-2")
    by_play = lay_out(tmp_path / "play")
    extra = {"spillway_root": str(tmp_path / "play"), "run_id": RUN_ID, "workload_id": "terasort", "attempt": 2}
    result = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", "inventories/local",
                             "playbooks/set-aside.yml", "-e", json.dumps(extra)], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert tree(by_play) == tree(by_python)
    assert "tpch" in " ".join(tree(by_play)) and not (by_play / "iostat" / "terasort").exists()
    assert "changed=1" in result.stdout
    again = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", "inventories/local",
                            "playbooks/set-aside.yml", "-e", json.dumps(extra)], cwd=REPO, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "changed=0" in again.stdout and tree(by_play) == tree(by_python)
