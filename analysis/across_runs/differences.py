"""What differed between the compared runs: their manifests' facts side by side, and the warnings when they
ran other work (another scale, other parameter values), which no storage difference explains."""
from __future__ import annotations

import json

import pandas as pd

from ..parsers.manifest import worker_nodes
from .runs import Run, effective_parameters

HOST_FACTS = ("kernel", "cpu_model", "vcpus", "memory_bytes", "os", "node_budget")


def _flat(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out[prefix] = json.dumps(value, sort_keys=True) if isinstance(value, (list, bool)) or value is None \
            else str(value)


def manifest_facts(manifest: dict) -> dict[str, str]:
    """The manifest fields a comparison cares about, flattened to `field.path -> value`."""
    facts: dict[str, str] = {}
    inventory = manifest.get("inventory") or {}
    _flat("", {"cluster": manifest.get("cluster"), "status": manifest.get("status"),
               "inventory sha256": inventory.get("sha256"),
               "worker nodes": worker_nodes(manifest),
               "git commit": (manifest.get("git") or {}).get("commit"),
               "git dirty": (manifest.get("git") or {}).get("dirty"),
               "placement": (manifest.get("storage") or {}).get("placement"),
               "backends": (manifest.get("storage") or {}).get("backends"),
               "emulation profiles": (manifest.get("emulation") or {}).get("profiles")}, facts)
    _flat("parameters", {k: v for k, v in (manifest.get("parameters") or {}).items() if k != "workloads"}, facts)
    hosts = manifest.get("hosts") or {}
    for fact in HOST_FACTS:
        values = sorted({str((h or {}).get(fact)) for h in hosts.values()})
        facts[f"hosts {fact}"] = ", ".join(values) if values else "None"
    versions = sorted({k for h in hosts.values() for k in ((h or {}).get("versions") or {})})
    for tool in versions:
        facts[f"hosts versions.{tool}"] = ", ".join(sorted({str(((h or {}).get("versions") or {}).get(tool))
                                                            for h in hosts.values()}))
    facts["workloads run"] = ", ".join(sorted(_workload_scales(manifest)))
    # the releases the workload runs ran on (docs/versions.md): a Spark upgrade is what differed
    releases: dict[str, set[str]] = {}
    for workload in manifest.get("workloads", []) or []:
        for component, release in ((workload or {}).get("versions") or {}).items():
            releases.setdefault(component, set()).add(str(release))
    for component, seen in sorted(releases.items()):
        facts[f"workload runs versions.{component}"] = ", ".join(sorted(seen))
    for workload, params in _workload_parameters(manifest).items():
        for key, values in params.items():
            facts[f"workload {workload}.{key}"] = ", ".join(sorted(values))
    for workload, scales in _workload_scales(manifest).items():
        facts[f"workload {workload} scale"] = ", ".join(sorted(scales))
    return facts


def _workload_parameters(manifest: dict) -> dict[str, dict[str, set[str]]]:
    """Per workload, each parameter's effective values over its runs (effective_parameters)."""
    values: dict[str, dict[str, set[str]]] = {}
    for workload in manifest.get("workloads", []) or []:
        for key, value in effective_parameters(workload).items():
            values.setdefault(str(workload.get("workload")), {}).setdefault(key, set()).add(value)
    return values


def _workload_scales(manifest: dict) -> dict[str, set[str]]:
    scales: dict[str, set[str]] = {}
    for workload in manifest.get("workloads", []) or []:
        scales.setdefault(str(workload.get("workload")), set()).add(str(workload.get("scale")))
    return scales


def differences(runs: list[Run]) -> tuple[pd.DataFrame, int]:
    """Fields whose value differs between the runs (field, then one column per run), and how many agree."""
    facts = [manifest_facts(r.manifest) for r in runs]
    everywhere = set.intersection(*(set(_workload_scales(r.manifest)) for r in runs))
    for fact in facts:
        # the parameters of a workload some run lacks are no difference; `workloads run` says it lacks it
        for field in [k for k in fact if k.startswith("workload ") and k[9:].split(".")[0].split(" ")[0] not in everywhere]:
            del fact[field]
    fields = list(dict.fromkeys(k for f in facts for k in f))
    rows = [{"field": field, **{r.run_id: f.get(field, "(absent)") for r, f in zip(runs, facts)}}
            for field in fields if len({f.get(field, "(absent)") for f in facts}) > 1]
    return pd.DataFrame(rows, columns=["field", *[r.run_id for r in runs]]), len(fields) - len(rows)


def apples_and_oranges(runs: list[Run]) -> list[str]:
    """Warnings when the runs ran a workload at another scale or with other parameter values: their
    times then measure different work, not different storage."""
    warnings = []
    scales = [(r, (r.manifest.get("parameters") or {}).get("scale")) for r in runs]
    if len({str(s) for _, s in scales}) > 1:
        warnings.append("The runs used different scale profiles: " + ", ".join(f"{r.run_id}: {s}" for r, s in scales)
                        + ". Their times measure different amounts of work.")
    per_run = [(r, _workload_parameters(r.manifest), _workload_scales(r.manifest)) for r in runs]
    names = list(dict.fromkeys(w for _, params, scale in per_run for w in [*params, *scale]))
    for name in names:
        present = [(r, p.get(name, {}), s.get(name)) for r, p, s in per_run if name in p or name in s]
        if len(present) < 2:
            continue
        if len({json.dumps(sorted(s or [])) for _, _, s in present}) > 1:
            warnings.append(f"workload {name} ran at different scales: "
                            + "; ".join(f"{r.run_id}: {', '.join(sorted(s or []))}" for r, _, s in present) + ".")
        if not _unmatched(name, [r for r, _, _ in present]):
            continue      # every run has a workload run with the effective parameters of another's: those compare
        keys = sorted({k for _, p, _ in present for k in p})
        # the parameters no value of which all these runs share keep them apart; a sweep's other values do not
        apart = [k for k in keys if not set.intersection(*(p.get(k, {"(absent)"}) for _, p, _ in present))] or keys
        for key in apart:
            seen = [(r, ", ".join(sorted(p.get(key, {"(absent)"})))) for r, p, _ in present]
            if len({v for _, v in seen}) > 1:
                warnings.append(f"workload {name}: parameter {key} differs: "
                                + "; ".join(f"{r.run_id}: {v}" for r, v in seen)
                                + ". Runs with other parameters are not compared.")
    return warnings


def _unmatched(workload: str, runs: list[Run]) -> list[Run]:
    """The runs none of whose runs of `workload` has the effective parameters of a run of it in another run."""
    sets = {r.run_id: {json.dumps(effective_parameters(w), sort_keys=True) for w in r.manifest.get("workloads", []) or []
                       if str(w.get("workload")) == workload} for r in runs}
    return [r for r in runs if not sets[r.run_id] & set().union(*(sets[o.run_id] for o in runs if o is not r))]
