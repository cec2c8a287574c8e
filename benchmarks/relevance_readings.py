"""More paper-level readings for the relevance model (measured in session 32, not adopted: docs/decisions.md): the
cosine of the paper's own title, of its mean chunk vector, and of its best contribution sentence ("we propose ...")
to the question, each added to decide.PAPER_SIGNALS, leave one file out as fit_decisions.fit_relevant (the same
cut rule: non-gold share of passing papers <= MAX_NONGOLD). Then the answerable model with one threshold per intent
(area / one paper), both chosen to refuse at most 3% of answerable questions, nested leave one file out.

    python benchmarks/relevance_readings.py [--signals-cache .work/signals.json]   (from benchmarks/, ~1 min)
"""
import argparse
import time
from pathlib import Path

import numpy as np

import fit_decisions as F
from assistant.search import decide
from assistant.service.api import retriever
from assistant.qa.evidence import CONTRIBUTION_RE
HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
args = ap.parse_args()
t0 = time.time()
work = F.INDEX_DIR
rows, framing = F.training_signals(args.signals_cache)
ans = F.answerable_rows(rows)
rets = {}
title_vec, cache_pv, cache_cs = {}, {}, {}
def R(c):
    if c not in rets:
        rets[c] = retriever(F.corpus_settings(c, work))
    return rets[c]
pr, extra, yr, gr, isarea, rank = [], [], [], [], [], []
for r in ans:
    if r["type"] == "none" or not r["gold"]:
        continue
    ret = R(r["corpus"]); papers = ret.papers()
    q = np.array(r["qvec"], dtype=np.float32); q /= np.linalg.norm(q)
    need = [p for p in r["hits"] if (r["corpus"], p) not in cache_pv]
    pv = ret.paper_vectors(need) if need else {}
    for pid, v in pv.items():
        cache_pv[(r["corpus"], pid)] = v / np.linalg.norm(v)
    for i, (pid, p) in enumerate(zip(r["hits"], r["papers"])):
        k = (r["corpus"], pid)
        paper = papers[pid]
        if k not in title_vec:
            title_vec[k] = ret.embed_query(paper.title) if not paper.title_derived else None
            sents, svecs = ret.sentence_vectors(pid, paper.abstract)
            idx = [j for j, s in enumerate(sents) if CONTRIBUTION_RE.search(s)]
            cache_cs[k] = svecs[idx] if idx else svecs[:1]
        tv = title_vec[k]
        extra.append([float(tv @ q) if tv is not None else float(p["cos"]), float(cache_pv[k] @ q),
                      float(np.max(cache_cs[k] @ q))])
        pr.append([(p | {"area": r["signals"]["area"]})[n] for n in decide.PAPER_SIGNALS])
        yr.append(pid in r["gold"]); gr.append(r["file"]); isarea.append(r["type"] == "area"); rank.append(i)
print(f"{len(yr)} papers ({time.time()-t0:.0f} s)")
x, xe, y = np.array(pr), np.array(extra), np.array(yr, dtype=float)
isarea, rank = np.array(isarea), np.array(rank)
def evaluate(name, xx):
    oof = F.out_of_fold(xx, y, gr, F.C["relevant"])
    ok = [t for t in np.unique(oof) if np.mean(y[oof >= t] == 0) <= F.MAX_NONGOLD]
    t = min(ok)
    keep = (oof >= t)
    area_keep = isarea & (keep | (rank == 0))
    print(f"{name:22} AUC {F.auc(oof[y == 1], oof[y == 0]):.4f} cut {t:.3f} gold kept {np.mean(keep[y == 1]):.3f} "
          f"area gold kept {np.mean(area_keep[isarea & (y == 1)]):.3f} area non-gold {np.mean(y[area_keep] == 0):.3f} "
          f"one-paper gold kept {np.mean(keep[~isarea & (y == 1)]):.3f}")
evaluate("base", x)
for j, nm in enumerate(["title", "paper vector", "contribution"]):
    evaluate(f"+{nm}", np.c_[x, xe[:, j]])
evaluate("+all three", np.c_[x, xe])


# --- one answerable threshold per intent ---------------------------------------------------------------------------
xq = np.array([[r["signals"][n] for n in decide.QUESTION_SIGNALS] for r in ans])
y = np.array([r["type"] != "none" for r in ans], dtype=float)
g = np.array([r["file"] for r in ans])
area = np.array([r["signals"]["area"] >= 0.5 for r in ans])
oof = F.out_of_fold(xq, y, list(g), F.C["answerable"])
print("area share: absent", area[y == 0].mean().round(3), "answerable", area[y == 1].mean().round(3))
def best_single(o, yy, fr=0.03):
    return F.at_false_refusals(o, yy, fr)[0]
t = best_single(oof, y)
print(f"single: none {np.mean(oof[y == 0] < t):.3f} FR {np.mean(oof[y == 1] < t):.3f}")
# two thresholds: grid, pooled FR <= 3%
grid = np.unique(np.quantile(oof, np.linspace(0, 0.6, 241)))
best = None
for ta in grid:
    for tp in grid:
        thr = np.where(area, ta, tp)
        fr = np.mean(oof[y == 1] < thr[y == 1])
        if fr <= 0.03:
            na = np.mean(oof[y == 0] < thr[y == 0])
            if best is None or na > best[0]:
                best = (na, fr, ta, tp)
print("two thresholds in-sample (optimistic):", [round(float(v), 3) for v in best])
# nested: choose the pair on other files, apply to the held-out file
refused_abs, refused_ans = 0, 0
for f in sorted(set(g)):
    m = g != f
    bb = None
    for ta in grid:
        for tp in grid:
            thr = np.where(area[m], ta, tp)
            fr = np.mean(oof[m][y[m] == 1] < thr[y[m] == 1])
            if fr <= 0.03:
                na = np.mean(oof[m][y[m] == 0] < thr[y[m] == 0])
                if bb is None or na > bb[0]: bb = (na, ta, tp)
    thr = np.where(area[~m], bb[1], bb[2])
    refused_abs += np.sum(oof[~m][y[~m] == 0] < thr[y[~m] == 0]); refused_ans += np.sum(oof[~m][y[~m] == 1] < thr[y[~m] == 1])
    # and single
print(f"two thresholds nested: none {refused_abs / (y == 0).sum():.3f} FR {refused_ans / (y == 1).sum():.3f}")
rs_abs = rs_ans = 0
for f in sorted(set(g)):
    m = g != f
    tt = best_single(oof[m], y[m])
    rs_abs += np.sum(oof[~m][y[~m] == 0] < tt); rs_ans += np.sum(oof[~m][y[~m] == 1] < tt)
print(f"single nested: none {rs_abs / (y == 0).sum():.3f} FR {rs_ans / (y == 1).sum():.3f}")
