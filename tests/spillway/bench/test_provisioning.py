"""A bench's provisioning (spillway/bench/provisioning.py). The digest of what a provisioning is made from: the same
inputs give the same digest, and each kind of input, changed alone, gives another, so the bench never skips a
provisioning that would change something (a scratch copy of the inputs: nothing of the checkout is changed). The
provisioning step: skipped when its check passes, a placement switch (playbooks/placement.yml) when the check found
only the placement changed, provision.yml in full for anything else and after a failed switch (the playbooks stood in
for by their outcomes; the integration tests, tests/integration/test_experiments.py, run them for real). And what a
provisioning step records of the daemons it started."""
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from spillway import REPO, run_record
from spillway.ansible import PlaybookResult
from spillway.bench import provisioning
from spillway.bench.plan import count_steps, new_plan
from spillway.bench.provisioning import Provisioning, record_daemon_starts
from spillway.bench.steps import Steps
from spillway.inventory import load

EXTRA = {"provision_health_check": False, "spillway_placement": {"hdfs": "hdd", "local": "ssd"}}


@pytest.fixture
def scratch(tmp_path):
    """A copy of the provisioning's inputs (and the local inventory) with a setup record of its own."""
    repo = tmp_path / "repo"
    for folder in (*provisioning.INPUT_FOLDERS, "inventories/local"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in provisioning.INPUT_FILES:
        shutil.copy(REPO / name, repo / name)
    cache = tmp_path / "cache"
    (cache / "setup").mkdir(parents=True)
    (cache / "setup/local.json").write_text('{"packages": ["fio"]}\n')
    inventory = load("local", check_overlaps=False)
    inventory.path = repo / "inventories/local"
    return repo, cache, inventory


def digest(scratch, extra=EXTRA):
    repo, cache, inventory = scratch
    return provisioning.digest(inventory, extra, repo=repo, cache_dir=cache)


def test_the_same_inputs_give_the_same_digest(scratch):
    first = digest(scratch)
    assert len(first) == 64 and first == digest(scratch)
    # Python's bytecode caches are no input: the interpreter writes them as it likes
    repo = scratch[0]
    (repo / "collectors/__pycache__").mkdir(exist_ok=True)
    (repo / "collectors/__pycache__/x.cpython-311.pyc").write_bytes(b"\0")
    assert digest(scratch) == first


@pytest.mark.parametrize("change", ["role task", "collector", "workload job code", "inventory", "storage profiles",
                                    "setup record", "placement", "monitoring override", "new file"])
def test_each_input_changed_alone_changes_the_digest(scratch, change):
    repo, cache, inventory = scratch
    before = digest(scratch)
    extra = EXTRA

    def append(path: Path):
        path.write_text(path.read_text() + "\n# changed\n")

    if change == "role task":
        append(repo / "playbooks/roles/hadoop/tasks/ready.yml")
    elif change == "collector":
        append(repo / "collectors/iostat/collector.yml")
    elif change == "workload job code":
        append(repo / "workloads/terasort/workload.yml")
    elif change == "inventory":
        append(repo / "inventories/local/group_vars/all.yml")
    elif change == "storage profiles":
        (repo / "inventories").mkdir(exist_ok=True)
        append(repo / "inventories/storage-profiles.yml")
    elif change == "setup record":
        (cache / "setup/local.json").write_text('{"packages": ["fio", "sysstat"]}\n')
    elif change == "placement":
        extra = {**EXTRA, "spillway_placement": {"hdfs": "ssd", "local": "ssd"}}
    elif change == "monitoring override":
        extra = {**EXTRA, "spillway_monitoring": {"enabled": False}}
    elif change == "new file":
        (repo / "playbooks/roles/spark/templates/extra.conf.j2").write_text("x\n")
    assert digest(scratch, extra) != before


def test_a_missing_setup_record_is_an_input_too(scratch):
    before = digest(scratch)
    (scratch[1] / "setup/local.json").unlink()
    assert digest(scratch) != before


def test_clusters_with_storage_servers_always_provision(scratch):
    inventory = scratch[2]
    assert provisioning.can_skip(inventory)
    inventory.groups = {**inventory.groups, "pfs_servers": ["st1"]}
    assert not provisioning.can_skip(inventory)


# -- the placement switch (issue 19) ----------------------------------------------------------------------------------
def bench_vars(scratch, placement, overrides=None):
    repo, cache, inventory = scratch
    return provisioning.bench_vars(inventory, placement, overrides or {}, repo=repo, cache_dir=cache)


def test_the_base_digest_is_the_same_for_every_placement_and_the_full_digest_is_not(scratch):
    hdd = bench_vars(scratch, {"hdfs": "hdd", "local": "ssd"})
    ssd = bench_vars(scratch, {"hdfs": "ssd", "local": "hdd"})
    assert hdd["provision_base_digest"] == ssd["provision_base_digest"]
    assert hdd["provision_digest"] != ssd["provision_digest"]
    assert hdd["provision_base_digest"] not in (hdd["provision_digest"], ssd["provision_digest"])
    # the full digest is the one a bench always computed: the placement among the extra variables
    assert hdd["provision_digest"] == digest(scratch, EXTRA)
    assert hdd["provision_base_digest"] == digest(scratch, {"provision_health_check": False})


@pytest.mark.parametrize("change", ["role task", "inventory", "setup record", "monitoring override"])
def test_any_other_input_changed_changes_the_base_digest_too(scratch, change):
    repo, cache, _ = scratch
    before = bench_vars(scratch, {"hdfs": "hdd", "local": "ssd"})
    overrides = {}
    if change == "role task":
        (repo / "playbooks/roles/storage/tasks/data_dirs.yml").write_text("---\n")
    elif change == "inventory":
        path = repo / "inventories/local/group_vars/all.yml"
        path.write_text(path.read_text() + "\n# changed\n")
    elif change == "setup record":
        (cache / "setup/local.json").write_text('{"packages": []}\n')
    elif change == "monitoring override":
        overrides = {"spillway_monitoring": {"enabled": False}}
    after = bench_vars(scratch, {"hdfs": "ssd", "local": "ssd"}, overrides)
    assert after["provision_base_digest"] != before["provision_base_digest"]


CHECK_FAILURE = ("TASK [Require the same inputs and a serving cluster]\nfatal: [localhost]: FAILED! => "
                 '{"msg": "provisioning needed: %s"}')
SWITCHABLE = CHECK_FAILURE % ("only the placement changed since the last provisioning; cluster serves; every "
                              "supervised process runs; placement switch possible")
INPUTS_CHANGED = CHECK_FAILURE % ("inputs changed since the last provisioning; cluster serves; every supervised "
                                  "process runs")


def test_a_failed_check_that_found_only_the_placement_changed_on_every_host_allows_the_switch(scratch):
    inventory = scratch[2]
    assert provisioning.can_switch(inventory, [SWITCHABLE])
    assert provisioning.can_switch(inventory, [SWITCHABLE, SWITCHABLE.replace("localhost", "w2")])


@pytest.mark.parametrize("failures", [
    [],  # the check passed: nothing to switch
    [INPUTS_CHANGED],
    [CHECK_FAILURE % "no record of a provisioning that ended well; cluster serves; every supervised process runs"],
    [CHECK_FAILURE % "only the placement changed since the last provisioning; not serving: namenode down; every "
                     "supervised process runs"],
    # one host can switch, another cannot (or another task failed, or the host was unreachable)
    [SWITCHABLE, CHECK_FAILURE.replace("localhost", "w2") % "inputs changed since the last provisioning"],
    [SWITCHABLE, "TASK [Read the provisioning record]\nfatal: [w2]: UNREACHABLE! => {}"],
], ids=["passed", "inputs changed", "no record", "not serving", "one host differs", "unreachable"])
def test_anything_else_provisions_in_full(scratch, failures):
    assert not provisioning.can_switch(scratch[2], failures)


def test_clusters_with_storage_servers_never_switch(scratch):
    inventory = scratch[2]
    inventory.groups = {**inventory.groups, "pfs_servers": ["st1"]}
    assert not provisioning.can_switch(inventory, [SWITCHABLE])


@pytest.fixture
def provision(tmp_path, monkeypatch):
    """provision_with({playbook: (ok, failures)}): the provisioning step on a two-placement plan, its playbooks
    stood in for by those outcomes (`played`: what ran, with its extra vars' names); its manifest entry."""
    monkeypatch.setattr(run_record, "RESULTS", tmp_path)
    plan = new_plan(cluster="local", workload_names=["terasort"], scale="tiny", repeat=1,
                    placement="hdfs=hdd,local=ssd;hdfs=ssd,local=hdd")
    steps = Steps(plan.inventory, run_record.RunDirectory.create("r1"), count_steps(plan.instances),
                  plan.monitoring_override)
    played = []

    def provision_with(outcomes):
        def fake(playbook, log_name, **extra_vars):
            played.append((playbook, sorted(extra_vars)))
            ok, failures = outcomes[playbook]
            return PlaybookResult(returncode=0 if ok else 2, log_path=steps.run.path / "logs" / f"{log_name}.log",
                                  changed=0 if playbook == "provision-check.yml" else 3, failures=failures)
        steps.play = fake
        steps.placement = {"hdfs": "ssd", "local": "hdd"}
        Provisioning(steps, plan.several_placements).provision_unless_unchanged(
            "provision (hdfs=ssd, local=hdd)", "provision-hdfs_ssd-local_hdd")
        (step,) = steps.run.manifest["steps"]
        return step
    return SimpleNamespace(played=played, provision_with=provision_with)


def test_a_check_that_found_only_the_placement_changed_switches_it(provision, capsys):
    step = provision.provision_with({"provision-check.yml": (False, [SWITCHABLE]), "placement.yml": (True, [])})
    assert [p for p, _ in provision.played] == ["provision-check.yml", "placement.yml"]
    # the check compares both digests; the switch gets the bench's variables, the record's digests among them
    assert {"provision_digest", "provision_base_digest"} <= set(provision.played[0][1])
    assert {"provision_digest", "provision_base_digest", "spillway_placement"} <= set(provision.played[1][1])
    assert step["name"] == "provision (hdfs=ssd, local=hdd)" and step["status"] == "ok"
    assert step["unchanged"] is False and step["switch"] is True
    assert step["log"] == step["switch_log"] == "logs/provision-hdfs_ssd-local_hdd.switch.log"
    assert step["ansible_changed"] == 3
    assert "provision (hdfs=ssd, local=hdd): placement switch: ok" in capsys.readouterr().out


def test_a_failed_switch_provisions_in_full_and_says_so(provision, capsys):
    step = provision.provision_with({"provision-check.yml": (False, [SWITCHABLE]),
                                     "placement.yml": (False, ["TASK [x]\nfatal: [localhost]: FAILED! => boom"]),
                                     "provision.yml": (True, [])})
    assert [p for p, _ in provision.played] == ["provision-check.yml", "placement.yml", "provision.yml"]
    assert step["status"] == "ok" and step["switch"] is False
    assert step["log"] == "logs/provision-hdfs_ssd-local_hdd.log"
    assert "placement switch: FAILED" in capsys.readouterr().out


def test_other_changes_provision_in_full_without_a_switch(provision, capsys):
    step = provision.provision_with({"provision-check.yml": (False, [INPUTS_CHANGED]), "provision.yml": (True, [])})
    assert [p for p, _ in provision.played] == ["provision-check.yml", "provision.yml"]
    assert "switch" not in step and step["unchanged"] is False
    assert "provisioning in full" in capsys.readouterr().out


def test_an_unchanged_cluster_is_neither_switched_nor_provisioned(provision):
    step = provision.provision_with({"provision-check.yml": (True, [])})
    assert [p for p, _ in provision.played] == ["provision-check.yml"]
    assert step["unchanged"] is True and "switch" not in step


def test_a_provisioning_step_keeps_the_daemons_it_started_and_not_those_that_ran_before_it():
    def epoch(text):
        return datetime.fromisoformat(f"2026-11-28T{text}+00:00").timestamp()

    manifest = {"steps": [{"name": "provision", "started_at": "2026-11-28T06:00:00.000+00:00"},
                          {"name": "provision (hdfs=ssd, local=hdd)", "started_at": "2026-11-28T06:05:00.000+00:00"}],
                "hosts": {"w1": {"daemon_cpu": {"namenode": {"cpu_s": 5.7, "started_epoch_s": epoch("06:05:10")},
                                                "datanode": {"cpu_s": 4.9, "started_epoch_s": epoch("06:04:59.5")},
                                                "resourcemanager": {"cpu_s": 9.0, "started_epoch_s": epoch("06:00:20")}}},
                          "master": {}}}
    saved = []
    record_daemon_starts(SimpleNamespace(manifest=manifest, save=lambda: saved.append(True)),
                         "provision (hdfs=ssd, local=hdd)")
    # the ResourceManager ran from the first provisioning on; a start half a second early is the clocks' tick
    assert manifest["steps"][1]["daemon_starts"] == [{"host": "w1", "daemon": "datanode", "cpu_s": 4.9},
                                                     {"host": "w1", "daemon": "namenode", "cpu_s": 5.7}]
    assert "daemon_starts" not in manifest["steps"][0] and saved


# load_facts on a stand-in run and inventory, in a process of its own under an address-space limit of 512 MiB that
# reading a 16 GiB record whole would exceed; exit 3 with the refusal.
LOAD_FACTS = """
import sys
from pathlib import Path
from types import SimpleNamespace
from spillway.bench.provisioning import load_facts
from spillway.run_record import StepFailed
run = SimpleNamespace(path=Path(sys.argv[1]), manifest={"hosts": {}}, save=lambda: None)
try:
    load_facts(run, SimpleNamespace(hosts=["worker1"]))
except StepFailed as refusal:
    print(refusal)
    sys.exit(3)
print(run.manifest)
"""


@pytest.mark.parametrize("record, kind", [("facts.json", "one byte over the cap"), ("storage.json", "16 GiB"),
                                          ("facts.json", "16 GiB"), ("storage.json", "a FIFO"),
                                          ("storage.json", "a link to a file outside the run")])
def test_a_hosts_record_over_its_cap_or_not_a_file_is_refused_unread_naming_it(tmp_path, record, kind):
    """A resumed run directory is untrusted input: a host's facts.json or storage.json (sparse, so the test writes
    nothing), a FIFO (reading it blocked the bench) or a link is refused, naming the file and the cap, unread; the
    host's other record is a normal one."""
    raw = tmp_path / "run/raw/worker1"
    raw.mkdir(parents=True)
    (raw / ({"facts.json", "storage.json"} - {record}).pop()).write_text('{"backends": {}}\n')
    path = raw / record
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind.startswith("a link"):
        (tmp_path / "elsewhere.json").write_text("{}\n")
        path.symlink_to(tmp_path / "elsewhere.json")
    else:
        with open(path, "wb") as sparse:
            sparse.truncate(run_record.MANIFEST_MAX_BYTES + 1 if kind.startswith("one byte") else 16 * 2**30)
    result = subprocess.run(["bash", "-c", f"ulimit -v {512 * 1024} && exec \"$@\"", "bash", sys.executable, "-c",
                             LOAD_FACTS, str(tmp_path / "run")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 3 and "Traceback" not in result.stderr, result.stdout + result.stderr
    problem = {"a FIFO": "not a regular file", "a link to a file outside the run": "a symbolic link, not followed"}
    assert result.stdout.startswith(f"{path}: {problem.get(kind, 'larger than 64 MiB')}, not read: a host's facts.json "
                                    "and storage.json are read only as regular files of at most 64 MiB"), result.stdout
    assert "remove it and run again (playbooks/facts.yml writes the host's records anew)" in result.stdout
