"""Digests of what a playbook run is made from: a bench skips a setup (spillway/setuprecord.py) or a provisioning
(spillway/bench/provisioning.py) whose inputs have not changed since it last ended well."""
import hashlib
from pathlib import Path

from spillway.inventory_values import hash_file


def files_under(folder):
    """Every file below `folder`, sorted; Python's bytecode caches are no input."""
    return sorted(p for p in Path(folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def digest(repo, paths, labelled=()):
    """sha256 (hex) of the files `paths`, each named relative to `repo` when below it, then of the (label, bytes)
    pairs `labelled`; each part is framed by its label and length, so no two different inputs run together. Files are
    read as streams, regular files of at most inventory_values.FILE_MAX_BYTES only (else FileRefused, naming it)."""
    h = hashlib.sha256()

    def framed(label):
        return lambda size: f"{label}\0{size}\0".encode()

    for path in paths:
        hash_file(h.update, path, header=framed(path.relative_to(repo) if path.is_relative_to(repo) else path))
    for label, data in labelled:
        h.update(framed(label)(len(data)))
        h.update(data)
    return h.hexdigest()
