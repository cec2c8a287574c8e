"""The lexical side of the area ranking without the framing words (session 33). An area question's papers are
ordered by w x cosine + (1 - w) x BM25 share of its ceiling; BM25 reads every word of the question, so "which
papers do video generation?" lifts an abstract that writes "paper" often. Here the BM25 side reads only the words
whose stems are not framing terms (decide.framing_terms, learned from the question files), and the weight w is
chosen again on the grid. Over the training files' area questions (the papers of the question's fused top 20, as
an answer orders them), leave one file out: w chosen on the other files.

    python benchmarks/area_lexical.py [--signals-cache .work/signals.json]
"""
import argparse
import re
from pathlib import Path

import numpy as np

import fit_decisions as F
from assistant.search.decide import framing_terms, models
from assistant.service.api import retriever
from assistant.service.evaluate import ndcg_at
from assistant.text.terms import stem_terms

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
args = ap.parse_args()
work = F.INDEX_DIR
areas = F.area_rows(F.training_signals(args.signals_cache, intent=False)[0])
framing = framing_terms()
GRID = [round(0.4 + 0.05 * i, 2) for i in range(13)]
w_now = models()["area_dense_weight"]


def topical_query(question: str) -> str:
    return " ".join(w for w in re.findall(r"[\w'-]+", question) if not set(stem_terms(w)) <= framing) or question


retrievers = {}
scores = {"full": {}, "topical": {}}
for qi, r in enumerate(areas):
    if r["corpus"] not in retrievers:
        retrievers[r["corpus"]] = retriever(F.corpus_settings(r["corpus"], work))
    found = retrievers[r["corpus"]]
    hits = found.search(r["question"], k=20).hits
    dense = np.array([h.dense for h in hits])
    full = np.array([h.bm25 for h in hits]) / (found.bm25_ceiling(r["question"]) or 1.0)
    tq = topical_query(r["question"])
    every = found.bm25_all(tq)
    pos = found.bm25_positions()
    top = np.array([every[pos[h.paper_id]] if every is not None and h.paper_id in pos else 0.0 for h in hits])
    top = top / (found.bm25_ceiling(tq) or 1.0)
    ids = [h.paper_id for h in hits]
    for name, lex in (("full", full), ("topical", top)):
        for w in GRID:
            order = [ids[i] for i in np.argsort(-(w * dense + (1 - w) * lex), kind="stable")]
            scores[name][qi, w] = ndcg_at(order, set(r["gold"]), 10)
files = sorted({r["file"] for r in areas})
mean = lambda name, idx, w: float(np.mean([scores[name][i, w] for i in idx]))  # noqa: E731
every_q = range(len(areas))
print(f"{len(areas)} area questions, {len(files)} files; shipped weight {w_now}")
for name in scores:
    print(name, " ".join(f"{w}:{mean(name, every_q, w):.4f}" for w in GRID))
for name in scores:
    lofo = []
    for f in files:
        train = [i for i, r in enumerate(areas) if r["file"] != f]
        w = max(GRID, key=lambda g: (round(mean(name, train, g), 4), -abs(g - 0.75)))
        lofo += [scores[name][i, w] for i, r in enumerate(areas) if r["file"] == f]
    print(f"{name}: leave one file out nDCG@10 {np.mean(lofo):.4f}")
