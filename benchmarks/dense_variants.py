"""Dense-side variants for paraphrased questions, measured on the indexes benchmarks/retrieval.py builds.

    python benchmarks/dense_variants.py [--work DIR] [--variants base,clause:0.7,...]

Each variant replaces a paper's dense score (its best chunk cosine) before the usual fusion with BM25,
and is run through the real evaluation code (``evaluate_questions`` / ``evaluate_beir``), on:
ICLR dev with 19,972 arxiv-ml distractors (--work/iclr_arxiv), the 95-paper corpus (--work/iclr),
and SciFact (--work/scifact), whichever exist (run ``benchmarks/retrieval.py --distractors`` first).

Variants (none is the default; README "With 19,972 distractors" says why):
- ``base``: the shipped scoring;
- ``clause:A``: the question split into clauses (at punctuation and connectives, negated parts dropped),
  each embedded; ``A * best cosine + (1 - A) * mean over clauses of their best cosine``;
- ``prf:M:B``: pseudo-relevance feedback, the query vector plus ``B`` x the mean vector of its top-M papers;
- ``mean:A``: ``A * best chunk cosine + (1 - A) * cosine to the paper's mean chunk vector``.
The variants change the dense cosine the gate and the answer read too, so false refusals and first
citations move with them (the gate was calibrated on the base cosine).
Writes benchmarks/results/dense_variants.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"

_CLAUSE = re.compile(r"[,;:?()]|\b(?:and|by|with|while|instead of|rather than|that|which|so that|then)\b", re.I)
_NEGATED = re.compile(r"\b(?:instead of|rather than|without|not)\b[^,;:?]*", re.I)
_GENERIC = set("a an the is are was were be been being there any some what which who how do does did can could "
               "would should of in on for to from at as or it its this that these those such method methods way "
               "ways work works paper papers approach approaches study studies e.g. i.e. use uses using".split())


def clauses(text: str) -> list[str]:
    """The question's clauses with at least two non-generic words; negated parts are dropped."""
    parts = [p.strip() for p in _CLAUSE.split(_NEGATED.sub(" ", text)) if p and p.strip()]
    return [p for p in parts if sum(w.lower().strip(".,") not in _GENERIC for w in p.split()) >= 2]


def install(variant: list[str]) -> None:
    """Patch Retriever so its dense scores follow ``variant[0]`` (a one-item list, changed between runs)."""
    from assistant.search.retrieve import Retriever

    search, dense_all = Retriever.search, Retriever.dense_all

    def patched_search(self, query, *args, **kwargs):
        self._variant_query = query
        return search(self, query, *args, **kwargs)

    def paper_means(vectors):
        if not hasattr(vectors, "_means"):
            sums = np.add.reduceat(vectors.matrix, vectors.starts, axis=0)
            vectors._means = sums / np.linalg.norm(sums, axis=1, keepdims=True)
        return vectors._means

    def patched_dense(self, qvec):
        ids, best, sims = dense_all(self, qvec)
        kind, *args = variant[0].split(":")
        if kind == "base" or not len(ids):
            return ids, best, sims
        vectors = self.index.chunk_vectors()
        q = np.asarray(qvec, dtype=np.float32)
        if kind == "mean":
            a = float(args[0])
            return ids, a * best + (1 - a) * (paper_means(vectors) @ q), sims
        if kind == "prf":
            m, b = int(args[0]), float(args[1])
            q2 = q + b * paper_means(vectors)[np.argsort(-best)[:m]].mean(axis=0)
            q2 /= np.linalg.norm(q2)
            return ids, np.maximum.reduceat(vectors.matrix @ q2, vectors.starts), sims
        if kind == "clause":
            a, parts = float(args[0]), clauses(getattr(self, "_variant_query", ""))
            if len(parts) < 2:
                return ids, best, sims
            per_clause = [np.maximum.reduceat(vectors.matrix @ self.embed_query(c).astype(np.float32), vectors.starts)
                          for c in parts]
            return ids, a * best + (1 - a) * np.mean(per_clause, axis=0), sims
        raise SystemExit(f"unknown variant {variant[0]!r}")

    Retriever.search, Retriever.dense_all = patched_search, patched_dense


def gold_ranks(report) -> dict:
    """Rank of the gold paper (None past the hits) for every single-gold question not at rank 1."""
    out = {}
    for row in report.rows:
        if row["type"] in ("area", "none") or not row["_gold"]:
            continue
        gold = next(iter(row["_gold"]))
        rank = row["hits"].index(gold) + 1 if gold in row["hits"] else None
        if rank != 1:
            out[row["id"]] = rank
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="dense-side variants for paraphrased questions")
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--variants", default="base,clause:0.7,clause:0.6,prf:3:0.3,prf:5:0.5,mean:0.5")
    args = ap.parse_args()
    if not (args.shared / "eval" / "dev.jsonl").exists():
        print(f"no shared data at {args.shared}; nothing to measure", file=sys.stderr)
        return 1
    from assistant.config import Settings
    from assistant.service.evaluate import evaluate_beir, evaluate_questions, load_questions

    variant = ["base"]
    install(variant)
    questions = load_questions(args.shared / "eval" / "dev.jsonl")
    results: dict = {}
    keys = ("R@1", "R@5", "MRR", "area_nDCG@10", "none_accuracy", "false_refusal_rate", "first_citation_gold")
    for name in ("iclr_arxiv", "iclr", "scifact"):
        index_dir = args.work / name
        if not (index_dir / "manifest.json").exists():
            print(f"skipping {name}: no index at {index_dir} (run benchmarks/retrieval.py first)", file=sys.stderr)
            continue
        settings = Settings.from_env(index_dir=index_dir, llm_mode="off", rerank="off")
        for v in args.variants.split(","):
            variant[0] = v
            if name == "scifact":
                row = evaluate_beir(args.shared / "bench" / "scifact", settings)
            else:
                report = evaluate_questions(questions, settings)
                summary = report.summary()
                row = {k: summary[k] for k in keys} | {"not_first": gold_ranks(report)}
            results.setdefault(name, {})[v] = row
            print(f"{name:10s} {v:12s} " + "  ".join(f"{k}={x:.3f}" for k, x in row.items() if isinstance(x, float))
                  + (f"  not at rank 1: {row['not_first']}" if "not_first" in row else ""), flush=True)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "dense_variants.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
