"""The bench's provisioning step (spillway/runner.py `_provision_unless_unchanged`): skipped when its check passes,
a placement switch (playbooks/placement.yml) when the check found only the placement changed, provision.yml in
full for anything else and after a failed switch. The playbooks are stood in for by their outcomes here; the
integration tests (tests/integration/test_experiments.py) run them for real."""
import pytest

from spillway import run_record
from spillway.ansible import PlaybookResult
from spillway.runner import Bench

SWITCHABLE = ("TASK [Require the same inputs and a serving cluster]\nfatal: [localhost]: FAILED! =>\n    msg: |-\n"
              "        provisioning needed: only the placement changed since the last provisioning;\n"
              "        cluster serves; every supervised process runs; placement switch possible")
CHANGED = SWITCHABLE.replace("only the placement changed", "inputs changed").replace("; placement switch possible", "")


@pytest.fixture
def bench(tmp_path, monkeypatch):
    monkeypatch.setattr(run_record, "RESULTS", tmp_path)
    bench = Bench(cluster="local", workload_names=["terasort"], scale="tiny", repeat=1,
                  placement="hdfs=hdd,local=ssd;hdfs=ssd,local=hdd")
    bench.run = run_record.RunDirectory.create("r1")
    bench.played = []

    def play(outcomes):
        def fake(playbook, log_name, **extra_vars):
            bench.played.append((playbook, sorted(extra_vars)))
            ok, failures = outcomes[playbook]
            return PlaybookResult(returncode=0 if ok else 2, log_path=bench.run.path / "logs" / f"{log_name}.log",
                                  changed=0 if playbook == "provision-check.yml" else 3, failures=failures)
        bench._play = fake
        bench.placement = {"hdfs": "ssd", "local": "hdd"}
        bench._provision_unless_unchanged("provision (hdfs=ssd, local=hdd)", "provision-hdfs_ssd-local_hdd")
        (step,) = bench.run.manifest["steps"]
        return step
    bench.provision_with = play
    return bench


def test_a_check_that_found_only_the_placement_changed_switches_it(bench, capsys):
    step = bench.provision_with({"provision-check.yml": (False, [SWITCHABLE]), "placement.yml": (True, [])})
    assert [p for p, _ in bench.played] == ["provision-check.yml", "placement.yml"]
    # the check compares both digests; the switch gets the bench's variables, the record's digests among them
    assert {"provision_digest", "provision_base_digest"} <= set(bench.played[0][1])
    assert {"provision_digest", "provision_base_digest", "spillway_placement"} <= set(bench.played[1][1])
    assert step["name"] == "provision (hdfs=ssd, local=hdd)" and step["status"] == "ok"
    assert step["unchanged"] is False and step["switch"] is True
    assert step["log"] == step["switch_log"] == "logs/provision-hdfs_ssd-local_hdd.switch.log"
    assert step["ansible_changed"] == 3
    assert "provision (hdfs=ssd, local=hdd): placement switch: ok" in capsys.readouterr().out


def test_a_failed_switch_provisions_in_full_and_says_so(bench, capsys):
    step = bench.provision_with({"provision-check.yml": (False, [SWITCHABLE]),
                                 "placement.yml": (False, ["TASK [x]\nfatal: [localhost]: FAILED! => boom"]),
                                 "provision.yml": (True, [])})
    assert [p for p, _ in bench.played] == ["provision-check.yml", "placement.yml", "provision.yml"]
    assert step["status"] == "ok" and step["switch"] is False
    assert step["log"] == "logs/provision-hdfs_ssd-local_hdd.log"
    assert "placement switch: FAILED" in capsys.readouterr().out


def test_other_changes_provision_in_full_without_a_switch(bench, capsys):
    step = bench.provision_with({"provision-check.yml": (False, [CHANGED]), "provision.yml": (True, [])})
    assert [p for p, _ in bench.played] == ["provision-check.yml", "provision.yml"]
    assert "switch" not in step and step["unchanged"] is False
    assert "provisioning in full" in capsys.readouterr().out


def test_an_unchanged_cluster_is_neither_switched_nor_provisioned(bench):
    step = bench.provision_with({"provision-check.yml": (True, [])})
    assert [p for p, _ in bench.played] == ["provision-check.yml"]
    assert step["unchanged"] is True and "switch" not in step
