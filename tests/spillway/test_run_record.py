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
