"""A bench's plan: the workload runs (sweep points x placements x executor cores x repetitions), validated before
anything is touched, and the steps each one has."""
import math
from dataclasses import dataclass
from itertools import groupby

from spillway import inventory as inventory_mod, versions as versions_mod
from spillway import workloads as workloads_mod

# The whole suite at the chosen scale: the device sweep first, then the four workloads of the papers.
DEFAULT_WORKLOADS = ("fio-sweep", "terasort", "tpch", "kmeans", "gatk4")


# The default bench's storage probe (issue 23): the one workload run it measures on a second placement and twice on
# the inventory's, so that its report compares the backends by measurement where it can (the sensitivity model
# predicts the other workloads) and knows this host's run-to-run noise. TeraSort on Spark: the suite's most I/O-heavy
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
    repetition: int  # 0 = the discarded warm-up
    storage_probe: bool = False  # added by with_storage_probe: the default bench's second placement or second run
    spark_version: str | None = None  # a VERSIONS sweep's release; None: the cluster's default line
    runs_spark: bool = True  # False: a point that runs no Spark (workload.yml's runs_spark), one run per VERSIONS sweep

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
    sweeps' lengths before any point is expanded (every run counted with every Spark release: an upper bound)."""
    runs = 0
    for workload in chosen:
        values = workload.parameters(scale, workloads_mod.overrides_for(workload, from_inventory, from_command_line))
        points = math.prod(len(v) for v in values.values() if isinstance(v, list))
        runs += points * len(placement_list) * len(cores) * (repeat + bool(warmup)) * len(spark_versions)
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
    """The workload runs, in run order: placement-major, then workload, sweep point, executor cores, repetition (the
    warm-up first) and, within each repetition, the Spark releases of VERSIONS in turn (so that a drift of the host
    over the bench does not fall on one release). A point that runs no Spark (workload.yml's runs_spark: TeraSort on
    MapReduce, DFSIO, fio) runs once per repetition whatever VERSIONS names: another Spark release would measure the
    same thing again. Each id names the point and what varies across the bench (docs/run-directory.md)."""
    runs = []
    for place in placement_list:
        for workload in chosen:
            overrides = workloads_mod.overrides_for(workload, from_inventory, from_command_line)
            for sweep_id, params in workload.instances(scale, overrides):
                for cores_value in cores:
                    base = sweep_id
                    if len(placement_list) > 1:
                        base += f"-hdfs_{place['hdfs']}-local_{place['local']}"
                    if cores_value is not None:
                        base += f"-p{cores_value}"
                    uses_spark = workload.runs_spark(params)
                    for rep in range(0 if warmup else 1, repeat + 1):
                        for spark_version in spark_versions if uses_spark else (None,):
                            point = base if spark_version is None else f"{base}-spark{spark_version}"
                            wid = f"{point}-warmup" if rep == 0 else (point if repeat == 1 else f"{point}-r{rep}")
                            runs.append(Instance(workload, wid, params, place, cores_value, rep,
                                                 spark_version=spark_version, runs_spark=uses_spark))
    return runs


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


def with_storage_probe(runs, inventory):
    """The default bench's runs with the storage probe's (STORAGE_PROBE) after them: the probe's run on the other
    placement, then again on the inventory's. Both follow a placement switch (daemons restarted, caches cold) where the
    probe's first run, in the suite, did not: the two runs on the inventory's placement, the suite's length apart and
    one of them after a switch, measure the host's run-to-run noise with the switch's own effect in it, so that a
    difference between the placements must exceed both to count. The bench ends on the inventory's placement, where the
    next bench skips its provisioning. `runs` unchanged when the plan has no probe run (another scale's sweep); with
    one backend, the repetition alone."""
    name, params = STORAGE_PROBE
    probe = next((r for r in runs if r.workload.name == name and r.placement == dict(inventory.placement)
                  and not r.warmup and all(r.params.get(k) == v for k, v in params.items())), None)
    if probe is None:
        return runs
    again = Instance(probe.workload, f"{probe.id}-r2", probe.params, probe.placement, probe.executor_cores, 2, True,
                     probe.spark_version, probe.runs_spark)
    other = other_placement(inventory)
    if other is None:
        return runs + [again]
    elsewhere = Instance(probe.workload, f"{probe.id}-hdfs_{other['hdfs']}-local_{other['local']}", probe.params,
                         other, probe.executor_cores, 1, True, probe.spark_version, probe.runs_spark)
    return runs + [elsewhere, again]


def placement_groups(runs):
    """The runs split where the placement changes, in order: the bench provisions once per group."""
    return [list(group) for _, group in groupby(runs, key=lambda r: sorted(r.placement.items()))]


def count_steps(runs):
    """Progress steps of a bench: provision and facts per placement group (placement_groups); per workload run begin,
    its steps and end; and the report."""
    return 2 * len(placement_groups(runs)) + 1 + sum(
        2 + len(steps_with_commands(r.workload, r.params)) for r in runs)


@dataclass
class BenchPlan:
    """A bench's plan, validated before anything is touched: the inventory it runs on (the MONITORING override in its
    variables), the options it was made from, as the manifest records them, and its workload runs in run order."""
    inventory: object  # spillway.inventory.Inventory
    scale: str
    repeat: int
    warmup: bool
    drop_caches: bool
    monitoring_override: dict | None  # spillway_monitoring with MONITORING=0/1's `enabled`; None: the inventory's
    placements: list
    cores: list
    spark_versions: list
    storage_probe: bool
    overrides: dict  # the workloads' parameters given by the inventory and by PARAMS
    instances: list

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
    """The warm-up and the monitoring override of a bench of `repeat` repetitions, the override put in the
    inventory's variables; REPEAT checked."""
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise workloads_mod.WorkloadError(f"REPEAT must be 1 or more (a whole number), got {repeat!r}")
    # MONITORING=0/1 beats the inventory for this bench (e.g. to measure the monitoring's own overhead): every
    # playbook and the bench's own Prometheus client see the same settings.
    override = None
    if monitoring is not None:
        override = {**(inventory.variables.get("spillway_monitoring") or {}), "enabled": bool(monitoring)}
        inventory.variables["spillway_monitoring"] = override
    # Monotasks' method: one discarded warm-up run before measured repetitions (by default when there are several,
    # so the first one does not pay for cold caches and JIT alone).
    return {"warmup": repeat > 1 if warmup is None else warmup, "monitoring_override": override}


def plan_of(inventory, workload_names, from_command_line, *, scale, repeat, warmup, drop_caches, monitoring_override,
            placements, cores, spark_versions, storage_probe):
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
    if storage_probe:
        instances = with_storage_probe(instances, inventory)
    versions_mod.refuse_unsupported(instances, inventory)
    return BenchPlan(inventory, scale, repeat, warmup, drop_caches, monitoring_override, placements, cores,
                     spark_versions, storage_probe, overrides, instances)


def storage_probe_text(instances):
    """What the default bench's storage probe adds to the plan and why, or None."""
    added = [i for i in instances if i.storage_probe]
    if not added:
        return None
    where = "; ".join(f"{i.id} (hdfs={i.placement['hdfs']}, local={i.placement['local']})" for i in added)
    return (f"storage probe of the default bench: {where}: {STORAGE_PROBE[0]}'s backends compared by "
            "measurement, and this host's run-to-run noise from its two runs on one placement (docs/findings.md, "
            "\"What the default bench measures\")")
