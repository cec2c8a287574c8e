"""Pseudo-relevance feedback for the area ranking (measured in session 33). An area question's gold papers are
several papers on one topic, and the ones the ranking misses are often near the ones it finds: here the question's
vector is moved toward the mean vector of the m papers the area ranking puts first (q + beta x their mean chunk
vector, normalised) before the dense side is read again, the BM25 side and the area weight as fitted. Leave one
file out over the training files' area questions: (beta, m) chosen on the other files, scored on the held one.

    python benchmarks/area_feedback.py [--signals-cache .work/signals.json]
"""
import argparse
import itertools
from pathlib import Path

import numpy as np

import fit_decisions as F
from assistant.search.decide import models
from assistant.service.api import retriever
from assistant.service.evaluate import ndcg_at

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
args = ap.parse_args()
work = F.INDEX_DIR
areas = F.area_rows(F.training_signals(args.signals_cache, intent=False)[0])
w = models()["area_dense_weight"]
BETAS, MS = (0.0, 0.15, 0.3, 0.5, 0.8), (1, 2, 3, 5)
retrievers = {}
score = {}  # (question index, beta, m) -> nDCG@10
for qi, r in enumerate(areas):
    if r["corpus"] not in retrievers:
        retrievers[r["corpus"]] = retriever(F.corpus_settings(r["corpus"], work))
    found = retrievers[r["corpus"]]
    pool = r["pool"]
    lex = {p: b / (r["ceiling"] or 1.0) for p, _, b in pool}
    first = sorted(pool, key=lambda x: -(w * x[1] + (1 - w) * lex[x[0]]))
    q = np.asarray(r["qvec"], dtype=np.float32)
    vecs = found.paper_vectors([p for p, _, _ in first[:max(MS)]])
    for beta, m in itertools.product(BETAS, MS):
        if beta == 0.0 and m != MS[0]:
            score[qi, beta, m] = score[qi, 0.0, MS[0]]
            continue
        centroid = np.mean([vecs[p] for p, _, _ in first[:m] if p in vecs], axis=0)
        q2 = q + beta * centroid / (np.linalg.norm(centroid) or 1.0)
        ids, best, _ = found.dense_all(q2 / np.linalg.norm(q2))
        dense = dict(zip(ids, best))
        ranked = sorted(lex, key=lambda p: -(w * dense.get(p, -1.0) + (1 - w) * lex[p]))
        score[qi, beta, m] = ndcg_at(ranked, set(r["gold"]), 10)
files = sorted({r["file"] for r in areas})
grid = list(itertools.product(BETAS, MS))
mean = lambda idx, b, m: float(np.mean([score[i, b, m] for i in idx]))  # noqa: E731
every = range(len(areas))
print(f"{len(areas)} area questions of {len(files)} files; area weight {w}")
for b, m in grid:
    if b or m == MS[0]:
        print(f"beta {b:<4} m {m}: nDCG@10 {mean(every, b, m):.4f}")
lofo = []
for f in files:
    train = [i for i, r in enumerate(areas) if r["file"] != f]
    held = [i for i, r in enumerate(areas) if r["file"] == f]
    b, m = max(grid, key=lambda g: (round(mean(train, *g), 4), -g[0]))
    lofo += [score[i, b, m] for i in held]
    print(f"  {f}: chose beta {b} m {m}; held {mean(held, b, m):.3f} (no feedback {mean(held, 0.0, MS[0]):.3f})")
print(f"leave one file out: nDCG@10 {np.mean(lofo):.4f} against {mean(every, 0.0, MS[0]):.4f} without feedback")
