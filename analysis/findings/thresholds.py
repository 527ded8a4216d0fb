"""Thresholds from a file (`make report RUN=... THRESHOLDS=<file>`, `make compare ... THRESHOLDS=<file>`; the
`--thresholds` option of `python -m analysis report|compare`; docs/findings.md, "Thresholds from a file"): a site
that judges with other cut-points than ours says so once, and every page and findings.json it writes uses and
records them.

The file is JSON: an object of rule ids, each an object of that rule's threshold names and their numbers, e.g.
`{"spill": {"spill_share_min_pct": 40}}`. What is not named keeps the catalog's value. Refused, naming the key and
the fix, before any rule runs: a file that is no regular file or over 1 MiB, text that is not one JSON object, a
rule the rule set has not, a threshold the rule has not, a value that is no finite number from 0 to 1e15 (`NaN`,
`Infinity`, a string such as a path, `true`).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
from pathlib import Path
from typing import Sequence

from .. import safeio
from .engine import Rule

MAX_BYTES = safeio.SIZE_CAPS["thresholds"]
MAX_VALUE = 1e15
# Thresholds a file may not change, and why: a value the pages would show but the verdicts not follow
FIXED = {("storage-sensitive", "confidence_pct"): "the time verdicts' confidence is the statistics' own, 95 % "
                                                  "(docs/compare.md, \"How sure\"), for a run and a comparison alike"}


class ThresholdError(ValueError):
    """A thresholds file that cannot be used, what is wrong named."""


def _read(path: Path) -> str:
    """The file named on the command line (the user's choice: a link there is followed to what it names, which
    analysis.safeio then reads as any source: a regular file within its cap, a FIFO never waited on)."""
    try:
        return safeio.read_text(Path(path).resolve(), "thresholds")
    except safeio.Refused as error:
        raise ThresholdError(f"thresholds file {error}") from None
    except UnicodeDecodeError:
        raise ThresholdError(f"thresholds file {path}: not UTF-8 text") from None
    except OSError as error:
        raise ThresholdError(f"thresholds file {path}: {error.strerror}") from None


def _no_constants(name: str):
    raise ThresholdError(f"{name} is no finite number: give every threshold as a plain number")


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def parse(text: str, rules: Sequence[Rule], where: str = "thresholds file") -> dict[str, dict[str, float]]:
    """{rule id: {threshold: value}} from the file's text, every key and value checked against `rules`."""
    try:
        doc = json.loads(text, parse_constant=_no_constants)
    except ThresholdError as error:
        raise ThresholdError(f"{where}: {error}") from None
    except ValueError as error:
        raise ThresholdError(f"{where}: not JSON ({error})") from None
    if not isinstance(doc, dict):
        raise ThresholdError(f"{where}: must be one JSON object of rule ids, e.g. "
                             '{"spill": {"spill_share_min_pct": 40}}')
    by_id = {r.id: r for r in rules}
    overrides = {}
    for rule_id, given in doc.items():
        if rule_id not in by_id:
            raise ThresholdError(f"{where}: {str(rule_id)[:80]!r} is no rule; {_did_you_mean(rule_id, list(by_id))}"
                                 f"the rules are {', '.join(by_id)}")
        if not isinstance(given, dict) or not given:
            raise ThresholdError(f"{where}: {rule_id}: must be an object of its thresholds and numbers, e.g. "
                                 f"{json.dumps({next(iter(by_id[rule_id].thresholds), 'name'): 1})}")
        known = by_id[rule_id].thresholds
        for name, value in given.items():
            if name not in known:
                raise ThresholdError(f"{where}: {rule_id}.{str(name)[:80]}: no threshold of that rule; "
                                     f"{_did_you_mean(name, list(known))}its thresholds are {', '.join(known)}")
            if (rule_id, name) in FIXED:
                raise ThresholdError(f"{where}: {rule_id}.{name}: not set by a file: {FIXED[rule_id, name]}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not 0 <= value <= MAX_VALUE:
                raise ThresholdError(f"{where}: {rule_id}.{name}: {json.dumps(value)[:80]} is no number from 0 to "
                                     f"{MAX_VALUE:g} (the catalog's value is {known[name]})")
        overrides[rule_id] = {name: float(value) for name, value in given.items()}
    return overrides


def load(path: Path, rules: Sequence[Rule]) -> dict[str, dict[str, float]]:
    return parse(_read(Path(path)), rules, f"thresholds file {path}")


def apply(rules: Sequence[Rule], overrides: dict[str, dict[str, float]]) -> tuple[Rule, ...]:
    """The rule set with the overridden thresholds in place of the catalog's."""
    return tuple(dataclasses.replace(r, thresholds={**r.thresholds, **overrides[r.id]}) if r.id in overrides else r
                 for r in rules)


def record(path: Path | None, overrides: dict[str, dict[str, float]], rules: Sequence[Rule]) -> dict | None:
    """What findings.json says of the thresholds it was judged by: the file, and each overridden threshold with the
    catalog's value beside it (None when no file was given)."""
    if path is None:
        return None
    by_id = {r.id: r for r in rules}
    return {"file": str(path), "overridden": {rule_id: {name: {"value": value, "catalog": by_id[rule_id].thresholds[name]}
                                                        for name, value in given.items()}
                                              for rule_id, given in overrides.items()}}
