"""Workload manifests: load, validate, resolve parameters for a scale and expand sweeps.

The runner knows nothing workload-specific: everything it does with a workload comes from
workloads/<name>/workload.yml (see docs/workloads.md).
"""
import itertools
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

from spillway import WORKLOADS

STEPS = ("prepare", "run", "validate")
SCALES = ("tiny", "small", "large", "huge")
TYPES = {"int": int, "float": (int, float), "str": str, "bool": bool}

MANIFEST_SCHEMA = {
    "type": "object",
    "required": ["name", "description", "framework", "parameters", "scales", "steps"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        "description": {"type": "string"},
        "framework": {"type": "string"},
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
        """Parameter values for a scale: defaults < scale profile < overrides; validated."""
        if scale not in self.scales:
            raise WorkloadError(f"workload '{self.name}' has no scale '{scale}'; "
                                f"scales: {', '.join(self.scales)}")
        spec = self.manifest["parameters"]
        values = {k: p["default"] for k, p in spec.items()}
        values.update({k: v for k, v in self.scales[scale].items() if k != "data"})
        for key, value in (overrides or {}).items():
            if key in spec:  # overrides given for the whole bench apply where the parameter exists
                values[key] = value
        for key, value in values.items():
            if key not in spec:
                raise WorkloadError(f"workloads/{self.name}/workload.yml: scales.{scale}.{key}: "
                                    f"not a parameter; parameters: {', '.join(spec)}")
            for item in value if isinstance(value, list) else [value]:
                _check_value(self.name, key, spec[key], item)
        return values

    def instances(self, scale, overrides=None):
        """Expand list-valued parameters into a sweep: one (instance id, parameters) per point."""
        values = self.parameters(scale, overrides)
        swept = [k for k, v in values.items() if isinstance(v, list)]
        points = itertools.product(*(values[k] for k in swept))
        for point in points:
            params = {**values, **dict(zip(swept, point))}
            suffix = "-".join(str(v) for v in point)
            yield (f"{self.name}-{suffix}" if suffix else self.name), params

    def commands(self, step, params):
        """The step's commands whose `when` matches the parameters."""
        return [c for c in self.manifest["steps"].get(step, [])
                if all(params.get(k) == v for k, v in (c.get("when") or {}).items())]


def _check_value(workload, key, spec, value):
    where = f"workload '{workload}' parameter '{key}'"
    if not isinstance(value, TYPES[spec["type"]]) or (spec["type"] != "bool" and isinstance(value, bool)):
        raise WorkloadError(f"{where}: {value!r} is not of type {spec['type']}")
    if "choices" in spec and value not in spec["choices"]:
        raise WorkloadError(f"{where}: {value!r} is not one of {spec['choices']}")
    if "min" in spec and value < spec["min"]:
        raise WorkloadError(f"{where}: {value!r} is below the minimum {spec['min']}")
    if "max" in spec and value > spec["max"]:
        raise WorkloadError(f"{where}: {value!r} is above the maximum {spec['max']}")


def available():
    return sorted(p.parent.name for p in WORKLOADS.glob("*/workload.yml"))


def load(name):
    path = WORKLOADS / name / "workload.yml"
    if not path.is_file():
        raise WorkloadError(f"unknown workload '{name}'; workloads: {', '.join(available())}")
    manifest = yaml.safe_load(path.read_text())
    try:
        jsonschema.validate(manifest, MANIFEST_SCHEMA)
    except jsonschema.ValidationError as err:
        field = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise WorkloadError(f"{path}: {field}: {err.message}") from None
    if manifest["name"] != name:
        raise WorkloadError(f"{path}: name: '{manifest['name']}' must equal the folder name '{name}'")
    return Workload(name=name, path=path.parent, manifest=manifest)


def parse_list(text, default):
    """'a,b' -> ['a', 'b']; empty -> the default list."""
    items = [w.strip() for w in (text or "").split(",") if w.strip()]
    return items or list(default)
