"""The namenode-ops collector run as the bench runs it (its start and stop scripts, the contract's environment) where
it cannot read a NameNode: Hadoop not provisioned, or the NameNode not answering. It must note why, write no
snapshot and never fail the bench. What it records from a live NameNode is checked by tests/integration/test_bench.py
and parsed from real snapshots in tests/analysis/parsers/test_namenode_ops_parser.py."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COLLECTOR = REPO / "collectors" / "namenode-ops"


def run(step: str, root: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPILLWAY_ROOT": str(root), "SPILLWAY_OUT": str(out), "SPILLWAY_RUN_ID": "r",
           "SPILLWAY_WORKLOAD_ID": "w"}
    return subprocess.run([sys.executable, str(COLLECTOR / step)], env=env, capture_output=True, text=True, timeout=90)


def hdfs_site(root: Path, address: str) -> None:
    (root / "etc" / "hadoop").mkdir(parents=True)
    (root / "etc" / "hadoop" / "hdfs-site.xml").write_text(
        "<configuration><property><name>dfs.namenode.http-address</name>"
        f"<value>{address}</value></property></configuration>")


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("provisioned", [False, True], ids=["no-hadoop", "namenode-down"])
def test_without_a_namenode_to_read_it_notes_why_and_never_fails(tmp_path, provisioned):
    root, out = tmp_path / "root", tmp_path / "out"
    root.mkdir()
    if provisioned:
        hdfs_site(root, f"127.0.0.1:{closed_port()}")
    for step in ("start", "stop"):
        done = run(step, root, out)
        assert done.returncode == 0, done.stderr
    notes = (out / "collector-notes.txt").read_text().splitlines()
    assert len(notes) == 2 and not (out / "collector-error.txt").exists()
    said = "did not answer at start" if provisioned else "Hadoop is not provisioned"
    assert said in notes[0], notes
    assert not list(out.glob("namenode.*"))          # no snapshot: the analysis counts the source as missing, with why
