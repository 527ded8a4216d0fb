"""python -m spillway: bench | validate | workloads."""
import argparse
import sys

from spillway import inventory, workloads
from spillway.inventory import InventoryError
from spillway.workloads import WorkloadError


def cmd_bench(args):
    from spillway.runner import DEFAULT_WORKLOADS, Bench
    names = workloads.parse_list(args.workloads, DEFAULT_WORKLOADS)
    if args.repeat < 1:
        raise WorkloadError(f"REPEAT must be 1 or more, got {args.repeat}")
    return Bench(args.cluster, names, args.scale, args.repeat).execute()


def cmd_validate(args):
    inv = inventory.load(args.cluster)
    backends = ", ".join(f"{name} ({spec['kind']})" for name, spec in inv.backends.items())
    print(f"inventory '{inv.name}' is valid: hosts {', '.join(inv.hosts)}; backends {backends}; "
          f"placement {inv.placement}")
    return 0


def cmd_workloads(args):
    for name in workloads.available():
        wl = workloads.load(name)
        print(f"{name}: {wl.manifest['description']}")
        for scale, profile in wl.scales.items():
            print(f"    {scale:<6} {profile['data']}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="spillway")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="provision, run workloads with collectors, report")
    bench.add_argument("--cluster", default="local")
    bench.add_argument("--workloads", default="", help="comma-separated; empty = the default suite")
    bench.add_argument("--scale", default="tiny")
    bench.add_argument("--repeat", type=int, default=1)
    bench.set_defaults(func=cmd_bench)
    validate = sub.add_parser("validate", help="validate an inventory")
    validate.add_argument("--cluster", default="local")
    validate.set_defaults(func=cmd_validate)
    sub.add_parser("workloads", help="list workloads and their scale profiles").set_defaults(func=cmd_workloads)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InventoryError as err:
        print(f"error: inventory '{getattr(args, 'cluster', '?')}' is invalid:\n{err}", file=sys.stderr)
    except WorkloadError as err:
        print(f"error: {err}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
