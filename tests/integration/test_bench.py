"""The tiny bench for real on the local default: provision, the fio sweep and the whole workload suite
(TeraSort on MapReduce and Spark, TPC-H on Spark SQL, K-means, GATK4), collectors, tables and report; then
the assertions the foundation and the workload suite promise."""
import json
import os
import pwd
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis.parsers.step_logs import timing_lines
from spillway import REPO, inventory
from spillway.ansible import run_playbook
from spillway.bench import provisioning

from overlapping_inventories import try_overlapping_inventories
from cluster_users import DAEMON_USERS, HADOOP, SERVICE_USERS, as_workload_user
from headless_chromium import BrowserError, HeadlessChromium
from collector_processes import CollectorSampler, declared_users
from listening_sockets import Sampler, allowed_on_every_address

pytestmark = pytest.mark.integration
HDD_MODEL = inventory.storage_profiles()["profiles"]["hdd"]["model"]
EXAMPLES_JAR = str(next(Path("/opt/spillway/hadoop-3.4.2/lib").glob("hadoop-mapreduce-examples-*.jar"), ""))


LOCAL_ROOT = Path("/var/lib/spillway/local")
# The progress line of the step during which inventories sharing local's resources try to bench and tear down: GATK4's
# run, the suite's longest, which no assertion times.
OVERLAP_WINDOW = "gatk4: run ..."


@pytest.fixture(scope="module")
def bench_and_overlap(tmp_path_factory):
    """The default bench as the README runs it, what overlapping inventories met while it ran
    (overlapping_inventories.py), the sockets its processes listened on (listening_sockets.py) and the collectors'
    processes with their users (collector_processes.py)."""
    scratch = tmp_path_factory.mktemp("overlap")
    with open(scratch / "stderr.txt", "w+") as stderr, Sampler(set(SERVICE_USERS.values())) as sockets, \
            CollectorSampler([LOCAL_ROOT]) as collectors:
        proc = subprocess.Popen(["make", "-s", "bench"], cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                stdin=subprocess.DEVNULL)
        lines, overlap = [], None
        try:
            for line in proc.stdout:
                lines.append(line)
                if overlap is None and OVERLAP_WINDOW in line:
                    overlap = try_overlapping_inventories(scratch)
                    overlap["bench_running_after"] = proc.poll() is None
            proc.wait(timeout=3600)
        finally:
            if proc.poll() is None:
                proc.kill()
        stderr.seek(0)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines), stderr.read())
    print(result.stdout[-6000:], result.stderr[-3000:])
    report = Path(result.stdout.strip().splitlines()[-1])
    return (result, report.parent), overlap, sockets, collectors


@pytest.fixture(scope="module")
def bench(bench_and_overlap):
    return bench_and_overlap[0]


def table(run_dir, name):
    return pd.read_parquet(run_dir / "tables" / f"{name}.parquet")


def test_bench_completes_and_prints_the_report_path_last(bench):
    proc, run_dir = bench
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (run_dir / "report.html").is_file()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    # issue 42: a warm-up after the provisioning and after every placement switch, recorded as such
    assert [w["id"] for w in manifest["workloads"]] == manifest["plan"] == [
        "terasort-spark-warmup", "fio-sweep", "terasort-mapreduce", "terasort-spark", "tpch", "kmeans", "gatk4",
        "terasort-spark-hdfs_ssd-local_hdd-warmup", "terasort-spark-hdfs_ssd-local_hdd",
        "terasort-spark-hdfs_ssd-local_hdd-r2", "terasort-spark-warmup2", "terasort-spark-r2", "terasort-spark-r3",
        "terasort-spark-hdfs_ssd-local_hdd-warmup2", "terasort-spark-hdfs_ssd-local_hdd-r3"]
    assert {w["status"] for w in manifest["workloads"]} == {"ok"}
    assert [w["id"] for w in manifest["workloads"] if w["warmup"]] == [
        "terasort-spark-warmup", "terasort-spark-hdfs_ssd-local_hdd-warmup", "terasort-spark-warmup2",
        "terasort-spark-hdfs_ssd-local_hdd-warmup2"]
    assert manifest["parameters"]["storage_probe"] is True
    assert all(s["duration_s"] is not None for s in manifest["steps"])
    assert manifest["emulation"]["profiles"]["hdd"]["model"] == HDD_MODEL
    assert manifest["hosts"]["localhost"]["versions"]["hadoop"].endswith("3.4.2")


def test_while_the_bench_runs_inventories_sharing_its_resources_are_refused_and_its_daemons_keep_running(
        bench_and_overlap):
    overlap = bench_and_overlap[1]
    assert overlap is not None, f"the bench never printed {OVERLAP_WINDOW!r}: nothing was tried while it ran"
    before, after = overlap["before"], overlap["after"]
    assert before and overlap["dead_before"] == [], before
    assert [(o["cluster"], o["target"]) for o in overlap["outcomes"]] == [
        (cluster, target) for cluster in ("t17-live-host", "t17-live-root") for target in ("bench", "teardown")]
    for outcome in overlap["outcomes"]:
        assert outcome["returncode"] != 0, outcome
        assert outcome["says"] in outcome["stderr"], outcome
        assert "PLAY [" not in outcome["stdout"] and "Traceback" not in outcome["stderr"], outcome
    assert after == before and overlap["dead_after"] == [], (before, after, overlap["dead_after"])
    assert overlap["bench_running_after"], "the bench ended while the other inventories were refused"


def test_the_reports_page_opens_offline_with_the_findings_first_and_each_workloads_io_pattern(bench, tmp_path):
    # The default bench's own report, as a person opens it (the recorded runs' pages have their browser tests in
    # tests/analysis/presentation): Debian's headless Chromium, offline; every measured workload's block trace drawn
    # as its heat map beside its common access sizes and sequential share.
    _, run_dir = bench
    report = run_dir / "report.html"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    try:
        browser = HeadlessChromium(tmp_path / "chromium-profile")
    except BrowserError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        browser.open(report)
        assert browser.problems() == []
        requested = browser.requested_urls()
        assert [url for url in requested if not url.startswith("data:image/png;base64,")] == [report.resolve().as_uri()]
        assert browser.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
        top, first_finding_bottom, height = browser.evaluate("""(() => { const h = document.getElementById('findings');
            return [h.getBoundingClientRect().top, h.nextElementSibling.getBoundingClientRect().bottom,
                    window.innerHeight]; })()""")
        assert 0 <= top and first_finding_bottom <= height
        views = browser.evaluate("""Array.from(document.querySelectorAll('h3[id^="io-pattern-"]')).map(h => {
            let text = '', node = h.nextElementSibling;
            for (; node && node.tagName !== 'H3' && node.tagName !== 'H2'; node = node.nextElementSibling)
                text += ' ' + node.outerHTML;
            return [h.id.slice('io-pattern-'.length), text.includes('class="muted io-pattern-missing"'),
                    text.split('alt="I/O heat map during').length - 1]; })""")
        assert {workload: (missing, heat_maps) for workload, missing, heat_maps in views} == {
            w["id"]: (False, 1) for w in manifest["workloads"]}
    finally:
        browser.close()


@pytest.mark.parametrize("engine", ["mapreduce", "spark"])
def test_teravalidate_passes(bench, engine):
    _, run_dir = bench
    verdict = (run_dir / "raw/localhost/workload" / f"terasort-{engine}" / "teravalidate.txt").read_text()
    assert "checksum" in verdict and "error" not in verdict.lower()


def test_hibench_report_has_hibench_s_line_for_each_workload_run_with_an_input(bench):
    _, run_dir = bench
    lines = (run_dir / "hibench.report").read_text().splitlines()
    assert lines[0].split() == ["Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
                                "Throughput/node"]
    rows = {fields[0]: fields for fields in map(str.split, lines[1:])}
    assert set(rows) == {"HadoopTerasort", "ScalaSparkTerasort", "SpillwayTpch", "ScalaSparkKmeans"}, lines
    for engine, type_ in (("mapreduce", "HadoopTerasort"), ("spark", "ScalaSparkTerasort")):
        prepared = json.loads((run_dir / "raw/localhost/workload" / f"terasort-{engine}" / "prepare.json").read_text())
        assert int(rows[type_][3]) == prepared["bytes"] == prepared["rows"] * 100
        assert isinstance(prepared["generated"], bool) and prepared["generate_s"] >= 0
    for fields in rows.values():
        assert float(fields[4]) > 0 and int(fields[5]) == int(int(fields[3]) // float(fields[4]))


def test_the_mapreduce_job_history_was_copied_over_webhdfs(bench):
    # collectors/mr-history reads the JobHistoryServer's files through WebHDFS as the collect user (no client JVM)
    _, run_dir = bench
    jobs = table(run_dir, "mr_jobs")
    sort = jobs[(jobs.workload_id == "terasort-mapreduce") & (jobs.job_name == "TeraSort")]
    assert list(sort.status) == ["SUCCEEDED"], jobs[["workload_id", "job_name", "status"]]
    assert not list((run_dir / "raw/localhost/mr-history/terasort-mapreduce").glob("collector-error.txt"))


def test_the_namenode_counted_each_workloads_files_over_its_jmx(bench):
    # collectors/namenode-ops snapshots the NameNode's counters at the window's start and stop (no client JVM): the
    # TeraSort on Spark created its input and output files and committed its output by renaming it into place
    _, run_dir = bench
    ops = table(run_dir, "namenode_ops")
    activity = ops[(ops.workload_id == "terasort-spark") & (ops.bean == "NameNodeActivity")]
    moved = dict(zip(activity.counter, activity.delta))
    assert moved.get("FilesCreated", 0) >= 4 and moved.get("FilesRenamed", 0) >= 1, moved
    assert (activity.window_s > 0).all()
    assert not list((run_dir / "raw/localhost/namenode-ops/terasort-spark").glob("collector-error.txt"))


def test_hdd_sweep_streams_sequential_reads_and_stays_seek_bound_on_random_ones(bench):
    """The hdd backend is the drive model (issue 21): the sweep's 64 KiB sequential reads at 100 MB/s or more while
    its 4 KiB random reads stay seek-bound, tens to a few hundred IOPS (16 queued and reordered over the sweep's
    256 MiB file: short seeks, so a few hundred)."""
    _, run_dir = bench
    fio = table(run_dir, "fio")
    hdd = fio[fio.backend == "hdd"].set_index(["rw", "block_size_bytes"])
    assert hdd.loc[("read", 65536), "bandwidth_bytes_per_s"] >= 100e6, hdd.loc[("read", 65536)]
    assert 30 <= hdd.loc[("randread", 4096), "iops"] <= 600, hdd.loc[("randread", 4096)]


def test_event_log_shows_terasort_stages_with_shuffle(bench):
    _, run_dir = bench
    stages = table(run_dir, "stages")
    spark = stages[stages.workload_id == "terasort-spark"]
    assert len(spark) >= 2
    # all 200 MB of rows go through the shuffle (compressed by Spark: about 110 MB measured)
    assert spark.shuffle_write_bytes.sum() > 50e6
    assert spark.shuffle_read_bytes.sum() == spark.shuffle_write_bytes.sum()


def test_iostat_saw_io_on_the_hdfs_device(bench):
    _, run_dir = bench
    storage = json.loads((run_dir / "raw/localhost/storage.json").read_text())
    hdfs_device = storage["backends"][storage["placement"]["hdfs"]]["device"]
    iostat = table(run_dir, "iostat")
    during = iostat[(iostat.workload_id == "terasort-mapreduce") & (iostat.device == hdfs_device)]
    assert during.write_bytes_per_s.sum() > 100e6   # TeraGen's 200 MB landed on the emulated HDD


@pytest.mark.parametrize("workload_id", ["terasort-spark", "tpch"])
def test_the_hdfs_device_read_at_least_half_of_what_the_workload_read_from_hdfs(bench, workload_id):
    # the node budget's cold start and HDFS blocks out of the page cache (spillway_hdfs_page_cache: dropped) put a
    # workload's HDFS reads on the device, as on a node whose data is much larger than its memory (docs/cluster.md)
    _, run_dir = bench
    overview = json.loads((run_dir / "findings.json").read_text())["overview"]
    (item,) = [item for item in overview["items"] if item["workload_id"] == workload_id]
    hdfs_read = item["bytes_by_path"]["hdfs_read_bytes"]
    (device,) = [b for b in item["device_bytes_by_backend"] if b["backend"] == item["placement"]["hdfs"]]
    assert hdfs_read > 32 * 2 ** 20, item["bytes_by_path"]
    assert device["read_bytes"] >= 0.5 * hdfs_read, (device, hdfs_read)


def test_the_default_bench_compares_the_backends_measured_for_terasort_and_predicted_for_the_rest(bench):
    # issues 23, 42: the storage probe measured TeraSort on Spark three warm times on each of the two placements, in
    # interleaved order (A B B A A B, the first A the suite's); the findings use their spread as this host's noise,
    # warm-ups left out, and every other workload is predicted with the model's error measured on this run's probe
    _, run_dir = bench
    manifest = json.loads((run_dir / "manifest.json").read_text())
    probe = [w for w in manifest["workloads"] if w["id"].startswith("terasort-spark") and not w["warmup"]]
    assert "".join("A" if w["placement"]["hdfs"] == "hdd" else "B" for w in probe) == "ABBAAB"
    found = json.loads((run_dir / "findings.json").read_text())
    assert found["noise"]["pct"] >= 0 and "terasort" in found["noise"]["source"], found["noise"]
    groups = {(item["workload"], item["sweep"]): item for item in found["sensitivity"]["items"]}
    probe = groups[("terasort", "engine=spark")]
    measured = {(p["hdfs"], p["local"]): p["run_count"] for p in probe["placements"] if p["how"] == "measured"}
    assert measured == {("hdd", "ssd"): 3, ("ssd", "hdd"): 3}, probe["placements"]
    for key in (("tpch", ""), ("kmeans", ""), ("gatk4", "")):
        item = groups[key]
        assert {p["how"] for p in item["placements"]} == {"measured", "predicted"}, item
        assert item["model_error"]["median_abs_pct"] is not None, item["model_error"]
        assert "recorded matrix" not in item["model_error"]["basis"], item["model_error"]
    # the probe's placements are told apart by the noise, never left to "cannot tell" for want of it
    statuses = {rule["rule"]: rule["status"] for rule in found["rules"]}
    cannot_tell = [f for f in found["findings"] if f["rule"] == "cannot-tell" and "terasort" in f["workload_id"]]
    assert statuses["storage-sensitive"] in ("fired", "did not fire") and not cannot_tell, cannot_tell


def test_the_probe_switched_placements_and_each_run_wrote_hdfs_to_its_placements_backend(bench):
    _, run_dir = bench
    manifest = json.loads((run_dir / "manifest.json").read_text())
    provisions = [s for s in manifest["steps"] if s["name"].startswith("provision")]
    assert [s["name"] for s in provisions] == [
        "provision (hdfs=hdd, local=ssd)", "provision (hdfs=ssd, local=hdd)", "provision (hdfs=hdd, local=ssd) again",
        "provision (hdfs=ssd, local=hdd) again", "provision (hdfs=hdd, local=ssd) again (time 3)"]
    # to the probe's placement and back, twice, and back at the end: the placement switch (playbooks/placement.yml)
    # moved both paths each time
    for step in provisions[1:]:
        assert step["switch"] is True, (run_dir / step["check_log"]).read_text()[-3000:]
        # both moves restart the DataNode and the NodeManager; the NodeManager's stop alone took 17 s while it
        # counted finished apps as running until their logs' deletion (yarn.nodemanager.log.retain-seconds)
        stops = [seconds for task, seconds in timing_lines((run_dir / step["switch_log"]).read_text())
                 if task.endswith("Restart the Hadoop daemons whose configuration changed")]
        assert len(stops) == 1 and stops[0] < 10, stops
    storage = json.loads((run_dir / "raw/localhost/storage.json").read_text())
    device = {name: b["device"] for name, b in storage["backends"].items()}
    totals = table(run_dir, "disk_totals")
    runs = {w["id"]: w for w in manifest["workloads"]}
    # the first TeraSort on each HDFS backend (its warm-up): TeraGen's input and the sorted output (rows x 100 bytes
    # each, replication 1) go to that backend's device
    for wid in ("terasort-spark-hdfs_ssd-local_hdd-warmup", "terasort-spark-warmup"):
        run = runs[wid]
        written = totals[totals.workload_id == wid].groupby("device")["write_bytes"].sum()
        assert written.get(device[run["placement"]["hdfs"]], 0) >= 0.8 * run["parameters"]["rows"] * 100, \
            (wid, written.to_dict())
    # each HDFS backend keeps its own namespace and blocks, for the next bench on that placement to reuse
    for backend in ("hdd", "ssd"):
        blocks = Path(f"/var/lib/spillway/local/mnt/{backend}/hdfs/data")
        size = sum(p.stat().st_size for p in blocks.rglob("blk_*") if p.is_file())
        assert size >= runs["terasort-spark"]["parameters"]["rows"] * 100, f"{backend}: {size} bytes of HDFS blocks"
    assert {p.name for p in Path("/var/lib/spillway/local/namenode").iterdir()} >= {"hdd", "ssd"}
    html = (run_dir / "report.html").read_text()
    assert 'id="placement"' in html and "vs fastest placement" in html


def test_second_provisioning_reports_no_changes(bench, tmp_path):
    # run as the bench runs it (its variables and digest): the record it leaves lets the next bench skip it
    local = inventory.load("local")
    result = run_playbook("local", "provision.yml", provisioning.bench_vars(local, dict(local.placement), {}),
                          tmp_path / "provision.log")
    assert result.ok, result.failures
    assert result.changed == 0, (tmp_path / "provision.log").read_text()[-4000:]


def workload_output(run_dir, workload_id, name):
    return run_dir / "raw/localhost/workload" / workload_id / name


@pytest.mark.parametrize("workload_id", ["tpch", "kmeans", "gatk4"])
def test_each_workload_validated_its_output_and_says_whether_its_input_was_generated(bench, workload_id):
    _, run_dir = bench
    verdict = json.loads(workload_output(run_dir, workload_id, "validation.json").read_text())
    assert verdict["ok"] and verdict["problems"] == []
    prepared = json.loads(workload_output(run_dir, workload_id, "prepare.json").read_text())
    assert isinstance(prepared["generated"], bool) and prepared["generate_s"] >= 0


def test_tpch_times_all_22_queries_and_its_stages_map_to_queries(bench):
    _, run_dir = bench
    times = pd.read_csv(workload_output(run_dir, "tpch", "query-times.csv"))
    assert list(times["query"]) == [f"q{n:02d}" for n in range(1, 23)]
    assert (times["seconds"] > 0).all()
    jobs = table(run_dir, "spark_jobs")
    groups = set(jobs[jobs.workload_id == "tpch"]["job_group"].dropna())
    assert {f"q{n:02d}" for n in range(1, 23)} <= groups


def test_kmeans_records_the_cost_of_every_iteration(bench):
    _, run_dir = bench
    iterations = pd.read_csv(workload_output(run_dir, "kmeans", "iterations.csv"))
    assert len(iterations) >= 2 and (iterations["cost"].diff().dropna() <= 1e-6 * iterations["cost"].iloc[0]).all()


def test_gatk4_runs_its_three_tools_as_separate_spark_applications(bench):
    _, run_dir = bench
    apps = table(run_dir, "spark_applications")
    names = " ".join(apps[apps.workload_id == "gatk4"]["app_name"])
    for tool in ("MarkDuplicatesSpark", "BaseRecalibratorSpark", "ApplyBQSRSpark"):
        assert tool in names


def test_every_spark_application_gets_the_executors_the_cluster_plans(bench):
    # An application whose executors do not all fit a worker's offer runs on fewer, after its driver sat idle for
    # spark.scheduler.maxRegisteredResourcesWaitingTime (30 s): GATK's own memoryOverhead did that to each of its
    # three tools until 2026-11-27, 66 s of the GATK4 run's 130 s, all of it inside the measured time.
    _, run_dir = bench
    defaults = Path(inventory.load("local").spillway_root("localhost")) / "etc/spark/spark-defaults.conf"
    (planned,) = [int(line.split()[1]) for line in defaults.read_text().splitlines()
                  if line.split()[:1] == ["spark.executor.instances"]]
    apps = table(run_dir, "spark_applications")
    executors = table(run_dir, "spark_executors")
    executors = executors[executors.executor_id != "driver"].groupby("app_id")["executor_id"].nunique()
    got = {f"{row.workload_id} {row.app_name}": int(executors.get(row.app_id, 0)) for row in apps.itertuples()}
    assert got and all(count >= planned for count in got.values()), (planned, got)


# Least privilege (docs/safety.md): read from the running processes, never from configuration.
def process_users(marker):
    """{pid: (user, command line)} of every live process whose command line holds marker."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            user = pwd.getpwuid(proc.stat().st_uid).pw_name
        except (FileNotFoundError, ProcessLookupError, KeyError):
            continue
        if marker in cmdline:
            found[int(proc.name)] = (user, cmdline)
    return found


def test_every_hadoop_daemon_runs_as_its_service_user_and_the_manifest_says_so(bench):
    _, run_dir = bench
    daemons = process_users("-Dspillway.daemon=/var/lib/spillway/local/")
    running = {cmdline.split("-Dspillway.daemon=/var/lib/spillway/local/")[1].split()[0]: user
               for user, cmdline in daemons.values()}
    assert running == DAEMON_USERS
    assert "root" not in running.values()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    recorded = manifest["hosts"]["localhost"]["daemon_users"]
    assert {name: user for name, user in recorded.items() if name in DAEMON_USERS} == DAEMON_USERS
    # and the other supervised daemons: the monitoring processes, the collect user's; the hdd backend's disk model
    # server (role emulated_storage), its own user's
    assert {name: user for name, user in recorded.items() if name not in DAEMON_USERS} == {
        **{name: SERVICE_USERS["collect"] for name in ("node-exporter", "prometheus", "pushgateway")},
        inventory.role_default("emulated_storage", "emulated_storage_model_daemon_prefix") + "hdd":
            inventory.role_default("emulated_storage", "emulated_storage_model_user")}


def test_yarn_containers_run_as_the_nodemanager_user_and_the_client_as_the_workload_user(bench):
    job = subprocess.Popen(as_workload_user([HADOOP, "jar", EXAMPLES_JAR, "pi", "2", "20"]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    containers, clients = {}, {}
    try:
        deadline = time.monotonic() + 240
        while job.poll() is None and time.monotonic() < deadline:
            containers.update(process_users("/usercache/"))   # a container's working dir is on its command line
            clients.update({pid: user for pid, (user, cmdline) in process_users("RunJar").items()
                            if EXAMPLES_JAR in cmdline})
            time.sleep(0.5)
    finally:
        job.kill()
        output = job.communicate()[0]
    assert job.returncode == 0, output[-3000:]
    assert containers, "no YARN container process was seen while the job ran"
    assert {user for user, _ in containers.values()} == {SERVICE_USERS["yarn"]}
    assert set(clients.values()) == {SERVICE_USERS["workload"]}


@pytest.mark.parametrize("who", [{"HADOOP_USER_NAME": "intruder"}, {}], ids=["another-user", "root"])
@pytest.mark.parametrize("call, protocol", [
    (["application", "-list"], "ApplicationClientProtocol"),   # the ResourceManager's client protocol (submissions)
    (["fs", "-ls", "/"], "ClientProtocol"),                     # the NameNode's
    (["jar", EXAMPLES_JAR, "pi", "1", "10"], "ClientProtocol"),  # a job submission: refused at its first call
], ids=["yarn", "hdfs", "submit"])
def test_a_client_outside_the_service_acls_is_refused(bench, who, call, protocol):
    # Root is no harness user of the cluster's services: the harness's own calls go through the workload user.
    env = {key: value for key, value in os.environ.items() if key != "HADOOP_USER_NAME"} | who
    proc = subprocess.run([HADOOP, *call], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    refused = f"is not authorized for protocol interface org.apache.hadoop.{'yarn.api' if 'Application' in protocol else 'hdfs.protocol'}.{protocol}"
    assert refused in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    if call[0] != "jar":   # the workload user's job: test_yarn_containers_run_as_the_nodemanager_user_...
        allowed = subprocess.run(as_workload_user([HADOOP, *call]), capture_output=True, text=True, timeout=120)
        assert allowed.returncode == 0, allowed.stderr[-2000:]


def test_workload_commands_wrote_their_outputs_as_the_workload_user_and_the_fio_sweep_as_root(bench):
    _, run_dir = bench
    step_outputs = Path("/var/lib/spillway/local/runs") / run_dir.name / "workload"
    owners = {path.relative_to(step_outputs).as_posix(): pwd.getpwuid(path.stat().st_uid).pw_name
              for path in step_outputs.rglob("*") if path.is_file() and not path.name.endswith(".log")}
    by_workload = {}
    for name, owner in owners.items():
        by_workload.setdefault(name.split("/")[0], set()).add(owner)
    assert by_workload.pop("fio-sweep") == {"root"}   # needs_root in its manifest
    assert set(by_workload) >= {"terasort-spark", "tpch", "kmeans", "gatk4"}
    assert all(found == {SERVICE_USERS["workload"]} for found in by_workload.values()), by_workload


def test_only_the_ports_hadoop_binds_to_every_address_listen_there(bench_and_overlap):
    """Every socket the bench's processes listened on during the default bench, sampled every 2 s (daemons, Spark's
    driver and executors, the MapReduce AMs, the exporters): on the cluster's address, but for the NodeManager's
    shuffle handler and the MapReduce AM's pinned ranges, which Hadoop binds to every address with no setting to
    change it (docs/safety.md, "Least privilege")."""
    sockets = bench_and_overlap[2]
    allowed = allowed_on_every_address()
    assert sockets.samples > 50 and len(sockets.seen) > 15, "the sampler saw too little of the bench"
    everywhere = {(l.port, l.user, l.command[:100]) for l in sockets.seen.values() if l.on_every_address}
    assert {entry for entry in everywhere if entry[0] not in allowed} == set()
    assert any(port == 13562 for port, _, _ in everywhere), "the shuffle handler was not seen: is the sampler blind?"


def test_every_collector_process_ran_as_its_declared_user(bench_and_overlap):
    """Every collector process seen during the default bench (start and stop programs, sampled every 50 ms, and the
    background processes their pid files name): root only for a collector whose collector.yml declares needs_root
    (blocktrace, pfs-client here; gluster-profile runs on pfs servers only), the collect user with no_new_privs for
    the others (docs/safety.md, "Least privilege"). The sampler must have seen a program of iostat and of eventlog
    (each starts and stops around every workload run) and iostat's background iostat."""
    collectors = bench_and_overlap[3]
    declared = declared_users(SERVICE_USERS["collect"])
    seen = list(collectors.seen.values())
    programs = {p.collector for p in seen if p.what != "background"}
    backgrounds = {p.collector for p in seen if p.what == "background"}
    assert {"iostat", "eventlog"} <= programs and "iostat" in backgrounds, (collectors.samples, seen)
    wrong = [p for p in seen if p.users != (declared[p.collector],) * 4
             or (declared[p.collector] != "root" and not p.no_new_privs)]
    assert wrong == [], wrong
