"""Component versions as an experiment variable: the Spark and Hadoop releases Spillway can install (role common's
defaults/main/versions.yml, the very file provisioning reads), the ones a cluster installs (its inventory's
spillway_versions), a bench's VERSIONS sweep over them, and the Spark lines each workload supports."""
import copy
import functools

import yaml

from spillway import PLAYBOOKS
from spillway.workloads import WorkloadError

VERSIONS_FILE = PLAYBOOKS / "roles" / "common" / "defaults" / "main" / "versions.yml"
# Components a bench's VERSIONS may name; Hadoop is one release per cluster (its daemons), set in the inventory.
SWEEPABLE = ("spark",)


def _defaults():
    return copy.deepcopy(_read_defaults())


@functools.cache
def _read_defaults():
    """The file once per process (it is this checkout's): a plan asks for it several times per inventory."""
    return yaml.safe_load(VERSIONS_FILE.read_text())


def spark_releases():
    """{version: what it needs} of every Spark release Spillway can install."""
    return _defaults()["spark_releases"]


def hadoop_releases():
    return list(_defaults()["hadoop_releases"])


def hadoop_release(version):
    """What a Hadoop release Spillway can install needs and carries: {java_min, examples} (examples: the release of
    hadoop-mapreduce-examples in its lib/, another one where Maven Central does not serve its own)."""
    return _defaults()["hadoop_releases"][version]


def line(version):
    """The release line of a version: '4.2.0' -> '4.2'."""
    return ".".join(str(version).split(".")[:2])


def installed(inventory):
    """{'spark': [releases, the default line first], 'hadoop': release} that the inventory's cluster installs (its
    spillway_versions, or role common's defaults)."""
    defaults = _defaults()["spillway_versions"]
    chosen = {**defaults, **(inventory.variables.get("spillway_versions") or {})}
    return {"spark": [str(v) for v in chosen["spark"]], "hadoop": str(chosen["hadoop"])}


def parse_versions(text, inventory):
    """VERSIONS='spark=3.5.6,4.2.0' -> ['3.5.6', '4.2.0'], the Spark releases the bench sweeps; empty -> [None] (each
    run on the cluster's default line). Refuses, naming the fix, a release the cluster does not install."""
    if not text:
        return [None]
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not values.strip():
        raise WorkloadError(f"VERSIONS: '{text}' is not 'spark=<version>,<version>' (e.g. spark=3.5.6,4.2.0)")
    if name == "hadoop":
        raise WorkloadError("VERSIONS: hadoop is one release per cluster (its daemons run it), not swept: set "
                            f"spillway_versions.hadoop in the inventory (Spillway installs {', '.join(hadoop_releases())})")
    if name not in SWEEPABLE:
        raise WorkloadError(f"VERSIONS: '{name}' is no component a bench sweeps; it sweeps {', '.join(SWEEPABLE)}")
    chosen = [v.strip() for v in values.split(",") if v.strip()]
    if len(set(chosen)) < len(chosen):
        raise WorkloadError(f"VERSIONS: '{text}' names a release more than once")
    cluster = installed(inventory)["spark"]
    missing = [v for v in chosen if v not in cluster]
    if missing:
        known = spark_releases()
        fix = (f"add {', '.join(missing)} to spillway_versions.spark in inventories/{inventory.name}/group_vars/all.yml "
               "(make bench installs it)" if all(v in known for v in missing) else
               f"Spillway installs Spark {', '.join(known)}")
        raise WorkloadError(f"VERSIONS: Spark {', '.join(missing)} is not installed on cluster '{inventory.name}' "
                            f"(it installs {', '.join(cluster)}): {fix}")
    return chosen


def supported_lines(workload):
    """The Spark lines a workload's manifest declares it runs on (`spark_lines.supported`), or None: every line."""
    declared = workload.manifest.get("spark_lines")
    return None if declared is None else [str(v) for v in declared["supported"]]


def refuse_unsupported(runs, inventory):
    """Raise, before anything runs, naming every workload of `runs` planned on a Spark line it does not support and
    the lines it does (a run without its own version runs on the cluster's default line)."""
    default = installed(inventory)["spark"][0]
    problems = {}
    for run in runs:
        if not run.runs_spark:  # a point that runs no Spark runs on no line
            continue
        lines = supported_lines(run.workload)
        version = run.spark_version or default
        if lines is not None and line(version) not in lines:
            why = run.workload.manifest["spark_lines"].get("why", "")
            problems.setdefault(run.workload.name, (set(), lines, why))[0].add(version)
    if problems:
        raise WorkloadError("; ".join(
            f"{name} does not run on Spark {', '.join(sorted(versions))}: it supports Spark {', '.join(lines)} only"
            + (f" ({why})" if why else "") + f"; leave {name} out of WORKLOADS or the release out of VERSIONS"
            for name, (versions, lines, why) in sorted(problems.items())))


def of_run(inventory, spark_version, runs_spark=True):
    """What the manifest records of a workload run: every component's release (Spark the run's own or the default
    line, its Scala build, Hadoop the cluster's with the release of the MapReduce examples jar it carries: TeraSort on
    MapReduce on Hadoop 3.5.0 runs 3.4.2's). A run that runs no Spark (its workload's runs_spark) records Spark and
    Scala as null: it ran on none, and a VERSIONS sweep ran it once, not once per release."""
    cluster = installed(inventory)
    hadoop = {"hadoop": cluster["hadoop"], "hadoop_examples": hadoop_release(cluster["hadoop"])["examples"]}
    if not runs_spark:
        return {"spark": None, "scala": None, **hadoop}
    spark = spark_version or cluster["spark"][0]
    release = spark_releases().get(spark, {})
    return {"spark": spark, "scala": release.get("scala"), **hadoop}
