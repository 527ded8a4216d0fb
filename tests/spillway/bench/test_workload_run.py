"""A workload run's parts in one Ansible run (spillway/bench/workload_run.py): the plays of playbooks/workload-run.yml
and the parts the bench records them as; each part a recorded step, a failed validation flagged, a failed end a
warning, and after a failure or an interrupt the end on its own (the playbooks stood in for by their outcomes)."""
import re
from types import SimpleNamespace

import pytest
import yaml

from spillway import PLAYBOOKS, run_record
from spillway.ansible import PartEvent, PlaybookResult
from spillway.bench import workload_run
from spillway.bench.plan import count_steps, new_plan
from spillway.bench.resume import EarlierAttempts
from spillway.bench.steps import Steps
from spillway.bench.workload_run import WorkloadRuns, part_of_play
from spillway.workloads import STEPS


def test_a_workload_runs_plays_are_its_begin_then_one_per_step_in_the_order_steps_run():
    # the bench splits workload-run.yml's output by play names (part_of_play): a step missing from the playbook, or
    # a renamed play, would leave its output in the part before it
    imports = yaml.safe_load((PLAYBOOKS / "workload-run.yml").read_text())
    assert [i["ansible.builtin.import_playbook"] for i in imports] == [
        "workload-begin.yml", *["workload-step.yml"] * 3, "workload-end.yml"]
    assert [i.get("vars", {}).get("step") for i in imports[1:4]] == list(STEPS)
    # the end within the run comes only after steps that went well
    assert imports[4]["vars"] == {"workload_status": "ok"}
    (begin,) = yaml.safe_load((PLAYBOOKS / "workload-begin.yml").read_text())
    (step,) = yaml.safe_load((PLAYBOOKS / "workload-step.yml").read_text())
    (end,) = yaml.safe_load((PLAYBOOKS / "workload-end.yml").read_text())
    assert (part_of_play(begin["name"]), part_of_play(end["name"])) == ("begin", "end")
    assert [part_of_play(re.sub(r"\{\{.*\}\}", s, step["name"])) for s in STEPS] == list(STEPS)
    assert part_of_play("Workload step: other") is None and part_of_play("Record host facts") is None


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """runs(events): one workload run (terasort on Spark) whose Ansible run is `events`, (part, True/False, or an
    exception raised once that part began), in order; its outcome, record, interrupt and the playbooks run on their
    own. Monitoring off: its calls are warnings only."""
    monkeypatch.setattr(run_record, "RESULTS", tmp_path)
    plan = new_plan(cluster="local", workload_names=["terasort"], scale="tiny", repeat=1, params="engine=spark",
                    warmup=False)
    run = run_record.RunDirectory.create("r1", hosts={})
    steps = Steps(plan.inventory, run, count_steps(plan.instances), plan.monitoring_override)
    played = []

    def play(playbook, log_name, **extra_vars):
        played.append(playbook)
        return PlaybookResult(returncode=0, log_path=run.path / "logs" / f"{log_name}.log")
    steps.play = play
    monitoring = SimpleNamespace(enabled=False, disabled_reason="a test", pushgateway_url=None,
                                 warn=lambda kind, message, state: state["warnings"].append(message))

    def run_with(events):
        def in_parts(inventory, playbook, extra_vars, parts, part_of, log_path_of):
            assert parts == ["begin", "prepare", "run", "validate", "end"]
            for part, outcome in events:
                yield PartEvent(part)
                if isinstance(outcome, BaseException):
                    raise outcome
                failures = [] if outcome else [f"TASK [{part}]\nfatal: [localhost]: FAILED! => boom"]
                yield PartEvent(part, PlaybookResult(returncode=0 if outcome else 2, log_path=log_path_of(part),
                                                     failures=failures))
        monkeypatch.setattr(workload_run, "run_playbook_in_parts", in_parts)
        workload_runs = WorkloadRuns(steps, plan, EarlierAttempts(run, plan.inventory, play))
        ok, interrupted = None, None
        try:
            ok = workload_runs.run_one(plan.instances[0], monitoring)
        except KeyboardInterrupt as err:
            interrupted = err
        (record,) = run.manifest["workloads"]
        return SimpleNamespace(ok=ok, record=record, played=played, collectors=workload_runs.collectors_running,
                               interrupted=interrupted)
    return run_with


def statuses(record):
    return [(step["name"].split(": ", 1)[1], step["status"]) for step in record["steps"]]


def test_a_workload_run_that_went_well_ends_in_its_own_ansible_run(runs):
    out = runs([("begin", True), ("prepare", True), ("run", True), ("validate", True), ("end", True)])
    assert out.ok and out.record["status"] == "ok" and out.played == [] and out.collectors is None
    assert statuses(out.record) == [("health check, start collectors", "ok"), ("prepare", "ok"), ("run", "ok"),
                                    ("validate", "ok"), ("stop collectors, fetch outputs", "ok")]


def test_a_failed_validation_flags_the_run_invalid_and_ends_it_on_its_own(runs, capsys):
    out = runs([("begin", True), ("prepare", True), ("run", True), ("validate", False)])
    assert not out.ok and out.record["status"] == "invalid" and out.played == ["workload-end.yml"]
    assert statuses(out.record)[3:] == [("validate", "failed"), ("stop collectors, fetch outputs", "ok")]
    assert "terasort: INVALID: validation failed" in capsys.readouterr().out


def test_a_failed_end_is_a_warning_and_the_outputs_are_fetched_on_their_own(runs):
    out = runs([("begin", True), ("prepare", True), ("run", True), ("validate", True), ("end", False)])
    assert out.ok and out.record["status"] == "ok" and out.played == ["collectors.yml"]
    assert statuses(out.record)[-1] == ("stop collectors, fetch outputs", "failed")
    assert len(out.record["warnings"]) == 1


def test_an_interrupted_step_is_recorded_so_and_the_run_ended_before_the_interrupt_goes_on(runs):
    out = runs([("begin", True), ("prepare", True), ("run", KeyboardInterrupt())])
    assert out.interrupted and out.record["status"] == "interrupted" and out.played == ["workload-end.yml"]
    assert statuses(out.record)[2:] == [("run", "interrupted"), ("stop collectors, fetch outputs", "ok")]
    assert out.collectors is None
