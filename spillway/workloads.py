"""Workload manifests: load, validate, resolve parameters for a scale and expand sweeps.

The runner knows nothing workload-specific: everything it does with a workload comes from
workloads/<name>/workload.yml (see docs/workloads.md).
"""
import functools
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

from spillway import WORKLOADS
from spillway.workload_groups import GROUPS

STEPS = ("prepare", "run", "validate")
SCALES = ("tiny", "small", "large", "huge")
TYPES = {"int": int, "float": (int, float), "str": str, "bool": bool}
# A workload run's id names folders of the run directory on every host and reaches Ansible and the shell: it is made
# of a workload name and sweep values, each of which must be a word of this alphabet (docs/safety.md).
SAFE_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
# `format: path` parameters (docs/workloads.md): empty, an absolute local path or an hdfs:// URI, of characters no
# shell or URI parser treats specially; no `..` component.
PATH_VALUE = re.compile(r"(hdfs://[A-Za-z0-9._-]*(:[0-9]+)?)?/[A-Za-z0-9_.+,=@%/-]*")

MANIFEST_SCHEMA = {
    "type": "object",
    "required": ["name", "description", "framework", "parameters", "scales", "steps"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        "description": {"type": "string"},
        "framework": {"type": "string"},
        # The Spark lines (e.g. "3.5") the workload runs on, and why; absent: every line Spillway installs
        # (spillway/versions.py refuses a bench that plans it on another, before anything runs).
        "spark_lines": {
            "type": "object",
            "required": ["supported", "why"],
            "additionalProperties": False,
            "properties": {
                "supported": {"type": "array", "minItems": 1,
                              "items": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"}},
                "why": {"type": "string", "minLength": 10},
            },
        },
        # Which of the workload's sweep points run Spark: true (every point, also when absent), false (none: fio,
        # Hadoop's own benchmarks) or the parameter values that make a point run Spark ({when: {engine: spark}}). A
        # VERSIONS sweep runs a Spark point once per release and any other point once: the Spark release does not
        # change what it measures.
        "runs_spark": {"oneOf": [
            {"type": "boolean"},
            {"type": "object", "required": ["when"], "additionalProperties": False,
             "properties": {"when": {"type": "object", "minProperties": 1}}},
        ]},
        "parameters": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["type", "default", "description"],
                "additionalProperties": False,
                "properties": {
                    "type": {"enum": sorted(TYPES)},
                    "default": {},
                    "description": {"type": "string"},
                    "unit": {"type": "string"},
                    "min": {"type": "number"},
                    "max": {"type": "number"},
                    "choices": {"type": "array"},
                    # a str value's shape: `path` (PATH_VALUE) or a regular expression it must match whole
                    "format": {"enum": ["path"]},
                    "pattern": {"type": "string"},
                    # scales at which the parameter has no usable default (e.g. paths to real inputs)
                    "required_for": {"type": "array", "items": {"enum": list(SCALES)}},
                },
            },
        },
        "scales": {
            "type": "object",
            "required": ["tiny"],
            "propertyNames": {"enum": list(SCALES)},
            "additionalProperties": {
                "type": "object",
                "required": ["data"],
                "properties": {"data": {"type": "string"}},
            },
        },
        "steps": {
            "type": "object",
            "required": ["run"],
            "additionalProperties": False,
            "properties": {step: {"type": "array", "items": {
                "type": "object",
                "required": ["hosts", "command"],
                "additionalProperties": False,
                "properties": {
                    "hosts": {"enum": ["controller", "namenode", "resourcemanager", "workers"]},
                    "once": {"type": "boolean"},
                    "command": {"type": "string"},
                    "when": {"type": "object"},
                    "timeout_s": {"type": "integer", "minimum": 1},
                    # why the command must run as root (docs/safety.md); without it, it runs as the workload user
                    "needs_root": {"type": "string", "minLength": 10},
                },
            }} for step in STEPS},
        },
    },
}


class WorkloadError(Exception):
    pass


@dataclass
class Workload:
    name: str
    path: Path
    manifest: dict

    @property
    def scales(self):
        return self.manifest["scales"]

    def parameters(self, scale, overrides=None):
        """Parameter values for a scale: defaults < scale profile < overrides; validated.

        Overrides come from the inventory (spillway_workload_parameters) and the command line (PARAMS);
        the bench narrows them to this workload with overrides_for()."""
        if scale not in self.scales:
            raise WorkloadError(f"workload '{self.name}' has no scale '{scale}'; "
                                f"scales: {', '.join(self.scales)}")
        spec = self.manifest["parameters"]
        values = {k: p["default"] for k, p in spec.items()}
        values.update({k: v for k, v in self.scales[scale].items() if k != "data"})
        for key, value in (overrides or {}).items():
            if key in spec:  # callers narrow overrides with overrides_for(); check_overrides() names typos
                values[key] = value
        for key, value in values.items():
            if key not in spec:
                raise WorkloadError(f"workloads/{self.name}/workload.yml: scales.{scale}.{key}: "
                                    f"not a parameter; parameters: {', '.join(spec)}")
            for item in value if isinstance(value, list) else [value]:
                _check_value(self.name, key, spec[key], item)
            if scale in spec[key].get("required_for", []) and value in ("", None, []):
                raise WorkloadError(
                    f"workload '{self.name}' at scale '{scale}' needs parameter '{key}' "
                    f"({spec[key]['description']}): set it for the cluster in its inventory "
                    f"(group_vars/all.yml: spillway_workload_parameters: {{{self.name}: {{{key}: ...}}}}) "
                    f"or for one bench (PARAMS={self.name}.{key}=...)")
        return values

    def instances(self, scale, overrides=None):
        """Expand list-valued parameters into a sweep: one (instance id, parameters) per point."""
        values = self.parameters(scale, overrides)
        swept = [k for k, v in values.items() if isinstance(v, list)]
        for key in swept:
            _check_sweep(self.name, key, values[key])
        points = itertools.product(*(values[k] for k in swept))
        for point in points:
            params = {**values, **dict(zip(swept, point))}
            suffix = "-".join(str(v) for v in point)
            yield (f"{self.name}-{suffix}" if suffix else self.name), params

    def runs_spark(self, params):
        """Whether the sweep point with these parameters runs Spark (the manifest's `runs_spark`)."""
        declared = self.manifest.get("runs_spark", True)
        if isinstance(declared, bool):
            return declared
        return _matches(declared["when"], params)

    def commands(self, step, params):
        """The step's commands whose `when` matches the parameters."""
        return [c for c in self.manifest["steps"].get(step, [])
                if _matches(c.get("when") or {}, params)]


def _check_value(workload, key, spec, value):
    where = f"workload '{workload}' parameter '{key}'"
    if not isinstance(value, TYPES[spec["type"]]) or (spec["type"] != "bool" and isinstance(value, bool)):
        raise WorkloadError(f"{where}: {value!r} is not of type {spec['type']}")
    if isinstance(value, float) and not math.isfinite(value):
        raise WorkloadError(f"{where}: {value!r} is not a finite number; give a number such as 1 or 0.5")
    if isinstance(value, str) and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise WorkloadError(f"{where}: {value!r} contains a control character (newline, tab, NUL, ...); remove it")
    if isinstance(value, str) and value and spec.get("format") == "path" and (
            not PATH_VALUE.fullmatch(value) or "/../" in f"{value}/" or "/./" in f"{value}/"):
        raise WorkloadError(f"{where}: {value!r} is not a path: give an absolute path (/data/x.bam) or an hdfs:// URI "
                            "of letters, digits and _ . + , = @ % / - without '..' or '.' components")
    if isinstance(value, str) and "pattern" in spec and not re.fullmatch(spec["pattern"], value):
        raise WorkloadError(f"{where}: {value!r} does not match {spec['pattern']}")
    if "choices" in spec and value not in spec["choices"]:
        raise WorkloadError(f"{where}: {value!r} is not one of {spec['choices']}")
    if "min" in spec and value < spec["min"]:
        raise WorkloadError(f"{where}: {value!r} is below the minimum {spec['min']}")
    if "max" in spec and value > spec["max"]:
        raise WorkloadError(f"{where}: {value!r} is above the maximum {spec['max']}")


def _check_sweep(workload, key, values):
    """A sweep's values become parts of run ids (folder names on every host): non-empty, distinct, safe words."""
    where = f"workload '{workload}' parameter '{key}'"
    if not values:
        raise WorkloadError(f"{where}: an empty list sweeps over nothing; give at least one value, e.g. {key}=[a,b]")
    seen = set()
    for value in values:
        if isinstance(value, (list, dict)):
            raise WorkloadError(f"{where}: {value!r}: a sweep's values are single values, not lists")
        word = str(value)
        if not SAFE_WORD.fullmatch(word):
            raise WorkloadError(f"{where}: sweep value {word!r} cannot name a run: a sweep's values must be words of "
                                "letters, digits and _ . + - (at most 64, not starting with . or -)")
        if word in seen:
            raise WorkloadError(f"{where}: sweep value {word!r} is given twice; each value runs once (REPEAT=n "
                                "repeats every run)")
        seen.add(word)


def available():
    return sorted(p.parent.name for p in WORKLOADS.glob("*/workload.yml"))


@functools.cache
def _manifest_validator():
    """MANIFEST_SCHEMA's validator, its schema checked once: jsonschema.validate checks the schema on every call, which
    was a third of a plan's time (a bench loads each of its workloads, the safety tests' fuzzing thousands)."""
    cls = jsonschema.validators.validator_for(MANIFEST_SCHEMA)
    cls.check_schema(MANIFEST_SCHEMA)
    return cls(MANIFEST_SCHEMA)


def load(name):
    path = WORKLOADS / name / "workload.yml"
    if not path.is_file():
        raise WorkloadError(f"unknown workload '{name}'; workloads: {', '.join(available())}; groups: "
                            f"{', '.join(GROUPS)}")
    manifest = yaml.safe_load(path.read_text())
    err = jsonschema.exceptions.best_match(_manifest_validator().iter_errors(manifest))
    if err is not None:
        field = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise WorkloadError(f"{path}: {field}: {err.message}")
    if manifest["name"] != name:
        raise WorkloadError(f"{path}: name: '{manifest['name']}' must equal the folder name '{name}'")
    _check_runs_spark(path, manifest)
    return Workload(name=name, path=path.parent, manifest=manifest)


def _matches(when, params):
    """A manifest's `when` (parameter -> value, all of them) against a sweep point's parameters."""
    return all(params.get(k) == v for k, v in when.items())


def _check_runs_spark(path, manifest):
    """`runs_spark.when` must name parameters and values they can take: a typo would otherwise match no point, and a
    VERSIONS sweep would silently run the workload's Spark points once, on the default line."""
    when = (manifest.get("runs_spark") or {}) if isinstance(manifest.get("runs_spark"), dict) else {}
    spec = manifest["parameters"]
    for key, value in (when.get("when") or {}).items():
        if key not in spec:
            raise WorkloadError(f"{path}: runs_spark.when.{key}: not a parameter; parameters: {', '.join(spec)}")
        choices = spec[key].get("choices")
        if choices is not None and value not in choices:
            raise WorkloadError(f"{path}: runs_spark.when.{key}: {value!r} is not one of its choices {choices}")


def parse_list(text, default):
    """'a,b' -> ['a', 'b']; empty -> the default list."""
    items = [w.strip() for w in (text or "").split(",") if w.strip()]
    return items or list(default)


def parse_params(text):
    """PARAMS text -> {workload or None: {parameter: value}}.

    Space-separated `name=value` (every workload that has the parameter) or `workload.name=value`
    (that workload only). Values are read as YAML, so `rows=1000` is an int, `engine=[spark]` a list
    (a sweep) and `queries=1,3,6` a string.
    """
    parsed = {}
    for item in (text or "").split():
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise WorkloadError(f"PARAMS: '{item}' is not name=value or workload.name=value")
        workload, _, name = key.rpartition(".")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        parsed.setdefault(workload or None, {})[name] = "" if value is None else value
    return parsed


def overrides_for(workload, *sources):
    """Merge override sources (each as parse_params returns) for one workload; later sources win."""
    merged = {}
    for source in sources:
        merged.update({k: v for k, v in source.get(None, {}).items() if k in workload.manifest["parameters"]})
        merged.update(source.get(workload.name, {}))
    return merged


def check_overrides(workloads, source, where, other_workloads_ok=False):
    """Refuse overrides that match nothing: a typo must not silently run the defaults.

    An inventory may set parameters of workloads this bench does not run (other_workloads_ok)."""
    by_name = {w.name: w for w in workloads}
    for target, values in source.items():
        if target is None:
            for name in values:
                if not any(name in w.manifest["parameters"] for w in workloads):
                    raise WorkloadError(f"{where}: parameter '{name}' belongs to none of the workloads "
                                        f"{', '.join(sorted(by_name))}")
        elif target in by_name:
            spec = by_name[target].manifest["parameters"]
            for name in values:
                if name not in spec:
                    raise WorkloadError(f"{where}: workload '{target}' has no parameter '{name}'; "
                                        f"parameters: {', '.join(spec)}")
        elif target not in available():
            raise WorkloadError(f"{where}: '{target}' is not a workload; workloads: {', '.join(available())}")
        elif not other_workloads_ok:
            raise WorkloadError(f"{where}: parameters for '{target}', which is not among the workloads of "
                                f"this bench ({', '.join(sorted(by_name))})")
