"""Repair of an iostat JSON report cut off mid-way (iostat killed before it printed the end)."""
from __future__ import annotations

import json

_STATISTICS_KEY = '"statistics": ['
# What iostat prints after the last statistics entry: close statistics, the host, hosts, sysstat.
_TAIL = "\n\t\t\t]\n\t\t}\n\t]\n}}\n"


def repair_iostat_json(text: str) -> tuple[str, int]:
    """Return (valid JSON text, number of complete samples kept).

    Keeps the header and every statistics entry that parses, drops the partial last one.
    """
    head, sep, body = text.partition(_STATISTICS_KEY)
    if not sep:
        raise ValueError("not an iostat JSON report: no statistics array (iostat printed nothing?)")
    decoder = json.JSONDecoder()
    samples, pos = [], 0
    while True:
        while pos < len(body) and body[pos] in " \t\r\n,":
            pos += 1
        try:
            entry, pos = decoder.raw_decode(body, pos)
        except ValueError:
            break
        samples.append(entry)
    kept = ",\n".join("\t\t\t\t" + json.dumps(s) for s in samples)
    fixed = head + sep + ("\n" + kept if samples else "") + _TAIL
    json.loads(fixed)  # must hold now; raises if the header itself was cut
    return fixed, len(samples)
