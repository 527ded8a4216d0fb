"""A schema-driven decoder of Avro's binary encoding (the spec's "Binary Encoding" section),
enough for MapReduce job history: Hadoop 3 writes `.jhist` as `Avro-Binary`, the schema as
one JSON line, then the encoded events back to back (no container file, no sync markers)."""
from __future__ import annotations

import struct

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class AvroDecoder:
    def __init__(self, schema) -> None:
        self.named: dict[str, object] = {}
        self.schema = schema
        self._register(schema, "")

    def _register(self, schema, namespace: str) -> None:
        if isinstance(schema, list):
            for branch in schema:
                self._register(branch, namespace)
        elif isinstance(schema, dict):
            kind = schema.get("type")
            if kind in ("record", "error", "enum", "fixed"):
                name = schema["name"]
                namespace = schema.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
                short = name.rsplit(".", 1)[-1]
                self.named[short] = schema
                self.named[f"{namespace}.{short}" if namespace else short] = schema
                for field in schema.get("fields", []):
                    self._register(field["type"], namespace)
            elif kind in ("array", "map"):
                self._register(schema.get("items", schema.get("values")), namespace)
            elif isinstance(kind, (dict, list)):
                self._register(kind, namespace)

    @staticmethod
    def _long(buf: bytes, pos: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return (result >> 1) ^ -(result & 1), pos      # zig-zag
            shift += 7

    def read(self, buf: bytes, pos: int, schema=None):
        """(value, next position) of one datum of `schema` (the top-level schema by default)."""
        schema = self.schema if schema is None else schema
        if isinstance(schema, str):
            if schema not in _PRIMITIVES:
                return self.read(buf, pos, self.named[schema])
            if schema == "null":
                return None, pos
            if schema == "boolean":
                return buf[pos] != 0, pos + 1
            if schema in ("int", "long"):
                return self._long(buf, pos)
            if schema == "float":
                return struct.unpack_from("<f", buf, pos)[0], pos + 4
            if schema == "double":
                return struct.unpack_from("<d", buf, pos)[0], pos + 8
            length, pos = self._long(buf, pos)
            if length < 0 or pos + length > len(buf):
                raise IndexError(f"a {schema} of {length} bytes at {pos}: beyond the data")
            raw = bytes(buf[pos:pos + length])
            return (raw.decode("utf-8", "replace") if schema == "string" else raw), pos + length
        if isinstance(schema, list):
            branch, pos = self._long(buf, pos)
            return self.read(buf, pos, schema[branch])
        kind = schema["type"]
        if kind in ("record", "error"):
            record = {}
            for field in schema["fields"]:
                record[field["name"]], pos = self.read(buf, pos, field["type"])
            return record, pos
        if kind == "enum":
            index, pos = self._long(buf, pos)
            return schema["symbols"][index], pos
        if kind == "fixed":
            return bytes(buf[pos:pos + schema["size"]]), pos + schema["size"]
        if kind in ("array", "map"):
            items = [] if kind == "array" else {}
            while True:
                count, pos = self._long(buf, pos)
                if count == 0:
                    return items, pos
                if count < 0:                       # a block with its size in bytes first
                    count = -count
                    _size, pos = self._long(buf, pos)
                # Each item takes at least a byte in what jhist holds: a larger count is damage, and looping
                # over it would not end.
                if count > len(buf) - pos:
                    raise IndexError(f"an Avro {kind} block of {count} items at {pos}: beyond the data")
                for _ in range(count):
                    if kind == "array":
                        item, pos = self.read(buf, pos, schema["items"])
                        items.append(item)
                    else:
                        key, pos = self.read(buf, pos, "string")
                        items[key], pos = self.read(buf, pos, schema["values"])
        return self.read(buf, pos, kind)          # {"type": "long"} and the like
