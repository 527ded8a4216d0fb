#!/usr/bin/env python3
"""DFSIO's checks, with the standard library only (the controller's workload venv runs it).

`check_results.py bytes SIZE`: TestDFSIO's -size (a whole number and B, KB, MB, GB or TB, binary multiples as its
ByteMultiple takes them) in bytes; exit 2 with a message for anything else.

`check_results.py check MODE NR_FILES FILE_SIZE RESULTS COUNT DU TOTALS OUT`: whether what TestDFSIO did is what
was asked, from three sources that do not depend on each other: HDFS itself (`hadoop fs -count` and `hadoop fs -du`
of the data folder: nr_files files test_io_0.. of exactly FILE_SIZE each), the job's reducer output (TestDFSIO's
`l:size`, `l:tasks`, `l:time`, `f:rate` sums) and the section of MODE its client appended to RESULTS; the figures
the client printed are recomputed from the reducer's sums. Writes OUT (validation.json: `ok`, `problems`, the
figures) and exits 1 when a check fails.
"""
import json
import math
import re
import sys

# TestDFSIO's ByteMultiple: the suffixes it accepts and their binary multiples; its figures' "MB" is MEGA = 2^20.
MULTIPLES = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
MEGA = 1 << 20
# The lines of one section of TestDFSIO's result file, after its "----- TestDFSIO ----- : <mode>" header.
FIELDS = {
    "Number of files": "files",
    "Total MBytes processed": "mib_processed",
    "Throughput mb/sec": "throughput_mib_s",
    "Average IO rate mb/sec": "average_io_rate_mib_s",
    "IO rate std deviation": "io_rate_std_deviation_mib_s",
    "Test exec time sec": "exec_time_s",
}


def size_bytes(text):
    match = re.fullmatch(r"([1-9][0-9]*)(B|KB|MB|GB|TB)", text)
    if not match:
        raise ValueError(f"file size {text!r} is not a whole number with B, KB, MB, GB or TB (e.g. 16MB)")
    return int(match.group(1)) * MULTIPLES[match.group(2)]


def last_section(text, mode):
    """The figures of the last section of `mode` in TestDFSIO's result file, or None."""
    found = None
    for block in re.split(r"^----- TestDFSIO ----- : ", text, flags=re.M)[1:]:
        lines = block.splitlines()
        if lines[0].strip() != mode:
            continue
        found = {}
        for line in lines[1:]:
            label, _, value = line.partition(":")
            if label.strip() in FIELDS:
                found[FIELDS[label.strip()]] = float(value)
    return found


def reducer_totals(text):
    """TestDFSIO's reducer output: `<type>:<name>\t<sum>` lines (l: long, f: float)."""
    totals = {}
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key.strip():
            totals[key.split(":", 1)[1]] = float(value)
    return totals


def close(a, b, absolute):
    """Equal to the printed figure's rounding (TestDFSIO prints at most 2 decimals)."""
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=absolute)


def check(mode, nr_files, file_size, results_text, count_text, du_text, totals_text):
    """(problems, figures) of one workload run."""
    problems = []
    per_file = size_bytes(file_size)
    expected = nr_files * per_file
    figures = {"mode": mode, "files_expected": nr_files, "bytes_expected": expected}

    # HDFS: `-count` is DIR_COUNT FILE_COUNT CONTENT_SIZE PATH; `-du` a line per file, its length first.
    dirs, files, content, _ = count_text.split(None, 3)
    figures.update(hdfs_files=int(files), hdfs_bytes=int(content))
    if int(files) != nr_files or int(content) != expected:
        problems.append(f"HDFS holds {files} files of {content} bytes in the data folder, expected {nr_files} of "
                        f"{expected} ({nr_files} x {file_size})")
    sizes = {line.split()[-1].rsplit("/", 1)[-1]: int(line.split()[0]) for line in du_text.splitlines() if line.strip()}
    wrong = sorted(f"{name}: {size}" for name, size in sizes.items() if size != per_file)
    missing = sorted(set(f"test_io_{i}" for i in range(nr_files)) - set(sizes))
    if wrong:
        problems.append(f"files not of {per_file} bytes: {', '.join(wrong[:5])}")
    if missing:
        problems.append(f"files missing: {', '.join(missing[:5])}")

    # The reducer's sums: every byte of every file went through a task, one task per file.
    totals = reducer_totals(totals_text)
    figures["reducer"] = totals
    absent = [key for key in ("size", "tasks", "time", "rate") if key not in totals]
    if absent:
        problems.append(f"the job's output has no {', '.join(absent)} total (not TestDFSIO's reducer output)")
        return problems, figures
    if totals.get("size") != expected or totals.get("tasks") != nr_files:
        problems.append(f"the job's tasks processed {totals.get('size'):.0f} bytes in {totals.get('tasks'):.0f} "
                        f"tasks, expected {expected} in {nr_files}")

    section = last_section(results_text, mode)
    figures["results"] = section
    if section is None:
        problems.append(f"TestDFSIO's result file has no {mode} section")
        return problems, figures
    missing_fields = sorted(set(FIELDS.values()) - set(section))
    if missing_fields:
        problems.append(f"TestDFSIO's {mode} section lacks {', '.join(missing_fields)}")
        return problems, figures
    if section["files"] != nr_files or not close(section["mib_processed"], expected / MEGA, 0.005):
        problems.append(f"TestDFSIO reports {section['files']:.0f} files and {section['mib_processed']} MiB, "
                        f"expected {nr_files} and {expected / MEGA:g}")
    # What the client printed, from the reducer's sums as TestDFSIO computes it: throughput = MiB / (sum of the
    # tasks' times), average IO rate = mean of the tasks' rates.
    throughput = totals["size"] / MEGA / (totals["time"] / 1000) if totals["time"] > 0 else math.inf
    rate = totals["rate"] / 1000 / totals["tasks"] if totals["tasks"] else math.inf
    figures.update(recomputed_throughput_mib_s=throughput, recomputed_average_io_rate_mib_s=rate)
    if not close(section["throughput_mib_s"], throughput, 0.006):
        problems.append(f"throughput {section['throughput_mib_s']} MiB/s in the log, {throughput:.3f} from the "
                        "job's sums")
    if not close(section["average_io_rate_mib_s"], rate, 0.006):
        problems.append(f"average IO rate {section['average_io_rate_mib_s']} MiB/s in the log, {rate:.3f} from "
                        "the job's sums")
    # No task outlives the job: the tasks' times sum to at most nr_files x the job's time, so the throughput cannot
    # be below the data over that (a throughput from other bytes or another job's times would be).
    exec_s = section["exec_time_s"]
    floor = expected / MEGA / (nr_files * exec_s) if exec_s > 0 else math.inf
    if not exec_s > 0 or section["throughput_mib_s"] < floor * (1 - 1e-3) - 0.005:
        problems.append(f"throughput {section['throughput_mib_s']} MiB/s is below {floor:.3f}, the data over "
                        f"{nr_files} tasks of the job's {exec_s} s")
    return problems, figures


def main(argv):
    if len(argv) == 3 and argv[1] == "bytes":
        try:
            print(size_bytes(argv[2]))
        except ValueError as error:
            print(f"dfsio: {error}", file=sys.stderr)
            return 2
        return 0
    if len(argv) != 10 or argv[1] != "check":
        print(__doc__.split("\n\n")[1] + "\n" + __doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    mode, nr_files, file_size, results, count, du, totals, out = argv[2:]
    texts = []
    for path in (results, count, du, totals):
        with open(path, encoding="utf-8") as handle:
            texts.append(handle.read())
    problems, figures = check(mode, int(nr_files), file_size, *texts)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"ok": not problems, "problems": problems, **figures}, handle, indent=1, sort_keys=True)
        handle.write("\n")
    for problem in problems:
        print(f"dfsio {mode}: {problem}", file=sys.stderr)
    if not problems:
        section = figures["results"]
        print(f"dfsio {mode}: {figures['hdfs_files']} files, {figures['hdfs_bytes']} bytes in HDFS as asked; "
              f"{section['throughput_mib_s']} MiB/s throughput, {section['average_io_rate_mib_s']} MiB/s average IO "
              f"rate, consistent with the job's sums")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
