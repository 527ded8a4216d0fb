"""What an entry of the sources' registry (parsers/registry.py) says: where a source's files are in one of its
`raw/<host>/<source>/<workload-id>/` folders, what an expected file that is not there means, and which parser
makes which tables of them.

A finder takes the folder and gives, in the order of their rows in the `sources` table, a `Found` for each file
(or folder) to parse and an `Absent` for each expected file that is not there. Each, First, Window and Whole are
the finders most sources need; any callable of that form will do (parsers/eventlog_source.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Union

import pandas as pd

from .collector_notes import read_note

Frames = dict[str, pd.DataFrame]


@dataclass(frozen=True)
class Found:
    """A file to parse: the path its `sources` row names, and what its parser is given (the file; a window's
    start and stop; a folder; a log's parts)."""

    named: Path
    given: tuple


@dataclass(frozen=True)
class Absent:
    """An expected file that is not there: its `sources` row (no rows parsed)."""

    what: str
    status: str
    message: str


Finder = Callable[[Path], Iterable[Union[Found, Absent]]]
# What an expected file that is not there means: (the folder, the file's name) -> (status, message) of its row.
AbsentMeaning = Callable[[Path, str], tuple[str, str]]


def missing(folder: Path, what: str) -> tuple[str, str]:
    """The data is missing, with the collector's own word on why where it left one (its error, else its last
    note)."""
    why = ""
    for name, line in (("collector-error.txt", 0), ("collector-notes.txt", -1)):
        said = (read_note(folder / name) or "").splitlines()
        if said:
            why = said[line]
            break
    return "missing", f"no {what}" + (f": {why}" if why else "")


def none_if_nothing_here(folder: Path, what: str) -> tuple[str, str]:
    """A block-device-level collector's: none when it said the host has nothing to observe (nothing-here.txt:
    e.g. a worker whose only data path is a network file system), else missing."""
    reason = read_note(folder / "nothing-here.txt")
    return ("none", reason) if reason is not None else missing(folder, what)


def none_unless_error(folder: Path, what: str) -> tuple[str, str]:
    """An application-level collector's: none (the workload ran no such application), unless the collector
    said it failed (collector-error.txt), in which case the data is missing."""
    error = read_note(folder / "collector-error.txt")
    return ("missing", error) if error is not None else ("none", f"no {what}: the workload ran none")


def absent_rows(folder: Path, what: str, meaning: AbsentMeaning | None) -> list[Absent]:
    """An Absent row, or none where the file's absence means nothing (meaning None)."""
    if meaning is None:
        return []
    status, message = meaning(folder, what)
    return [Absent(what, status, message[:500])]


def matches(folder: Path, pattern: str) -> list[Path]:
    """The paths in `folder` that `pattern` names, symbolic links among them (reading refuses them): a glob's
    matches in order, or the one name when it is there."""
    if any(char in pattern for char in "*?["):
        return sorted(folder.glob(pattern))
    return [folder / pattern] if os.path.lexists(folder / pattern) else []


@dataclass(frozen=True)
class Each:
    """Every file the pattern matches, parsed on its own (`**/` matches in subfolders too); `what` names the
    files in an `absent` row (default: the pattern)."""

    pattern: str
    absent: AbsentMeaning | None = None
    what: str = ""

    def __call__(self, folder: Path) -> list[Found | Absent]:
        found = [Found(path, (path,)) for path in matches(folder, self.pattern)]
        return found or absent_rows(folder, self.what or self.pattern, self.absent)


@dataclass(frozen=True)
class First:
    """The first of the names that is there (a tool's preferred output, then its fallbacks)."""

    names: tuple[str, ...]
    absent: AbsentMeaning | None = None

    def __call__(self, folder: Path) -> list[Found | Absent]:
        for name in self.names:
            if os.path.lexists(folder / name):
                return [Found(folder / name, (folder / name,))]
        return absent_rows(folder, self.names[0], self.absent)


@dataclass(frozen=True)
class Window:
    """Snapshots taken by `start` and `stop`: each `<name>.start` the pattern matches with its `<name>.stop`,
    parsed together and named by the stop. `absent` is what no start means (named `what`, default the pattern),
    `unpaired` what a start without its stop means."""

    start: str
    absent: AbsentMeaning | None = None
    unpaired: AbsentMeaning | None = None
    what: str = ""

    def __call__(self, folder: Path) -> list[Found | Absent]:
        starts = matches(folder, self.start)
        if not starts:
            return absent_rows(folder, self.what or self.start, self.absent)
        found: list[Found | Absent] = []
        for start in starts:
            stop = start.with_suffix(".stop")
            found += [Found(stop, (start, stop))] if os.path.lexists(stop) else absent_rows(folder, stop.name, self.unpaired)
        return found


@dataclass(frozen=True)
class Whole:
    """The folder parsed as a whole, named by the last of its files that `files_of` lists; nothing when it
    lists none."""

    files_of: Callable[[Path], list[Path]]

    def __call__(self, folder: Path) -> list[Found | Absent]:
        files = self.files_of(folder)
        return [Found(files[-1], (folder,))] if files else []


@dataclass(frozen=True)
class Source:
    """One entry of the registry. `name`: the folder under `raw/<host>/` its collector's outputs are fetched to
    (or `workload`: the workload steps'); a `cluster_wide` source has no host folder but one file per workload
    run, `raw/<name>/<workload-id>.<ext>`, and no `absent` rows. `files`: the finder. `parse`: a Found's `given`
    -> a frame (a source of one table) or (table -> frame, a note for `sources`). `tables`: table -> its text
    columns (every other column holds numbers or booleans; None: every column but time_s and value), the first
    the one whose rows a file's `sources` row counts; `row_per_table`: a row for each table instead, each
    standing or failing on its own."""

    name: str
    files: Finder
    parse: Callable[..., Union[pd.DataFrame, tuple[Frames, str]]]
    tables: dict[str, tuple[str, ...] | None]
    row_per_table: bool = False
    cluster_wide: bool = False

    @property
    def counted(self) -> tuple[str, ...]:
        """The tables a file's rows in `sources` count, a row each."""
        return tuple(self.tables) if self.row_per_table else (next(iter(self.tables)),)

    def frames(self, found: Found) -> tuple[Frames, str]:
        """The tables of one Found, and the note its `sources` rows carry."""
        parsed = self.parse(*found.given)
        return parsed if isinstance(parsed, tuple) else ({next(iter(self.tables)): parsed}, "")
