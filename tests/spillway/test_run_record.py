"""raw/<host>/ written from facts.yml's reading of a host (spillway/run_record.py `host-facts`)."""
import json
import subprocess
import sys

import pytest

from spillway import REPO
from spillway.run_record import write_host_facts

PAYLOAD = {"facts": {"hostname": "w1", "vcpus": 2}, "storage": '{"backends": {}}\n', "monitoring": None}


def test_host_facts_from_stdin_land_in_the_hosts_raw_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spillway.run_record", "host-facts", str(tmp_path), "worker1.lan"],
                          input=json.dumps(PAYLOAD), capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    raw = tmp_path / "raw" / "worker1.lan"
    assert json.loads((raw / "facts.json").read_text()) == PAYLOAD["facts"]
    assert (raw / "storage.json").read_text() == PAYLOAD["storage"]   # the host's record as it holds it
    assert not (raw / "monitoring.json").exists()                       # none on a host that has none


@pytest.mark.parametrize("host", ["../elsewhere", "a/b", ".hidden", "", "w1\n"])
def test_a_host_name_that_is_not_a_plain_name_is_refused_before_anything_is_written(tmp_path, host):
    with pytest.raises(ValueError, match="not a plain host name"):
        write_host_facts(tmp_path / "run", host, PAYLOAD)
    assert not (tmp_path / "run").exists()


def resumable_run(tmp_path, **parameters):
    run = tmp_path / "20260101-000000-local"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({
        "run_id": run.name, "status": "interrupted", "cluster": "local",
        "parameters": {"workloads": ["terasort"], "scale": "tiny", "repeat": 1, **parameters}}))
    return run


def resumable(run):
    return subprocess.run([sys.executable, "-m", "spillway.run_record", "resumable", str(run)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("field, value", [
    ("repeat", 1e20), ("repeat", 10**20), ("repeat", "x"), ("repeat", -1), ("repeat", 0), ("repeat", 1.5),
    ("repeat", 101), ("group_warmups", "yes"),
    ("repeat", True), ("repeat", None), ("executor_cores", [0]), ("executor_cores", [1e20]), ("executor_cores", ["2"]),
    ("executor_cores", 2), ("executor_cores", []), ("warmup", "yes"), ("drop_caches", 1), ("storage_probe", None),
    ("monitoring", "off"), ("spark_versions", ["3.5.6; touch x"]), ("placements", [{"hdfs": "a;b", "local": "c"}]),
    ("placements", [{"hdfs": "hdd"}]),
])
def test_a_resumed_manifests_plan_numbers_and_switches_are_refused_naming_the_field(tmp_path, field, value):
    """repeat 1e20 gave a TypeError, 10**20 exhausted memory, "x" a TypeError, deep in planning."""
    result = resumable(resumable_run(tmp_path, **{field: value}))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"parameters.{field}:" in result.stderr and "cannot be resumed" in result.stderr, result.stderr


def test_a_resumed_manifests_recorded_plan_passes(tmp_path):
    run = resumable_run(tmp_path, repeat=3, executor_cores=[None, 2], warmup=True, drop_caches=False,
                        storage_probe=False, monitoring=None, spark_versions=[None, "3.5.6"],
                        placements=[{"hdfs": "hdd", "local": "ssd"}])
    assert resumable(run).returncode == 0
