"""iostat and blocktrace on a host whose data paths have no block device of their own (a pfs worker: the volume
is mounted over the network): start and stop run for real, say so in nothing-here.txt, start nothing and fail
nothing; without that knowledge an empty device list is still an error."""
import os
import subprocess

import pytest

from spillway import REPO


def run(collector, action, out, devices="", deviceless=""):
    env = dict(os.environ, SPILLWAY_ROOT=str(out.parent), SPILLWAY_OUT=str(out), SPILLWAY_RUN_ID="test",
               SPILLWAY_WORKLOAD_ID="w", SPILLWAY_DEVICES=devices, SPILLWAY_DEVICELESS_BACKENDS=deviceless)
    return subprocess.run([str(REPO / "collectors" / collector / action)], env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("collector", ["iostat", "blocktrace"])
def test_a_host_without_a_device_under_its_backends_has_nothing_to_record(collector, tmp_path):
    out = tmp_path / collector
    for action in ("start", "stop"):
        result = run(collector, action, out, deviceless="pfs")
        assert result.returncode == 0 and result.stderr == "", result.stderr
    reason = (out / "nothing-here.txt").read_text()
    assert "backends pfs have none of their own" in reason
    assert not (out / "collector-error.txt").exists() and not (out / ".pid").exists()


@pytest.mark.parametrize("collector", ["iostat", "blocktrace"])
def test_an_empty_device_list_without_that_reason_is_an_error(collector, tmp_path):
    out = tmp_path / collector
    run(collector, "start", out)
    assert "SPILLWAY_DEVICES is empty" in (out / "collector-error.txt").read_text()
    assert not (out / "nothing-here.txt").exists()
