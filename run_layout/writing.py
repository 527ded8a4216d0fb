"""Writing into a run directory that anyone may have edited, copied from elsewhere or damaged, without ever writing
through a symbolic link (docs/safety.md, "Run directories are untrusted input"): the harness and the analysis both
run as root over it, and a link planted in it would make them write wherever it points.

Every write goes through a directory opened by descriptor without following a link (O_DIRECTORY | O_NOFOLLOW):
- `replacing`, `write_bytes`, `write_text`: a new file created beside the target (O_EXCL | O_NOFOLLOW, a fresh name),
  renamed over it once written: a link planted at the target is replaced, not written through (the file is the
  writer's own output, rewritten whole: nothing of the link's target is needed); a reader never sees it half written.
- `appending`: a log appended to; a link or anything but a regular file at its path is refused (appending to a
  replacement would drop what the log held).
- `directory`: a directory to write into, created when absent; a link there is refused.
- `move`: a file or folder renamed into another directory of the same run, both reached without a link.

`root`, when given, is the run directory: every component of the path below it is then opened without following a
link (created when absent), so a link anywhere below the run directory is refused, naming it. Without `root` only
the last directory of the path is (the analysis' writes, whose folders are the run directory's own top level).
A refusal raises `Refused`, its message naming the path, the rule and the fix; `writer` names who refuses.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Iterator

WRITER = "Spillway"


class Refused(Exception):
    """A run-directory path not written through; the message names it, the rule and the fix."""


def _refuse_link_or_file(path: Path, error: OSError, writer: str) -> None:
    if error.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
        raise Refused(f"{path} is a symbolic link (to {os.readlink(path)}): {writer} does not write through it; "
                      "remove it and run again (a real directory is then created)") from None
    if error.errno == errno.ENOTDIR:
        raise Refused(f"{path} is not a directory: {writer} cannot write into it") from None


def _open_relative(name: str, parent: int | None, path: Path, writer: str, create: bool) -> int:
    """The directory `name` (in `parent`, a descriptor, or the current directory), opened without following a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as error:
        _refuse_link_or_file(path, error, writer)
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=parent)
    try:
        return os.open(name, flags, dir_fd=parent)
    except OSError as error:
        _refuse_link_or_file(path, error, writer)
        raise


def open_directory(path: Path, root: Path | None = None, create: bool = False, writer: str = WRITER) -> int:
    """A descriptor of the directory `path`, reached without a link (below `root` when given, else its last
    component only); created when absent and `create`. The caller closes it."""
    path = Path(path)
    if root is None:
        if create and not os.path.lexists(path):
            path.mkdir(parents=True, exist_ok=True)
        return _open_relative(os.fspath(path), None, path, writer, create=False)
    root = Path(root)
    parts = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).parts
    if parts[:1] == ("..",):
        raise ValueError(f"{path} is not inside {root}")
    if create and not os.path.lexists(root):
        # the root itself is the caller's choice (a run directory the harness names): made as plain mkdir would
        root.mkdir(parents=True, exist_ok=True)
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    reached = root
    try:
        for part in (p for p in parts if p != "."):
            reached = reached / part
            inner = _open_relative(part, folder, reached, writer, create)
            os.close(folder)
            folder = inner
        return folder
    except BaseException:
        os.close(folder)
        raise


def directory(path: Path, root: Path | None = None, writer: str = WRITER) -> Path:
    """`path` as a real directory to write into: created when absent, refused when it (or, with `root`, any folder
    between `root` and it) is a symbolic link."""
    os.close(open_directory(path, root, create=True, writer=writer))
    return Path(path)


@contextlib.contextmanager
def replacing(path: Path, mode: str = "wb", root: Path | None = None, writer: str = WRITER) -> Iterator[IO]:
    """A new file to write; once the block ends without error it takes `path`'s place (os.replace), so a
    reader never sees it half written and whatever was at `path`, a symlink included, is replaced rather
    than written to. The directory is held open by descriptor: swapping it for a symlink meanwhile changes
    nothing."""
    path = Path(path)
    folder = open_directory(path.parent, root, create=root is not None, writer=writer)
    temporary = f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=folder)
        try:
            with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as handle:
                yield handle
            try:
                os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
            except IsADirectoryError:
                raise Refused(f"{path} is a directory: {writer} does not replace it") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def write_bytes(path: Path, data: bytes, root: Path | None = None, writer: str = WRITER) -> Path:
    with replacing(path, root=root, writer=writer) as handle:
        handle.write(data)
    return Path(path)


def write_text(path: Path, text: str, root: Path | None = None, writer: str = WRITER) -> Path:
    return write_bytes(path, text.encode("utf-8"), root, writer)


def appending(path: Path, root: Path | None = None, writer: str = WRITER) -> IO[str]:
    """`path` opened for appending text, created when absent: only a regular file, reached without a link."""
    path = Path(path)
    folder = open_directory(path.parent, root, create=True, writer=writer)
    try:
        # O_NONBLOCK: a FIFO planted there fails to open (ENXIO) or is refused below instead of blocking
        fd = os.open(path.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o644, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Refused(f"{path} is a symbolic link (to {os.readlink(path)}): {writer} does not append through "
                          "it; remove it and run again") from None
        if error.errno in (errno.ENXIO, errno.EISDIR):
            raise Refused(f"{path} is not a regular file: {writer} does not append to it; remove it and run "
                          "again") from None
        raise
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{path} is not a regular file: {writer} does not append to it; remove it and run again")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


def move(source: Path, target: Path, root: Path, writer: str = WRITER) -> Path:
    """`source` renamed to `target`, both below `root` and reached without a link (the folders of `target` created
    when absent); the entry itself is moved as it is, a link as a link."""
    source, target = Path(source), Path(target)
    source_folder = open_directory(source.parent, root, writer=writer)
    try:
        target_folder = open_directory(target.parent, root, create=True, writer=writer)
        try:
            os.rename(source.name, target.name, src_dir_fd=source_folder, dst_dir_fd=target_folder)
        finally:
            os.close(target_folder)
    finally:
        os.close(source_folder)
    return target
