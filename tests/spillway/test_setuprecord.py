"""The setup record check that `make test` and the live tests run before provisioning an inventory: a package the
inventory's setup ensured but that is missing now, or a setup that never ran, fails with `make setup` named."""
import json
import re
import shutil
import subprocess
import sys

from spillway import REPO, setuprecord


def write_record(tmp_path, cluster, packages):
    (tmp_path / "setup").mkdir(exist_ok=True)
    (tmp_path / "setup" / f"{cluster}.json").write_text(json.dumps({"cluster": cluster, "debian_packages": packages}))


def test_a_record_whose_packages_are_installed_has_no_problem(tmp_path):
    write_record(tmp_path, "pfs", ["bash", "coreutils"])
    assert setuprecord.problems("pfs", tmp_path) == []


def test_a_missing_package_is_named_with_the_setup_that_installs_it(tmp_path):
    write_record(tmp_path, "pfs", ["bash", "spillway-no-such-package"])
    (problem,) = setuprecord.problems("pfs", tmp_path)
    assert "spillway-no-such-package" in problem and "bash," not in problem
    assert problem.endswith("Fix: make setup CLUSTER=pfs")


def test_a_setup_that_never_ran_names_its_fix(tmp_path):
    (problem,) = setuprecord.problems("emu", tmp_path)
    assert "never set up" in problem and problem.endswith("Fix: make setup CLUSTER=emu")


def test_a_malformed_record_names_its_fix(tmp_path):
    (tmp_path / "setup").mkdir()
    (tmp_path / "setup" / "local.json").write_text('{"debian_packages": "fio"}')
    (problem,) = setuprecord.problems("local", tmp_path)
    assert "no list 'debian_packages'" in problem and "make setup CLUSTER=local" in problem
    (tmp_path / "setup" / "local.json").write_text("{")
    (problem,) = setuprecord.problems("local", tmp_path)
    assert "unreadable" in problem


def test_the_command_fails_on_a_cluster_never_set_up():
    result = subprocess.run([sys.executable, "-m", "spillway.setuprecord", "check", "spillway-never-set-up"],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 1
    assert "Fix: make setup CLUSTER=spillway-never-set-up" in result.stderr


def test_make_test_sets_up_every_inventory_a_live_test_provisions():
    """Each live test names its inventory in a module constant CLUSTER (or provisions the local default):
    make test must set up each of them, or its tests would need what only an earlier manual step installed."""
    provisioned = {"local"} | {
        match for path in (REPO / "tests").rglob("*.py")
        for match in re.findall(r'^CLUSTER = "([\w-]+)"', path.read_text(), re.MULTILINE)
        if (REPO / "inventories" / match).is_dir()}
    test_clusters = re.search(r"^TEST_CLUSTERS := (.*)$", (REPO / "Makefile").read_text(), re.MULTILINE).group(1)
    assert provisioned <= set(test_clusters.split()), f"add {provisioned - set(test_clusters.split())} to TEST_CLUSTERS"


# --- make bench skips a setup that would change nothing ---------------------------------------------------------

def scratch_repo(tmp_path):
    """The setup's inputs and two inventories, copied: nothing of the checkout changes."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "playbooks", repo / "playbooks", ignore=shutil.ignore_patterns("__pycache__"))
    for name in (*setuprecord.INPUT_FILES, "inventories/local", "inventories/emu"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        copy(REPO / name, repo / name)
    return repo


def test_the_setup_digest_follows_the_playbooks_and_the_clusters_inventory_only(tmp_path):
    repo = scratch_repo(tmp_path)
    first = setuprecord.inputs_digest("local", repo)
    assert len(first) == 64 and first == setuprecord.inputs_digest("local", repo)
    with open(repo / "inventories/emu/group_vars/all.yml", "a") as handle:
        handle.write("\n# another cluster's change\n")
    assert setuprecord.inputs_digest("local", repo) == first
    for changed in ("playbooks/roles/packages/defaults/main.yml", "inventories/local/group_vars/all.yml",
                    "workloads/requirements.txt"):
        before = setuprecord.inputs_digest("local", repo)
        with open(repo / changed, "a") as handle:
            handle.write("\n# changed\n")
        assert setuprecord.inputs_digest("local", repo) != before, changed


def test_a_setup_is_skipped_only_with_the_same_inputs_and_every_package_installed(tmp_path):
    repo = scratch_repo(tmp_path)
    cache = tmp_path / "cache"

    def record(packages, digest):
        (cache / "setup").mkdir(parents=True, exist_ok=True)
        (cache / "setup" / "local.json").write_text(json.dumps(
            {"cluster": "local", "debian_packages": packages, "inputs_digest": digest}))

    same, why = setuprecord.unchanged("local", cache, repo)
    assert not same and "never set up" in why
    record(["bash"], setuprecord.inputs_digest("local", repo))
    same, why = setuprecord.unchanged("local", cache, repo)
    assert same and "not run again" in why and "make setup CLUSTER=local runs it anyway" in why
    record(["bash", "spillway-no-such-package"], setuprecord.inputs_digest("local", repo))
    same, why = setuprecord.unchanged("local", cache, repo)
    assert not same and "spillway-no-such-package" in why
    record(["bash"], "0" * 64)   # a record from before a change of the playbooks, or from before the digest
    same, why = setuprecord.unchanged("local", cache, repo)
    assert not same and "changed since it last ran" in why
    record(["bash"], None)
    assert not setuprecord.unchanged("local", cache, repo)[0]
