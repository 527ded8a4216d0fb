"""Checks Spark's word count against the words counted again here, in Python, over the same text.

    python check_counts.py <input-dir> <spark-output-dir> <validation-json>

input-dir holds the text's part-* files as the generator wrote them; spark-output-dir the part-* files of
"word TAB count" lines the Spark job wrote. Writes validation-json ({"ok", "problems", "words", "distinct_words",
"spark_words", "spark_distinct_words", "difference", "count_s"}) and exits 1 when the counts differ.

The count here shares nothing with Spark's but the text: Python's str.split (any run of white space; the generator
writes only spaces, tabs and newlines, which the job splits at too) and a Counter. Equal means: Spark's output has
one line per word, no word twice, the same words, and each with the same count.
"""
import json
import sys
import time
from collections import Counter
from pathlib import Path


def part_files(folder):
    """Spark's and Hadoop's data files of a folder, in their order (part-00000 ...); not _SUCCESS or .crc."""
    return sorted(p for p in Path(folder).glob("part-*") if p.is_file())


def count_words(input_dir):
    counts = Counter()
    for path in part_files(input_dir):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                counts.update(line.split())
    return counts


def spark_counts(output_dir):
    """({word: count}, the first malformed or repeated line or None)."""
    counts = {}
    for path in part_files(output_dir):
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 2 or not fields[1].isdigit() or not fields[0]:
                    return counts, f"{path.name} line {number}: {line.rstrip()!r} is not 'word TAB count'"
                word, count = fields[0], int(fields[1])
                if word in counts:
                    return counts, f"{path.name} line {number}: word {word!r} counted twice (also {counts[word]})"
                counts[word] = count
    return counts, None


def first_difference(expected, actual):
    for word in sorted(expected.keys() | actual.keys()):
        if word not in actual:
            return f"word {word!r} ({expected[word]} times) is missing from spark's counts"
        if word not in expected:
            return f"word {word!r} is in spark's counts only ({actual[word]} times)"
        if expected[word] != actual[word]:
            return f"word {word!r}: spark {actual[word]}, python {expected[word]}"
    return None


def check(input_dir, output_dir):
    started = time.monotonic()
    expected = count_words(input_dir)
    seconds = time.monotonic() - started
    if not expected:
        raise SystemExit(f"no words in the part-* files of {input_dir}: not the generator's output")
    actual, malformed = spark_counts(output_dir)
    difference = malformed or first_difference(expected, actual)
    return {"ok": difference is None, "problems": [] if difference is None else [difference],
            "words": sum(expected.values()), "distinct_words": len(expected),
            "spark_words": sum(actual.values()), "spark_distinct_words": len(actual),
            "difference": difference, "count_s": round(seconds, 3)}


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    input_dir, output_dir, validation_json = argv
    result = check(input_dir, output_dir)
    Path(validation_json).write_text(json.dumps(result, indent=2) + "\n")
    if not result["ok"]:
        print(f"wordcount: Spark's counts differ from Python's: {result['difference']}", file=sys.stderr)
        return 1
    print(f"wordcount: {result['words']} words, {result['distinct_words']} distinct, Spark's counts equal Python's "
          f"(counted in {result['count_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
