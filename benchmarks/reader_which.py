"""`which` by the reader, against the shipped rule, on labelled criteria over the bundled corpus: the rule as shipped
(synthesis.which), the reader alone (a paper meets the criterion when the reader's probability for (criterion,
abstract) is at least t), the rule or the reader, the rule and the reader; t chosen on the other criteria in turn
(leave one criterion out). Measured, not adopted (docs/reader.md).

    python benchmarks/reader_which.py [--labels benchmarks/data/which_labels.jsonl] [--index-dir DIR]

Borderline papers are neither right nor wrong. Needs training/models/reader. Writes
benchmarks/results/reader_which.json (keyed by the labels file).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import _training  # noqa: F401  (training/ on sys.path: the fits' library and the reader)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
GRID = [round(float(x), 2) for x in np.arange(0.05, 0.96, 0.05)]
VARIANTS = {"rule": lambda t: lambda rule, probs: rule,
            "reader": lambda t: lambda rule, probs: {p for p, v in probs.items() if v >= t},
            "rule or reader": lambda t: lambda rule, probs: rule | {p for p, v in probs.items() if v >= t},
            "rule and reader": lambda t: lambda rule, probs: {p for p in rule if probs.get(p, 0.0) >= t}}


def counts(select, cases) -> np.ndarray:
    total = np.zeros(3, dtype=int)
    for item, rule, probs in cases:
        got, gold = select(rule, probs) - set(item["borderline"]), set(item["papers"])
        total += (len(got & gold), len(got - gold), len(gold - got))
    return total


def prf(c: np.ndarray) -> dict:
    p, r = c[0] / max(c[0] + c[1], 1), c[0] / max(c[0] + c[2], 1)
    return {"precision": round(float(p), 3), "recall": round(float(r), 3), "f1": round(float(2 * p * r / max(p + r, 1e-9)), 3)}


def main() -> int:
    from reader_model import Reader

    from assistant.qa import synthesis
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=Path, default=HERE / "data" / "which_labels.jsonl")
    ap.add_argument("--index-dir", type=Path, default=HERE / ".work" / "iclr95")
    ap.add_argument("--model", type=Path, help="a reader's folder (reader.onnx, manifest.json); default: the shipped one")
    ap.add_argument("--label", default="", help="saved under this key beside the labels file's name")
    args = ap.parse_args()
    model = Reader(args.model)
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    settings = bundled_index(args.index_dir, llm_mode="off", rerank="off")
    retriever = Retriever(Index(settings), settings)
    papers = retriever.papers()
    cases = []
    for item in labels:
        rule = {f.paper_id for f in synthesis.which(retriever, item["criterion"]).papers}
        query = synthesis.strip_leadin(retriever.mend(item["criterion"]))
        probs = dict(zip(papers, (float(p) for p in model.probabilities(query, [p.abstract for p in papers.values()]))))
        cases.append((item, rule, probs))
    out = {}
    for name, make in VARIANTS.items():
        best = max(GRID, key=lambda t: prf(counts(make(t), cases))["f1"])
        held = np.zeros(3, dtype=int)
        for k in range(len(cases)):
            others = cases[:k] + cases[k + 1:]
            t = max(GRID, key=lambda t: prf(counts(make(t), others))["f1"])
            held += counts(make(t), [cases[k]])
        out[name] = {"threshold_on_all": best, "on_all": prf(counts(make(best), cases)),
                     "leave_one_criterion_out": prf(held)}
        print(f"{name:16} t={best:<5} all {out[name]['on_all']}  left out {out[name]['leave_one_criterion_out']}")
    path = HERE / "results" / "reader_which.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[args.labels.name + (f" {args.label}" if args.label else "")] = {"criteria": len(cases), **out}
    path.write_text(json.dumps(saved, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
