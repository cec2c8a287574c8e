"""The field's document co-occurrence of question term pairs no top-3 paper holds together, and nonlinear models, for
the answerable model (measured in session 32, not adopted: docs/decisions.md). "membership inference attacks on
diffusion models" over the bundled corpus reads 0.97 answerable: a DP-auditing paper holds "membership inference",
others "diffusion", none both, and no adjacent pair or triple of the question is lacked. The field writes both
words together in many abstracts, so a pair at any distance that no single top paper holds but the field binds is
a candidate mark of a near-topic. Leave one file out on the 25 files, from fit_decisions.py's signals cache.

    python benchmarks/cooc_signals.py [--signals-cache .work/signals.json]   (~2 min CPU)
"""
import argparse
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np

import fit_decisions as F
from build_background import slice_ids
from assistant.search.background import is_vocabulary
from assistant.store.index import Index
from assistant.text.terms import stem_sequence

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
ap.add_argument("--source", type=Path, default=HERE.parents[1] / "shared" / "corpus" / "arxiv-ml" / "papers.jsonl")
args = ap.parse_args()
t0 = time.time()
left_out = slice_ids()
post = {}
n_docs = 0
for line in open(args.source, encoding="utf-8"):
    p = json.loads(line)
    if p["id"] in left_out:
        continue
    for t in set(stem_sequence(f"{p['title']}. {p['abstract']}")):
        post.setdefault(t, []).append(n_docs)
    n_docs += 1
post = {t: np.array(v, dtype=np.int32) for t, v in post.items() if len(v) >= 3}
print(f"{n_docs} docs, {len(post)} terms, {sum(len(v) for v in post.values())} postings ({time.time()-t0:.0f} s)")

work = F.INDEX_DIR
rows, framing = F.training_signals(args.signals_cache)
fr = frozenset(framing)
papers_by = {}
seq_cache = {}
def pterms(corpus, pid):
    k = (corpus, pid)
    if k not in seq_cache:
        if corpus not in papers_by:
            papers_by[corpus] = Index(F.corpus_settings(corpus, work)).all_papers()
        p = papers_by[corpus].get(pid)
        seq_cache[k] = frozenset(stem_sequence(f"{p.title}. {p.abstract}")) if p else frozenset()
    return seq_cache[k]

def cooc(a, b):
    pa, pb = post.get(a), post.get(b)
    if pa is None or pb is None:
        return 0
    return len(np.intersect1d(pa, pb, assume_unique=True))

def feats(r):
    q = [t for t in dict.fromkeys(stem_sequence(r["question"])) if t not in fr]
    tops = [pterms(r["corpus"], h) for h in r["hits"][:3]]
    held = set().union(*tops) if tops else set()
    best_log, best_col, best_parts, best_pmi = 0.0, 0.0, 0.0, 0.0
    for a, b in itertools.combinations(q, 2):
        if any(a in t and b in t for t in tops):
            continue
        n = cooc(a, b)
        if n < 3 or is_vocabulary(n):
            continue
        pmi = math.log(n * n_docs / (len(post[a]) * len(post[b])))
        lg = math.log1p(n)
        best_log = max(best_log, lg)
        best_col = max(best_col, lg * max(0.0, pmi))
        best_pmi = max(best_pmi, min(lg, pmi))
        if a in held and b in held:
            best_parts = max(best_parts, lg * max(0.0, pmi))
    return [best_log, best_col, best_parts, best_pmi]

ans = F.answerable_rows(rows)
xa, ya, ga = F.answerable_data(ans)
xc = np.array([feats(r) for r in ans])
print(f"features ({time.time()-t0:.0f} s)")
for i, nm in enumerate(["log", "colloc", "parts", "minpmi"]):
    print(nm, "alone AUC (higher = answerable)", round(F.auc(-xc[ya == 1, i], -xc[ya == 0, i]), 3))
for name, x in {"base": xa, "+log": np.c_[xa, xc[:, :1]], "+colloc": np.c_[xa, xc[:, 1:2]], "+parts": np.c_[xa, xc[:, 2:3]],
                "+minpmi": np.c_[xa, xc[:, 3:4]], "+all4": np.c_[xa, xc]}.items():
    oof = F.out_of_fold(x, ya, ga, F.C["answerable"])
    _, none, refused = F.at_false_refusals(oof, ya)
    print(f"{name:10s} AUC {F.auc(oof[ya == 1], oof[ya == 0]):.4f} none@3% {none:.3f} FR {refused:.3f}")


# nonlinear models on the same signals, with and without the co-occurrence readings
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier  # noqa: E402

gx = np.array(ga)


def oof_model(make, x):
    out = np.zeros(len(ya))
    for g in sorted(set(ga)):
        out[gx == g] = make().fit(x[gx != g], ya[gx != g]).predict_proba(x[gx == g])[:, 1]
    return out


for x_name, x in (("base", xa), ("+co-occurrence", np.c_[xa, xc])):
    for lr, it, leaf in ((0.05, 200, 8), (0.05, 300, 15), (0.1, 100, 15)):
        oof = oof_model(lambda: HistGradientBoostingClassifier(learning_rate=lr, max_iter=it, min_samples_leaf=leaf,
                                                               random_state=0), x)
        print(f"boosted trees {x_name} lr {lr} iter {it} leaf {leaf}: AUC {F.auc(oof[ya == 1], oof[ya == 0]):.4f} "
              f"none@3% {F.at_false_refusals(oof, ya)[1]:.3f}")
    oof = oof_model(lambda: RandomForestClassifier(n_estimators=300, min_samples_leaf=3, random_state=0), x)
    print(f"random forest {x_name}: AUC {F.auc(oof[ya == 1], oof[ya == 0]):.4f} "
          f"none@3% {F.at_false_refusals(oof, ya)[1]:.3f}")
