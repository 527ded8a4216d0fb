"""fio JSON/JSON+ outputs recorded on this machine (tests/fixtures/tools/fio*, see README there)."""
import pytest

from analysis.parsers.fio import issue_seconds, parse_fio_json, parse_size_bytes
from conftest import TOOLS


@pytest.mark.parametrize("text, expected", [("4k", 4096), ("1m", 1 << 20), ("16M", 16 << 20), ("4KiB", 4096),
                                            ("512", 512), ("1g", 1 << 30)])
def test_sizes_are_fio_powers_of_two(text, expected):
    assert parse_size_bytes(text) == expected


def test_sweep_point_job_takes_backend_from_description_and_rw_bs_from_options():
    [row] = parse_fio_json(TOOLS / "fio-sweep" / "fio-tmp-randwrite-4k.json")
    assert (row["backend"], row["rw"], row["direction"], row["block_size_bytes"], row["iodepth"]) == \
        ("tmp", "randwrite", "write", 4096, 16)
    assert row["device"] == "vda"
    assert row["bandwidth_bytes_per_s"] > 1e6 and row["iops"] > 100
    # bandwidth = IOPS x block size, within fio's rounding
    assert row["bandwidth_bytes_per_s"] == pytest.approx(row["iops"] * 4096, rel=0.01)
    assert 0 < row["lat_mean_s"] < 1 and row["runtime_s"] == pytest.approx(1.0, abs=0.1)


def test_named_job_takes_backend_from_jobname():
    rows = {(r["rw"], r["block_size_bytes"]): r for path in sorted((TOOLS / "fio").glob("*.json"))
            for r in parse_fio_json(path)}
    assert set(rows) == {(rw, bs) for rw in ("randread", "write") for bs in (4096, 65536, 1 << 20)}
    assert {r["backend"] for r in rows.values()} == {"tmp"}
    # Larger requests move more bytes per request: IOPS falls as the block size grows.
    assert rows[("randread", 4096)]["iops"] > rows[("randread", 1 << 20)]["iops"]


def test_json_plus_latency_bins_hold_every_io_and_give_fio_percentiles():
    from analysis.parsers.fio import LATENCY_BIN_COLUMNS, parse_fio_latency_bins
    import json
    for path in sorted((TOOLS / "fio-sweep").glob("*.json")):
        bins = parse_fio_latency_bins(path)
        [row] = parse_fio_json(path)
        assert bins and set(bins[0]) == set(LATENCY_BIN_COLUMNS)
        side = json.loads(path.read_text())["jobs"][0][row["direction"]]
        counts = [b["count"] for b in bins]
        assert sum(counts) == side["clat_ns"]["N"]
        # fio's percentiles come from this histogram: the 99th is the first bin reaching 99 %.
        total, cumulative = sum(counts), 0
        for b in bins:
            cumulative += b["count"]
            if cumulative >= 0.99 * total:
                assert b["clat_s"] == pytest.approx(row["lat_p99_s"], rel=0.02)
                break
    assert parse_fio_latency_bins(TOOLS / "fio" / "fio-tmp-write-4k.json") == []      # plain json: no bins


def test_a_time_based_point_records_how_long_fio_issued_io_apart_from_its_runtime():
    """A sweep write point's runtime_s includes the drain of the drive's write cache (end_fsync); issue_s is the
    window fio issued writes in, which the hdd expectation of random writes needs (analysis/models/hdd_datasheet.py)."""
    [row] = parse_fio_json(TOOLS / "fio-sweep-media" / "fio-hdd-write-64k.json")
    assert row["issue_s"] == 3.0 and row["runtime_s"] > row["issue_s"]


@pytest.mark.parametrize("options, expected", [({"time_based": "1", "runtime": "3"}, 3.0),
                                               ({"time_based": "1", "runtime": "1500ms"}, 1.5),
                                               ({"time_based": "1", "runtime": "2m"}, 120.0),
                                               ({"runtime": "3"}, None), ({"time_based": "1"}, None)])
def test_issue_seconds_takes_fio_time_units_and_is_nan_for_a_job_that_ran_to_its_size(options, expected):
    seconds = issue_seconds(options)
    assert seconds == expected if expected is not None else seconds != seconds


@pytest.mark.parametrize("runtime", ["3x", "-1", "0", "99999999", "1e9"])
def test_a_runtime_option_fio_never_ran_is_refused_with_its_value(runtime):
    with pytest.raises(ValueError, match="runtime"):
        issue_seconds({"time_based": "1", "runtime": runtime})
