"""Check GATK4's outputs: duplicates found, final BAM readable and coordinate sorted, recalibration table filled.

The BAM is read once, as a stream (a path or "-" for stdin, so `hadoop fs -cat` can feed it without a local
copy). Duplicates are counted twice, independently: MarkDuplicates' metrics and the reads flagged 0x400 in the
final BAM; both must agree, and must equal the generator's expectation when there is one (synthetic data).
Writes the verdict as JSON; exit 1 with the reasons when a check fails.
"""

import argparse
import json
import sys
from pathlib import Path

import pysam

DUPLICATE_FLAG = 0x400
SECONDARY_OR_SUPPLEMENTARY = 0x100 | 0x800


def duplicate_reads_in_metrics(metrics_text: str) -> int:
    """Duplicate reads over all libraries: 2 per duplicate pair plus the unpaired ones."""
    lines = metrics_text.splitlines()
    header_index = next((i for i, line in enumerate(lines) if line.startswith("LIBRARY\t")), None)
    if header_index is None:
        raise ValueError("no LIBRARY table in the MarkDuplicates metrics")
    columns = lines[header_index].split("\t")
    total = 0
    for line in lines[header_index + 1 :]:
        if not line.strip():
            break
        row = dict(zip(columns, line.split("\t")))
        total += 2 * int(row["READ_PAIR_DUPLICATES"]) + int(row["UNPAIRED_READ_DUPLICATES"])
    return total


def recalibration_rows(table_text: str) -> dict[str, int]:
    """Data rows of each RecalTable* of a GATKReport (the `#:GATKTable:<cols>:<rows>:...` line before its name)."""
    rows: dict[str, int] = {}
    lines = table_text.splitlines()
    for shape, name in zip(lines, lines[1:]):
        if shape.startswith("#:GATKTable:") and name.startswith("#:GATKTable:RecalTable"):
            rows[name.split(":")[2]] = int(shape.split(":")[3])
    return rows


def scan_bam(bam: str) -> dict:
    """Reads, duplicate-flagged primary reads, and the first out-of-order position, in one pass."""
    reads = duplicates = 0
    first_disorder = None
    with pysam.AlignmentFile(bam, "rb", check_sq=False) as handle:
        sort_order = handle.header.to_dict().get("HD", {}).get("SO")
        previous = (-1, -1)
        for record in handle:
            reads += 1
            if record.flag & DUPLICATE_FLAG and not record.flag & SECONDARY_OR_SUPPLEMENTARY:
                duplicates += 1
            # Unmapped reads without a position come last (reference_id -1): sort them after every contig.
            key = (record.reference_id if record.reference_id >= 0 else sys.maxsize, record.reference_start)
            if first_disorder is None and key < previous:
                first_disorder = f"{record.query_name} at {record.reference_name}:{record.reference_start + 1}"
            previous = key
    return {"sort_order": sort_order, "reads": reads, "duplicate_reads": duplicates, "first_disorder": first_disorder}


def validate(bam: str, metrics_text: str | None, table_text: str | None, expected: dict | None) -> dict:
    failures = []
    try:
        scan = scan_bam(bam)
    except (OSError, ValueError) as error:
        scan = {}
        failures.append(f"output BAM unreadable: {error}")
    if scan:
        if scan["sort_order"] != "coordinate":
            failures.append(f"output BAM header says SO:{scan['sort_order']}, not coordinate")
        if scan["first_disorder"]:
            failures.append(f"output BAM not coordinate sorted: {scan['first_disorder']} comes after a later position")
        if scan["reads"] == 0:
            failures.append("output BAM holds no reads")
    # ReadsPipelineSpark writes neither metrics nor table: then the flagged reads are the duplicate count.
    if metrics_text is None:
        metrics_duplicates = scan.get("duplicate_reads")
    else:
        metrics_duplicates = duplicate_reads_in_metrics(metrics_text)
    if scan and scan["duplicate_reads"] != metrics_duplicates:
        failures.append(
            f"MarkDuplicates metrics count {metrics_duplicates} duplicate reads, the output BAM flags {scan['duplicate_reads']}"
        )
    if expected is not None:
        if metrics_duplicates != expected["duplicate_reads"]:
            failures.append(
                f"MarkDuplicates found {metrics_duplicates} duplicate reads, the generator planted {expected['duplicate_reads']}"
            )
        if scan and scan["reads"] != expected["reads"]:
            failures.append(f"output BAM holds {scan['reads']} reads, the input {expected['reads']}")
    tables = None if table_text is None else recalibration_rows(table_text)
    if tables is not None and not any(tables.values()):
        failures.append(f"recalibration table is empty (rows per table: {tables or 'no RecalTable'})")
    return {
        "ok": not failures,
        "problems": failures,
        "output_bam": scan,
        "metrics_duplicate_reads": metrics_duplicates,
        "expected_duplicate_reads": None if expected is None else expected["duplicate_reads"],
        "recalibration_table_rows": tables,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bam", required=True, help='final BAM, or "-" to read it from stdin')
    parser.add_argument("--metrics", type=Path, help="MarkDuplicates metrics file (separate tools only)")
    parser.add_argument("--recal-table", type=Path, help="BaseRecalibrator table (separate tools only)")
    parser.add_argument("--expected", type=Path, help="the generator's expected.json (synthetic data only)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the verdict (JSON)")
    args = parser.parse_args()
    expected = json.loads(args.expected.read_text()) if args.expected else None
    verdict = validate(
        args.bam,
        args.metrics.read_text() if args.metrics else None,
        args.recal_table.read_text() if args.recal_table else None,
        expected,
    )
    args.out.write_text(json.dumps(verdict, indent=2) + "\n")
    if not verdict["ok"]:
        print("gatk4 validation failed:\n  " + "\n  ".join(verdict["problems"]), file=sys.stderr)
        sys.exit(1)
    print(
        f"gatk4 validation passed: {verdict['output_bam']['reads']} reads, coordinate sorted, "
        f"{verdict['metrics_duplicate_reads']} duplicate reads (expected {verdict['expected_duplicate_reads']}), "
        f"recalibration rows {verdict['recalibration_table_rows']}"
    )


if __name__ == "__main__":
    main()
