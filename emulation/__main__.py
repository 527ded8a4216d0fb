"""python -m emulation up|down|status|leftovers --cluster <name>  (make cluster-up / cluster-down / teardown)."""
import argparse
import json
import sys

from emulation import cluster
from emulation.config import EmulationError, load
from spillway.inventory import InventoryError
from spillway.ownership import OwnershipError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m emulation", description=__doc__)
    parser.add_argument("action", choices=["up", "down", "status", "is-up", "leftovers"])
    parser.add_argument("--cluster", required=True)
    args = parser.parse_args(argv)
    try:
        emulation = load(args.cluster)
        if args.action == "up":
            created = cluster.up(emulation)
            print(f"cluster {args.cluster}: " + ("set up " + "; ".join(created) if created else "already up"))
        elif args.action == "down":
            removed = cluster.down(emulation)
            print(f"cluster {args.cluster}: " + ("removed " + "; ".join(removed) if removed else "nothing to remove"))
            left = cluster.leftovers(emulation)
            if left:
                print("left behind: " + "; ".join(left), file=sys.stderr)
                return 1
        elif args.action == "status":
            print(json.dumps(cluster.status(emulation), indent=2))
        elif args.action == "is-up":
            return 0 if cluster.is_up(emulation) else 3
        else:
            left = cluster.leftovers(emulation)
            print("\n".join(left) if left else "nothing")
            return 1 if left else 0
    except (EmulationError, InventoryError, OwnershipError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
