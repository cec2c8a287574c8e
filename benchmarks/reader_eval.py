"""The reader alone, on the held-out sets (which it never saw in training, nor their corpora): does its score on the
top papers tell an absent topic from an answerable question, and does it put the gold paper first? Offline,
ASSISTANT_RERANK=off.

    python benchmarks/reader_eval.py [--label NAME]

For each question of the frozen held-out sets (benchmarks/data/heldout/: the bundled corpus's sets and the arXiv
slices), the shipped retrieval's top 5; the reader's probability for each (question, abstract). Reported per set
and pooled: the ROC AUC with which the top-5 maximum separates absent topics (type none, and parts) from answerable
questions, beside the same AUC of the shipped answerable model's probability; and top-1: the gold paper first in the
shipped order, and in the reader's order of the same five. Writes benchmarks/results/reader_eval.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
HELD = HERE / "data" / "heldout"
BUNDLED_SETS = ("heldout_iclr", "casual_heldout", "mixed_heldout", "iclr_fresh", "parts_blind")
ARXIV = ("arxiv300", "arxiv300b", "arxiv300c", "arxiv300d", "arxiv300e", "arxiv300f")


def auc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return round(float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size)), 4)


def score_set(items: list[dict], settings) -> dict:
    from assistant.qa.answer import retrieve
    from reader_model import reader
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    r = Retriever(Index(settings), settings)
    papers = r.papers()
    model = reader()
    absent, present, absent_p, present_p, top1, top1_reader = [], [], [], [], [], []
    for it in items:
        q = it.get("question") or (it.get("turns") or [""])[0]
        if not q:
            continue
        found = retrieve(r, q, 5)
        hits = found.hits[:5]
        probs = model.probabilities(q, [papers[h.paper_id].abstract for h in hits]) if hits else np.zeros(0)
        best = float(probs.max()) if len(probs) else 0.0
        kind = it.get("type")
        if kind in ("none", "parts"):
            absent.append(best)
            absent_p.append(found.probability or 0.0)
        elif it.get("gold"):
            present.append(best)
            present_p.append(found.probability or 0.0)
            gold = set(it["gold"])
            if len(gold) == 1 and hits:
                top1.append(hits[0].paper_id in gold)
                top1_reader.append(hits[int(np.argmax(probs))].paper_id in gold)
    share = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {"absent": len(absent), "answerable": len(present),
            "auc_reader_max": auc(absent, present), "auc_shipped": auc(absent_p, present_p),
            "top1_shipped": share(top1), "top1_reader": share(top1_reader),
            "_raw": {"absent": absent, "present": present, "absent_p": absent_p, "present_p": present_p,
                     "top1": top1, "top1_reader": top1_reader}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="latest")
    ap.add_argument("--index-dir", type=Path, default=HERE / ".work" / "iclr95")
    args = ap.parse_args()
    from heldout import arxiv300_index

    out = {}
    bundled = bundled_index(args.index_dir, rerank="off", llm_mode="off")
    for name in BUNDLED_SETS:
        path = HELD / f"{name}.jsonl"
        if path.exists():
            out[name] = score_set([json.loads(x) for x in path.read_text().splitlines() if x.strip()], bundled)
            print(name, {k: v for k, v in out[name].items() if k != "_raw"}, file=sys.stderr)
    for name in ARXIV:
        qpath = HELD / f"{name}_questions.jsonl"
        if qpath.exists():
            settings = arxiv300_index(HERE / ".work", name, rerank="off", llm_mode="off")
            out[name] = score_set([json.loads(x) for x in qpath.read_text().splitlines() if x.strip()], settings)
            print(name, {k: v for k, v in out[name].items() if k != "_raw"}, file=sys.stderr)
    pooled = {k: sum((v["_raw"][k] for v in out.values()), []) for k in ("absent", "present", "absent_p",
                                                                          "present_p", "top1", "top1_reader")}
    share = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    summary = {"pooled": {"absent": len(pooled["absent"]), "answerable": len(pooled["present"]),
                          "auc_reader_max": auc(pooled["absent"], pooled["present"]),
                          "auc_shipped": auc(pooled["absent_p"], pooled["present_p"]),
                          "top1_shipped": share(pooled["top1"]), "top1_reader": share(pooled["top1_reader"])},
               "sets": {k: {m: x for m, x in v.items() if m != "_raw"} for k, v in out.items()}}
    path = HERE / "results" / "reader_eval.json"
    runs = json.loads(path.read_text()) if path.exists() else {}
    runs[args.label] = summary
    path.write_text(json.dumps(runs, indent=1) + "\n")
    print(json.dumps(summary["pooled"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
