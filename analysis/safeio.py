"""Reading and writing a run directory that anyone may have edited, copied from elsewhere or damaged.

The analysis runs as root on the controller, over `results/<run-id>/` folders that are only data: the rules
below (docs/safety.md, "Run directories are untrusted input") keep such a folder from making it write
elsewhere, read elsewhere, or spend unbounded time or memory.

Reads (`open_source`, `read_bytes`, `read_text`, `read_json`): only regular files, opened without following
a symbolic link, at most their source type's cap (SIZE_CAPS); inside `confined(run_dir)` also only files
reached without a symbolic link anywhere below the run directory. Decompressed output (`capped`) and JSON
nesting (`load_json`, `check_depth`) are bounded as well. What breaks a rule raises `Refused`.

Writes (`replacing`, `write_bytes`, `write_text`, `directory`): a new file beside the target, renamed over
it, in a directory opened without following a symbolic link: a symlink planted at the target is replaced,
one planted as the directory is refused, neither is written through. They are run_layout.writing's, which the
harness writes with too, wrapped to raise this module's `Refused`.
"""
from __future__ import annotations

import contextlib
import json
import os
import stat
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from run_layout import writing

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# The largest file of each source type the analysis reads. Large enough for long runs on big clusters
# (a 5 GB event log is legitimate), small enough that a planted sparse file or device is not read for hours.
SIZE_CAPS = {
    "manifest": 64 * MiB,          # manifest.json, raw/<host>/facts.json, raw/<host>/storage.json, fio extents-*.json
    "fio": 256 * MiB,              # fio-*.json (json+ histograms included)
    "iostat": 2 * GiB,             # iostat.json, iostat.txt
    "diskstats": 64 * MiB,         # diskstats.start/.stop
    "blocktrace": 20 * GiB,        # blocktrace.tsv, blkparse / trace_pipe text
    "eventlog": 20 * GiB,          # one Spark event log file (a rolling log's part), compressed or not
    "mr-history": 2 * GiB,         # one .jhist
    "gluster-profile": 256 * MiB,  # profile-<volume>.xml
    "pfs-client": 64 * MiB,        # client-<backend>.start/.stop
    "namenode-ops": 4 * MiB,       # namenode.start/.stop (the collector keeps at most 4 MiB of the JMX answer)
    "node-budget": 1 * MiB,        # node-budget.start/.stop
    "prometheus": 2 * GiB,         # raw/prometheus/<workload-id>.json
    "note": 1 * MiB,               # collector-error.txt, collector-notes.txt, nothing-here.txt
    "thresholds": 1 * MiB,         # a thresholds file given to make report/compare (analysis/findings/thresholds.py)
    # logs/<workload-id>.<step>.log: Ansible's output of one workload step, KBs (a failed command adds the last 25
    # lines of its output per host); the rest is room for a verbose run on a large cluster
    "step-log": 256 * MiB,
    "table": 20 * GiB,             # tables/<name>.parquet (derived, but the folder is as writable as raw/)
}
# Decompressed output of one file: at most its type's cap, and at most MAX_EXPANSION times its compressed
# size (Spark's codecs reach 4-6x on real logs; a zstd bomb reaches 30000x), except that any file may expand
# to MIN_DECOMPRESSED_CAP (a small log is never refused for compressing well).
MAX_EXPANSION = 1000
MIN_DECOMPRESSED_CAP = 64 * MiB
# One decompressed block of a block-framed codec (lz4-java's largest block is 32 MiB, Spark's default 32 KiB):
# the frame's declared size is what the decoder allocates.
MAX_BLOCK_BYTES = 64 * MiB
# One line of a line-oriented source (a Spark event is one line; the largest real ones, SQL plans, are MBs).
MAX_LINE_BYTES = 256 * MiB
# Nesting of JSON documents; real ones nest below 10. Far below Python's recursion limit, so that code that
# recurses over a decoded value (repr, json.dumps, templates) cannot hit it.
MAX_JSON_DEPTH = 64


class Refused(writing.Refused):
    """A run-directory path the analysis does not read or write through; the message names it and the rule."""


def size_text(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


# ---------------------------------------------------------------- reads

_ROOT: ContextVar[tuple[str, str] | None] = ContextVar("spillway_run_dir", default=None)


@contextlib.contextmanager
def confined(run_dir: Path) -> Iterator[None]:
    """Reads inside this block refuse a file of `run_dir` reached through a symbolic link anywhere below it (to a
    file or a folder, leading out of the run or not). Paths outside the run (another run a model compares, the
    repository) keep the other rules only. A context rather than a parameter: the parsers take only a path, and
    every one of them is covered."""
    given = os.path.abspath(run_dir)
    token = _ROOT.set((given, os.path.realpath(given)))
    try:
        yield
    finally:
        _ROOT.reset(token)


def _check_inside(path: str) -> None:
    root = _ROOT.get()
    if root is None:
        return
    given, real = root
    absolute = os.path.abspath(path)
    for base in (given, real):
        if absolute == base or absolute.startswith(base + os.sep):
            expected = os.path.join(real, os.path.relpath(absolute, base))
            break
    else:
        return
    resolved = os.path.realpath(absolute)
    if resolved != expected:
        raise Refused(f"{path}: reached through a symbolic link (it resolves to {resolved}): not read")


def open_source(path: Path, kind: str) -> IO[bytes]:
    """`path` opened for binary reading, when it is a regular file within SIZE_CAPS[kind]."""
    path = os.fspath(path)
    cap = SIZE_CAPS[kind]
    before = os.lstat(path)
    # Decided on lstat, before any open: opening a FIFO blocks, opening some devices has effects.
    if stat.S_ISLNK(before.st_mode):
        raise Refused(f"{path}: a symbolic link (to {os.readlink(path)}): not followed")
    if not stat.S_ISREG(before.st_mode):
        raise Refused(f"{path}: not a regular file ({_kind_of(before.st_mode)}): not read")
    _check_inside(path)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(now.st_mode):
            raise Refused(f"{path}: replaced while being opened: not read")
        if now.st_size > cap:
            raise Refused(f"{path}: {size_text(now.st_size)}, over the {size_text(cap)} cap for {kind} files: "
                          "not read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def read_bytes(path: Path, kind: str) -> bytes:
    with open_source(path, kind) as handle:
        return handle.read()


def read_text(path: Path, kind: str, errors: str = "strict") -> str:
    return read_bytes(path, kind).decode("utf-8", errors)


def check_depth(value: Any, what: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """`value` (decoded JSON) when it nests at most `limit` deep; walked without recursion."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise Refused(f"{what}: JSON nested deeper than {limit} levels: not read")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


def load_json(data: str | bytes, what: str) -> Any:
    """json.loads with the nesting bounded: ValueError when it is no JSON, Refused when it nests too deep."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise Refused(f"{what}: JSON nested deeper than Python can decode: not read") from None
    return check_depth(value, what)


def read_json(path: Path, kind: str) -> Any:
    return load_json(read_bytes(path, kind), str(path))


def decompressed_cap(compressed_bytes: int, kind: str) -> int:
    """The most one compressed file of `kind` may expand to (see MAX_EXPANSION)."""
    return min(SIZE_CAPS[kind], max(MIN_DECOMPRESSED_CAP, MAX_EXPANSION * compressed_bytes))


def capped(pieces: Iterable[bytes], limit: int, what: str) -> Iterator[bytes]:
    """The decompressed `pieces`, stopping with Refused once they exceed `limit` bytes in all."""
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > limit:
            raise Refused(f"{what}: decompresses to more than {size_text(limit)} (the cap for its compressed "
                          "size): not read further")
        yield piece


# ---------------------------------------------------------------- writes
# run_layout.writing's, the one write primitive the harness uses too; a refusal raised as this module's Refused.

WRITER = "the analysis"


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    try:
        yield
    except writing.Refused as refused:
        if isinstance(refused, Refused):
            raise
        raise Refused(str(refused)) from None


def directory(path: Path) -> Path:
    """`path` as a real directory to write into: created when absent, refused when it is a symlink."""
    with _refusals():
        return writing.directory(path, writer=WRITER)


@contextlib.contextmanager
def replacing(path: Path, mode: str = "wb") -> Iterator[IO]:
    """A new file to write, taking `path`'s place once the block ends without error (run_layout.writing.replacing):
    a symlink at `path` is replaced rather than written to."""
    with _refusals(), writing.replacing(path, mode, writer=WRITER) as handle:
        yield handle


def write_bytes(path: Path, data: bytes) -> Path:
    with _refusals():
        return writing.write_bytes(path, data, writer=WRITER)


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))
