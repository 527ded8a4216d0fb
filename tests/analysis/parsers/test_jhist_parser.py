"""MapReduce .jhist recorded by the mr-history collector on real TeraGens (Hadoop 3.4.2): Avro-Binary
(Hadoop 3's default) and Avro-Json (mapreduce.jobhistory.jhist.format=json)."""
import pytest

from analysis.parsers.jhist import COUNTER_COLUMNS, parse_jhist
from conftest import FIXTURES

JHISTS = sorted(FIXTURES.rglob("*.jhist"))


@pytest.mark.parametrize("path", JHISTS, ids=[p.parent.name for p in JHISTS])
def test_job_and_counters(path):
    job, counters = parse_jhist(path)
    assert job["job_id"].startswith("job_") and job["job_id"] in path.name and job["status"] == "SUCCEEDED"
    assert job["finish_time_ms"] >= job["launch_time_ms"] >= job["submit_time_ms"] > 1e12
    assert job["total_maps"] >= 1 and job["map_phase_start_ms"] <= job["map_phase_end_ms"]
    assert counters and set(counters[0]) == set(COUNTER_COLUMNS)
    values = {(c["scope"], c["name"]): c["value"] for c in counters}
    assert values[("total", "HDFS_BYTES_WRITTEN")] > 0
    assert values[("total", "MAP_OUTPUT_RECORDS")] == values[("map", "MAP_OUTPUT_RECORDS")] > 0
    assert job["duration_s"] == (job["finish_time_ms"] - job["launch_time_ms"]) / 1e3


def test_both_encodings_are_covered():
    assert {path.read_bytes().split(b"\n", 1)[0] for path in JHISTS} == {b"Avro-Binary", b"Avro-Json"}
