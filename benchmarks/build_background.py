"""Build assistant/data/background.npz: how many arXiv ML abstracts hold each stemmed term, each adjacent pair and
each adjacent triple of terms (assistant/search/background.py), kept where at least MIN_COUNT do.

    python benchmarks/build_background.py [--source ../shared/corpus/arxiv-ml/papers.jsonl]

Every abstract of a benchmark slice is left out (the training slices of benchmarks/data/corpora and the held-out
ones of benchmarks/data/heldout), so no question file is answered with counts of its own corpus.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "assistant" / "data" / "background.npz"
MIN_COUNT = 3


def slice_ids() -> set[str]:
    files = sorted((HERE / "data" / "corpora").glob("*.jsonl")) + sorted((HERE / "data" / "heldout").glob("*.jsonl"))
    out = set()
    for f in files:
        if f.stem.endswith("_questions") or f.stem in ("heldout_iclr", "casual_heldout", "mixed_heldout",
                                                        "iclr_fresh", "chat_heldout"):
            continue
        out |= {json.loads(line)["id"] for line in f.read_text(encoding="utf-8").splitlines() if line.strip()}
    return out


def main() -> int:
    from assistant.search.background import key
    from assistant.text.terms import stem_sequence

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=HERE.parents[1] / "shared" / "corpus" / "arxiv-ml" / "papers.jsonl")
    args = ap.parse_args()
    left_out = slice_ids()
    terms: dict[str, int] = {}
    pairs: dict[str, int] = {}
    triples: dict[str, int] = {}
    read = 0
    for line in args.source.read_text(encoding="utf-8").splitlines():
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
    provenance = {"source": "../shared/corpus/arxiv-ml/papers.jsonl (arXiv ML abstracts with titles)",
                  "abstracts": read, "left_out": f"{len(left_out)} abstracts of the benchmark slices",
                  "min_count": MIN_COUNT, "terms": len(term_keys), "pairs": len(pair_keys),
                  "pair_keys": "the two terms in sorted order (a pair counts an abstract writing them in either order once)", "triples": len(triple_keys),
                  "text": "title. abstract, stemmed as assistant.text.terms.stem_sequence",
                  "built_by": "benchmarks/build_background.py"}
    np.savez_compressed(OUT, term_keys=term_keys, term_counts=term_counts, pair_keys=pair_keys,
                        pair_counts=pair_counts, triple_keys=triple_keys, triple_counts=triple_counts, provenance=np.array(json.dumps(provenance)))
    print(f"{read} abstracts ({len(left_out)} left out): {len(term_keys)} terms, {len(pair_keys)} pairs, "
          f"{len(triple_keys)} triples -> {OUT} "
          f"({OUT.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
