"""Scale-model nodes (issue 43; docs/cluster.md, "Scale-model nodes"): an emulated node that stands for a real node
class, the reference, by giving each of its cores what a reference core gets. With k = reference cores / emulated
cores, an emulated disk of a storage profile delivers the reference node's disks of that profile divided by k (its
`share` of one such disk): a node of 36 cores and one HDD, emulated on 2 cores, gets an HDD 18 times slower, so that a
core waits on the disk as long as a reference core does. The one definition the harness (which validates the
inventory and records the scaled profiles in the manifest), the storage role (which builds the disks from them: this
file is linked into its filter_plugins/) and the analysis share. Standard library only, importing nothing of the
repository (docs/architecture.md, "Layers").

How a profile is scaled (`scaled_profile`):
- **The HDD model** by time dilation (DieCast, NSDI 2008, dilates a whole machine's time; here only the disk's): every
  duration of the mechanism (seeks, command overheads) times 1/share, every rate (media, interface) and the spindle
  speed times share, so that every request takes 1/share as long; the write cache times share (a reference core's
  part of its drive's cache, as the data is a reference core's part of its input). What belongs to request sizes
  (read-ahead, buffer segments, the minimum prefetch) and the host path's calibration (`host_path`) stay.
- **A capped profile** (blkio limits): each bytes/s and IOPS cap times share. A figure of 0 is no cap, which no share
  can scale: such figures are listed in `unscaled`, and the disk is as fast there as the host allows.
"""
from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path

# The most a scale model shrinks a node: past this, a core's share of a disk is below what the loop and FUSE path
# resolve in time (a 7200 rpm drive's 4 ms rotational wait times 1024 is 4 s).
MAX_FACTOR = 1024.0
MAX_DISKS = 1024
# The HDD model's options (playbooks/roles/emulated_storage/files/spillway-hdd-model.c), by how a dilation scales them.
DURATIONS_MS = ("read-seek-avg-ms", "read-seek-track-ms", "write-seek-avg-ms", "write-seek-track-ms", "overhead-ms",
                "hit-overhead-ms")
RATES = ("rpm", "outer-rate", "inner-rate", "interface-rate")
CACHE_BYTES = ("write-cache",)
CAPS = ("read_bps", "write_bps", "read_iops", "write_iops")


# The papers' nodes, by name (spillway_node.reference: <name>); the file resolves from this module's own place, also
# when the storage role loads it through its link.
CATALOG = Path(__file__).resolve().parents[1] / "inventories" / "reference-nodes.json"
CATALOG_MAX_BYTES = 1 << 20


class ScaleModelError(ValueError):
    """A reference node the scale model cannot stand for, the inventory field named with its fix."""


@functools.cache
def reference_nodes() -> dict[str, dict]:
    """The catalog's nodes by name (inventories/reference-nodes.json)."""
    with open(CATALOG, "rb") as stream:
        text = stream.read(CATALOG_MAX_BYTES + 1)
    if len(text) > CATALOG_MAX_BYTES:
        raise ScaleModelError(f"{CATALOG}: over {CATALOG_MAX_BYTES} bytes: not read")
    return json.loads(text)["nodes"]


def resolve(reference) -> dict:
    """A reference node as given (an object) or named from the catalog (a string)."""
    if isinstance(reference, str):
        nodes = reference_nodes()
        if reference not in nodes:
            raise ScaleModelError(f"spillway_node.reference: {reference[:60]!r} is no node of {CATALOG.name}. Fix: "
                                  f"name one of {', '.join(sorted(nodes))}, or describe the node (name, source, "
                                  "cores, disks)")
        return {**copy.deepcopy(nodes[reference]), "catalog": reference}
    if not isinstance(reference, dict):
        raise ScaleModelError("spillway_node.reference must name a node of inventories/reference-nodes.json or "
                              "describe one (name, source, cores, disks)")
    return reference


def _number(value, field: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise ScaleModelError(f"{field} must be a number from {low:g} to {high:g}, got {str(value)[:40]!r}")
    return float(value)


def scale_factor(reference_cores, emulated_cores) -> float:
    """k = reference cores / emulated cores, from 1 (the emulated node is the reference) to MAX_FACTOR."""
    reference = _number(reference_cores, "spillway_node.reference.cores", 0.1, 4096)
    emulated = _number(emulated_cores, "spillway_node.cores", 0.1, 4096)
    k = reference / emulated
    if not 1 <= k <= MAX_FACTOR:
        raise ScaleModelError(
            f"spillway_node: the reference node's {reference:g} cores over the emulated node's {emulated:g} give "
            f"k = {k:.3g}, outside 1-{MAX_FACTOR:g}. Fix: a scale model shrinks a node; set spillway_node.cores to at "
            "most the reference's cores (and at least its cores / 1024)")
    return k


def disk_shares(reference_disks: dict, k: float) -> dict[str, float]:
    """{profile: the share of one such disk an emulated disk of it delivers} = the reference's disks of it / k."""
    if not isinstance(reference_disks, dict) or not reference_disks:
        raise ScaleModelError("spillway_node.reference.disks must map storage profiles to how many such disks the "
                              "reference node has, e.g. {hdd: 2, ssd: 1}")
    return {profile: _number(count, f"spillway_node.reference.disks.{profile}", 1, MAX_DISKS) / k
            for profile, count in reference_disks.items()}


def _times(value, factor: float, whole: bool = False):
    scaled = value * factor
    return int(round(scaled)) if whole else float(f"{scaled:.6g}")


def scaled_profile(profile: dict, share: float) -> dict:
    """`profile` (an entry of inventories/storage-profiles.yml) as a disk delivering `share` of it; the result keeps
    what was done in `scale_model`: the share and the figures no share can scale (`unscaled`)."""
    share = _number(share, "share", 1 / MAX_FACTOR, MAX_DISKS)
    scaled = copy.deepcopy(profile)
    unscaled = []
    options = (scaled.get("model") or {}).get("options")
    if isinstance(options, dict):
        for name in DURATIONS_MS:
            if name in options:
                options[name] = _times(options[name], 1 / share)
        for name in RATES:
            if name in options:
                options[name] = _times(options[name], share)
        for name in CACHE_BYTES:
            if name in options:
                options[name] = _times(options[name], share, whole=True)
    else:
        for name in CAPS:
            if scaled.get(name):
                scaled[name] = _times(scaled[name], share, whole=True)
            elif name in scaled:
                unscaled.append(name)
    scaled["scale_model"] = {"share": float(f"{share:.6g}"), "unscaled": unscaled}
    return scaled


def scaled_profiles(profiles: dict, node: dict, used=()) -> dict:
    """The storage profiles as the emulated disks of a node (`spillway_node`) deliver them: unchanged without a
    reference node; with one, each profile of the reference's disks scaled to its share. A profile `used` by an
    emulated backend that the reference's disks do not name is refused: its share is unknown."""
    reference = (node or {}).get("reference") if isinstance(node, dict) else None
    if not reference:
        return profiles
    reference = resolve(reference)
    k = scale_factor(reference.get("cores"), node.get("cores"))
    shares = disk_shares(reference.get("disks"), k)
    unknown = sorted(set(shares) - set(profiles))
    if unknown:
        raise ScaleModelError(f"spillway_node.reference.disks.{unknown[0]}: no storage profile of that name. Fix: name "
                              f"profiles of inventories/storage-profiles.yml ({', '.join(sorted(profiles))})")
    missing = sorted(set(used) - set(shares))
    if missing:
        raise ScaleModelError(
            f"spillway_node.reference.disks names no {missing[0]} disk, and an emulated backend of this inventory is "
            f"one. Fix: add how many such disks the reference node has (spillway_node.reference.disks.{missing[0]})")
    return {name: scaled_profile(p, shares[name]) if name in shares else p for name, p in profiles.items()}


def description(node: dict) -> dict | None:
    """What the manifest and the pages say of a scale-model node: the reference as the inventory gives it, k and
    each disk profile's share; None for a node that stands for no reference."""
    reference = (node or {}).get("reference") if isinstance(node, dict) else None
    if not reference:
        return None
    reference = resolve(reference)
    k = scale_factor(reference.get("cores"), node.get("cores"))
    described = {"reference": copy.deepcopy(reference), "emulated_cores": float(node["cores"]),
                 "k": float(f"{k:.6g}"), "disk_shares": {p: float(f"{s:.6g}") for p, s in disk_shares(
                     reference.get("disks"), k).items()}, "unscaled_ratios": unscaled_ratios(node, reference, k)}
    return described


def unscaled_ratios(node: dict, reference: dict, k: float) -> list[dict]:
    """What the scale model does not scale yet and how far it is from a reference core's share: the node's memory
    budget against the reference's memory over k (the data to memory ratio goes with it). Each: the resource, the
    node's figure, the share, their ratio (1 = kept), and a sentence."""
    ratios = []
    if isinstance(reference.get("memory_gib"), (int, float)):
        share = reference["memory_gib"] / k
        has = node.get("memory_gib")
        if isinstance(has, (int, float)) and not isinstance(has, bool):
            ratio = has / share
            said = (f"memory: this node's budget is {has:g} GiB, a {node['cores']:g}-core share of the reference's "
                    f"{reference['memory_gib']:g} GiB is {share:.3g} GiB ({ratio:.2f}x: a workload's data is "
                    f"{1 / ratio:.2f}x as large against memory as on the reference)")
        else:
            ratio = None
            said = (f"memory: this node has no budget; a {node['cores']:g}-core share of the reference's "
                    f"{reference['memory_gib']:g} GiB is {share:.3g} GiB (spillway_node.memory_gib sets it)")
        ratios.append({"resource": "memory", "node": has if ratio is not None else None,
                       "share": float(f"{share:.6g}"), "ratio": None if ratio is None else float(f"{ratio:.4g}"),
                       "says": said})
    return ratios


class FilterModule:
    """The storage role's filters (this file is linked as playbooks/roles/storage/filter_plugins/scale_model.py)."""

    def filters(self):
        return {"spillway_scaled_profiles": scaled_profiles}
