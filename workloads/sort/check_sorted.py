"""Checks Spark's sort: every output file in order, and the output the same lines as the input, none lost, added
or changed, computed here in Python over the same files.

    python check_sorted.py <input-dir> <spark-output-dir> <validation-json>

input-dir holds the text's part-* files as the generator wrote them; spark-output-dir the part-* files the Sort job
wrote. Writes validation-json ({"ok", "problems", "lines", "bytes", "spark_lines", "spark_bytes", "spark_files",
"difference", "check_s"}) and exits 1 on a difference.

What "sorted" means: the job hash-partitions the lines and sorts each partition, as HiBench's ScalaSort does, so
each output file's lines are in ascending order (compared as bytes: the job's Java string order for the
generator's ASCII text); the files are not ordered among themselves. What "the same lines" means: the same number
of lines, of bytes, and the same multiset digest: the sum, modulo 2^64, of a 64-bit BLAKE2b hash of every line.
The sum ignores order and counts every copy of a line, so a line lost, duplicated or changed moves it (two changes
that cancel exactly have a chance of 2^-64).
"""
import hashlib
import json
import sys
import time
from pathlib import Path

DIGEST_MODULUS = 2 ** 64


def part_files(folder):
    """Spark's and Hadoop's data files of a folder, in their order (part-00000 ...); not _SUCCESS or .crc."""
    return sorted(p for p in Path(folder).glob("part-*") if p.is_file())


def lines_of(path):
    with open(path, "rb") as handle:
        for line in handle:
            yield line[:-1] if line.endswith(b"\n") else line


def line_hash(line):
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")


def summarize(files, check_order=False):
    """(lines, bytes, digest, the first line out of order or None)."""
    lines = size = digest = 0
    out_of_order = None
    for path in files:
        previous = None
        for number, line in enumerate(lines_of(path), 1):
            if check_order and out_of_order is None and previous is not None and line < previous:
                out_of_order = (f"{path.name} line {number}: {line[:60].decode(errors='replace')!r} after "
                                f"{previous[:60].decode(errors='replace')!r}: not in ascending order")
            previous = line
            lines += 1
            size += len(line) + 1
            digest = (digest + line_hash(line)) % DIGEST_MODULUS
    return lines, size, digest, out_of_order


def check(input_dir, output_dir):
    started = time.monotonic()
    inputs, outputs = part_files(input_dir), part_files(output_dir)
    if not inputs:
        raise SystemExit(f"no part-* files in {input_dir}: not the generator's output")
    lines, size, digest, _ = summarize(inputs)
    spark_lines, spark_size, spark_digest, out_of_order = summarize(outputs, check_order=True)
    if out_of_order:
        difference = out_of_order
    elif spark_lines != lines:
        difference = f"line count differs: spark {spark_lines}, input {lines}"
    elif spark_size != size:
        difference = f"bytes differ: spark {spark_size}, input {size}"
    elif spark_digest != digest:
        difference = f"the lines differ from the input's (multiset digest spark {spark_digest:016x}, input {digest:016x})"
    else:
        difference = None
    return {"ok": difference is None, "problems": [] if difference is None else [difference],
            "lines": lines, "bytes": size, "spark_lines": spark_lines, "spark_bytes": spark_size,
            "spark_files": len(outputs), "difference": difference, "check_s": round(time.monotonic() - started, 3)}


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    input_dir, output_dir, validation_json = argv
    result = check(input_dir, output_dir)
    Path(validation_json).write_text(json.dumps(result, indent=2) + "\n")
    if not result["ok"]:
        print(f"sort: Spark's output is not the input sorted: {result['difference']}", file=sys.stderr)
        return 1
    print(f"sort: {result['lines']} lines, {result['bytes']} bytes in {result['spark_files']} files, each in order, "
          f"the input's lines (checked in {result['check_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
