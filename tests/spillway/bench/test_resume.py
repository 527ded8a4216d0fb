"""Resuming an interrupted bench (`bench --resume`): the plan rebuilt from the manifest, what runs again, what is
refused, and where an earlier attempt's outputs go. Built on a run directory written by RunDirectory as a bench
writes it; nothing is provisioned or run (the live resume is the lead's manual check)."""
import argparse
import json
import subprocess

import pytest

from run_layout import raw_outputs
from spillway import run_record
from spillway.__main__ import given_options, main
from spillway.run_record import RunDirectory, move_outputs_aside
from spillway.bench.manifest import create_run_directory
from spillway.bench.orchestrator import Bench
from spillway.bench.resume import EarlierAttempts
from spillway.workloads import WorkloadError

# TeraSort's engine sweep x 2 repetitions: terasort-{mapreduce,spark}-r{1,2}
PLAN = {"cluster": "local", "workload_names": ["terasort"], "scale": "tiny", "repeat": 2, "warmup": False}


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(run_record, "RESULTS", tmp_path / "results")
    return tmp_path / "results"


def record_step(run, record, name, outcome="ok"):
    """A workload step recorded by RunDirectory.step as the runner records it: ok, failed or interrupted."""
    try:
        with run.step(f"{record['id']}: {name}", record=record["steps"]) as entry:
            entry["log"] = f"logs/{record['id']}.{name}.log"
            (run.path / entry["log"]).write_text(f"{name} of {record['id']}\n")
            if outcome == "failed":
                raise run_record.StepFailed(f"{name} failed")
            if outcome == "interrupted":
                raise KeyboardInterrupt
    except (run_record.StepFailed, KeyboardInterrupt):
        pass


def add_record(run, instance, status, steps):
    record = {"id": instance.id, "workload": instance.workload.name, "repetition": instance.repetition,
              "warmup": instance.warmup, "scale": "tiny", "parameters": instance.params,
              "placement": instance.placement, "executor_cores": instance.executor_cores,
              "status": "running", "started_at": run_record.utc_now(), "ended_at": None, "steps": []}
    run.manifest["workloads"].append(record)
    for name, outcome in steps:
        record_step(run, record, name, outcome)
    record["status"], record["ended_at"] = status, run_record.utc_now()
    run.save()
    return record


def write(path, text="x\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def interrupted(results):
    """A bench Ctrl-C'd during terasort-spark-r1's run: mapreduce-r1 ok, mapreduce-r2 invalid, spark-r1
    interrupted with outputs fetched, spark-r2 never started."""
    plan = Bench.planned(**PLAN).plan
    run = create_run_directory(plan)
    runs = {i.id: i for i in plan.instances}
    mr1, mr2, spark1 = (runs[wid] for wid in ("terasort-mapreduce-r1", "terasort-mapreduce-r2", "terasort-spark-r1"))
    add_record(run, mr1, "ok", [("begin", "ok"), ("prepare", "ok"), ("run", "ok"), ("validate", "ok"), ("end", "ok")])
    add_record(run, mr2, "invalid", [("begin", "ok"), ("prepare", "ok"), ("run", "ok"), ("validate", "failed"),
                                     ("end", "ok")])
    add_record(run, spark1, "interrupted", [("begin", "ok"), ("prepare", "ok"), ("run", "interrupted"), ("end", "ok")])
    for source, name in (("iostat", "iostat.json"), ("eventlog", "eventlogs/app-1"), ("workload", "run.log")):
        for wid in (spark1.id, mr1.id):
            write(run.path / "raw" / "localhost" / source / wid / name, f"{wid} attempt 1\n")
    write(run.path / "raw" / "prometheus" / f"{spark1.id}.json", "{}")
    write(run.path / "logs" / f"{spark1.id}.begin.vars.json", "{}")
    write(run.path / "logs" / f"{spark1.id}.end-interrupted.log", "stop after Ctrl-C\n")
    run.finish("interrupted")
    return run


def test_resume_runs_the_unfinished_workload_runs_with_the_ids_and_parameters_of_the_plan(interrupted):
    fresh = Bench.planned(**PLAN).plan
    bench = Bench.resume(interrupted.manifest["run_id"])
    assert [i.id for i in bench.plan.instances] == [i.id for i in fresh.instances] == interrupted.manifest["plan"]
    assert [i.params for i in bench.plan.instances] == [i.params for i in fresh.instances]
    # ok and invalid ended with their validation: kept; interrupted and never started: run from their beginning
    assert [i.id for i in bench.resumed.to_run] == ["terasort-spark-r1", "terasort-spark-r2"]
    assert (bench.plan.scale, bench.plan.repeat, bench.plan.warmup, bench.plan.placements) == (
        "tiny", 2, False, fresh.placements)
    # one provisioning, two runs of begin + prepare/run/validate + end, the report
    assert bench.total_steps == 2 + 2 * 5 + 1


def test_resume_finds_a_run_by_path_too_and_keeps_the_plans_order(interrupted):
    manifest = json.loads((interrupted.path / "manifest.json").read_text())
    manifest["plan"] = list(reversed(manifest["plan"]))
    (interrupted.path / "manifest.json").write_text(json.dumps(manifest))
    bench = Bench.resume(str(interrupted.path))
    assert [i.id for i in bench.resumed.to_run] == ["terasort-spark-r2", "terasort-spark-r1"]


def test_an_unknown_run_is_refused_naming_where_runs_are(results, interrupted):
    with pytest.raises(WorkloadError, match=r"RESUME: no run 'nope'.*the newest: " + interrupted.manifest["run_id"]):
        Bench.resume("nope")


def test_a_completed_run_is_refused_as_nothing_to_do(interrupted):
    interrupted.finish("completed")
    with pytest.raises(WorkloadError, match="completed already .*nothing to resume"):
        Bench.resume(interrupted.manifest["run_id"])


@pytest.mark.parametrize("given, named", [
    ({"scale": "small"}, r"SCALE \(--scale\) 'small', but the run has tiny"),
    ({"workloads": "terasort,kmeans"}, r"WORKLOADS \(--workloads\) 'terasort,kmeans'"),
    ({"params": "rows=5000"}, r"PARAMS \(--params\) 'rows=5000'"),
    ({"placement": "hdfs=ssd,local=hdd"}, r"PLACEMENT \(--placement\)"),
    ({"repeat": 3, "cores": "2"}, r"REPEAT \(--repeat\) '3'.*; CORES \(--cores\) '2'"),
    ({"cluster": "hdd"}, r"CLUSTER \(--cluster\) 'hdd', but the run has local"),
    ({"drop_caches": "1"}, r"DROP_CACHES"),
])
def test_options_asking_for_another_plan_are_refused_naming_them(interrupted, given, named):
    with pytest.raises(WorkloadError, match=named + ".*leave these options out"):
        Bench.resume(interrupted.manifest["run_id"], given)


def test_options_that_agree_with_the_run_or_are_empty_are_accepted(interrupted):
    bench = Bench.resume(interrupted.manifest["run_id"], {"scale": "tiny", "workloads": "terasort", "repeat": 2,
                                                          "warmup": "0", "cluster": "local", "params": ""})
    assert len(bench.resumed.to_run) == 2


def test_the_command_line_tells_given_options_from_defaults(interrupted, capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="tiny")
    parser.add_argument("--repeat", type=int, default=1)
    assert given_options(parser, ["--scale", "tiny"]) == {"scale"}
    assert main(["bench", "--resume", interrupted.manifest["run_id"], "--scale", "small"]) == 2
    assert "SCALE (--scale) 'small', but the run has tiny" in capsys.readouterr().err


def test_a_changed_inventory_or_workload_definition_is_refused(interrupted):
    run_id = interrupted.manifest["run_id"]
    manifest = interrupted.manifest
    manifest["workloads"][0]["parameters"]["rows"] += 1
    interrupted.save()
    with pytest.raises(WorkloadError, match=r"'terasort-mapreduce-r1' ran with other parameters \(rows: "):
        Bench.resume(run_id)
    manifest["workloads"][0]["parameters"]["rows"] -= 1
    manifest["inventory"]["sha256"] = "0" * 64
    interrupted.save()
    with pytest.raises(WorkloadError, match="inventory 'local' changed since run"):
        Bench.resume(run_id)


def test_an_earlier_attempt_is_kept_in_attempts_and_its_outputs_leave_raw(interrupted):
    record = interrupted.manifest["workloads"][2]
    summary = interrupted.set_attempt_aside(record, 1)
    folder = interrupted.path / "attempts" / "terasort-spark-r1.attempt-1"
    assert summary["outputs"] == "attempts/terasort-spark-r1.attempt-1"
    assert (summary["attempt"], summary["status"]) == (1, "interrupted")
    assert [s["status"] for s in summary["steps"]] == ["ok", "ok", "interrupted", "ok"]
    for step in summary["steps"]:  # every step log moved with it, and the record says where
        assert (interrupted.path / step["log"]).read_text().endswith("of terasort-spark-r1\n")
    for name in ("iostat/terasort-spark-r1/iostat.json", "eventlog/terasort-spark-r1/eventlogs/app-1",
                 "workload/terasort-spark-r1/run.log"):
        assert (folder / "raw" / "localhost" / name).read_text() == "terasort-spark-r1 attempt 1\n"
    assert (folder / "raw" / "prometheus" / "terasort-spark-r1.json").exists()
    assert sorted(p.name for p in (folder / "logs").iterdir()) == sorted(
        ["terasort-spark-r1.begin.log", "terasort-spark-r1.begin.vars.json", "terasort-spark-r1.prepare.log",
         "terasort-spark-r1.run.log", "terasort-spark-r1.end.log", "terasort-spark-r1.end-interrupted.log"])
    # the analysis no longer sees the attempt; the other runs' outputs and logs stay where they were
    assert {(r.source, r.workload_id) for r in raw_outputs(interrupted.path, "iostat")} == {
        ("iostat", "terasort-mapreduce-r1")}
    assert (interrupted.path / "logs" / "terasort-mapreduce-r1.run.log").exists()


def test_the_logs_of_one_run_are_not_taken_for_another_whose_id_it_prefixes(results):
    run = RunDirectory.create("20260101-000000-local", cluster="local")
    for name in ("kmeans-0.run.log", "kmeans-0.5.run.log", "kmeans-0-r1.run.log"):
        write(run.path / "logs" / name)
    run.set_attempt_aside({"id": "kmeans-0", "status": "failed", "steps": []}, 1)
    assert sorted(p.name for p in (run.path / "logs").iterdir()) == ["kmeans-0-r1.run.log", "kmeans-0.5.run.log"]
    assert (run.path / "attempts" / "kmeans-0.attempt-1" / "logs" / "kmeans-0.run.log").exists()


def test_on_the_hosts_the_attempt_moves_under_a_dot_folder_that_the_fetch_leaves_out(tmp_path):
    runs = tmp_path / "runs"
    for source in ("iostat", "workload"):
        write(runs / "run1" / source / "terasort" / "out.txt", "attempt 1\n")
        write(runs / "run1" / source / "terasort-spark" / "out.txt", "other run\n")
    assert move_outputs_aside(runs / "run1", "terasort", runs / "run1" / ".attempts" / "terasort.attempt-1") == [
        "iostat", "workload"]
    # the same archive as playbooks/roles/collectors/tasks/fetch.yml packs
    subprocess.run(["tar", "-C", str(runs), "--exclude=.*", "-czf", str(tmp_path / "fetch.tgz"), "run1"], check=True)
    listed = subprocess.run(["tar", "-tzf", str(tmp_path / "fetch.tgz")], capture_output=True, text=True,
                            check=True).stdout.split()
    assert "run1/iostat/terasort-spark/out.txt" in listed
    assert not [name for name in listed if "/terasort/" in name or ".attempts" in name]
    assert (runs / "run1" / ".attempts" / "terasort.attempt-1" / "iostat" / "terasort" / "out.txt").exists()


def test_reopening_marks_the_run_resumed_and_an_interrupted_run_gets_its_attempts(interrupted, tmp_path, capsys):
    bench = Bench.resume(interrupted.manifest["run_id"])
    bench.plan.inventory.variables["spillway_root"] = str(tmp_path / "host")  # the (local) host's runs/ folder
    host_runs = tmp_path / "host" / "runs" / interrupted.manifest["run_id"]
    write(host_runs / "iostat" / "terasort-spark-r1" / "iostat.json")
    to_run = bench.resumed.reopen(bench.plan)
    manifest = json.loads((interrupted.path / "manifest.json").read_text())
    assert manifest["status"] == "running" and manifest["ended_at"] is None
    assert [(r["from_status"], r["workload_runs"]) for r in manifest["resumed"]] == [
        ("interrupted", [i.id for i in to_run])]
    assert "2 of 4 workload run(s) to run" in capsys.readouterr().out
    # the host is this machine: its outputs are moved here, no playbook runs
    earlier = EarlierAttempts(bench.resumed.run, bench.plan.inventory, play=None)
    attempts, position = earlier.set_aside("terasort-spark-r1")
    assert position == 2 and [a["status"] for a in attempts] == ["interrupted"]
    assert (host_runs / ".attempts" / "terasort-spark-r1.attempt-1" / "iostat" / "terasort-spark-r1").is_dir()
    assert not (host_runs / "iostat" / "terasort-spark-r1").exists()
    assert earlier.set_aside("terasort-spark-r2") == ([], None)  # never started: nothing to move


def test_make_checks_the_run_before_anything_is_installed(interrupted, capsys):
    assert run_record.main(["resumable", interrupted.manifest["run_id"]]) == 0
    assert capsys.readouterr().out.strip() == "--cluster local --workloads terasort --scale tiny"
    interrupted.finish("completed")
    assert run_record.main(["resumable", interrupted.manifest["run_id"]]) == 2
    assert "RESUME: run " in capsys.readouterr().err


def test_a_run_whose_bench_process_still_lives_is_refused(interrupted):
    bench_process = subprocess.Popen(["sleep", "30"])
    try:
        (interrupted.path / ".bench.pid").write_text(f"{bench_process.pid} {interrupted.manifest['controller']}\n")
        with pytest.raises(WorkloadError, match=f"still running \\(bench process {bench_process.pid} on this host"):
            Bench.resume(interrupted.manifest["run_id"])
    finally:
        bench_process.kill()
        bench_process.wait()
    assert Bench.resume(interrupted.manifest["run_id"]).resumed.to_run  # killed hard: resumable


def test_runs_recorded_before_warmups_and_placements_existed_are_planned_as_they_ran(interrupted):
    manifest = interrupted.manifest
    for option in ("warmup", "drop_caches", "executor_cores", "placements"):
        del manifest["parameters"][option]
    interrupted.save()
    bench = Bench.resume(manifest["run_id"])
    assert (bench.plan.warmup, bench.plan.drop_caches, bench.plan.cores) == (False, False, [None])
    assert bench.plan.placements == [manifest["storage"]["placement"]]


def test_a_default_bench_resumes_with_its_storage_probe(results):
    plan = Bench.planned(**{**PLAN, "repeat": 1, "warmup": None, "storage_probe": True}).plan
    run = create_run_directory(plan)
    first, *_ = plan.instances
    add_record(run, first, "interrupted", [("begin", "ok"), ("prepare", "ok"), ("run", "interrupted"), ("end", "ok")])
    run.finish("interrupted")
    resumed = Bench.resume(run.manifest["run_id"])
    assert resumed.plan.storage_probe is True and resumed.plan.group_warmups is True
    assert [i.id for i in resumed.resumed.to_run] == run.manifest["plan"] == [
        "terasort-spark-warmup", "terasort-mapreduce", "terasort-spark",
        "terasort-spark-hdfs_ssd-local_hdd-warmup", "terasort-spark-hdfs_ssd-local_hdd",
        "terasort-spark-hdfs_ssd-local_hdd-r2", "terasort-spark-warmup2", "terasort-spark-r2", "terasort-spark-r3",
        "terasort-spark-hdfs_ssd-local_hdd-warmup2", "terasort-spark-hdfs_ssd-local_hdd-r3"]
    # the stopping rule is the plan's: a resume runs what is left of its rounds, and the switch back after them
    assert resumed.plan.returns_to == {"hdfs": "hdd", "local": "ssd"}
    assert resumed.total_steps == 5 * 2 + 11 * 5 + 1


def test_a_run_recorded_before_the_warm_ups_after_switches_resumes_without_them(results):
    plan = Bench.planned(**{**PLAN, "repeat": 1, "warmup": None, "workload_names": ["terasort"],
                            "params": "engine=spark"}).plan
    run = create_run_directory(plan)
    del run.manifest["parameters"]["group_warmups"]  # as runs before issue 42 recorded them
    run.manifest["plan"] = ["terasort"]
    run.save()
    run.finish("interrupted")
    assert [i.id for i in Bench.resume(run.manifest["run_id"]).resumed.to_run] == ["terasort"]
