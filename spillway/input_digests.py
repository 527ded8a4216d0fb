"""Digests of what a playbook run is made from: a bench skips a setup (spillway/setuprecord.py) or a provisioning
(spillway/bench/provisioning.py) whose inputs have not changed since it last ended well."""
import hashlib
from pathlib import Path


def files_under(folder):
    """Every file below `folder`, sorted; Python's bytecode caches are no input."""
    return sorted(p for p in Path(folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def digest(repo, paths, labelled=()):
    """sha256 (hex) of the files `paths`, each named relative to `repo` when below it, then of the (label, bytes)
    pairs `labelled`; each part is framed by its label and length, so no two different inputs run together."""
    h = hashlib.sha256()

    def add(label, data):
        h.update(f"{label}\0{len(data)}\0".encode())
        h.update(data)

    for path in paths:
        add(str(path.relative_to(repo) if path.is_relative_to(repo) else path), path.read_bytes())
    for label, data in labelled:
        add(label, data)
    return h.hexdigest()
