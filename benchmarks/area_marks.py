"""Which papers `map --query` numbers and `summarize` adds beside `which`'s list: the papers an area answer cites
(``answer.area_hits``: the top hit and every other the relevance model passes), against the rule they had before
(fused score at least half the top one's and best-chunk cosine at least the hand-set 0.41 gate). Offline,
ASSISTANT_RERANK=off, the bundled 95 papers.

    python benchmarks/area_marks.py [--label NAME]

Scored on the area questions (``"type": "area"``) of the question files over the bundled corpus: the files the
decisions were fitted on (benchmarks/data/*.jsonl) and the held-out ones (benchmarks/data/heldout: heldout_iclr,
iclr_fresh, casual_heldout, mixed_heldout), each question's gold papers against the papers numbered; a question
the answerable model refuses numbers none. Precision and recall over (question, paper) pairs. Writes
benchmarks/results/area_marks.json, keeping the runs recorded under other labels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
HELDOUT = ["heldout_iclr", "iclr_fresh", "casual_heldout", "mixed_heldout"]
GATE = 0.41  # the hand-set cosine the rule before kept papers above (tuning.relevance_gate)
HALF = 0.5  # the share of the top fused score it kept (tuning.area_relative_cut, removed)


def score(retriever, paths: list[Path], k: int) -> dict:
    from assistant.qa.answer import area_hits, retrieve

    counts = {"area_hits": [0, 0, 0], "before": [0, 0, 0]}
    questions = 0
    for path in paths:
        for line in path.read_text().splitlines():
            item = json.loads(line) if line.strip() else {}
            if item.get("type") != "area":
                continue
            questions += 1
            gold = set(item["gold"])
            found = retrieve(retriever, item["question"], k)
            got = {"area_hits": set(), "before": set()}
            if found.answerable and found.hits:
                got["area_hits"] = {h.paper_id for h in area_hits(found)}
                top = found.hits[0].score
                got["before"] = {h.paper_id for h in found.hits if h.score >= HALF * top and h.dense >= GATE}
            for rule, papers in got.items():
                counts[rule][0] += len(papers & gold)
                counts[rule][1] += len(papers - gold)
                counts[rule][2] += len(gold - papers)
    out = {"questions": questions}
    for rule, (tp, fp, fn) in counts.items():
        out[rule] = {"precision": round(tp / max(tp + fp, 1), 3), "recall": round(tp / max(tp + fn, 1), 3),
                     "listed_right": tp, "listed_wrong": fp, "missed": fn}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="latest")
    args = ap.parse_args()
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    settings = bundled_index(None, rerank="off", llm_mode="off")
    retriever = Retriever(Index(settings), settings)
    k = max(settings.search.top_k, 10)
    fitted = sorted(p for p in (HERE / "data").glob("*.jsonl") if p.name != "which_labels.jsonl")
    result = {"fitted_on": score(retriever, fitted, k),
              "held_out": score(retriever, [HERE / "data" / "heldout" / f"{n}.jsonl" for n in HELDOUT], k)}
    out = HERE / "results" / "area_marks.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs[args.label] = result
    out.write_text(json.dumps(runs, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
