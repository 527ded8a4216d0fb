"""Benches on the emulated 4-node cluster over SSH, and what real clusters do to them: a full data disk and a
worker's link cut, a DataNode and a NodeManager (with its executors) killed, in the middle of a bench. Each
fault asserts the outcome the harness promises: the run completes when the cluster can carry on, else the failure
is named, and whatever was collected is kept.

Two benches (each costs minutes of CI): a TeraSort that loses a DataNode and a NodeManager, then a fio sweep that
meets a full disk and a cut link. Root, about 10 minutes. Brings `emu` up (shared with test_emu_cluster.py, whose
last test tears it down; else the session's end does): do not run it while someone uses that cluster.
"""
import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from live_emu import CLUSTER, sh
from spillway import REPO
from spillway.inventory import load as load_inventory

pytestmark = pytest.mark.integration

WORKERS = ["worker1", "worker2", "worker3"]
# Short, but every code path: each backend, reads and writes, small and large requests.
FIO = "fio-sweep.patterns=read,write fio-sweep.block_sizes=64k,1m fio-sweep.file_size=64m"
# Spark's TeraSort writes and reads HDFS with the cluster's replication (2 on emu): a lost DataNode leaves a copy.
# Four input files and four output partitions: more tasks than the three executors run at once, so some task is in
# flight for most of the sort (with two of each, a CI run once saw the whole sort end between two looks).
SPARK_SORT = "terasort.engine=spark terasort.rows=1000000 terasort.maps=4 terasort.reducers=4"


def on(host, command, check=True):
    """A shell command on a node, over SSH as the bench reaches it."""
    return sh(*load_inventory(CLUSTER).ssh_command(host), command, check=check)


def root_of(host):
    return load_inventory(CLUSTER).spillway_root(host)


def bench(bench_process, workloads, params):
    # WARMUP=0: these benches are about collection and faults over SSH, not about measurements; a warm-up (the bench's
    # default after a provisioning, docs/compare.md) would add a Spark TeraSort of minutes to each.
    run = bench_process("--cluster", CLUSTER, "--workloads", workloads, "--params", params, "--warmup", "0")
    run.manifest()  # reads the run directory off the bench's first lines
    return run


# The benches of this module so far (the cluster is the module's): the first one provisions it from scratch.
BENCHES = []


def finished(run, timeout=1800):
    returncode, output = run.finish(timeout)
    BENCHES.append(run.run_dir)
    return returncode, output, run.manifest()


def workload(manifest, workload_id):
    """The workload run's record and its steps by name (without the workload id)."""
    (record,) = [w for w in manifest["workloads"] if w["id"] == workload_id]
    return record, {s["name"].split(": ", 1)[1]: s for s in record["steps"]}


TASK_LINE = re.compile(r"(Running task|Finished task|Exception in task|killed task) \S+ in stage \S+ \(TID (\d+)\)")


def tasks_in_flight(worker, since):
    """The Spark tasks the worker's executors started and have not ended, by their container logs (stderr, Spark's
    INFO log) written after `since` (epoch seconds; earlier benches' containers are still there), and whether one of
    those containers is the application's ApplicationMaster."""
    lines = on(worker, f"logs=$(find {root_of(worker)}/logs/containers -name stderr -newermt @{since:.0f}); "
                       "[ -z \"$logs\" ] || grep -H -E 'Running task|Finished task|Exception in task|killed task|"
                       "Registering the ApplicationMaster' $logs", check=False).stdout.splitlines()
    started, ended, has_am = set(), set(), False
    for line in lines:
        log, _, message = line.partition(":")
        has_am = has_am or "Registering the ApplicationMaster" in message
        if task := TASK_LINE.search(message):
            (started if task[1] == "Running task" else ended).add((log, task[2]))
    return started - ended, has_am


def signal_nodemanager_tree(worker, signal_name):
    """Signal the worker's NodeManager and every process it started (the containers: executors, maybe the AM). The
    nodes share the machine's PID namespace: only that NodeManager's tree."""
    on(worker, f"nm=$(head -n 1 {root_of(worker)}/run/nodemanager.pid); tree=$nm; level=$nm; "
               "while [ -n \"$level\" ]; do level=$(for p in $level; do pgrep -P $p; done); tree=\"$tree $level\"; done; "
               f"kill -{signal_name} $tree")


def kill_a_nodemanager_with_tasks_in_flight(run, since, timeout=600):
    """SIGKILL the NodeManager of a worker whose executor runs a task, with its containers, as when the node's YARN
    dies; the worker is returned. A task seen running may end before the kill (a faster machine ended them all
    before a kill that came by the clock): the tree is stopped first (SIGSTOP) and killed only if the frozen logs
    still show a task in flight, else it runs on (SIGCONT) and the search goes on. Preferably a worker without the
    application's ApplicationMaster: YARN learns of a dead NodeManager's containers only when it declares the node
    lost (45 s on emu: its yarn.nm.liveness-monitor.expiry-interval-ms), so a lost AM would hold the run up."""
    deadline = time.monotonic() + timeout
    first_seen = None
    looks = 0
    # One look at every worker at once: looked at one after another over SSH, a look took seconds on a loaded
    # machine, as long as a task of this tiny sort.
    with ThreadPoolExecutor(len(WORKERS)) as pool:
        while time.monotonic() < deadline:
            if run.proc.poll() is not None:
                _, output = run.finish()
                raise AssertionError(f"the bench ended before a task was seen in flight ({looks} looks at the workers "
                                     f"in {time.time() - since:.0f} s since the sort's step began); its output's "
                                     f"end:\n{output[-3000:]}")
            flight = dict(zip(WORKERS, pool.map(lambda worker: tasks_in_flight(worker, since), WORKERS)))
            looks += 1
            busy = [worker for worker, (tasks, _) in flight.items() if tasks]
            if busy:
                first_seen = first_seen or time.monotonic()
                executors_only = [worker for worker in busy if not flight[worker][1]]
                # The other executor may start its first task later (a loaded 2-core machine: 10 s were not always
                # enough); the AM's node only as a last resort, its loss holds the run up for minutes.
                if executors_only or time.monotonic() - first_seen > 30:
                    worker = (executors_only or busy)[0]
                    signal_nodemanager_tree(worker, "STOP")
                    if tasks_in_flight(worker, since)[0]:
                        signal_nodemanager_tree(worker, "KILL")
                        return worker
                    signal_nodemanager_tree(worker, "CONT")
            time.sleep(0.2)
    raise TimeoutError(f"no executor had a task in flight within {timeout} s")


def spark_events(run):
    """Every event of every Spark application of the terasort workload, by application."""
    events = {}
    for log in (run.run_dir / "raw" / "master" / "eventlog" / "terasort" / "eventlogs").iterdir():
        events[log.name] = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return events


def test_tiny_bench_over_ssh_collects_from_every_worker_and_carries_on_when_a_datanode_and_a_nodemanager_die(
        emu, bench_process, start_what_stopped, tmp_path):
    # One bench for the collection over SSH and two faults (each bench on this cluster is minutes of CI): the
    # DataNode dies first, so the sort also reads and writes HDFS with a replica missing; then a whole YARN node
    # goes, executors included, with tasks in flight. The fio sweep over SSH, on every worker, is a later test's.
    run = bench(bench_process, "terasort", SPARK_SORT)
    run.wait_for_step("terasort", ": run")
    sort_started = time.time()
    # Least privilege and the node budget, read while every daemon still runs: each Hadoop daemon of each node in
    # its node's memory group (inventories/emu: 4 GiB, no CPU budget).
    expected = {"master": {"namenode": "spillway-hdfs", "resourcemanager": "spillway-yarn",
                           "historyserver": "spillway-mapred"}}
    expected |= {worker: {"datanode": "spillway-hdfs", "nodemanager": "spillway-yarn"} for worker in WORKERS}
    for host, daemons in expected.items():
        for daemon in daemons:
            groups = on(host, f"cat /proc/$(head -n 1 {root_of(host)}/run/{daemon}.pid)/cgroup").stdout
            assert f":memory:/spillway.emu.{host}." in groups, (host, daemon, groups)
    pid = on("worker2", f"head -n 1 {root_of('worker2')}/run/datanode.pid").stdout.strip()
    on("worker2", f"kill -KILL {pid}")
    lost_node = kill_a_nodemanager_with_tasks_in_flight(run, since=sort_started)
    returncode, output, manifest = finished(run)
    # The killed daemons started again as an operator would, before anything below can fail: the next test's bench
    # then finds the cluster serving (a failure here once cost the next test its unchanged provisioning).
    started = start_what_stopped(CLUSTER, tmp_path)
    assert returncode == 0, output[-4000:]
    assert manifest["status"] == "completed"
    assert {w["id"]: w["status"] for w in manifest["workloads"]} == {"terasort": "ok"}
    _, steps = workload(manifest, "terasort")
    assert steps["validate"]["status"] == "ok"

    # Collected from every worker, the lost NodeManager's node included (its collectors are not YARN's).
    raw = run.run_dir / "raw"
    for worker in WORKERS:
        assert (raw / worker / "iostat" / "terasort" / "iostat.json").stat().st_size > 0, worker
        assert any(p.stat().st_size > 0 for p in (raw / worker / "blocktrace" / "terasort").iterdir()), worker
    assert list((raw / "master" / "eventlog" / "terasort").iterdir()), "the driver's event log"
    report = (run.run_dir / "report.html").read_text()
    assert all(worker in report for worker in WORKERS)
    # Every Hadoop daemon of every node runs as its service user, as facts.yml read it from the running processes
    # (docs/safety.md), and each node's budget as the kernel held it, with the collector's window on every node.
    hadoop = {name for names in expected.values() for name in names}
    assert {host: {name: user for name, user in facts["daemon_users"].items() if name in hadoop}
            for host, facts in manifest["hosts"].items()} == expected
    assert {host: facts["node_budget"] for host, facts in manifest["hosts"].items()} == {
        host: {"memory_bytes": 4 << 30, "cores": None} for host in ["master", *WORKERS]}
    for host in expected:
        snapshot = json.loads((raw / host / "node-budget" / "terasort" / "node-budget.stop").read_text())
        assert snapshot["memory"]["limit_in_bytes"] == 4 << 30 and snapshot["memory"]["oom_kill"] == 0, host

    # Every task the lost node's executors had in flight was computed again, successfully, elsewhere. A lost task is
    # one that started there and never ended well: Spark records it as failed when it learns of the executor's loss,
    # or not at all when a FetchFailed resubmitted its stage first and the job ended before that (a CI-like run: the
    # zombie task 9 has no end event). Matched by partition, not by the task's index, which counts within a stage
    # attempt (a resubmitted stage runs only the missing partitions: partition 1 is then index 0).
    retried = {}
    for app, events in spark_events(run).items():
        started_there = {e["Task Info"]["Task ID"]: e for e in events
                         if e["Event"] == "SparkListenerTaskStart" and e["Task Info"]["Host"] == lost_node}
        ends = [e for e in events if e["Event"] == "SparkListenerTaskEnd"]
        ended_well = {e["Task Info"]["Task ID"] for e in ends if e["Task End Reason"]["Reason"] == "Success"}
        lost = [task for tid, task in started_there.items() if tid not in ended_well]
        for task in lost:
            assert any(e["Task End Reason"]["Reason"] == "Success" and e["Task Info"]["Host"] != lost_node
                       and (e["Stage ID"], e["Task Info"]["Partition ID"])
                       == (task["Stage ID"], task["Task Info"]["Partition ID"]) for e in ends), (app, task)
        if lost:
            retried[app] = len(lost)
        assert all(e["Job Result"]["Result"] == "JobSucceeded" for e in events if e["Event"] == "SparkListenerJobEnd")
    assert retried, f"no task of {lost_node}'s executors was lost: the kill came too late"
    print(f"\ntasks lost on {lost_node} and run again elsewhere, per application: {retried}")

    assert started.ok, started.failures


def test_a_full_data_disk_and_a_worker_cut_off_are_named_and_what_was_collected_is_kept(emu, bench_process):
    # One fio sweep for both faults (each bench is minutes of CI). worker1's SSD filled up by someone else before the
    # sweep: its HDD points come first and are kept, the SSD file cannot be laid out (fio's file from earlier runs
    # goes first: fio would reuse it). worker3's link cut in the middle of the sweep. worker2 measures every point.
    mount = f"{root_of('worker1')}/mnt/ssd"
    provisioned_before = bool(BENCHES)
    run = bench(bench_process, "fio-sweep", FIO)
    try:
        run.wait_for_step("fio-sweep", "health check, start collectors")
        # every block fio (root) could get: nine tenths of them in one allocation (no data written), the rest
        # written until the disk refuses. ext4 counts blocks it keeps for itself among the free ones, so no
        # computed size fills it exactly; `sync` first: a deleted file's blocks are allocatable once committed.
        on("worker1", f"rm -f {mount}/fio/sweep.dat && sync -f {mount}/ && fallocate -l "
                      f"$(( $(stat -f -c '%f * %S' {mount}/) * 9 / 10 )) {mount}/spillway-test-fill && "
                      f"{{ dd if=/dev/zero of={mount}/spillway-test-fill-rest bs=4M status=none || true; }}")
        run.wait_for_step("fio-sweep", ": run")
        time.sleep(3)
        sh("ip", "-n", emu.bridge_namespace, "link", "set", "worker3", "down")
        returncode, output, manifest = finished(run)
    finally:
        sh("ip", "-n", emu.bridge_namespace, "link", "set", "worker3", "up")
        on("worker1", f"rm -f {mount}/spillway-test-fill {mount}/spillway-test-fill-rest", check=False)
        # worker3's collectors never heard the stop: stopped as an operator would (playbooks/collectors.yml), so they
        # do not trace the next bench's disks
        sh(str(REPO / ".venv/bin/ansible-playbook"), "-i", f"inventories/{CLUSTER}", "playbooks/collectors.yml",
           "--limit", "worker3", "-e", "collectors_action=stop", "-e", f"run_id={run.manifest()['run_id']}",
           "-e", "workload_id=fio-sweep", check=False)
    assert returncode != 0 and manifest["status"] == "failed"
    # provisioned by the module's first bench and serving: the check over SSH found every node's record of the same
    # inputs and skipped the provisioning
    (provision,) = [s for s in manifest["steps"] if s["name"] == "provision"]
    if provisioned_before:
        assert provision["unchanged"] is True and provision["ansible_changed"] == 0, \
            f"see {run.run_dir / provision['check_log']}"
    record, steps = workload(manifest, "fio-sweep")
    assert steps["run"]["status"] == "failed"
    # each fault named with its host and what to do, the run resumable
    assert "a disk is full (No space left on device) on worker1" in steps["run"]["error"], steps["run"]["error"]
    assert f"RESUME={manifest['run_id']}" in steps["run"]["error"]
    assert "No space left on device" in output
    assert "worker3" in steps["run"].get("unreachable_hosts", []) + \
        steps["stop collectors, fetch outputs"].get("unreachable_hosts", []), steps
    assert "worker3" in steps["stop collectors, fetch outputs"].get("unreachable_hosts", []) \
        or any("worker3" in w for w in record.get("warnings", [])), record
    # what the reachable workers collected is kept: worker1's points before the fault, worker2's every point
    raw = run.run_dir / "raw"
    assert list((raw / "worker1" / "workload" / "fio-sweep").glob("fio-hdd-*.json")), "points before the fault"
    assert {p.name for p in (raw / "worker2" / "workload" / "fio-sweep").glob("fio-*.json")} == {
        f"fio-{backend}-{pattern}-{bs}.json" for backend in ("hdd", "ssd") for pattern in ("read", "write")
        for bs in ("64k", "1m")}
    for worker in ("worker1", "worker2"):
        assert (raw / worker / "iostat" / "fio-sweep" / "iostat.json").stat().st_size > 0, worker
        assert any(p.stat().st_size > 0 for p in (raw / worker / "blocktrace" / "fio-sweep").iterdir()), worker
    # the step's own lines reached the terminal from the node that ran them (worker1: its points before the fault)
    assert "fio hdd" in output.split("fio-sweep: run ...")[1].split("fio-sweep: run: FAILED")[0]
    assert "fio-sweep" in (run.run_dir / "report.html").read_text()


def test_a_datanode_that_never_registers_is_named_with_every_workers_log(emu, tmp_path):
    # The provisioned cluster seen through an inventory with a fourth worker whose address no DataNode has: the
    # health check must say which worker is missing and where each worker's log is, not only count.
    if not BENCHES:
        pytest.skip("needs the cluster the module's first bench provisioned")
    inventory = tmp_path / CLUSTER
    shutil.copytree(REPO / "inventories" / CLUSTER, inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    hosts["all"]["hosts"]["worker4"] = {**hosts["all"]["hosts"]["worker3"], "ansible_host": "10.77.0.14"}
    hosts["all"]["children"]["workers"]["hosts"]["worker4"] = None
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    result = sh(str(REPO / ".venv/bin/ansible-playbook"), "-i", str(inventory), "playbooks/health.yml",
                "-e", '{"hadoop_health_timeout": 6, "hadoop_safemode_timeout": 6}', check=False)
    message = " ".join(result.stdout.split())
    seen = f"{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
    assert result.returncode != 0, seen
    assert "3 live DataNodes, 4 workers expected; registered: " in message, seen
    assert "none has the address of worker4." in message, seen
    for worker in WORKERS:
        assert f"{worker} ({root_of(worker)}/logs/datanode.log):" in message, seen
