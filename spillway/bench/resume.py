"""Resuming a run (`bench --resume`): the plan its manifest recorded, what of it is still to do, options that would
change it, the run reopened, and each workload run's earlier attempt set aside before it runs again."""
import json
from dataclasses import dataclass

from spillway import inventory as inventory_mod, workloads as workloads_mod
from spillway.bench.plan import DEFAULT_WORKLOADS, parse_cores, placements, plan_of, run_settings
from spillway.bench.steps import local_root
from spillway.console import say
from spillway.run_record import (RunDirectory, RunNotResumable, StepFailed, git_state, move_outputs_aside,
                                 utc_now)
from spillway.versions import parse_versions
from spillway.workload_groups import expand

# A workload run that ended so is not run again on resume: its validation ran (an invalid one stays flagged).
FINISHED = ("ok", "invalid")


@dataclass
class ResumePlan:
    """What a resumed bench does: the workload runs of its plan not finished yet, in the recorded order."""
    run: RunDirectory
    to_run: list

    @classmethod
    def of(cls, run, instances):
        """Refuses when the plan rebuilt from the manifest is not the one that ran (workload definitions changed)."""
        records = {r["id"]: r for r in run.manifest["workloads"]}
        planned = {i.id: i for i in instances}
        problems = [f"'{wid}' ran but is no longer planned" for wid in records if wid not in planned]
        problems += [f"'{i.id}' ran with other parameters ({changed_values(records[i.id]['parameters'], i.params)})"
                     for i in instances if i.id in records and
                     records[i.id].get("parameters") != json.loads(json.dumps(i.params, default=str))]
        if problems:
            raise workloads_mod.WorkloadError(
                f"RESUME: run {run.manifest['run_id']} cannot be finished with the same plan: {'; '.join(problems)}. "
                "The workload definitions (workloads/*/workload.yml) changed since it began; start a new bench")
        order = {wid: n for n, wid in enumerate(run.manifest.get("plan") or [])}
        ordered = sorted(instances, key=lambda i: order.get(i.id, len(order)))  # stable: old runs keep the plan's order
        return cls(run, [i for i in ordered if records.get(i.id, {}).get("status") not in FINISHED])

    def reopen(self, plan):
        """The run directory marked running again, saying what is left of `plan`; the workload runs still to do."""
        manifest = self.run.manifest
        to_run = self.to_run
        manifest.setdefault("resumed", []).append({"at": utc_now(), "from_status": manifest["status"],
                                                   "git": git_state(), "workload_runs": [i.id for i in to_run]})
        manifest["status"], manifest["ended_at"] = "running", None
        self.run.save()
        self.run.mark_running()
        done = [i.id for i in plan.instances if i.id not in {r.id for r in to_run}]
        say(f"Spillway bench {manifest['run_id']} resumed: cluster '{plan.inventory.name}', scale {plan.scale}, "
            f"{len(to_run)} of {len(plan.instances)} workload run(s) to run: {', '.join(i.id for i in to_run) or 'none'}"
            + (f"; finished before: {', '.join(done)}" if done else ""))
        return to_run


def changed_values(recorded, now):
    return ", ".join(f"{k}: {recorded.get(k)!r} then, {now.get(k)!r} now"
                     for k in sorted(set(recorded) | set(now)) if recorded.get(k) != now.get(k))


def recorded_parameters(manifest):
    """The manifest's `parameters`, with what runs recorded before an option existed filled in as it was then."""
    return {"warmup": False, "group_warmups": False, "drop_caches": False, "executor_cores": [None],
            "storage_probe": False, "spark_versions": [None],
            "placements": [(manifest.get("storage") or {}).get("placement")], **manifest["parameters"]}


def recorded_command_line(parameters):
    """PARAMS as the manifest keeps them (parse_params' form; the key of `name=value` for every workload is
    stored as "None", JSON keys being strings)."""
    return {None if key == "None" else key: values
            for key, values in (parameters.get("overrides") or {}).get("command_line", {}).items()}


# Options of `bench` a resume takes from the manifest: option -> the make variable users write.
PLAN_OPTIONS = {"cluster": "CLUSTER", "workloads": "WORKLOADS", "scale": "SCALE", "repeat": "REPEAT",
                "warmup": "WARMUP", "drop_caches": "DROP_CACHES", "monitoring": "MONITORING", "params": "PARAMS",
                "cores": "CORES", "placement": "PLACEMENT", "backends": "BACKENDS", "versions": "VERSIONS"}


def refuse_other_plan(manifest, inventory, given):
    """Raise naming every option of `given` (as the CLI parsed them) that asks for another plan than the run's."""
    recorded = recorded_parameters(manifest)
    switch = {"0": False, "1": True}
    asked = {  # option -> (what the command line asks for, what the run recorded), both in the manifest's form
        "cluster": lambda v: (v, manifest["cluster"]),
        "workloads": lambda v: (sorted(set(expand(workloads_mod.parse_list(v, DEFAULT_WORKLOADS)))),
                                sorted(recorded["workloads"])),
        "scale": lambda v: (v, recorded["scale"]),
        "repeat": lambda v: (int(v), recorded["repeat"]),
        "warmup": lambda v: (switch.get(v, v), recorded["warmup"]),
        "drop_caches": lambda v: (switch.get(v, v), recorded["drop_caches"]),
        "monitoring": lambda v: (switch.get(v, v), recorded.get("monitoring")),
        "params": lambda v: (workloads_mod.parse_params(v), recorded_command_line(recorded)),
        "cores": lambda v: (parse_cores(v), recorded["executor_cores"]),
        "versions": lambda v: (parse_versions(v, inventory), recorded["spark_versions"]),
        "placement": lambda v: (placements(inventory, v, given.get("backends", "")), recorded["placements"]),
        "backends": lambda v: (sorted(workloads_mod.parse_list(v, ())),
                               sorted({b for place in recorded["placements"] for b in place.values()})),
    }
    conflicts = []
    for option, value in given.items():
        if option not in asked or value in ("", None):  # an empty make variable asks for nothing
            continue
        wanted, ran = asked[option](value)
        if wanted != ran:
            conflicts.append(f"{PLAN_OPTIONS[option]} (--{option.replace('_', '-')}) '{value}', but the run has {ran}")
    if conflicts:
        raise workloads_mod.WorkloadError(
            f"RESUME: run {manifest['run_id']} was planned otherwise: {'; '.join(conflicts)}. A resume takes the plan "
            "from the run's manifest: leave these options out")


def plan_to_finish(ref, given=None):
    """The plan that finishes run `ref` (an id under results/, `latest` or a path) as its manifest recorded it, and
    what of it is left (a ResumePlan). `given`: the options written on the command line (name -> value as the CLI
    parsed it); each must agree with the run's."""
    try:
        run = RunDirectory.open_for_resume(ref)
    except RunNotResumable as err:
        raise workloads_mod.WorkloadError(f"RESUME: {err}") from None
    manifest, recorded = run.manifest, recorded_parameters(run.manifest)
    inventory = inventory_mod.load(manifest["cluster"])
    refuse_other_plan(manifest, inventory, given or {})
    if inventory.digest != manifest["inventory"]["sha256"]:
        raise workloads_mod.WorkloadError(
            f"RESUME: inventory '{inventory.name}' changed since run {manifest['run_id']} began (sha256 "
            f"{manifest['inventory']['sha256'][:12]} then, {inventory.digest[:12]} now): its remaining "
            "workload runs would not measure the same cluster")
    monitoring = recorded.get("monitoring")
    if monitoring == (inventory.variables.get("spillway_monitoring") or {}).get("enabled", True):
        monitoring = None  # as the inventory has it: no override
    # the warm-ups after provisioning and switches as the run was planned (none before issue 42's protocol)
    settings = {**run_settings(inventory, recorded["repeat"], recorded["warmup"], monitoring),
                "group_warmups": recorded["group_warmups"]}
    plan = plan_of(inventory, recorded["workloads"], recorded_command_line(recorded), scale=recorded["scale"],
                   repeat=recorded["repeat"], drop_caches=recorded["drop_caches"], placements=recorded["placements"],
                   cores=recorded["executor_cores"], spark_versions=recorded["spark_versions"],
                   storage_probe=recorded["storage_probe"], **settings)
    return plan, ResumePlan.of(run, plan.instances)


class EarlierAttempts:
    """A workload run's earlier attempt in run directory `run` (interrupted or failed, before a resume) set aside
    before it runs again: its outputs moved aside on the hosts of `inventory` and in the run directory. `play`:
    the bench's playbooks (Steps.play)."""

    def __init__(self, run, inventory, play):
        self.run = run
        self.inventory = inventory
        self.play = play

    def set_aside(self, wid):
        """When `wid` ran before, move its outputs aside and return its `attempts` (the earlier ones and this) and
        its record's position; ([], None) when it did not."""
        records = self.run.manifest["workloads"]
        position = next((n for n, r in enumerate(records) if r["id"] == wid), None)
        if position is None:
            return [], None
        earlier = records[position]
        if earlier["status"] == "running":
            # the bench was killed hard: its collectors may still run; stop them and fetch what they have
            self.play("workload-end.yml", f"{wid}.end-interrupted", workload_id=wid)
        attempt = len(earlier.get("attempts", [])) + 1
        summary = self.run.set_attempt_aside(earlier, attempt)
        self._set_aside_on_hosts(wid, attempt)
        say(f"   {wid}: attempt {attempt} ({earlier['status']}) set aside in {summary['outputs']}/")
        return earlier.get("attempts", []) + [summary], position

    def _set_aside_on_hosts(self, wid, attempt):
        """Each host's runs/<run-id>/<source>/<wid>/ to runs/<run-id>/.attempts/<wid>.attempt-<n>/<source>/: a
        dot folder, which the fetch skips, so the next fetches do not bring the old files back into raw/."""
        run_id = self.run.manifest["run_id"]
        dest = f".attempts/{wid}.attempt-{attempt}"
        if self.inventory.all_local:
            runs = local_root(self.inventory) / "runs" / run_id
            move_outputs_aside(runs, wid, runs / dest)
            return
        # Remote hosts: playbooks/set-aside.yml does the same on each; its log says what was moved where.
        result = self.play("set-aside.yml", f"{wid}.set-aside", workload_id=wid, attempt=attempt)
        if not result.ok:
            raise StepFailed(f"{wid}: could not move the earlier attempt's outputs aside on the hosts "
                             f"(log: {result.log_path.relative_to(self.run.path)})")
