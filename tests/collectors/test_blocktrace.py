import io

import blocktrace_format as fmt
from tracing import device_filter


def test_device_filter_uses_the_kernel_dev_t_layout():
    assert device_filter([(7, 0)]) == "dev == 7340032"
    assert device_filter([(7, 5), (259, 1)]) == f"dev == {7 << 20 | 5} || dev == {259 << 20 | 1}"


def test_recorded_trace_normalizes_to_the_recorded_tsv(fixtures):
    """Re-running the normalizer on the raw trace_pipe text gives the TSV stop wrote."""
    folder = fixtures / "blocktrace"
    tsv = (folder / "blocktrace.tsv").read_text().splitlines()
    meta = dict(item.split("=", 1) for item in tsv[0].split()[3:])
    stats = fmt.ParseStats()
    with open(folder / "blocktrace.trace_pipe.txt") as lines:
        rows = list(fmt.parse_tracepoint(lines, {(7, 0): "loop0"}, float(meta["clock_to_wall_s"]), stats))
    assert tsv[1].split("\t") == list(fmt.COLUMNS)
    assert [row.tsv().rstrip("\n") for row in rows] == tsv[2:]
    assert stats.lost == 0 and stats.unparsed == 0


def test_fio_requests_are_all_in_the_trace(fixtures):
    """fio did 4 s of 300 IOPS 4k random reads + 20 MB/s 1 MiB writes (split at 512 KiB by the loop device)."""
    rows = [line.split("\t") for line in (fixtures / "blocktrace" / "blocktrace.tsv").read_text().splitlines()[2:]]
    reads = [r for r in rows if r[2] == "D" and r[3] == "R"]
    writes = [r for r in rows if r[2] == "D" and r[3] == "WS"]
    assert len(reads) == 1200 and {r[5] for r in reads} == {"4096"}
    assert sum(int(r[5]) for r in writes) == 80 * 2**20
    assert sum(1 for r in rows if r[2] == "C") == len(reads) + len(writes)


def test_lost_event_markers_are_counted():
    text = "CPU:0 [LOST 42 EVENTS]\n  fio-1 [000] ..... 1.000000: block_rq_issue: 7,0 R 4096 () 8 + 8 be,0,4 [fio]\n"
    stats = fmt.ParseStats()
    rows = list(fmt.parse_tracepoint(io.StringIO(text), {}, 0.0, stats))
    assert fmt.count_lost(io.StringIO(text)) == stats.lost == 42
    assert rows[0].device == "7,0" and rows[0].bytes == 4096


def test_older_kernels_without_ioprio_parse():
    line = "  kworker/u4:2-77 [001] d..1. 5.5: block_rq_complete: 8,0 WS () 2048 + 16 [0]\n"
    (row,) = fmt.parse_tracepoint([line], {(8, 0): "sda"}, 10.0, fmt.ParseStats())
    assert (row.time_s, row.device, row.action, row.rwbs, row.sector, row.bytes, row.comm) == \
        (15.5, "sda", "C", "WS", 2048, 8192, "kworker/u4:2")
