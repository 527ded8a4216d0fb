"""python -m spillway: bench | validate | preflight | workloads (the model's validation: python -m experiments.validate_model)."""
import argparse
import sys

from spillway import inventory, workloads
from spillway.bench.orchestrator import Bench
from spillway.bench.plan import DEFAULT_WORKLOADS
from spillway.bench.resume import PLAN_OPTIONS
from spillway.clusterlock import ClusterBusy
from spillway.host_checks import check_hosts
from spillway.inventory import InventoryError
from spillway.workload_groups import expand
from spillway.workloads import WorkloadError


def cmd_bench(args):
    if args.resume:
        bench = Bench.resume(args.resume, {option: getattr(args, option) for option in PLAN_OPTIONS
                                           if option in args.given})
        return bench.dry_run() if args.dry_run else bench.execute()
    names = expand(workloads.parse_list(args.workloads, DEFAULT_WORKLOADS))
    warmup = {"": None, "0": False, "1": True}.get(args.warmup)
    if any(value not in ("", "0", "1") for value in (args.warmup, args.drop_caches, args.monitoring)):
        raise WorkloadError("WARMUP, DROP_CACHES and MONITORING take 0 or 1")
    # The default suite on the inventory's placement, once (`make bench` at any scale) answers the storage question:
    # it adds the storage probe's runs (spillway/bench/plan.py STORAGE_PROBE). A bench that names its workloads,
    # placements, core counts, Spark releases or repetitions runs what it names and no more.
    storage_probe = (not (args.workloads or args.placement or args.backends or args.cores or args.versions)
                     and args.repeat == 1)
    bench = Bench.planned(args.cluster, names, args.scale, args.repeat, params=args.params, cores=args.cores,
                          placement=args.placement, backends=args.backends, warmup=warmup,
                          drop_caches=args.drop_caches == "1",
                          monitoring={"": None, "0": False, "1": True}[args.monitoring], storage_probe=storage_probe,
                          versions=args.versions)
    return bench.dry_run() if args.dry_run else bench.execute()


def cmd_validate(args):
    inv = inventory.load(args.cluster)
    backends = ", ".join(f"{name} ({spec['kind']})" for name, spec in inv.backends.items())
    print(f"inventory '{inv.name}' is valid: hosts {', '.join(inv.hosts)}; backends {backends}; "
          f"placement {inv.placement}")
    return 0


def cmd_preflight(args):
    ok, _ = check_hosts(inventory.load(args.cluster), args.run_dir)
    return 0 if ok else 1


def cmd_workloads(args):
    for name in workloads.available():
        wl = workloads.load(name)
        print(f"{name}: {wl.manifest['description']}")
        for scale, profile in wl.scales.items():
            print(f"    {scale:<6} {profile['data']}")
    return 0


def given_options(parser, argv):
    """The options written in `argv`, defaults aside: argparse fills in a default only where the namespace
    has no value yet, so whatever still holds the marker afterwards was not given."""
    unset = object()
    probe = argparse.Namespace(**{action.dest: unset for action in parser._actions})
    parser.parse_args(argv, probe)
    return {dest for dest, value in vars(probe).items() if value is not unset}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="spillway")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="provision, run workloads with collectors, report")
    bench.add_argument("--cluster", default="local")
    bench.add_argument("--workloads", default="", help="comma-separated; empty = the default suite")
    bench.add_argument("--scale", default="tiny")
    bench.add_argument("--repeat", type=int, default=1, help="measured repetitions of each workload run")
    bench.add_argument("--warmup", default="", help="1/0: a discarded warm-up run first (default: 1 when repeat > 1)")
    bench.add_argument("--drop-caches", default="", help="1: drop the workers' page cache before every run")
    bench.add_argument("--monitoring", default="", help="1/0: Prometheus and exporters on/off for this bench "
                                                        "(default: the inventory's spillway_monitoring.enabled)")
    bench.add_argument("--params", default="", help="'name=value workload.name=value ...' parameter overrides")
    bench.add_argument("--cores", default="", help="executor cores per node, a list sweeps: '1,2'")
    bench.add_argument("--versions", default="",
                       help="Spark releases to sweep, each installed on the cluster: 'spark=3.5.6,4.2.0'; empty: the "
                            "inventory's default line (the first of spillway_versions.spark)")
    bench.add_argument("--placement", default="",
                       help="'matrix', 'hdfs=<backend>,local=<backend>' or several of those separated by ';' "
                            "(run in that order); empty: the inventory's")
    bench.add_argument("--backends", default="", help="backends of the placement matrix: 'hdd,ssd'")
    bench.add_argument("--resume", default="", metavar="RUN",
                       help="finish an interrupted or failed run (id under results/ or path) with the plan of its "
                            "manifest: only its unfinished workload runs run; options given must agree with it")
    bench.add_argument("--dry-run", action="store_true",
                       help="validate the inventory, workloads, parameters and sweeps, print the plan, touch nothing")
    bench.set_defaults(func=cmd_bench)
    validate = sub.add_parser("validate", help="validate an inventory")
    validate.add_argument("--cluster", default="local")
    validate.set_defaults(func=cmd_validate)
    preflight = sub.add_parser("preflight", help="read-only checks of every host before provisioning, one table")
    preflight.add_argument("--cluster", default="local")
    preflight.add_argument("--run-dir", help="write preflight.json (and logs/preflight.log) into this folder")
    preflight.set_defaults(func=cmd_preflight)
    sub.add_parser("workloads", help="list workloads and their scale profiles").set_defaults(func=cmd_workloads)
    args = parser.parse_args(argv)
    if args.command == "bench":
        args.given = given_options(bench, (sys.argv[1:] if argv is None else argv)[1:])
    try:
        return args.func(args)
    except InventoryError as err:
        print(f"error: inventory '{getattr(args, 'cluster', '?')}' is invalid:\n{err}", file=sys.stderr)
    except (WorkloadError, ClusterBusy) as err:
        print(f"error: {err}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
