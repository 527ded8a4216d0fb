"""What a collector says about itself beside its outputs: `collector-error.txt` (it failed), `collector-notes.txt`
(what it did, last line last), `nothing-here.txt` (the host has nothing for it to observe: docs/collectors.md)."""
from __future__ import annotations

import os
from pathlib import Path

from .. import safeio


def read_note(file: Path) -> str | None:
    """A collector's note, stripped; None when there is none. One the read rules refuse is not read: its
    text is the refusal (a planted note must neither hang the analysis nor pull in another file)."""
    if not os.path.lexists(file):
        return None
    try:
        return safeio.read_text(file, "note", errors="replace").strip()
    except (safeio.Refused, OSError) as error:
        return f"({file.name} not read: {error})"
