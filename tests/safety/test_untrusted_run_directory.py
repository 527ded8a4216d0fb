"""Run directories are untrusted input (docs/safety.md): a results/<run-id>/ folder edited by anyone, copied from
elsewhere or damaged must neither make the analysis write elsewhere, read elsewhere, spend unbounded time or memory,
nor crash `python -m analysis tables` / `report`. Each test proves the negative: a victim file outside the run stays
byte-identical, a planted device or bomb is refused within seconds and bounded memory, a malformed file is recorded in
`sources` with its error while the other tables and the report are still built.

Runs are the recorded run tests/fixtures/runs/terasort-matrix (manifest, tables) with raw/ laid out from the recorded
tool outputs under tests/fixtures/tools/, as a bench fetches them. Whatever could exhaust the machine when a rule is
missing runs in a child process that is killed past a time or memory bound."""
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.safeio import SIZE_CAPS, Refused, size_text
from analysis.tables import read_table
from untrusted_runs import EVENT_LOG, MiB, RECORDED_RUN, REPO, TOOLS, analyse, make_run, plant, read, row, victim


# ---------------------------------------------------------------- writes never follow a symlink

def test_a_report_html_symlink_is_replaced_and_its_target_stays_untouched(tmp_path, capsys):
    run = make_run(tmp_path, blocktrace=False)
    target, before = victim(tmp_path)
    (run / "report.html").symlink_to(target)
    assert "Raw sources parsed" in analyse(run, capsys, (target, before))


def test_a_table_file_symlink_is_replaced_and_its_target_stays_untouched(tmp_path, capsys):
    run = make_run(tmp_path, eventlog=False, blocktrace=False)
    target, before = victim(tmp_path, "fio.parquet")
    (run / "tables" / "fio.parquet").unlink()
    (run / "tables" / "fio.parquet").symlink_to(target)
    analyse(run, capsys, (target, before))
    assert not (run / "tables" / "fio.parquet").is_symlink() and len(read(run, "fio")) == 4


def test_a_tables_folder_symlink_is_refused_naming_it_and_nothing_is_written_through(tmp_path, capsys):
    run = make_run(tmp_path, eventlog=False, blocktrace=False)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(run / "tables", elsewhere)
    before = {path.name: path.read_bytes() for path in elsewhere.iterdir()}
    shutil.rmtree(run / "tables")
    (run / "tables").symlink_to(elsewhere, target_is_directory=True)
    for command in ("tables", "report"):
        assert main([command, str(run)]) == 2
        error = capsys.readouterr().err
        assert f"{run / 'tables'} is a symbolic link" in error and "does not write through it" in error
    assert {path.name: path.read_bytes() for path in elsewhere.iterdir()} == before


def test_a_compare_output_folder_symlink_is_refused(tmp_path, capsys):
    runs = [make_run(tmp_path / name, eventlog=False, blocktrace=False) for name in ("a", "b")]
    (runs[1] / "manifest.json").write_text((runs[1] / "manifest.json").read_text().replace(
        "20261121-201144-local", "20261121-211144-local"))
    out = tmp_path / "compare"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "tables").symlink_to(elsewhere, target_is_directory=True)
    assert main(["compare", *map(str, runs), "--out", str(out)]) == 2
    assert f"{out / 'tables'} is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


# ---------------------------------------------------------------- reads are bounded and stay in the run

def test_a_symlink_to_a_file_or_folder_outside_the_run_is_not_read(tmp_path, capsys):
    """The targets hold valid iostat reports: any row from them would mean the link was followed."""
    run = make_run(tmp_path, eventlog=False, blocktrace=False)
    outside = plant(tmp_path / "elsewhere" / "w" / "iostat.json", (TOOLS / "iostat" / "iostat-killed.json").read_bytes())
    plant(tmp_path / "elsewhere" / "iostat" / "w" / "iostat.json", outside.read_bytes())
    (run / "raw" / "vm" / "iostat" / "linked-file").mkdir()
    (run / "raw" / "vm" / "iostat" / "linked-file" / "iostat.json").symlink_to(outside)
    (run / "raw" / "vm" / "iostat" / "linked-folder").symlink_to(outside.parent, target_is_directory=True)
    (run / "raw" / "linked-host").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    page = analyse(run, capsys)
    iostat, sources = read(run, "iostat"), read(run, "sources")
    assert set(iostat["workload_id"]) == {"fio-sweep"}, "rows were read through a symlink"
    for file in ("vm/iostat/linked-file/iostat.json", "vm/iostat/linked-folder", "linked-host"):
        assert row(sources, file)["status"] == "refused" and "symbolic link" in row(sources, file)["message"]
        assert file in page


def test_confining_reads_to_a_run_leaves_other_runs_readable(tmp_path):
    """The report's model reads other runs' fio curves while the report's run is the one confined."""
    from analysis import safeio
    from analysis.tables import read_table
    run, other = (make_run(tmp_path / name, eventlog=False, blocktrace=False) for name in ("a", "b"))
    (run / "raw" / "vm" / "linked").symlink_to(other / "tables", target_is_directory=True)
    with safeio.confined(run):
        assert "host" in read_table(other / "tables" / "fio.parquet").columns
        with pytest.raises(safeio.Refused, match="reached through a symbolic link"):
            read_table(run / "raw" / "vm" / "linked" / "fio.parquet")


@dataclass
class Bounded:
    returncode: int
    seconds: float
    peak_rss: int
    killed: bool
    stdout: str
    stderr: str


def run_bounded(tmp_path: Path, *args: str, seconds: float = 60, max_rss: int = 1024 * MiB) -> Bounded:
    """`python -m analysis <args>` in a child killed past `seconds` or `max_rss`; its peak RSS from wait4."""
    out, err = tmp_path / "child.out", tmp_path / "child.err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "analysis", *args], cwd=REPO, stdout=stdout, stderr=stderr,
                                stdin=subprocess.DEVNULL)
    start, peak, killed = time.monotonic(), 0, False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, _rss(proc.pid))
        if time.monotonic() - start > seconds or peak > max_rss:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            killed = True
            break
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Bounded(proc.returncode, time.monotonic() - start, max(peak, usage.ru_maxrss * 1024), killed,
                   out.read_text(errors="replace"), err.read_text(errors="replace"))


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def test_devices_fifos_and_oversized_files_are_refused_quickly(tmp_path):
    """Without the rules /dev/zero is read until memory runs out and a FIFO blocks the open forever."""
    run = make_run(tmp_path, blocktrace=False)
    raw = run / "raw" / "vm"
    (raw / "iostat" / "zero").mkdir()
    (raw / "iostat" / "zero" / "iostat.json").symlink_to("/dev/zero")
    (raw / "eventlog" / "zero" / "eventlogs").mkdir(parents=True)
    (raw / "eventlog" / "zero" / "eventlogs" / "local-1").symlink_to("/dev/zero")
    (raw / "iostat" / "fifo").mkdir()
    os.mkfifo(raw / "iostat" / "fifo" / "iostat.json")
    (raw / "iostat" / "huge").mkdir()
    with open(raw / "iostat" / "huge" / "iostat.json", "wb") as sparse:   # sparse: no disk used
        sparse.write(b'{"sysstat": {"hosts": [{"statistics": [')
        sparse.truncate(2 * (1 << 30) + 1)
    child = run_bounded(tmp_path, "tables", str(run), seconds=60)
    assert not child.killed and child.returncode == 0, child
    assert child.seconds < 30, child
    sources = read(run, "sources")
    expected = {"vm/iostat/zero/iostat.json": "symbolic link", "vm/eventlog/zero/eventlogs/local-1": "symbolic link",
                "vm/iostat/fifo/iostat.json": "not a regular file (a FIFO)",
                "vm/iostat/huge/iostat.json": "over the 2 GiB cap"}
    for file, why in expected.items():
        entry = row(sources, file)
        assert entry["status"] == "refused" and why in entry["message"], entry
    assert len(read(run, "fio")) == 4 and len(read(run, "stages")) == 5


def zstd_bomb(output_bytes: int) -> bytes:
    """One zstd frame (RFC 8878) of RLE blocks: 4 bytes per 128 KiB of output, the densest the format allows."""
    block = 128 * 1024
    frame = bytearray(struct.pack("<I", 0xFD2FB528))
    frame += bytes([0x00, 0x38])            # no content size given; window 2^17, so blocks of 128 KiB
    blocks = output_bytes // block
    for index in range(blocks):
        last = int(index == blocks - 1)
        frame += (last | 1 << 1 | block << 3).to_bytes(3, "little") + b"{"     # block type 1: RLE
    return bytes(frame)


def test_a_zstd_bomb_is_stopped_within_seconds_and_bounded_memory(tmp_path):
    """32 KiB that expand to 1 GiB of one line: before the caps, 2.2 GB of memory and about a minute."""
    bomb = zstd_bomb(1 << 30)
    assert len(bomb) < 40 * 1024
    run = make_run(tmp_path, blocktrace=False)
    plant(run / "raw" / "vm" / "eventlog" / "bomb" / "eventlogs" / "local-2.zstd", bomb)
    child = run_bounded(tmp_path, "tables", str(run), seconds=60, max_rss=1024 * MiB)
    assert not child.killed and child.returncode == 0, child
    assert child.seconds < 20 and child.peak_rss < 700 * MiB, child
    entry = row(read(run, "sources"), "vm/eventlog/bomb/eventlogs/local-2.zstd")
    assert entry["status"] == "refused" and "decompresses to more than 64 MiB" in entry["message"], entry
    assert len(read(run, "stages")) == 5
    stages = run_bounded(tmp_path, "stages", str(run / "raw" / "vm" / "eventlog" / "bomb" / "eventlogs" / "local-2.zstd"),
                         seconds=60, max_rss=1024 * MiB)
    assert not stages.killed and stages.returncode == 2 and "decompresses to more than" in stages.stderr, stages
    assert stages.seconds < 20 and stages.peak_rss < 700 * MiB, stages


def test_a_compressed_block_claiming_gigabytes_is_refused_before_it_is_allocated(tmp_path, capsys):
    run = make_run(tmp_path, eventlog=False, blocktrace=False)
    # lz4-java's LZ4Block framing: magic, token (0x20: LZ4), compressed size, decompressed size, checksum
    block = b"LZ4Block" + struct.pack("<B i i i", 0x20, 16, 0x7FFFFFF0, 0) + b"\x00" * 16
    plant(run / "raw" / "vm" / "eventlog" / "lz4" / "eventlogs" / "local-3.lz4", block)
    analyse(run, capsys)
    entry = row(read(run, "sources"), "vm/eventlog/lz4/eventlogs/local-3.lz4")
    assert entry["status"] == "refused" and "LZ4Block block of 2147483632 bytes" in entry["message"], entry


# ---------------------------------------------------------------- malformed sources are recorded, never fatal

def _manifest(**changes) -> str:
    manifest = json.loads((RECORDED_RUN / "manifest.json").read_text())
    manifest.update(changes)
    return json.dumps(manifest)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


IOSTAT = "vm/iostat/fio-sweep/iostat.json"
MALFORMED = {
    # name: (file under the run, content, status in sources, words of its message)
    "iostat empty list": ("raw/" + IOSTAT, "[]", "error", "not an iostat JSON report"),
    "iostat sysstat is text": ("raw/" + IOSTAT, '{"sysstat": "x"}', "error", "not an iostat JSON report"),
    "iostat garbage": ("raw/" + IOSTAT, b"\x00\xffgarbage, not a report\n", "error", "not an iostat JSON report"),
    "iostat sample of other types": ("raw/" + IOSTAT, '{"sysstat": {"hosts": [{"nodename": "vm", "statistics": '
                                     '[{"timestamp": 5, "disk": []}]}]}}', "error", "timestamp of type int"),
    "iostat nested deep": ("raw/" + IOSTAT, '{"sysstat": ' + _deep(500) + "}", "refused", "nested deeper than 64"),
    "iostat nested deeper than Python": ("raw/" + IOSTAT, "[" * 100_000, "refused", "nested deeper than Python"),
    "manifest steps is a number": ("manifest.json", _manifest(steps=5), "malformed", "steps is a number, not a list"),
    "manifest workloads is text": ("manifest.json", _manifest(workloads="x"), "malformed", "workloads is text"),
    # found by test_fuzzed_manifests_are_recorded_never_fatal (2026-11-27): an id-less record made a workload id NaN
    # and the report's overview failed on it
    "manifest workload without an id": ("manifest.json", _manifest(workloads=[{}, {"id": 5, "workload": "terasort"}]),
                                        "malformed", "workloads[0] has no id: left out"),
    "manifest is a list": ("manifest.json", "[]", "error", "not a JSON object"),
    "manifest garbage": ("manifest.json", b"\x89PNG\r\n", "error", "DecodeError: "),
    "manifest nested deeper than Python": ("manifest.json", '{"a":' * 100_000, "refused", "nested deeper"),
    "manifest step fields of other types": ("manifest.json", _manifest(steps=[{"name": ["x"], "duration_s": "5"}, 7]),
                                            "malformed", "steps[0].name is a list"),
    "fio pattern of another type": ("raw/vm/workload/fio-sweep/fio-x-read-4k.json",
                                    '{"jobs": [{"job options": {"rw": 5}, "read": {"io_bytes": 1}}]}', "error",
                                    "fio.rw holds integer values"),
    "event log name of another type": ("raw/vm/eventlog/typed/eventlogs/local-4",
                                       '{"Event":"SparkListenerApplicationStart","App ID":"a","Timestamp":1}\n'
                                       '{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":0,'
                                       '"Stage Name":7}}\n', "error", "stages.name holds integer"),
    "event log line nested deep": ("raw/vm/eventlog/spark-tiny/eventlogs/local-1795280525362",
                                   EVENT_LOG.read_text() + '{"Event":"SparkListenerJobStart","Properties":'
                                   + _deep(5000) + "}\n", "ok", "repaired: 1 cut or malformed line(s) skipped"),
    "job history of other types": ("raw/vm/mr-history/tera/job_1.jhist", 'Avro-Json\n{"type": "record"}\n'
                                   '{"type": "JOB_SUBMITTED", "event": {"x": {"jobid": "job_1", "submitTime": "x"}}}\n',
                                   "error", "submit_time_ms"),
    "prometheus label of another type": ("raw/prometheus/fio-sweep.json",
                                         '{"queries": {"q": {"result": [{"metric": {"node": 5}, "values": [[1, "1"]]}]}}}',
                                         "error", "not text"),
    "storage.json is a list": ("raw/vm/storage.json", "[]", None, None),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_source_is_recorded_and_the_rest_is_still_built(tmp_path, capsys, case):
    where, content, status, words = MALFORMED[case]
    run = make_run(tmp_path, blocktrace=False)
    plant(run / where, content)
    page = analyse(run, capsys)
    sources = read(run, "sources")
    if status is not None:
        file = where if not where.startswith("raw/") or where.startswith("raw/prometheus") else where[len("raw/"):]
        # A .jhist feeds two tables, one row each: the one of the table its damage is in carries it.
        entries = sources[sources["file"] == file].to_dict("records")
        assert any(e["status"] == status and words in e["message"] for e in entries), entries
        if status != "ok":
            assert f"{status} — " in page and file in page, "the problem is not visible in the report"
    assert len(read(run, "fio")) == 4
    assert len(read(run, "stages")) == 5


def test_a_garbage_iostat_is_not_ok_with_no_rows(tmp_path, capsys):
    """What was recorded as `ok, repaired: iostat was stopped mid-report, 0 rows`."""
    run = make_run(tmp_path, eventlog=False, blocktrace=False)
    plant(run / "raw" / IOSTAT, "this is not iostat output, however it ends ...")
    analyse(run, capsys)
    entry = row(read(run, "sources"), IOSTAT)
    assert entry["status"] == "error" and not entry["message"].startswith("repaired"), entry


# Every source type's file one byte over its cap (safeio.SIZE_CAPS), as a sparse file (no disk used): refused by its
# size before a byte of it is read, recorded in `sources`, and the rest still built. Paths as a bench fetches them; a
# start/stop pair is named by its stop (parsers/source.py Window), so the stop is the large one beside an empty start
# (read first, a malformed start would hide the refusal). kind -> (planted path, its `sources` row's file, status):
# a collector's note is not a source of its own: its refusal is the message of the row of what its folder lacks.
OVER_CAP = {
    "fio": ("raw/vm/workload/fio-sweep/fio-over.json", "vm/workload/fio-sweep/fio-over.json", "refused"),
    "diskstats": ("raw/vm/iostat/over/diskstats.stop", "vm/iostat/over/diskstats.stop", "refused"),
    "blocktrace": ("raw/vm/blocktrace/over/blocktrace.tsv", "vm/blocktrace/over/blocktrace.tsv", "refused"),
    "eventlog": ("raw/vm/eventlog/over/eventlogs/local-1", "vm/eventlog/over/eventlogs/local-1", "refused"),
    "mr-history": ("raw/vm/mr-history/over/job_1_0001.jhist", "vm/mr-history/over/job_1_0001.jhist", "refused"),
    "gluster-profile": ("raw/vm/gluster-profile/over/profile-vol.xml", "vm/gluster-profile/over/profile-vol.xml",
                        "refused"),
    "pfs-client": ("raw/vm/pfs-client/over/client-scratch.stop", "vm/pfs-client/over/client-scratch.stop", "refused"),
    "node-budget": ("raw/vm/node-budget/over/node-budget.stop", "vm/node-budget/over/node-budget.stop", "refused"),
    "namenode-ops": ("raw/vm/namenode-ops/over/namenode.stop", "vm/namenode-ops/over/namenode.stop", "refused"),
    "prometheus": ("raw/prometheus/over.json", "raw/prometheus/over.json", "refused"),
    "manifest": ("manifest.json", "manifest.json", "refused"),
    "manifest (storage.json)": ("raw/vm/storage.json", "vm/storage.json", "refused"),
    "manifest (extents)": ("raw/vm/workload/fio-sweep/extents-hdd.json", "vm/workload/fio-sweep/extents-hdd.json",
                           "refused"),
    "step-log": ("logs/terasort-hdfs_hdd-local_hdd.run.log", "logs/terasort-hdfs_hdd-local_hdd.run.log", "refused"),
    "note (nothing-here.txt)": ("raw/vm/blocktrace/over/nothing-here.txt", "blocktrace.tsv", "none"),
    "note (collector-error.txt)": ("raw/vm/mr-history/over/collector-error.txt", ".jhist", "missing"),
    "note (collector-notes.txt)": ("raw/vm/node-budget/over/collector-notes.txt", "node-budget.start", "missing"),
}


@pytest.mark.parametrize("case", sorted(OVER_CAP))
def test_a_file_over_its_source_cap_is_refused_unread(tmp_path, case):
    kind = case.split(" (")[0]
    planted, file, status = OVER_CAP[case]
    run = make_run(tmp_path, blocktrace=False)
    path = run / planted
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".stop":
        path.with_suffix(".start").write_bytes(b"")
    with open(path, "wb") as sparse:
        sparse.truncate(SIZE_CAPS[kind] + 1)
    child = run_bounded(tmp_path, "tables", str(run), seconds=120)
    assert not child.killed and child.returncode == 0, child
    sources = read(run, "sources")
    entries = sources[sources["file"] == file].to_dict("records")
    assert any(e["status"] == status and f"{path}: {size_text(SIZE_CAPS[kind] + 1)}, over the "
               f"{size_text(SIZE_CAPS[kind])} cap for {kind} files: not read" in e["message"]
               for e in entries), (file, entries, sources[["file", "status"]].to_string())
    assert len(read(run, "fio")) == 4
    if kind != "manifest":
        assert len(read(run, "stages")) == 5


def test_a_table_over_its_cap_is_refused_unread_and_built_again(tmp_path):
    """A valid Parquet file of one row stretched past the table cap by a hole between its row group and its footer
    (whose offsets still point at the row group): refused by its size, not read as the run's fio table; `report`
    builds the tables again from raw/."""
    run = make_run(tmp_path, blocktrace=False)
    assert main(["tables", str(run)]) == 0
    small = tmp_path / "planted.parquet"
    pd.DataFrame({"host": ["planted"], "workload_id": ["planted"]}).to_parquet(small, index=False)
    data = small.read_bytes()
    footer = data[-8 - struct.unpack("<I", data[-8:-4])[0]:]
    table = run / "tables" / "fio.parquet"
    with open(table, "wb") as stretched:
        stretched.write(data[:-len(footer)])
        stretched.seek(SIZE_CAPS["table"] + 1 - len(footer))
        stretched.write(footer)
    assert table.stat().st_size == SIZE_CAPS["table"] + 1 and table.stat().st_blocks * 512 < MiB
    assert list(pd.read_parquet(table)["host"]) == ["planted"]     # what reading it would give
    with pytest.raises(Refused, match="over the 20 GiB cap for table files: not read"):
        read_table(table)
    child = run_bounded(tmp_path, "report", str(run), seconds=120)
    assert not child.killed and child.returncode == 0, child
    assert table.stat().st_size < MiB and len(read(run, "fio")) == 4 and "planted" not in set(read(run, "fio")["host"])
