"""MapReduce .jhist (Avro-Binary) recorded by the mr-history collector on a real TeraGen (Hadoop 3.4.2)."""
from analysis.parsers.jhist import COUNTER_COLUMNS, parse_jhist
from conftest import recorded


def test_job_and_counters():
    job, counters = parse_jhist(recorded("*.jhist"))
    assert job["job_id"].startswith("job_") and job["status"] == "SUCCEEDED"
    assert job["finish_time_ms"] >= job["launch_time_ms"] >= job["submit_time_ms"] > 1e12
    assert job["total_maps"] >= 1 and job["map_phase_start_ms"] <= job["map_phase_end_ms"]
    assert counters and set(counters[0]) == set(COUNTER_COLUMNS)
    values = {(c["scope"], c["name"]): c["value"] for c in counters}
    assert values[("total", "HDFS_BYTES_WRITTEN")] > 0
    assert values[("total", "MAP_OUTPUT_RECORDS")] == values[("map", "MAP_OUTPUT_RECORDS")] > 0
    assert job["duration_s"] == (job["finish_time_ms"] - job["launch_time_ms"]) / 1e3
