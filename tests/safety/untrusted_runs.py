"""What the untrusted-run-directory tests share (test_untrusted_run_directory.py and its fuzzing): a run directory
laid out from the recorded run and tool outputs as a bench fetches them, and small helpers to plant files in it and
read what the analysis made of it."""
import shutil
from pathlib import Path

import pandas as pd

from analysis.__main__ import main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
TOOLS = FIXTURES / "tools"
RECORDED_RUN = FIXTURES / "runs" / "terasort-matrix"
EVENT_LOG = TOOLS / "spark-eventlog" / "local-1795280525362"
MiB = 1 << 20


def make_run(root: Path, *, eventlog: bool = True, blocktrace: bool = True) -> Path:
    """A run directory under root/results/: the recorded run plus raw/ from the recorded tool outputs."""
    run = root / "results" / "20261121-201144-local"
    shutil.copytree(RECORDED_RUN, run)
    host = run / "raw" / "vm"
    fio = host / "workload" / "fio-sweep"
    fio.mkdir(parents=True)
    for file in sorted((TOOLS / "fio-sweep").glob("fio-*.json")):
        shutil.copy(file, fio)
    iostat = host / "iostat" / "fio-sweep"
    iostat.mkdir(parents=True)
    shutil.copy(TOOLS / "iostat" / "iostat-killed.json", iostat / "iostat.json")
    for snapshot in ("diskstats.start", "diskstats.stop"):
        shutil.copy(TOOLS / "iostat" / snapshot, iostat)
    if eventlog:
        events = host / "eventlog" / "spark-tiny" / "eventlogs"
        events.mkdir(parents=True)
        shutil.copy(EVENT_LOG, events)
    if blocktrace:
        (host / "blocktrace" / "fio-sweep").mkdir(parents=True)
        shutil.copy(TOOLS / "blocktrace" / "blocktrace.tsv", host / "blocktrace" / "fio-sweep")
    return run


def plant(path: Path, content: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def victim(root: Path, name: str = "victim.txt") -> tuple[Path, bytes]:
    """A file outside the run that a write through a planted symlink would change."""
    content = b"precious data that is not the analysis' to change\n"
    return plant(root / "elsewhere" / name, content), content


def read(run: Path, table: str) -> pd.DataFrame:
    return pd.read_parquet(run / "tables" / f"{table}.parquet")


def row(sources: pd.DataFrame, file: str) -> dict:
    hits = sources[sources["file"] == file]
    assert len(hits) == 1, f"no single row for {file} in sources:\n{sources[['file', 'status', 'message']]}"
    return hits.iloc[0].to_dict()


def analyse(run: Path, capsys, victim: tuple[Path, bytes] | None = None) -> str:
    """`python -m analysis tables` then `report`, in this process; both must succeed, and leave `victim` (path,
    content) as it was. The report's text."""
    codes = [main(["tables", str(run)]), main(["report", str(run)])]
    if victim is not None:
        assert victim[0].read_bytes() == victim[1], "a file outside the run was written through a symlink"
    assert codes == [0, 0], capsys.readouterr().err
    report = run / "report.html"
    assert report.is_file() and not report.is_symlink()
    return report.read_text()
