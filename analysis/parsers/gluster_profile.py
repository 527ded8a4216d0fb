"""`gluster --xml volume profile <volume> info cumulative` (collector gluster-profile) to tidy tables.

The collector clears the counters at the window's start, so the cumulative figures are the window's. Per brick
(`brickName` host:path): `blockStats` (block size -> read and write calls of that size; GlusterFS buckets each call
by the power of two at or below its size, the text output's `65536b+`), `fopStats` (file operation -> calls and
latency in nanoseconds), `duration` (seconds since the clear) and `totalRead`/`totalWrite` (bytes). A brick that
saw no call of a file operation has no entry for it, and the XML has none for the operations that get no reply and
so no latency (FORGET, RELEASE, RELEASEDIR; the text output lists them with 0 ns); a block size without calls is
dropped here.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from .. import safeio

NS = 1e-9
BRICK_COLUMNS = ["volume", "brick_host", "brick_path", "duration_s", "read_bytes", "write_bytes"]
FOP_COLUMNS = ["volume", "brick_host", "brick_path", "fop", "calls", "latency_avg_s", "latency_min_s",
               "latency_max_s", "latency_total_s"]
BLOCK_COLUMNS = ["volume", "brick_host", "brick_path", "block_size_bytes", "reads", "writes"]


def parse_gluster_profile(path: Path) -> dict[str, pd.DataFrame]:
    """{'gluster_bricks', 'gluster_fops', 'gluster_block_sizes'} frames of one recorded profile."""
    root = ET.fromstring(safeio.read_text(path, "gluster-profile"))
    if root.findtext("opRet", "0") != "0":
        raise ValueError(f"gluster reported failure: {root.findtext('opErrstr', '')}")
    profile = root.find("volProfile")
    if profile is None:
        raise ValueError("no volProfile element: not the output of `gluster --xml volume profile ... info`")
    volume = profile.findtext("volname", "")
    bricks, fops, blocks = [], [], []
    for brick in profile.findall("brick"):
        host, _, brick_path = brick.findtext("brickName", "").partition(":")
        stats = brick.find("cumulativeStats")
        if stats is None:
            continue
        where = {"volume": volume, "brick_host": host, "brick_path": brick_path}
        bricks.append({**where, "duration_s": int(stats.findtext("duration", "0")),
                       "read_bytes": int(stats.findtext("totalRead", "0")),
                       "write_bytes": int(stats.findtext("totalWrite", "0"))})
        for fop in stats.findall("fopStats/fop"):
            calls = int(fop.findtext("hits", "0"))
            average = float(fop.findtext("avgLatency", "0")) * NS
            fops.append({**where, "fop": fop.findtext("name", ""), "calls": calls, "latency_avg_s": average,
                         "latency_min_s": float(fop.findtext("minLatency", "0")) * NS,
                         "latency_max_s": float(fop.findtext("maxLatency", "0")) * NS,
                         "latency_total_s": average * calls})
        for block in stats.findall("blockStats/block"):
            reads, writes = int(block.findtext("reads", "0")), int(block.findtext("writes", "0"))
            if reads or writes:
                blocks.append({**where, "block_size_bytes": int(block.findtext("size", "0")),
                               "reads": reads, "writes": writes})
    return {"gluster_bricks": pd.DataFrame(bricks, columns=BRICK_COLUMNS),
            "gluster_fops": pd.DataFrame(fops, columns=FOP_COLUMNS),
            "gluster_block_sizes": pd.DataFrame(blocks, columns=BLOCK_COLUMNS)}


def gluster_profile_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """parse_gluster_profile in the (tables, note) form of a registry entry's parser (parsers/source.py)."""
    return parse_gluster_profile(path), ""
