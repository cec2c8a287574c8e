"""Which sentences an extractive answer quotes: variants of :func:`assistant.qa.evidence.relevance`, scored by
answer-fact coverage (every expected fact of a question in its answer) on the project's own question files.

    python benchmarks/evidence_variants.py [--heldout] [--variants base,local]

The question files the project has tuned on (benchmarks/data/*.jsonl and the shared dev set) choose; the held-out
files (benchmarks/data/heldout, ``--heldout``) are only read once a variant is chosen, to report it. Only the
sentences picked change: retrieval, the answer-or-refuse decision and the cited papers are the same in every
variant (checked: the rows' hits, answerable and citations are compared with the base variant's).

Variants:
- ``base``: cosine to the question + 0.5 x the IDF-weighted share of the question's terms the sentence holds.
- ``local``: the share weighs each question term also by how few of the abstract's sentences hold it
  (log(1 + n / n_t)): the terms every sentence repeats name the paper, the rare ones find the detail asked.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
sys.path.insert(0, str(HERE.parent))

from _bundled import bundled_index  # noqa: E402


def local_relevance(sentences, vecs, qvec, qterms, weights):
    import numpy as np

    from assistant.qa.evidence import TERM_SHARE
    from assistant.search.decide import terms

    held = [terms(s) for s in sentences]
    n = max(len(sentences), 1)
    rarest = max(weights.values(), default=1.0)

    def w(t: str) -> float:
        inside = sum(t in h for h in held)
        return weights.get(t, rarest) * (math.log(1 + n / inside) if inside else math.log(1 + n))

    total = sum(w(t) for t in qterms) or 1.0
    share = np.array([sum(w(t) for t in qterms & h) / total for h in held])
    return vecs @ qvec + TERM_SHARE * share


VARIANTS = {"base": None, "local": local_relevance}


def files(heldout: bool) -> list[Path]:
    if heldout:
        return [HERE / "data" / "heldout" / "heldout_iclr.jsonl"]
    return [SHARED / "eval" / "dev.jsonl"] + sorted((HERE / "data").glob("*.jsonl"))


def run(index_dir: Path, paths: list[Path], variant: str) -> dict:
    from assistant.config import Settings
    from assistant.qa import evidence
    from assistant.service.evaluate import evaluate_questions, load_questions

    original = evidence.relevance
    if VARIANTS[variant] is not None:
        evidence.relevance = VARIANTS[variant]
    try:
        settings = Settings.from_env(index_dir=index_dir).replace(rerank="off")
        out = {}
        for path in paths:
            try:
                items = load_questions(path)
            except Exception:  # noqa: BLE001 - a file of another shape (labels, not questions)
                continue
            rows = evaluate_questions(items, settings).rows
            out[path.name] = [{"id": r["id"], "hits": r["hits"][:5], "answerable": r["answerable"],
                               "citations": r["citations"], "facts_ok": r["_facts_ok"]} for r in rows]
        return out
    finally:
        evidence.relevance = original


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--heldout", action="store_true")
    ap.add_argument("--variants", default="base,local")
    ap.add_argument("--index-dir", type=Path, default=HERE / ".work" / "evidence95")
    args = ap.parse_args()
    bundled_index(args.index_dir)
    results = {}
    for variant in args.variants.split(","):
        started = time.process_time()
        results[variant] = run(args.index_dir, files(args.heldout), variant)
        print(f"  {variant}: {time.process_time() - started:.0f} s CPU", file=sys.stderr)
    base = results[args.variants.split(",")[0]]
    table = {}
    for variant, by_file in results.items():
        ok = [r["facts_ok"] for rows in by_file.values() for r in rows if r["facts_ok"] is not None]
        same = all((a["hits"], a["answerable"], a["citations"]) == (b["hits"], b["answerable"], b["citations"])
                   for f in by_file for a, b in zip(by_file[f], base[f]))
        per_file = {f: round(sum(r["facts_ok"] for r in rows if r["facts_ok"] is not None)
                             / max(1, sum(r["facts_ok"] is not None for r in rows)), 3)
                    for f, rows in by_file.items() if any(r["facts_ok"] is not None for r in rows)}
        table[variant] = {"facts": round(sum(ok) / max(len(ok), 1), 4), "questions_with_facts": len(ok),
                          "same_papers_and_decisions_as_first": same, "per_file": per_file}
        print(f"{variant:8s} facts {table[variant]['facts']:.4f} over {len(ok)}  same decisions: {same}")
    out = HERE / "results" / ("evidence_variants_heldout.json" if args.heldout else "evidence_variants.json")
    out.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d %H:%M"), "files": [p.name for p in files(args.heldout)],
                               "variants": table}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
