"""Role node_budget's module on this machine's real cgroup v1 hierarchies, and spillway-in-budget putting a command
into them: the groups it makes carry the cluster root's id, hold the limits asked for, take the processes started
through the script, and go (their processes moved out first) when the budget goes. Nothing but groups named after
this test's own cluster id is created or removed."""
import importlib.util
import os
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from spillway import PLAYBOOKS

ROLE = PLAYBOOKS / "roles" / "node_budget"
CGROUPS = Path("/sys/fs/cgroup")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not (CGROUPS / "memory").is_dir() or not (CGROUPS / "cpu").is_dir(),
                                reason="needs root and the cgroup v1 memory and cpu hierarchies, as the harness does")


def module():
    spec = importlib.util.spec_from_file_location("spillway_node_budget", ROLE / "library" / "spillway_node_budget.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


@pytest.fixture
def budget(tmp_path):
    """The module's parameters for a throwaway cluster root of this test; its groups removed whatever happens."""
    budget_module = module()
    (tmp_path / "bin").mkdir()
    (tmp_path / "run").mkdir()
    params = {"cgroup_root": str(CGROUPS), "cluster": "budgettest", "host": "localhost",
              "cluster_id": secrets.token_hex(8), "memory_bytes": 0, "cpu_quota_us": 0, "cpu_period_us": 100000,
              "list_file": str(tmp_path / "run" / "node-cgroups"), "state": "present"}
    yield budget_module, params
    budget_module.apply({**params, "state": "absent"}, check_mode=False)


def command_of(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except FileNotFoundError:   # ended since it was listed
        return None


def groups_of(pid):
    """controller -> the process's group (a hierarchy may carry several controllers: cpu,cpuacct)."""
    groups = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, group = line.split(":", 2)
        groups.update(dict.fromkeys(controllers.split(","), group))
    return groups


def test_a_budget_is_put_in_place_entered_changed_and_removed(budget, tmp_path):
    budget_module, params = budget
    name = f"spillway.budgettest.localhost.{params['cluster_id']}"
    memory, cpu = CGROUPS / "memory" / name, CGROUPS / "cpu" / name

    changes, groups = budget_module.apply({**params, "memory_bytes": 3 << 30, "cpu_quota_us": 150000}, False)
    assert groups == [str(memory), str(cpu)] and changes
    assert (memory / "memory.limit_in_bytes").read_text().strip() == str(3 << 30)
    assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "150000"
    assert Path(params["list_file"]).read_text() == f"{memory}\n{cpu}\n"
    # the same budget again: nothing to do
    assert budget_module.apply({**params, "memory_bytes": 3 << 30, "cpu_quota_us": 150000}, False)[0] == []

    # a command started through the script runs inside both groups, and so do its children
    script = tmp_path / "bin" / "spillway-in-budget"
    script.write_bytes((ROLE / "files" / "spillway-in-budget").read_bytes())
    script.chmod(0o755)
    sleeper = subprocess.Popen([str(script), "sh", "-c", "sleep 60 & wait"], env={**os.environ, "SPILLWAY_ROOT": ""})
    try:
        # until the script has exec'd the shell and the shell has started sleep (the script's own command
        # substitutions, before it joins, are children too, for an instant)
        for _ in range(100):
            children = Path(f"/proc/{sleeper.pid}/task/{sleeper.pid}/children").read_text().split()
            if children and all(command_of(pid) == "sleep" for pid in children):
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the command's child never started: children {children}")
        for pid in [sleeper.pid, *children]:
            assert groups_of(pid)["memory"] == f"/{name}" and groups_of(pid)["cpu"] == f"/{name}", pid

        # the CPU budget goes, the memory one changes: the process stays where the memory budget is
        changes, groups = budget_module.apply({**params, "memory_bytes": 2 << 30}, False)
        assert groups == [str(memory)] and not cpu.exists()
        assert (memory / "memory.limit_in_bytes").read_text().strip() == str(2 << 30)
        assert Path(params["list_file"]).read_text() == f"{memory}\n"
        assert groups_of(sleeper.pid)["cpu"] != f"/{name}"

        # no budget: the group goes, its processes moved out first, the listing removed
        changes, groups = budget_module.apply(params, False)
        assert groups == [] and not memory.exists() and not Path(params["list_file"]).exists()
        assert any("moved out" in change for change in changes), changes
        assert groups_of(sleeper.pid)["memory"] != f"/{name}"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_only_plain_names_make_a_group_and_a_listing_of_other_paths_is_refused(budget, tmp_path):
    budget_module, params = budget
    with pytest.raises(ValueError, match="host '../x' is not a plain name"):
        budget_module.apply({**params, "host": "../x", "memory_bytes": 1 << 30}, False)
    # the script joins only groups of the node budget's form: a listing pointing elsewhere is refused, nothing runs
    script = tmp_path / "bin" / "spillway-in-budget"
    script.write_bytes((ROLE / "files" / "spillway-in-budget").read_bytes())
    script.chmod(0o755)
    Path(params["list_file"]).write_text("/sys/fs/cgroup/memory\n")
    proc = subprocess.run([str(script), "touch", str(tmp_path / "ran")], capture_output=True, text=True,
                          env={**os.environ, "SPILLWAY_ROOT": ""})
    assert proc.returncode == 2 and "not a node budget's group" in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_absent_without_a_cluster_root_changes_nothing(budget):
    budget_module, params = budget
    assert budget_module.apply({**params, "cluster_id": "", "state": "absent"}, False) == ([], [])


def test_cold_empties_the_groups_page_cache_and_keeps_its_processes_memory(budget, tmp_path):
    budget_module, params = budget
    name = f"spillway.budgettest.localhost.{params['cluster_id']}"
    memory = CGROUPS / "memory" / name
    assert budget_module.make_cold(params, False) == ([], {})   # no budget, no listing: nothing to do
    budget_module.apply({**params, "memory_bytes": 1 << 30}, False)
    data = tmp_path / "block"
    with open(data, "wb") as handle:
        handle.write(os.urandom(64 << 20))
        handle.flush()
        os.fsync(handle.fileno())
        # out of this test's page cache, so that reading it inside the budget charges its pages there
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    script = tmp_path / "bin" / "spillway-in-budget"
    script.write_bytes((ROLE / "files" / "spillway-in-budget").read_bytes())
    script.chmod(0o755)
    # inside the budget: 32 MiB of its own memory, then 64 MiB of file read into the page cache
    holder = subprocess.Popen(
        [str(script), "python3", "-c",
         f"import sys, time; held = bytearray(32 << 20); held[::4096] = b'x' * len(held[::4096]); "
         f"open({str(data)!r}, 'rb').read(); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "SPILLWAY_ROOT": ""})
    try:
        assert holder.stdout.readline().strip() == "ready"
        stat = dict(line.split() for line in (memory / "memory.stat").read_text().splitlines())
        assert int(stat["cache"]) >= 32 << 20, stat   # the file's pages are charged to the group
        changes, cache = budget_module.make_cold(params, False)
        after = dict(line.split() for line in (memory / "memory.stat").read_text().splitlines())
        assert cache[str(memory)]["before"] >= 32 << 20 and cache[str(memory)]["after"] < 4 << 20, cache
        assert int(after["cache"]) < 4 << 20 and int(after["rss"]) >= 32 << 20, after
        assert holder.poll() is None and groups_of(holder.pid)["memory"] == f"/{name}"
        assert changes
    finally:
        holder.kill()
        holder.wait()
    # a listing naming another node's group: refused, nothing emptied
    other = CGROUPS / "memory" / f"spillway.budgettest.otherhost.{params['cluster_id']}"
    Path(params["list_file"]).write_text(f"{memory}/../{other.name}\n")
    with pytest.raises(RuntimeError, match="not this node's memory group"):
        budget_module.make_cold(params, False)


def test_a_command_killed_by_the_budgets_oom_killer_is_named_as_such(budget, tmp_path):
    budget_module, params = budget
    budget_module.apply({**params, "memory_bytes": 64 << 20}, False)
    script = tmp_path / "bin" / "spillway-in-budget"
    script.write_bytes((ROLE / "files" / "spillway-in-budget").read_bytes())
    script.chmod(0o755)
    env = {**os.environ, "SPILLWAY_ROOT": ""}
    # 256 MiB touched inside a 64 MiB budget (no swap here): the kernel's OOM killer ends it
    greedy = subprocess.run([str(script), "--name-oom", "python3", "-c",
                             "held = bytearray(256 << 20); held[::4096] = b'x' * len(held[::4096])"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert greedy.returncode == 137, (greedy.returncode, greedy.stderr)
    assert "the node budget's OOM killer ended 1 process(es) on this node" in greedy.stderr, greedy.stderr
    assert "memory limit 64 MiB" in greedy.stderr and "raise spillway_node.memory_gib" in greedy.stderr
    # a command that fails on its own is not blamed on the budget, one that succeeds says nothing
    failing = subprocess.run([str(script), "--name-oom", "sh", "-c", "exit 3"], capture_output=True, text=True, env=env)
    assert failing.returncode == 3 and failing.stderr == ""
    fine = subprocess.run([str(script), "--name-oom", "true"], capture_output=True, text=True, env=env)
    assert fine.returncode == 0 and fine.stderr == ""
