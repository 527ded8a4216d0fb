"""Shared helpers of the analysis tests: recorded fixtures of the real tools, and skipping only on
a recording that does not exist yet (never on made-up data)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOOLS = FIXTURES / "tools"


def recorded(pattern: str, who: str = "the collectors helper") -> Path:
    """The first recorded fixture matching `pattern` under tests/fixtures/; a missing one fails, naming it."""
    matches = sorted(FIXTURES.rglob(pattern))
    if not matches:
        pytest.fail(f"missing recorded fixture tests/fixtures/**/{pattern} (to be recorded by {who})", pytrace=False)
    return matches[0]


def copy_recorded_run(name: str, folder: Path) -> Path:
    """A copy under `folder` of the recorded run tests/fixtures/runs/<name>; tables newer than the recording are
    written empty, as the analysis writes a source-less table. A missing recording fails, naming it."""
    import pandas as pd
    from analysis.tables import TABLE_NAMES

    source = FIXTURES / "runs" / name
    if not (source / "manifest.json").exists():
        pytest.fail(f"missing recorded fixture {source}", pytrace=False)
    run = folder / name
    shutil.copytree(source, run)
    for table in TABLE_NAMES:
        if not (run / "tables" / f"{table}.parquet").exists():
            pd.DataFrame(columns=["host", "workload_id"]).to_parquet(run / "tables" / f"{table}.parquet")
    return run


def block_counts_by_hand(name: str) -> dict:
    """Per (workload run, device, direction) of the recorded run tests/fixtures/runs/<name>'s block trace, counted
    here by hand from its table, for the pages' I/O pattern views to be checked against: the reads and writes that
    moved data (`requests`), their sizes by count (`sizes`: (bytes, requests), most first, the smaller size first
    among equals) and how many start where the previous request of their direction on their device ended, in
    dispatch order (`sequential`). A missing recording fails, naming it."""
    import pandas as pd

    path = FIXTURES / "runs" / name / "tables" / "block_requests.parquet"
    if not path.exists():
        pytest.fail(f"missing recorded fixture {path}", pytrace=False)
    ordered = pd.read_parquet(path).sort_values("issue_time_s", kind="stable")
    counts = {}
    for (workload_id, device, op), group in ordered.groupby(["workload_id", "device", "op"], observed=True):
        group = group[group["bytes"] > 0]
        if op not in ("read", "write") or group.empty:
            continue
        sizes = sorted(group["bytes"].value_counts().items(), key=lambda item: (-item[1], item[0]))
        sequential, end = 0, None
        for sector, size in zip(group["sector"], group["bytes"]):
            sequential += end is not None and sector == end
            end = sector + size // 512
        counts[(str(workload_id), str(device), op)] = {"requests": len(group), "sizes": sizes,
                                                       "sequential": sequential}
    return counts


HEATMAP_STEPS_S = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)   # docs/tables.md


def heatmap_bins_by_hand(name: str) -> dict:
    """Per workload run of the recorded run tests/fixtures/runs/<name>'s block trace, binned here by hand as
    docs/tables.md "I/O pattern views" says the heat map bins it: `bin_s` (the smallest step keeping the trace's span
    under 120 bins) and `bins`: (host, device, direction, bin index from the first dispatch's bin) -> [requests,
    bytes] of the reads and writes that moved data. A missing recording fails, naming it."""
    import math

    import pandas as pd

    path = FIXTURES / "runs" / name / "tables" / "block_requests.parquet"
    if not path.exists():
        pytest.fail(f"missing recorded fixture {path}", pytrace=False)
    requests = pd.read_parquet(path)
    counts = {}
    for workload_id, group in requests.groupby("workload_id", observed=True):
        group = group[group["op"].astype(str).isin(["read", "write"]) & (group["bytes"] > 0)]
        if group.empty:
            continue
        first, last = float(group["issue_time_s"].min()), float(group["issue_time_s"].max())
        width = next(step for step in HEATMAP_STEPS_S if (last - first) / step < 120)
        origin = math.floor(first / width) * width
        bins: dict = {}
        for host, device, op, issued, size in zip(group["host"], group["device"], group["op"], group["issue_time_s"],
                                                  group["bytes"]):
            cell = bins.setdefault((str(host), str(device), str(op), math.floor((issued - origin) / width)), [0, 0])
            cell[0] += 1
            cell[1] += int(size)
        counts[str(workload_id)] = {"bin_s": width, "origin": origin, "bins": bins}
    return counts


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run directory assembled from the recorded fixtures (what the runner's fetch would lay out)."""
    return assemble_run(tmp_path)


def assemble_run(folder: Path) -> Path:
    """The recorded fixtures laid out as a run directory under `folder` (what the runner's fetch would write)."""
    run = folder / "20261121-165000-local"
    host = run / "raw" / "vm"
    fio_dir = host / "workload" / "fio-sweep"
    fio_dir.mkdir(parents=True)
    for file in sorted((TOOLS / "fio-sweep").glob("fio-*.json")):
        shutil.copy(file, fio_dir)
    for workload, iostat in (("fio-sweep", "iostat-killed.json"), ("spark-tiny", "iostat-iso-killed.json")):
        target = host / "iostat" / workload
        target.mkdir(parents=True)
        shutil.copy(TOOLS / "iostat" / iostat, target / "iostat.json")
        for snapshot in ("diskstats.start", "diskstats.stop"):
            shutil.copy(TOOLS / "iostat" / snapshot, target)
    events = host / "eventlog" / "spark-tiny" / "eventlogs"
    events.mkdir(parents=True)
    shutil.copy(TOOLS / "spark-eventlog" / "local-1795280525362", events)
    for jhist in sorted(FIXTURES.glob("collectors/mr-history/*.jhist")):   # recorded by the collectors helper
        history = host / "mr-history" / "terasort-mr" / "mr-history"
        history.mkdir(parents=True, exist_ok=True)
        shutil.copy(jhist, history)
    blocktrace = host / "blocktrace" / "fio-sweep"
    blocktrace.mkdir(parents=True)
    shutil.copy(TOOLS / "blocktrace" / "blocktrace.tsv", blocktrace)
    (run / "manifest.json").write_text(MANIFEST)
    return run


# A manifest of the documented shape (docs/run-directory.md) with one failed run-level step
# and a workload whose `validate` step never ended, as the runner writes for a partial run.
MANIFEST = """{
  "schema_version": 1, "run_id": "20261121-165000-local", "status": "failed", "cluster": "local",
  "started_at": "2026-11-21T16:50:00+00:00", "ended_at": "2026-11-21T17:05:00+00:00",
  "controller": "vm", "git": {"commit": "abc1234", "dirty": false},
  "storage": {"backends": {"hdd": {"kind": "emulated", "profile": "hdd", "size_gib": 4}},
              "placement": {"hdfs": "hdd", "local": "hdd"}},
  "emulation": {"profiles": {"hdd": {"read_iops": 150, "write_iops": 150, "read_bps": 150000000,
                                     "write_bps": 150000000, "rotational": true}},
                "limitations": ["throttling caps IOPS and bandwidth but adds no seek latency"]},
  "hosts": {"vm": {"kernel": "6.18"}},
  "steps": [
    {"name": "provision", "status": "ok", "started_at": "2026-11-21T16:50:00+00:00",
     "ended_at": "2026-11-21T16:50:30+00:00", "duration_s": 30.0},
    {"name": "report", "status": "failed", "error": "analysis crashed: see logs/report.log",
     "started_at": "2026-11-21T17:04:00+00:00", "ended_at": "2026-11-21T17:04:05+00:00", "duration_s": 5.0}
  ],
  "workloads": [
    {"id": "fio-sweep", "workload": "fio-sweep", "repetition": 1, "scale": "tiny", "status": "ok",
     "started_at": "2026-11-21T16:50:40+00:00", "ended_at": "2026-11-21T16:51:00+00:00",
     "steps": [{"name": "run", "status": "ok", "duration_s": 20.0}]},
    {"id": "spark-tiny", "workload": "spark-tiny", "repetition": 1, "scale": "tiny", "status": "failed",
     "started_at": "2026-11-21T17:02:00+00:00", "ended_at": "2026-11-21T17:03:00+00:00",
     "steps": [{"name": "run", "status": "ok", "duration_s": 50.0},
               {"name": "validate", "status": "running"}]}
  ]
}
"""


@pytest.fixture(scope="session")
def bandwidths():
    """fio curves of the recorded sweep (hdd, ssd); nvme falls back to its profile caps (model tests)."""
    from analysis.predict import bandwidths_in
    return bandwidths_in([FIXTURES / "runs" / "fio-sweep"])


def add_pfs_recordings(run_dir: Path, workload_id: str = "fio-sweep") -> None:
    """The emulated pfs volume's recordings laid out as a bench fetches them: st1's gluster profile and worker1's
    client counters (tests/fixtures/gluster-profile/, tests/fixtures/pfs-client/: their READMEs say how)."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    profile = run_dir / "raw" / "st1" / "gluster-profile" / workload_id
    profile.mkdir(parents=True)
    shutil.copy(fixtures / "gluster-profile" / "profile-pfs.xml", profile)
    client = run_dir / "raw" / "worker1" / "pfs-client" / workload_id
    client.mkdir(parents=True)
    for suffix in ("start", "stop"):
        shutil.copy(fixtures / "pfs-client" / f"worker1-client-pfs.{suffix}", client / f"client-pfs.{suffix}")


@pytest.fixture
def archived_run(tmp_path):
    """A maker of runs whose workloads ({workload id: status}) each have the real Prometheus archive
    (tests/fixtures/tools/prometheus), bounded as the runner records them; returns the run directory."""
    import pandas as pd

    archive_file = TOOLS / "prometheus" / "fio-vda.json"
    archive = json.loads(archive_file.read_text())

    def make(statuses: dict[str, str]) -> Path:
        run = tmp_path / "run"
        (run / "raw" / "prometheus").mkdir(parents=True)
        workloads = []
        for index, (workload_id, status) in enumerate(statuses.items()):
            shutil.copy(archive_file, run / "raw" / "prometheus" / f"{workload_id}.json")
            workloads.append({"id": workload_id, "workload": "fio", "status": status, "steps": [],
                              "started_at": pd.Timestamp(archive["start"] + index, unit="s", tz="UTC").isoformat(),
                              "ended_at": pd.Timestamp(archive["end"], unit="s", tz="UTC").isoformat()})
        (run / "manifest.json").write_text(json.dumps({"run_id": "run", "workloads": workloads}))
        return run
    return make


@pytest.fixture(scope="module")
def matrix_tables() -> dict:
    """The tables of the recorded placement matrix (tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and
    the local dirs on an emulated hdd or ssd, one run each), as the findings' rules read them; a table newer than the
    recording is empty."""
    import pandas as pd
    from analysis.tables import TABLE_NAMES

    tables = FIXTURES / "runs" / "terasort-matrix" / "tables"
    return {name: pd.read_parquet(tables / f"{name}.parquet") if (tables / f"{name}.parquet").exists()
            else pd.DataFrame() for name in TABLE_NAMES}


def findings_of(tables: dict, noise=None):
    """The findings of the rule set (analysis/findings/rules) over a copy of `tables`: one row per finding."""
    from analysis.findings import engine
    from analysis.findings.rules import RULES

    return engine.evaluate(RULES, {k: v.copy() for k, v in tables.items()}, noise)[1]


def fired_on(findings, rule: str) -> set[str]:
    """The workload runs (`workload_id`) where `rule` fired, of a table of findings_of."""
    return set(findings.loc[findings["rule"] == rule, "workload_id"])


def recorded_tables(name: str) -> dict:
    """The tables of the recorded run tests/fixtures/runs/<name>, as the findings' rules read them (as `matrix_tables`
    gives the matrix's); a table newer than the recording is empty, a missing recording fails, naming it."""
    import pandas as pd
    from analysis.tables import TABLE_NAMES

    tables = FIXTURES / "runs" / name / "tables"
    if not tables.is_dir():
        pytest.fail(f"missing recorded fixture {tables}", pytrace=False)
    return {n: pd.read_parquet(tables / f"{n}.parquet") if (tables / f"{n}.parquet").exists() else pd.DataFrame()
            for n in TABLE_NAMES}


@pytest.fixture(scope="module")
def bench() -> dict:
    """The tables of the recorded quiet default bench (tests/fixtures/runs/default-bench-quiet)."""
    return recorded_tables("default-bench-quiet")


@pytest.fixture(scope="module")
def emu() -> dict:
    """The tables of the recorded TeraSort on the emulated four-node cluster (tests/fixtures/runs/emu-terasort)."""
    return recorded_tables("emu-terasort")
