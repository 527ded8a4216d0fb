"""Resolving a reference to a run (run_layout.resolve_run_dir): a run named by id or `latest` that leads out of
results/ through a symbolic link is refused, and so is a run directory path that is itself a link, so that what
`make report` and `make compare` write (tables/, report.html, findings.json, hibench.report, as root) never lands
where a planted link points (docs/safety.md)."""
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from run_layout import RunOutsideResults, resolve_run_dir

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "runs" / "terasort-hdd"


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def planted(tmp_path):
    """results/ with one real run, and a decoy run directory outside it that a link in results/ points to."""
    results = tmp_path / "results"
    shutil.copytree(RECORDED, results / "20260101-000000-local")
    decoy = tmp_path / "elsewhere" / "victim"
    shutil.copytree(RECORDED, decoy)
    return results, decoy


def analysis(results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "SPILLWAY_RESULTS": str(results)}, timeout=300)


@pytest.mark.parametrize("command", [["report"], ["compare", "20260101-000000-local"]])
def test_a_run_id_linked_out_of_results_is_refused_and_nothing_is_written_there(planted, command):
    results, decoy = planted
    (results / "x").symlink_to(decoy)
    before = tree_digest(decoy)
    proc = analysis(results, *command, "x")
    assert proc.returncode == 2, proc.stdout
    assert "leads out of" in proc.stderr and "remove the link" in proc.stderr
    assert tree_digest(decoy) == before


def test_latest_linked_out_of_results_is_refused(planted):
    results, decoy = planted
    (results / "latest").symlink_to(decoy)
    before = tree_digest(decoy)
    proc = analysis(results, "report", "latest")
    assert proc.returncode == 2
    assert "leads out of" in proc.stderr
    assert tree_digest(decoy) == before


def test_a_run_directory_path_that_is_a_link_is_refused(planted, tmp_path):
    results, decoy = planted
    link = tmp_path / "link-to-victim"
    link.symlink_to(decoy)
    before = tree_digest(decoy)
    proc = analysis(results, "report", str(link))
    assert proc.returncode == 2
    assert "is a symbolic link" in proc.stderr
    assert tree_digest(decoy) == before


def test_links_that_stay_inside_results_and_plain_paths_still_resolve(planted):
    results, _ = planted
    run = results / "20260101-000000-local"
    (results / "latest").symlink_to(run.name)
    (results / "alias").symlink_to(run.name)
    assert resolve_run_dir("latest", results) == run.resolve()
    assert resolve_run_dir("alias", results) == run.resolve()
    assert resolve_run_dir(str(run), results) == run.resolve()
    assert resolve_run_dir(str(RECORDED), results) == RECORDED.resolve()


def test_the_refusal_is_a_missing_run_to_every_caller(planted):
    """Every caller already turns FileNotFoundError into `error: ...` and exit 2 (analysis, compare, predict, the
    bench's RESUME)."""
    results, decoy = planted
    (results / "x").symlink_to(decoy)
    with pytest.raises(RunOutsideResults):
        resolve_run_dir("x", results)
    assert issubclass(RunOutsideResults, FileNotFoundError)
