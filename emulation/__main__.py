"""python -m emulation up|down|status|leftovers --cluster <name>  (make cluster-up / cluster-down / teardown)."""
import argparse
import json
import sys

from emulation import cluster
from emulation.config import EmulationError, load
from spillway import clusterlock
from spillway.inventory import InventoryError, load as load_inventory
from spillway.ownership import OwnershipError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m emulation", description=__doc__)
    parser.add_argument("action", choices=["up", "down", "status", "is-up", "leftovers"])
    parser.add_argument("--cluster", required=True)
    args = parser.parse_args(argv)
    try:
        emulation = load(args.cluster)
        if args.action in ("up", "down"):
            # Run by hand it holds the cluster and its resources as the make targets do (their own locks, when
            # `clusterlock run` is its parent): never while a bench or another action uses them.
            with clusterlock.held_unless_by_parent(args.cluster, f"python -m emulation {args.action}",
                                                   load_inventory(args.cluster)):
                return _change(args.action, args.cluster, emulation)
        if args.action == "status":
            print(json.dumps(cluster.status(emulation), indent=2))
        elif args.action == "is-up":
            return 0 if cluster.is_up(emulation) else 3
        else:
            left = cluster.leftovers(emulation)
            print("\n".join(left) if left else "nothing")
            return 1 if left else 0
    except (EmulationError, InventoryError, OwnershipError, clusterlock.ClusterBusy) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def _change(action, name, emulation):
    if action == "up":
        created = cluster.up(emulation)
        print(f"cluster {name}: " + ("set up " + "; ".join(created) if created else "already up"))
        return 0
    removed = cluster.down(emulation)
    print(f"cluster {name}: " + ("removed " + "; ".join(removed) if removed else "nothing to remove"))
    left = cluster.leftovers(emulation)
    if left:
        print("left behind: " + "; ".join(left), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
