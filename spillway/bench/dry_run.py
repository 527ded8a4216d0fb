"""`bench --dry-run`: the plan, fully validated, printed; nothing is touched (no lock, no run directory, no host)."""
import json

from spillway import versions as versions_mod
from spillway.bench.plan import protocol_text, steps_with_commands, storage_probe_text
from spillway.console import say


def print_plan(plan, resumed, total_steps):
    """The cluster, its versions, the options and every workload run still to run of `plan` (of `resumed`'s run
    when it finishes one), with its steps, placement and parameters."""
    to_run = resumed.to_run if resumed else plan.instances
    inv = plan.inventory
    say(f"dry run: nothing is touched. Cluster '{inv.name}' ({inv.path}): hosts {', '.join(inv.hosts)}")
    say("  backends: " + ", ".join(f"{name} ({spec['kind']}{', ' + spec['profile'] if 'profile' in spec else ''})"
                                  for name, spec in inv.backends.items()))
    if resumed:
        say(f"  resumes run {resumed.run.manifest['run_id']}: {len(to_run)} of {len(plan.instances)} "
            "workload run(s) still to run")
    installed = versions_mod.installed(inv)
    examples = versions_mod.hadoop_release(installed["hadoop"])["examples"]
    say(f"  versions: Spark {', '.join(installed['spark'])} installed (default line {installed['spark'][0]}), "
        f"Hadoop {installed['hadoop']}"
        + (f" (its MapReduce examples, TeraSort's, are {examples}'s)" if examples != installed["hadoop"] else ""))
    say(f"  scale {plan.scale}, repeat {plan.repeat}, warm-up of each point {'yes' if plan.warmup else 'no'}, drop caches "
        f"{'yes' if plan.drop_caches else 'no'}; {len(to_run)} workload run(s), {total_steps} steps:")
    say(f"  {protocol_text(plan)}")
    probe = storage_probe_text(plan.instances)
    if probe:
        say(f"  {probe}")
    for instance in to_run:
        say(f"  - {instance.id}: {_run_line(instance)}")
        say(f"      parameters: {json.dumps(instance.params, sort_keys=True)}")
    back = plan.returns_to
    if to_run and back and to_run[-1].placement != back:
        say(f"  then the placement switch back to hdfs={back['hdfs']}, local={back['local']} (nothing measured): "
            "the next bench skips its provisioning")


def _run_line(instance):
    steps = ", ".join(steps_with_commands(instance.workload, instance.params))
    place = f"hdfs={instance.placement['hdfs']}, local={instance.placement['local']}"
    cores = f", {instance.executor_cores} executor core(s)" if instance.executor_cores else ""
    spark = (f", Spark {instance.spark_version}" if instance.spark_version else
             "" if instance.runs_spark else ", no Spark")
    warmup = f", warm-up after {instance.warms}, not measured" if instance.warms else (
        ", warm-up, not measured" if instance.warmup else "")
    return f"{steps} ({place}{cores}{spark}{warmup})"
