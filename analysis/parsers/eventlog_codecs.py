"""Decompressed bytes of a Spark event log file, whichever codec wrote it.

Spark (3.x, `CompressionCodec.compressedContinuousOutputStream`) writes:
- `.lz4`: lz4-java's `LZ4BlockOutputStream` framing, not the LZ4 frame format: blocks of
  magic `LZ4Block`, a token (method in the high nibble: 0x10 stored, 0x20 LZ4), compressed
  length, decompressed length and checksum (little-endian int32), then the block; an empty
  block ends the stream.
- `.snappy`: snappy-java's `SnappyOutputStream` framing: header `\\x82SNAPPY\\x00` + two big-endian
  int32 versions, then blocks of a big-endian int32 length and a raw snappy block; a header may
  appear again where streams were concatenated.
- `.zstd`: standard zstd frames, one per flush.
A stream cut by a crash or still being written (`.inprogress`) yields what was complete and
records `truncated`; the line splitter then drops the partial last line.
The file is untrusted (docs/safety.md): a block may declare at most safeio.MAX_BLOCK_BYTES, and a
file's output stops with safeio.Refused beyond safeio.decompressed_cap (a zstd bomb of 32 KB would
otherwise expand to GBs).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from io import BufferedReader
from typing import BinaryIO, Iterator

from .. import safeio

READ_SIZE = 8 << 20

_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<B i i i")
_LZ4_STORED, _LZ4_COMPRESSED = 0x10, 0x20
_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_SIZE = len(_SNAPPY_MAGIC) + 8
_CODEC_SUFFIXES = {".lz4": "lz4", ".snappy": "snappy", ".zstd": "zstd", ".zst": "zstd", ".lzf": "lzf"}


class MissingCodec(RuntimeError):
    """The log's codec needs a Python package that is not installed (or is not supported)."""


class StreamState:
    """What the decoder noticed: a stream that ended before its end marker."""

    def __init__(self) -> None:
        self.truncated = False


def codec_of(path: Path) -> str | None:
    """`lz4`, `snappy`, `zstd`, `lzf` from the file name (before `.inprogress`), None when plain."""
    name = path.name.removesuffix(".inprogress")
    return next((codec for suffix, codec in _CODEC_SUFFIXES.items() if name.endswith(suffix)), None)


def _read_exact(raw: BinaryIO, size: int) -> bytes | None:
    data = raw.read(size)
    return data if len(data) == size else None


def _lz4_blocks(raw: BufferedReader, state: StreamState) -> Iterator[bytes]:
    try:
        import lz4.block
    except ImportError:
        raise MissingCodec("lz4-compressed event logs need the `lz4` package (pinned in requirements.txt)") from None
    while True:
        head = _read_exact(raw, len(_LZ4_MAGIC) + _LZ4_HEADER.size)
        if head is None or not head.startswith(_LZ4_MAGIC):
            state.truncated = True
            return
        token, compressed_size, size, _checksum = _LZ4_HEADER.unpack_from(head, len(_LZ4_MAGIC))
        _check_block(size, "LZ4Block")
        _check_block(compressed_size, "LZ4Block")
        if size == 0:
            # An empty block ends one stream; Spark may have appended another after it.
            if not raw.peek(1):
                return
            continue
        body = _read_exact(raw, compressed_size)
        if body is None:
            state.truncated = True
            return
        method = token & 0xF0
        if method == _LZ4_STORED:
            yield body
        elif method == _LZ4_COMPRESSED:
            yield lz4.block.decompress(body, uncompressed_size=size)
        else:
            raise ValueError(f"unknown LZ4Block compression method {method:#x}")


def _snappy_blocks(raw: BinaryIO, state: StreamState) -> Iterator[bytes]:
    try:
        import cramjam
    except ImportError:
        raise MissingCodec("snappy-compressed event logs need the `cramjam` package "
                           "(pip install cramjam==2.14.0)") from None
    header = _read_exact(raw, _SNAPPY_HEADER_SIZE)
    if header is None or not header.startswith(_SNAPPY_MAGIC):
        raise ValueError("not a snappy-java stream (no \\x82SNAPPY header)")
    while True:
        length_bytes = raw.read(4)
        if not length_bytes:
            return
        if len(length_bytes) < 4:
            state.truncated = True
            return
        if length_bytes == _SNAPPY_MAGIC[:4]:
            # A concatenated stream: skip the rest of its header.
            if _read_exact(raw, _SNAPPY_HEADER_SIZE - 4) is None:
                state.truncated = True
                return
            continue
        (length,) = struct.unpack(">i", length_bytes)
        _check_block(length, "snappy")
        body = _read_exact(raw, length)
        if body is None:
            state.truncated = True
            return
        _check_block(_snappy_length(body), "snappy")
        yield bytes(cramjam.snappy.decompress_raw(body))


def _snappy_length(block: bytes) -> int:
    """The decompressed length a raw snappy block declares (its leading varint)."""
    length = shift = 0
    for byte in block[:5]:
        length |= (byte & 0x7F) << shift
        if byte < 0x80:
            return length
        shift += 7
    return length


def _check_block(size: int, codec: str) -> None:
    """A block size from the stream is what the decoder would allocate: bounded before it does."""
    if not 0 <= size <= safeio.MAX_BLOCK_BYTES:
        raise safeio.Refused(f"a {codec} block of {size} bytes (at most {safeio.size_text(safeio.MAX_BLOCK_BYTES)} "
                             "are read): not read further")


def _zstd_chunks(raw: BinaryIO, state: StreamState) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:
        raise MissingCodec("zstd-compressed event logs need the `zstandard` package "
                           "(pinned in requirements.txt)") from None
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    try:
        while chunk := reader.read(READ_SIZE):
            yield chunk
    except zstandard.ZstdError:
        state.truncated = True


def _plain_chunks(raw: BinaryIO, _state: StreamState) -> Iterator[bytes]:
    while chunk := raw.read(READ_SIZE):
        yield chunk


_DECODERS = {None: _plain_chunks, "lz4": _lz4_blocks, "snappy": _snappy_blocks, "zstd": _zstd_chunks}


def decompressed_chunks(path: Path, state: StreamState) -> Iterator[bytes]:
    """The file's decompressed bytes, in pieces of at least READ_SIZE (except the last)."""
    codec = codec_of(path)
    if codec not in _DECODERS:
        raise MissingCodec(f"{path}: {codec}-compressed event logs are not supported "
                           "(Spark 3.5 writes lz4, snappy or zstd)")
    with safeio.open_source(path, "eventlog") as raw:
        pending: list[bytes] = []
        pending_size = 0
        limit = safeio.decompressed_cap(os.fstat(raw.fileno()).st_size, "eventlog")
        for piece in safeio.capped(_DECODERS[codec](raw, state), limit, str(path)):
            pending.append(piece)
            pending_size += len(piece)
            if pending_size >= READ_SIZE:
                yield b"".join(pending)
                pending, pending_size = [], 0
        if pending:
            yield b"".join(pending)
