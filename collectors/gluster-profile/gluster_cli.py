"""What start and stop of the gluster-profile collector share: the gluster CLI, the volumes of this server, and
which server records a volume (the one holding its first brick, so each volume is recorded exactly once)."""
from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

# Volumes this server profiles in the current window, written by start, consumed (and removed) by stop.
PROFILING_FILE = ".profiling"
TIMEOUT_S = 60


def gluster(*args: str, xml: bool = False) -> subprocess.CompletedProcess:
    argv = ["gluster", "--mode=script", *(["--xml"] if xml else []), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)


def brick_volumes(root: Path) -> list[str]:
    """Volumes with a brick on this host: the `pfs_brick` backends of its storage.json (role storage)."""
    storage = json.loads((root / "storage.json").read_text())
    return sorted(name for name, backend in (storage.get("backends") or {}).items()
                  if (backend or {}).get("kind") == "pfs_brick")


def first_brick(volume_info_xml: str) -> tuple[str, str]:
    """(brick name host:path, uuid of its server) of the first brick in `gluster --xml volume info <volume>`."""
    brick = ET.fromstring(volume_info_xml).find("./volInfo/volumes/volume/bricks/brick")
    if brick is None:
        raise ValueError("no brick in the volume information")
    return brick.findtext("name", ""), brick.findtext("hostUuid", "")


def own_uuid() -> str:
    """This server's glusterd UUID (`gluster system:: uuid get` prints `UUID: <uuid>`)."""
    result = gluster("system::", "uuid", "get")
    if result.returncode != 0:
        raise RuntimeError(f"gluster system:: uuid get: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout.split("UUID:", 1)[1].strip()
