"""analysis/notebooks/*.ipynb executed headless (nbclient, a real ipykernel) against the recorded run
fixture, as a user would open them on a run directory: no cell may fail, and the figures and numbers the
notebooks exist to show must come out."""
import time
from pathlib import Path

import pytest

from analysis.formatting import format_bytes
from analysis.parsers import blocktrace, eventlog
from conftest import TOOLS
from test_compare_page import HDD_TIMES, NVME_TIMES, make_run

nbformat = pytest.importorskip("nbformat", reason="notebook packages missing: pip install -r requirements.txt")
nbclient = pytest.importorskip("nbclient", reason="notebook packages missing: pip install -r requirements.txt")
pytest.importorskip("ipykernel", reason="notebook packages missing (no Python kernel): pip install -r requirements.txt")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "analysis" / "notebooks"


def execute(name: str, probe: str = "") -> tuple[str, int]:
    """Run every cell of the notebook from its own folder (as Jupyter does), then `probe` (code reading the
    notebook's variables); returns all text the cells showed (plain, HTML, printed) and how many images they
    drew. A failing cell raises CellExecutionError."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    if probe:
        notebook.cells.append(nbformat.v4.new_code_cell(probe))
    started = time.monotonic()
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    print(f"{name}: {time.monotonic() - started:.1f} s")
    texts, images = [], 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            images += "image/png" in data
            texts += [output.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")]
    return "\n".join(texts), images


@pytest.fixture
def recorded_shuffle():
    return eventlog.parse_event_logs(TOOLS / "spark-eventlog" / "local-1795280525362").stages


def test_notebooks_are_committed_without_outputs():
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert len(names) >= 4, names
    for name in names:
        notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(notebook)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), f"{name}: strip its outputs"
        assert "SPILLWAY_RUN" in code[0].source and "parameters" in code[0].metadata.get("tags", []), name


def test_run_overview(run_dir, monkeypatch):
    monkeypatch.setenv("SPILLWAY_RUN", str(run_dir))
    text, images = execute("01-run-overview.ipynb")
    assert "run 20261121-165000-local" in text
    assert "analysis crashed: see logs/report.log" in text          # the failed run-level step
    assert "spark-tiny" in text and "fio-sweep" in text and "failed" in text
    assert images == 1                                              # step times per workload


def test_shuffle_and_stages(run_dir, monkeypatch, recorded_shuffle):
    monkeypatch.setenv("SPILLWAY_RUN", str(run_dir))
    text, images = execute("02-shuffle-and-stages.ipynb")
    written = recorded_shuffle["shuffle_write_bytes"].sum()
    assert written > 0 and str(written) in text and format_bytes(written) in text
    assert "mapToPair at TinyShuffle.java:14" in text
    assert images >= 2                                              # shuffle per stage, stage timeline


def test_request_sizes_and_throughput(run_dir, monkeypatch):
    monkeypatch.setenv("SPILLWAY_RUN", str(run_dir))
    text, images = execute("03-request-sizes-and-throughput.ipynb")
    requests = blocktrace.parse_blocktrace(TOOLS / "blocktrace" / "blocktrace.tsv")
    for op in ("read", "write"):
        moved = requests[(requests["op"].astype(str) == op) & (requests["bytes"] > 0)]
        if len(moved):
            assert f"{op}: {len(moved):,} requests" in text          # the histogram's caption
    # request sizes of fio-sweep, throughput of fio-sweep and spark-tiny, fio curves
    assert images == 4
    assert "no data for this figure" not in text


def test_compare_backends(run_dir, tmp_path, monkeypatch):
    hdd = make_run(run_dir, tmp_path, "20261121-170000-hdd", "hdd", "hdd", HDD_TIMES)
    nvme = make_run(run_dir, tmp_path, "20261121-180000-nvme", "nvme", "nvme", NVME_TIMES)
    monkeypatch.setenv("SPILLWAY_RUNS", f"{hdd} {nvme}")
    probe = """
spark = compared["compare_workloads"].query("workload == 'spark-tiny'").set_index("configuration")
print("PROBE", spark.loc["hdd", "median_s"], spark.loc["nvme", "median_s"], spark.loc["nvme", "speedup_vs_baseline"])
"""
    text, images = execute("04-compare-backends.ipynb", probe)
    assert "backends.disk.profile" in text                          # what differed
    assert "PROBE 12.0 6.0 2.0" in text            # medians of the measured repetitions only, nvme 2x faster
    assert "none: the runs ran the same workloads" in text
    assert images >= 5        # throughput, shuffle, fio, request sizes, throughput over time
    assert not (hdd / "tables").exists() and not (nvme / "tables").exists()   # never writes into the runs
