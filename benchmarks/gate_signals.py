"""Is there a second gate signal? Held-out check of "best-chunk cosine + λ·standout" and "+ λ·lexical"
against cosine alone.

    python benchmarks/gate_signals.py

Hard in-domain negatives come from leaving the gold out: each answerable ICLR dev question is asked
again with its gold papers removed from the results (the rest of the corpus cannot answer it), next
to the dev `none` questions. Features per question, from the top 10 fused hits: ``conf`` (the gate's
best-chunk cosine among the top 3), ``standout`` (best dense cosine minus the third best: one
paper clearly above the rest) and ``lexical`` (the best BM25 score among the top 3 as a share of the
query's ceiling: how much of the question's vocabulary the best papers hold). λ and the threshold
are fitted by grid search (most negatives refused with <= 5% false refusals on the ICLR positives and on the SciFact queries whose gold is in the top 3),
then scored leave-one-question-out. Needs the indexes built by benchmarks/retrieval.py.
Writes benchmarks/results/gate_signals.json.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"


def features(hits, ceiling: float) -> dict:
    dense = sorted((h.dense for h in hits[:10]), reverse=True)
    return {"conf": max(h.dense for h in hits[:3]), "standout": dense[0] - dense[2],
            "lexical": max(h.bm25 for h in hits[:3]) / ceiling if ceiling > 0 else 0.0}


def collect() -> list[dict]:
    from assistant.chat import Conversation
    from assistant.config import Settings
    from assistant.index import Index
    from assistant.retrieve import Retriever

    rows = []
    settings = Settings(index_dir=HERE / ".work" / "iclr", min_relevance=0.0)
    retriever = Retriever(Index(settings), settings)
    conv = Conversation(retriever, settings)
    for line in (SHARED / "eval" / "dev.jsonl").read_text().splitlines():
        item = json.loads(line)
        query = conv.standalone(conv.replay(item))
        hits, ceiling = retriever.search(query, k=20).hits, retriever.bm25_ceiling(query)
        if item["type"] == "none":
            rows.append({"set": "iclr", "kind": "none", "id": item["id"], **features(hits, ceiling)})
            continue
        gold = set(item.get("gold") or [])
        rows.append({"set": "iclr", "kind": "pos", "id": item["id"], **features(hits, ceiling)})
        rows.append({"set": "iclr", "kind": "gold_removed", "id": item["id"],
                     **features([h for h in hits if h.paper_id not in gold], ceiling)})
    settings = Settings(index_dir=HERE / ".work" / "scifact", min_relevance=0.0)
    retriever = Retriever(Index(settings), settings)
    qrels: dict[str, set] = {}
    with open(SHARED / "bench" / "scifact" / "qrels_test.tsv") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if len(row) >= 3 and row[0] != "query-id" and int(row[2]) > 0:
                qrels.setdefault(row[0], set()).add(row[1])
    for line in (SHARED / "bench" / "scifact" / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        if q["_id"] in qrels:
            hits = retriever.search(q["text"], k=20).hits
            if any(h.paper_id in qrels[q["_id"]] for h in hits[:3]):
                rows.append({"set": "scifact", "kind": "pos", "id": q["_id"],
                             **features(hits, retriever.bm25_ceiling(q["text"]))})
    return rows


def fit(train: list[dict], scifact_pos: list[dict], second: str = "standout") -> tuple[float, float, float]:
    pos = [r for r in train if r["kind"] == "pos"]
    neg = [r for r in train if r["kind"] != "pos"]
    best = (-1.0, 0.0, 0.0)
    for lam in np.arange(0, 2.01, 0.1):
        for t in np.arange(0.35, 0.8, 0.005):
            def refused(rs):
                return np.mean([r["conf"] + lam * r[second] < t for r in rs])
            if refused(pos) <= 0.05 and refused(scifact_pos) <= 0.05 and refused(neg) > best[0] + 1e-9:
                best = (float(refused(neg)), float(lam), float(t))
    return best


def main() -> int:
    if not SHARED.exists():
        print(f"no shared data at {SHARED}", file=sys.stderr)
        return 1
    from assistant.retrieve import DEFAULT_GATE

    rows = collect()
    iclr = [r for r in rows if r["set"] == "iclr"]
    scifact_pos = [r for r in rows if r["set"] == "scifact"]
    out = {}
    for name, second, rule_for in (
            ("cosine alone (default gate)", "standout", lambda train: (0.0, DEFAULT_GATE)),
            ("cosine + λ·standout, fitted", "standout", lambda train: fit(train, scifact_pos)[1:]),
            ("cosine + λ·lexical, fitted", "lexical", lambda train: fit(train, scifact_pos, "lexical")[1:])):
        verdicts = []
        for qid in sorted({r["id"] for r in iclr}):
            lam, t = rule_for([r for r in iclr if r["id"] != qid])
            verdicts += [(r["kind"], r["conf"] + lam * r[second] >= t) for r in iclr if r["id"] == qid]
        pos = [ok for kind, ok in verdicts if kind == "pos"]
        out[name] = {"false_refusals": round(1 - float(np.mean(pos)), 3),
                     "gold_removed_refused": round(float(np.mean([not ok for k, ok in verdicts if k == "gold_removed"])), 3),
                     "none_refused": round(float(np.mean([not ok for k, ok in verdicts if k == "none"])), 3)}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "gate_signals.json").write_text(json.dumps(out, indent=2))
    print("leave-one-question-out on the ICLR dev set (27 answerable, 27 gold-removed, 3 none)")
    print(f"{'rule':30s} {'false refusals':>14} {'gold-removed refused':>20} {'none refused':>12}")
    for name, r in out.items():
        print(f"{name:30s} {r['false_refusals']:14.3f} {r['gold_removed_refused']:20.3f} {r['none_refused']:12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
