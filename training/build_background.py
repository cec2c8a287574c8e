"""Build assistant/data/background.npz: how many arXiv ML abstracts hold each stemmed term, each adjacent pair and
each adjacent triple of terms (assistant/search/background.py), kept where at least MIN_COUNT do.

    python training/build_background.py [--source training/inputs/arxiv-ml.jsonl.xz]

Every abstract of a benchmark slice is left out (the training slices of benchmarks/data/corpora and the held-out
ones of benchmarks/data/heldout), so no question file is answered with counts of its own corpus.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from _inputs import PAPERS, read_text, save_npz, sha256

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks"  # the slices left out: benchmarks/data/corpora, benchmarks/data/heldout
OUT = ROOT / "assistant" / "data" / "background.npz"
MIN_COUNT = 3


def slice_ids() -> set[str]:
    """The ids of every paper of a benchmark slice: the files of benchmarks/data/corpora and heldout whose records
    are papers (an "abstract"), not questions."""
    files = sorted((HERE / "data" / "corpora").glob("*.jsonl")) + sorted((HERE / "data" / "heldout").glob("*.jsonl"))
    out = set()
    for f in files:
        records = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        if records and "abstract" in records[0]:
            out |= {r["id"] for r in records}
    return out


def main() -> int:
    from assistant.search.background import key
    from assistant.text.terms import stem_sequence

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=PAPERS)
    ap.add_argument("--out", type=Path, default=OUT, help="where to write (python -m training --check writes elsewhere)")
    args = ap.parse_args()
    left_out = slice_ids()
    terms: dict[str, int] = {}
    pairs: dict[str, int] = {}
    triples: dict[str, int] = {}
    read = 0
    for line in read_text(args.source).splitlines():
        if not line.strip():
            continue
        paper = json.loads(line)
        if paper["id"] in left_out:
            continue
        read += 1
        seq = stem_sequence(f"{paper['title']}. {paper['abstract']}")
        for t in set(seq):
            terms[t] = terms.get(t, 0) + 1
        for a, b in {tuple(sorted(ab)) for ab in zip(seq, seq[1:])}:  # either order, once per abstract
            pairs[f"{a} {b}"] = pairs.get(f"{a} {b}", 0) + 1
        for a, b, c in set(zip(seq, seq[1:], seq[2:])):
            triples[f"{a} {b} {c}"] = triples.get(f"{a} {b} {c}", 0) + 1

    def table(counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        kept = sorted((key(t), c) for t, c in counts.items() if c >= MIN_COUNT)
        return (np.array([k for k, _ in kept], dtype=np.uint64), np.array([c for _, c in kept], dtype=np.uint32))

    term_keys, term_counts = table(terms)
    pair_keys, pair_counts = table(pairs)
    triple_keys, triple_counts = table(triples)
    provenance = {"source": f"{args.source.name} (arXiv ML abstracts with titles), sha256 {sha256(args.source)}",
                  "abstracts": read, "left_out": f"{len(left_out)} abstracts of the benchmark slices",
                  "min_count": MIN_COUNT, "terms": len(term_keys), "pairs": len(pair_keys),
                  "pair_keys": "the two terms in sorted order (a pair counts an abstract writing them in either order once)", "triples": len(triple_keys),
                  "text": "title. abstract, stemmed as assistant.text.terms.stem_sequence",
                  "built_by": "training/build_background.py"}
    save_npz(args.out, {"term_keys": term_keys, "term_counts": term_counts, "pair_keys": pair_keys,
                   "pair_counts": pair_counts, "triple_keys": triple_keys, "triple_counts": triple_counts,
                   "provenance": np.array(json.dumps(provenance))})
    print(f"{read} abstracts ({len(left_out)} left out): {len(term_keys)} terms, {len(pair_keys)} pairs, "
          f"{len(triple_keys)} triples -> {args.out} "
          f"({args.out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
