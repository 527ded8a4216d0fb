"""MapReduce .jhist job history recorded by the mr-history collector on a real TeraSort."""
from analysis.parsers.jhist import COUNTER_COLUMNS, parse_jhist
from conftest import recorded


def test_job_and_counters():
    job, counters = parse_jhist(recorded("*.jhist"))
    assert job["job_id"].startswith("job_") and job["status"] == "SUCCEEDED"
    assert job["finish_time_ms"] >= job["launch_time_ms"] >= job["submit_time_ms"] > 1e12
    assert job["total_maps"] >= 1 and job["map_phase_start_ms"] <= job["map_phase_end_ms"]
    assert counters and set(counters[0]) == set(COUNTER_COLUMNS)
    names = {(c["scope"], c["name"]) for c in counters}
    assert ("total", "HDFS_BYTES_READ") in names and ("map", "MAP_OUTPUT_RECORDS") in names
