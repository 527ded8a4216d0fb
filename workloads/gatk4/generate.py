"""Synthetic GATK4 inputs with a known answer: reference, paired reads with a planted number of duplicates,
known sites.

Writes into OUT_DIR:
  reference.fasta (+ .fai, reference.dict)  random ACGT contigs
  reads.bam (+ .bai)                        coordinate sorted, one read group, 100M pairs, a few base errors
  known_sites.vcf.gz (+ .tbi)               SNPs at random positions (REF from the reference)
  expected.json                             what MarkDuplicates must find, and the sizes

Duplicates are planted, never left to chance: every original pair has a distinct (contig, start, mate start),
and a chosen subset of them gets exactly one copy at the same positions and orientations with lower base
qualities (so MarkDuplicates keeps the original and flags the copy). Expected: `duplicate_pairs` pairs, twice
that many reads flagged. Read names carry no tile/x/y, so no optical duplicates are reported.
Deterministic for a given (seed, sizes).
"""

import argparse
import hashlib
import json
import random
from pathlib import Path

import pysam

READ_LENGTH = 100
BASES = "ACGT"
CONTIGS = 2
# Fragment lengths of a typical short-insert library; the mate starts at start + fragment - READ_LENGTH.
FRAGMENT_MIN, FRAGMENT_MAX = 250, 450
# Per-base sequencing error rate, so BaseRecalibrator has mismatches to model.
ERROR_RATE = 0.01
KNOWN_SITES_PER_MBASE = 1000
READ_GROUP = {"ID": "rg1", "SM": "synthetic", "LB": "lib1", "PL": "ILLUMINA", "PU": "unit1"}


def write_reference(out: Path, genome_size: int, rng: random.Random) -> list[tuple[str, str]]:
    contig_length = genome_size // CONTIGS
    contigs = [(f"chr{i + 1}", "".join(rng.choices(BASES, k=contig_length))) for i in range(CONTIGS)]
    fasta = out / "reference.fasta"
    with fasta.open("w") as handle:
        for name, sequence in contigs:
            handle.write(f">{name}\n")
            for offset in range(0, len(sequence), 60):
                handle.write(sequence[offset : offset + 60] + "\n")
    pysam.faidx(str(fasta))
    # GATK wants a Picard sequence dictionary next to the FASTA (reference.dict, not reference.fasta.dict).
    with (out / "reference.dict").open("w") as handle:
        handle.write("@HD\tVN:1.6\n")
        for name, sequence in contigs:
            md5 = hashlib.md5(sequence.encode()).hexdigest()
            handle.write(f"@SQ\tSN:{name}\tLN:{len(sequence)}\tM5:{md5}\tUR:file:{fasta.resolve()}\n")
    return contigs


def read_sequence(reference: str, start: int, rng: random.Random) -> str:
    bases = list(reference[start : start + READ_LENGTH])
    for i in range(READ_LENGTH):
        if rng.random() < ERROR_RATE:
            bases[i] = rng.choice(BASES.replace(bases[i], ""))
    return "".join(bases)


def make_pair(header, name, tid, start, mate_start, seq1, seq2, quality):
    fragment = mate_start + READ_LENGTH - start
    records = []
    for first, (pos, mpos, seq) in enumerate([(start, mate_start, seq1), (mate_start, start, seq2)]):
        record = pysam.AlignedSegment(header)
        record.query_name = name
        record.query_sequence = seq
        record.flag = 0x1 | 0x2 | (0x40 | 0x20 if first == 0 else 0x80 | 0x10)
        record.reference_id = tid
        record.reference_start = pos
        record.mapping_quality = 60
        record.cigarstring = f"{READ_LENGTH}M"
        record.next_reference_id = tid
        record.next_reference_start = mpos
        record.template_length = fragment if first == 0 else -fragment
        record.query_qualities = pysam.qualitystring_to_array(quality)
        record.set_tags([("RG", READ_GROUP["ID"]), ("MC", f"{READ_LENGTH}M")])
        records.append(record)
    return records


def random_quality(rng: random.Random, low: int, high: int) -> str:
    return "".join(chr(33 + rng.randint(low, high)) for _ in range(READ_LENGTH))


def write_reads(out: Path, contigs, read_pairs: int, duplicate_rate: float, rng: random.Random) -> int:
    header = pysam.AlignmentHeader.from_dict(
        {
            "HD": {"VN": "1.6", "SO": "coordinate"},
            "SQ": [{"SN": name, "LN": len(sequence)} for name, sequence in contigs],
            "RG": [READ_GROUP],
        }
    )
    duplicate_pairs = round(read_pairs * duplicate_rate)
    original_pairs = read_pairs - duplicate_pairs
    taken: set[tuple[int, int, int]] = set()
    originals = []
    while len(originals) < original_pairs:
        tid = rng.randrange(len(contigs))
        length = len(contigs[tid][1])
        start = rng.randrange(0, length - FRAGMENT_MAX)
        mate_start = start + rng.randint(FRAGMENT_MIN, FRAGMENT_MAX) - READ_LENGTH
        if (tid, start, mate_start) in taken:
            continue  # would be an unplanned duplicate
        taken.add((tid, start, mate_start))
        originals.append((tid, start, mate_start))
    records = []
    for number, (tid, start, mate_start) in enumerate(originals):
        reference = contigs[tid][1]
        records += make_pair(
            header, f"pair{number:09d}", tid, start, mate_start,
            read_sequence(reference, start, rng), read_sequence(reference, mate_start, rng),
            random_quality(rng, 30, 40),
        )
    # Copies score below every original (qualities 10-20 < 30-40), so the copy is the one flagged.
    for number, (tid, start, mate_start) in enumerate(rng.sample(originals, duplicate_pairs)):
        reference = contigs[tid][1]
        records += make_pair(
            header, f"dup{number:09d}", tid, start, mate_start,
            read_sequence(reference, start, rng), read_sequence(reference, mate_start, rng),
            random_quality(rng, 10, 20),
        )
    records.sort(key=lambda record: (record.reference_id, record.reference_start, record.query_name, record.flag))
    bam = out / "reads.bam"
    with pysam.AlignmentFile(str(bam), "wb", header=header) as handle:
        for record in records:
            handle.write(record)
    pysam.index(str(bam))
    return duplicate_pairs


def write_known_sites(out: Path, contigs, rng: random.Random) -> int:
    vcf = out / "known_sites.vcf"
    sites = []
    for name, sequence in contigs:
        count = max(1, len(sequence) * KNOWN_SITES_PER_MBASE // 1_000_000)
        for pos in sorted(rng.sample(range(len(sequence)), count)):
            ref = sequence[pos]
            sites.append(f"{name}\t{pos + 1}\tsite{len(sites)}\t{ref}\t{rng.choice(BASES.replace(ref, ''))}\t.\tPASS\t.")
    with vcf.open("w") as handle:
        handle.write("##fileformat=VCFv4.2\n")
        for name, sequence in contigs:
            handle.write(f"##contig=<ID={name},length={len(sequence)}>\n")
        handle.write("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
        handle.write("\n".join(sites) + "\n")
    pysam.tabix_index(str(vcf), preset="vcf", force=True)  # bgzips to .vcf.gz, removes the plain file
    return len(sites)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--read-pairs", type=int, required=True)
    parser.add_argument("--genome-size", type=int, required=True, help="bases, split over two contigs")
    parser.add_argument("--duplicate-rate", type=float, required=True, help="fraction of pairs that are copies")
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args()
    if args.genome_size < CONTIGS * FRAGMENT_MAX * 4:
        parser.error(f"--genome-size must be at least {CONTIGS * FRAGMENT_MAX * 4}")
    if not 0 <= args.duplicate_rate < 0.5:
        parser.error("--duplicate-rate must be in [0, 0.5): each duplicate copies a distinct original")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    contigs = write_reference(args.out_dir, args.genome_size, rng)
    duplicate_pairs = write_reads(args.out_dir, contigs, args.read_pairs, args.duplicate_rate, rng)
    known_sites = write_known_sites(args.out_dir, contigs, rng)
    expected = {
        "seed": args.seed,
        "genome_size": args.genome_size,
        "read_pairs": args.read_pairs,
        "reads": 2 * args.read_pairs,
        "duplicate_pairs": duplicate_pairs,
        "duplicate_reads": 2 * duplicate_pairs,
        "known_sites": known_sites,
    }
    (args.out_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(json.dumps(expected))


if __name__ == "__main__":
    main()
