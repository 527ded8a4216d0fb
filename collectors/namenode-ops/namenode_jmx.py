"""Snapshot the NameNode's operation counters over its JMX servlet (docs/collectors.md, namenode-ops)."""
from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request

from spillway_collector import Context, hadoop_site_property, write_json

# The beans whose counters say what HDFS's metadata did: per-operation counts, and per RPC method calls and times.
BEANS = ("Hadoop:service=NameNode,name=NameNodeActivity", "Hadoop:service=NameNode,name=RpcDetailedActivityForPort*")
JMX_TIMEOUT_S = 20
# A NameNode's answer for these beans is a few KiB; anything far larger is not what was asked for.
MAX_ANSWER_BYTES = 4 << 20


def read_beans(address: str) -> list[dict]:
    """The beans of BEANS, each its name and numeric attributes (strings, such as the host name tags, left out)."""
    beans = []
    for query in BEANS:
        url = f"http://{address}/jmx?qry={urllib.parse.quote(query, safe='=:,*')}"
        with urllib.request.urlopen(url, timeout=JMX_TIMEOUT_S) as answer:
            text = answer.read(MAX_ANSWER_BYTES + 1)
        if len(text) > MAX_ANSWER_BYTES:
            raise RuntimeError(f"{url}: the answer exceeds {MAX_ANSWER_BYTES} bytes")
        for bean in json.loads(text).get("beans", []):
            numbers = {key: value for key, value in bean.items()
                       if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}
            beans.append({"name": str(bean.get("name", ""))[:200], **numbers})
    return beans


def snapshot(ctx: Context, which: str) -> None:
    """namenode.<which> in $SPILLWAY_OUT; a note instead where Hadoop is not provisioned or the NameNode is down."""
    address = hadoop_site_property(ctx, "hdfs-site.xml", "dfs.namenode.http-address")
    if not address:
        ctx.note(f"no dfs.namenode.http-address in {ctx.root}/etc/hadoop/hdfs-site.xml: Hadoop is not provisioned for "
                 f"this cluster, no NameNode counters at {which}")
        return
    try:
        beans = read_beans(address)
    except (OSError, ValueError) as error:        # urllib's errors are OSErrors, a bad answer a ValueError
        ctx.note(f"the NameNode's JMX at {address} did not answer at {which} ({error}): no counters")
        return
    write_json(ctx.out / f"namenode.{which}", {"epoch": time.time(), "address": address, "beans": beans})
