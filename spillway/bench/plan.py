"""A bench's plan: the workload runs (sweep points x placements x executor cores x repetitions), validated before
anything is touched, and the steps each one has."""
import math
from dataclasses import dataclass
from itertools import groupby

import run_protocol
from spillway import inventory as inventory_mod, versions as versions_mod
from spillway import workloads as workloads_mod

# The whole suite at the chosen scale: the device sweep first, then the four workloads of the papers.
DEFAULT_WORKLOADS = ("fio-sweep", "terasort", "tpch", "kmeans", "gatk4")


# The default bench's storage probe (issues 23, 42): the one workload run it measures on a second placement and again
# on the inventory's, PROBE_ROUNDS warm runs on each side in interleaved order (run_protocol), so that its report
# compares the backends by measurement where it can (the sensitivity model predicts the other workloads) and knows
# this host's run-to-run noise from warm runs. TeraSort on Spark: the suite's most I/O-heavy
# run per second of its run step at every profile (default bench 20261127-044205-local, tiny: 22.8 MB/s through its
# backends' devices, TeraSort on MapReduce 21.1, TPC-H 6.4, K-means 3.7, GATK4 0.6) and one of its shortest.
STORAGE_PROBE = ("terasort", {"engine": "spark"})


@dataclass
class Instance:
    """One workload run: a sweep point of a workload under one placement and core count, one repetition."""
    workload: workloads_mod.Workload
    id: str
    params: dict
    placement: dict
    executor_cores: int | None  # None: the cluster's spark-defaults
    repetition: int  # 0 = a discarded warm-up; else the round (run_protocol) it belongs to
    storage_probe: bool = False  # added by with_storage_probe: the default bench's probe, beyond the suite's run
    spark_version: str | None = None  # a VERSIONS sweep's release; None: the cluster's default line
    runs_spark: bool = True  # False: a point that runs no Spark (workload.yml's runs_spark), one run per VERSIONS sweep
    point: str = ""  # the id without its repetition: what the runs of one configuration share
    warms: str = ""  # a warm-up's reason: what it follows (with_warmups); "" for a per-point warm-up or a measured run

    @property
    def warmup(self):
        return self.repetition == 0


def placements(inventory, placement, backends):
    """The placements a bench runs under: the inventory's, one given as `hdfs=a,local=b`, several such in the order
    given (`hdfs=a,local=b;hdfs=c,local=d`: the hybrid placements a study needs, without the whole matrix), or
    `matrix`: HDFS on each of BACKENDS x local dirs on each (the hybrid placements of the I/O-aware model paper),
    the inventory's placement first when it is one of them."""
    names = workloads_mod.parse_list(backends, inventory.backends)
    unknown = [b for b in names if b not in inventory.backends]
    if unknown:
        raise workloads_mod.WorkloadError(
            f"BACKENDS: {', '.join(unknown)} not defined in inventory '{inventory.name}'; its backends: "
            f"{', '.join(inventory.backends)}")
    if not placement:
        return [dict(inventory.placement)]
    if placement == "matrix":
        matrix = [{"hdfs": h, "local": loc} for h in names for loc in names]
        # The inventory's own placement first: the cluster usually stands on it, and then the first placement needs
        # no switch (its provisioning is checked and skipped). The others keep their HDFS-backend-major order.
        return sorted(matrix, key=lambda p: p != dict(inventory.placement))
    chosen = [_one_placement(inventory, item.strip()) for item in placement.split(";")]
    if len({(p["hdfs"], p["local"]) for p in chosen}) < len(chosen):
        raise workloads_mod.WorkloadError(f"PLACEMENT: '{placement}' names a placement more than once")
    return chosen


def _one_placement(inventory, item):
    chosen = dict(part.split("=", 1) for part in item.split(",") if "=" in part)
    if set(chosen) != {"hdfs", "local"} or any(b not in inventory.backends for b in chosen.values()):
        raise workloads_mod.WorkloadError(
            f"PLACEMENT: '{item}' is not 'matrix' or 'hdfs=<backend>,local=<backend>' (several separated by ';') "
            f"with backends of inventory '{inventory.name}' ({', '.join(inventory.backends)})")
    return chosen


def parse_cores(text):
    """CORES='1,2' -> [1, 2]; empty -> [None] (the cluster's executor sizing)."""
    if not text:
        return [None]
    try:
        cores = [int(c) for c in workloads_mod.parse_list(text, ())]
    except ValueError:
        raise workloads_mod.WorkloadError(f"CORES: '{text}' is not a comma-separated list of integers") from None
    if any(c < 1 for c in cores):
        raise workloads_mod.WorkloadError(f"CORES: '{text}': every value must be 1 or more")
    return cores


# The most workload-run steps (each run's begin, prepare, run, validate and end) a plan may have. A year of a
# cluster's benches is far below; a sweep of millions of points (PARAMS with a huge list, the product of several
# lists, CORES, VERSIONS, REPEAT) would exhaust memory while the plan is built, so it is refused before.
MAX_PLAN_STEPS = 1_000_000
STEPS_PER_RUN = 2 + len(workloads_mod.STEPS)


def refuse_a_huge_plan(chosen, scale, placement_list, cores, repeat, warmup, from_inventory, from_command_line,
                       spark_versions):
    """WorkloadError, with the limit, when the plan would hold more than MAX_PLAN_STEPS steps: counted from the
    sweeps' lengths before any point is expanded (every run counted with every Spark release, and twice for the
    warm-up a placement switch before it may need: an upper bound)."""
    runs = 0
    for workload in chosen:
        values = workload.parameters(scale, workloads_mod.overrides_for(workload, from_inventory, from_command_line))
        points = math.prod(len(v) for v in values.values() if isinstance(v, list))
        runs += 2 * points * len(placement_list) * len(cores) * (repeat + bool(warmup)) * len(spark_versions)
    if runs * STEPS_PER_RUN > MAX_PLAN_STEPS:
        raise workloads_mod.WorkloadError(
            f"the plan has up to {runs} workload runs ({runs * STEPS_PER_RUN} steps: sweep points x placements x CORES "
            f"x repetitions x VERSIONS), over the limit of {MAX_PLAN_STEPS} steps a bench may plan; sweep fewer "
            "values, or split the sweep over several benches")


def steps_with_commands(workload, params):
    """The workload's steps that have commands for these parameters, in order."""
    return [step for step in workloads_mod.STEPS if workload.commands(step, params)]


def workload_runs(chosen, scale, placement_list, cores, repeat, warmup, from_inventory, from_command_line,
                  spark_versions=(None,)):
    """The workload runs, in run order: REPEAT rounds (run_protocol: each round every placement and core count once,
    in the reverse order of the round before, so that a drift of the host falls on every configuration alike), and
    in each round placement, workload, sweep point, executor cores; the warm-up of a point (WARMUP=1) just before its
    first measured run, and within each repetition the Spark releases of VERSIONS in turn (so that a drift of the
    host over the bench does not fall on one release). A point that runs no Spark (workload.yml's runs_spark:
    TeraSort on MapReduce, DFSIO, fio) runs once per repetition whatever VERSIONS names: another Spark release would
    measure the same thing again. Each id names the point and what varies across the bench
    (docs/run-directory.md). One round (REPEAT=1) is the order of before: placement-major."""
    points = []
    for workload in chosen:
        overrides = workloads_mod.overrides_for(workload, from_inventory, from_command_line)
        points += [(workload, sweep_id, params) for sweep_id, params in workload.instances(scale, overrides)]
    runs = []
    for round_number in range(1, repeat + 1):
        for place in run_protocol.round_order(placement_list, round_number):
            for workload, sweep_id, params in points:
                for cores_value in run_protocol.round_order(cores, round_number):
                    base = sweep_id
                    if len(placement_list) > 1:
                        base += f"-hdfs_{place['hdfs']}-local_{place['local']}"
                    if cores_value is not None:
                        base += f"-p{cores_value}"
                    uses_spark = workload.runs_spark(params)
                    for rep in ([0] if warmup and round_number == 1 else []) + [round_number]:
                        for spark_version in spark_versions if uses_spark else (None,):
                            point = base if spark_version is None else f"{base}-spark{spark_version}"
                            wid = f"{point}-warmup" if rep == 0 else (point if repeat == 1 else f"{point}-r{rep}")
                            runs.append(Instance(workload, wid, params, place, cores_value, rep,
                                                 spark_version=spark_version, runs_spark=uses_spark, point=point))
    return runs


# Workloads that measure a device directly (no JVM, YARN or HDFS): nothing of theirs a warm-up would warm.
DEVICE_ONLY_FRAMEWORKS = {"fio"}


def with_warmups(runs):
    """`runs` with a warm-up before the first run of every placement group (placement_groups: after the provisioning
    and after every placement switch) that does not begin with one already: a copy of the group's first run of a
    Spark application (else of its first run), repetition 0, never measured (issue 42: the first Spark application
    on a freshly provisioned cluster took 32.4 s, the same configuration 21.5 s at the end of the bench). Its id is
    its model's point with `-warmup` (`-warmup2`, ... for a point warmed again). A group of fio runs alone gets none:
    fio reads and writes the device directly, with no JVM, YARN or HDFS state to warm (its points ramp instead)."""
    taken = {r.id for r in runs}
    warmed = []
    for number, group in enumerate(placement_groups(runs)):
        on_the_cluster = [r for r in group if r.workload.manifest.get("framework") not in DEVICE_ONLY_FRAMEWORKS]
        if on_the_cluster and not group[0].warmup:
            model = next((r for r in on_the_cluster if r.runs_spark), on_the_cluster[0])
            point = model.point or model.id
            wid = next(f"{point}-warmup{n if n > 1 else ''}" for n in range(1, len(runs) + 2)
                       if f"{point}-warmup{n if n > 1 else ''}" not in taken)
            taken.add(wid)
            warmed.append(Instance(model.workload, wid, model.params, model.placement, model.executor_cores, 0,
                                   model.storage_probe, model.spark_version, model.runs_spark, point,
                                   "the provisioning" if number == 0 else "the placement switch"))
        warmed += group
    return warmed


def other_placement(inventory):
    """The placement the storage probe compares with the inventory's: each path on the other backend (HDFS and the
    local dirs swapped) when they differ, else both on the next backend. None with one backend."""
    own, names = dict(inventory.placement), list(inventory.backends)
    if len(names) < 2:
        return None
    if own["hdfs"] != own["local"]:
        return {"hdfs": own["local"], "local": own["hdfs"]}
    other = names[(names.index(own["hdfs"]) + 1) % len(names)]
    return {"hdfs": other, "local": other}


def with_storage_probe(runs, inventory, rounds=run_protocol.PROBE_ROUNDS):
    """The default bench's runs with the storage probe's (STORAGE_PROBE) after them: `rounds` rounds of the probe's
    run on the inventory's placement and the other one, interleaved (run_protocol.interleaved: A B, B A, A B), the
    first round's run on the inventory's placement being the suite's own. Every placement switch is followed by a
    warm-up (with_warmups), so the runs on each side are warm ones and their spread is this host's run-to-run noise
    with drift over the probe in it, not the switch's cold start. Ends on the other placement at an odd number of
    rounds: the plan's `returns_to` switches back, so the next bench skips its provisioning. `runs` unchanged when
    the plan has no probe run (another scale's sweep); with one backend, the repetitions alone."""
    name, params = STORAGE_PROBE
    own = dict(inventory.placement)
    probe = next((r for r in runs if r.workload.name == name and r.placement == own
                  and not r.warmup and all(r.params.get(k) == v for k, v in params.items())), None)
    if probe is None:
        return runs
    other = other_placement(inventory)
    added = []
    for round_number, place in run_protocol.interleaved([own] + ([other] if other else []), rounds):
        if round_number == 1 and place == own:
            continue  # the suite's run
        point = probe.id if place == own else f"{probe.id}-hdfs_{place['hdfs']}-local_{place['local']}"
        wid = point if round_number == 1 else f"{point}-r{round_number}"
        added.append(Instance(probe.workload, wid, probe.params, place, probe.executor_cores, round_number, True,
                              probe.spark_version, probe.runs_spark, point))
    return runs + added


def placement_groups(runs):
    """The runs split where the placement changes, in order: the bench provisions once per group."""
    return [list(group) for _, group in groupby(runs, key=lambda r: sorted(r.placement.items()))]


def count_steps(runs, returns_to=None):
    """Progress steps of a bench: provision and facts per placement group (placement_groups) and for the switch back
    to `returns_to` when the last group is elsewhere; per workload run begin, its steps and end; and the report."""
    back = bool(runs and returns_to and runs[-1].placement != returns_to)
    return 2 * (len(placement_groups(runs)) + back) + 1 + sum(
        2 + len(steps_with_commands(r.workload, r.params)) for r in runs)


@dataclass
class BenchPlan:
    """A bench's plan, validated before anything is touched: the inventory it runs on (the MONITORING override in its
    variables), the options it was made from, as the manifest records them, and its workload runs in run order."""
    inventory: object  # spillway.inventory.Inventory
    scale: str
    repeat: int
    warmup: bool  # a warm-up of every point before its first measured run (WARMUP=1)
    group_warmups: bool  # a warm-up after the provisioning and every placement switch (with_warmups); WARMUP=0: none
    drop_caches: bool
    monitoring_override: dict | None  # spillway_monitoring with MONITORING=0/1's `enabled`; None: the inventory's
    placements: list
    cores: list
    spark_versions: list
    storage_probe: bool
    overrides: dict  # the workloads' parameters given by the inventory and by PARAMS
    instances: list
    returns_to: dict | None = None  # the placement the bench switches back to after its last run (the probe's)

    @property
    def several_placements(self):
        """Whether the workload runs are on more than one placement (each provisioning step then names its own)."""
        return len({tuple(sorted(i.placement.items())) for i in self.instances}) > 1


def new_plan(cluster, workload_names, scale, repeat, params="", cores="", placement="", backends="", warmup=None,
             drop_caches=False, monitoring=None, storage_probe=False, versions=""):
    """The plan of a bench given by its options (as `bench` and make take them); WorkloadError or InventoryError,
    naming the option and the fix, for anything that cannot run."""
    inventory = inventory_mod.load(cluster)
    settings = run_settings(inventory, repeat, warmup, monitoring)
    placement_list = placements(inventory, placement, backends)
    cores_list = parse_cores(cores)
    spark_versions = versions_mod.parse_versions(versions, inventory)
    return plan_of(inventory, workload_names, workloads_mod.parse_params(params), scale=scale, repeat=repeat,
                   drop_caches=drop_caches, placements=placement_list, cores=cores_list, spark_versions=spark_versions,
                   storage_probe=storage_probe, **settings)


def run_settings(inventory, repeat, warmup, monitoring):
    """The warm-ups and the monitoring override of a bench of `repeat` repetitions, the override put in the
    inventory's variables; REPEAT checked."""
    try:
        run_protocol.check_rounds(repeat, "REPEAT")
    except run_protocol.ProtocolError as err:
        raise workloads_mod.WorkloadError(f"{err} (each repetition is a round of the interleaved order)") from None
    # MONITORING=0/1 beats the inventory for this bench (e.g. to measure the monitoring's own overhead): every
    # playbook and the bench's own Prometheus client see the same settings.
    override = None
    if monitoring is not None:
        override = {**(inventory.variables.get("spillway_monitoring") or {}), "enabled": bool(monitoring)}
        inventory.variables["spillway_monitoring"] = override
    # Monotasks' method: one discarded warm-up run before measured repetitions (by default when there are several,
    # so the first one does not pay for cold caches and JIT alone). The warm-ups after the provisioning and every
    # placement switch always, unless WARMUP=0 asks for no warm-up at all (to measure the cold start itself).
    return {"warmup": repeat > 1 if warmup is None else warmup, "group_warmups": warmup is not False,
            "monitoring_override": override}


def plan_of(inventory, workload_names, from_command_line, *, scale, repeat, warmup, group_warmups, drop_caches,
            monitoring_override, placements, cores, spark_versions, storage_probe):
    """The workload runs, in run order, from the placements, cores, repetitions and overrides; the whole plan."""
    chosen = [workloads_mod.load(name) for name in workload_names]
    from_inventory = inventory.variables.get("spillway_workload_parameters") or {}
    workloads_mod.check_overrides(chosen, from_inventory, f"inventory '{inventory.name}' "
                                  "spillway_workload_parameters", other_workloads_ok=True)
    workloads_mod.check_overrides(chosen, from_command_line, "PARAMS")
    overrides = {"inventory": from_inventory, "command_line": {str(k): v for k, v in from_command_line.items()}}
    refuse_a_huge_plan(chosen, scale, placements, cores, repeat, warmup, from_inventory, from_command_line,
                       spark_versions)
    instances = workload_runs(chosen, scale, placements, cores, repeat, warmup, from_inventory, from_command_line,
                              spark_versions)
    returns_to = None
    if storage_probe:
        instances = with_storage_probe(instances, inventory)
        returns_to = dict(inventory.placement)
    if group_warmups:
        instances = with_warmups(instances)
    versions_mod.refuse_unsupported(instances, inventory)
    return BenchPlan(inventory, scale, repeat, warmup, group_warmups, drop_caches, monitoring_override, placements,
                     cores, spark_versions, storage_probe, overrides, instances, returns_to)


def storage_probe_text(instances):
    """What the default bench's storage probe adds to the plan and why, or None."""
    added = [i for i in instances if i.storage_probe and not i.warmup]
    if not added:
        return None
    order = " ".join(f"{i.id} (hdfs={i.placement['hdfs']}, local={i.placement['local']})" for i in added)
    return (f"storage probe of the default bench: {STORAGE_PROBE[0]}'s backends compared by measurement, "
            f"{run_protocol.PROBE_ROUNDS} warm runs on each side (the suite's own run the first on the inventory's "
            f"placement), in interleaved order, after it: {order}; this host's run-to-run noise from the warm runs' "
            "spread (docs/findings.md, \"What the default bench measures\")")


def protocol_text(plan):
    """The warm-ups and the stopping rule of `plan`, as the dry run and the bench print them."""
    warmups = ("a warm-up after the provisioning and after every placement switch (none before fio alone), never measured"
               if plan.group_warmups else "no warm-up after the provisioning or a placement switch (WARMUP=0, or a run "
               "planned before they existed)")
    rounds = f"{plan.repeat} round(s) of the workload runs" + (
        f", {run_protocol.PROBE_ROUNDS} of the storage probe" if plan.storage_probe else "")
    return (f"protocol (docs/compare.md, \"The measurement protocol\"): {warmups}; compared configurations in "
            f"interleaved rounds, {rounds}; stopping rule: {run_protocol.STOPPING_RULE}")
