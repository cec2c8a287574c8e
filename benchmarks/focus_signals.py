"""Is the question's topic where the top paper says what it does? A measurement for the answerable model
(session 33). A near-topic the corpus lacks is often written by the top paper, but in its background ("speculative
decoding speeds up autoregressive models; ... we propose a diffusion language model ..."): the term coverage
signals count it as held. Here a paper's focus is its own title and the sentences saying what it contributes
(evidence.CONTRIBUTION_RE, or, when none does, those with the authors as subject), and two readings are added to
the answerable model's signals: the IDF-weighted share of the question's topical terms the focus of the best of
the top 3 papers holds, and the share the top paper holds only outside its focus. Leave one file out, from
fit_decisions.py's signals cache.

    python benchmarks/focus_signals.py [--signals-cache .work/signals.json]
"""
import argparse
import time
from pathlib import Path

import numpy as np

import fit_decisions as F
from assistant.qa.evidence import _BY_THE_AUTHORS, CONTRIBUTION_RE
from assistant.search import decide
from assistant.store.index import Index
from assistant.text.sentences import split_sentences

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
args = ap.parse_args()
t0 = time.time()
work = F.INDEX_DIR
rows, framing = F.training_signals(args.signals_cache)
fr = frozenset(framing)
indexes, focus_cache, all_cache = {}, {}, {}


def index_of(corpus):
    if corpus not in indexes:
        idx = Index(F.corpus_settings(corpus, work))
        indexes[corpus] = (idx.all_papers(), idx.term_weights())
    return indexes[corpus]


def focus_terms(corpus, pid):
    key = (corpus, pid)
    if key not in focus_cache:
        papers, _ = index_of(corpus)
        p = papers.get(pid)
        if p is None:
            focus_cache[key] = all_cache[key] = frozenset()
        else:
            sents = split_sentences(p.abstract)
            own = [s for s in sents if CONTRIBUTION_RE.search(s)] or [s for s in sents if _BY_THE_AUTHORS.search(s)]
            focus = ("" if p.title_derived else p.title) + "\n" + "\n".join(own)
            focus_cache[key] = decide.terms(focus)
            all_cache[key] = decide.terms(f"{p.title}\n{p.abstract}")
    return focus_cache[key], all_cache[key]


def feats(r):
    _, known = index_of(r["corpus"])
    rarest = max(known.values(), default=1.0)
    q = set(decide.topical(r["question"], fr))
    total = sum(known.get(t, rarest) for t in q) or 1.0
    share = lambda ts: sum(known.get(t, rarest) for t in q & ts) / total  # noqa: E731
    tops = [focus_terms(r["corpus"], h) for h in r["hits"][:3]]
    if not tops:
        return [0.0, 0.0]
    best_focus = max(share(f) for f, _ in tops)
    f0, a0 = tops[0]
    return [best_focus, share(a0 - f0)]


ans = F.answerable_rows(rows)
xa, ya, ga = F.answerable_data(ans)
xf = np.array([feats(r) for r in ans])
print(f"features ({time.time() - t0:.0f} s)")
orig = np.array([not g.startswith("area_facts_") for g in ga])
for i, nm in enumerate(["focus coverage", "held outside the focus"]):
    print(nm, "alone AUC (higher = answerable)", round(F.auc(xf[ya == 1, i], xf[ya == 0, i]), 3),
          "mean answerable", round(float(xf[ya == 1, i].mean()), 3), "absent", round(float(xf[ya == 0, i].mean()), 3))
for name, x in {"base": xa, "+focus": np.c_[xa, xf[:, :1]], "+outside": np.c_[xa, xf[:, 1:]],
                "+both": np.c_[xa, xf]}.items():
    oof = F.out_of_fold(x, ya, ga, F.C["answerable"])
    for part, m in (("28 files", np.ones(len(ya), bool)), ("25 files", orig)):
        _, none, refused = F.at_false_refusals(oof[m], ya[m])
        print(f"{name:9s} {part}: AUC {F.auc(oof[m & (ya == 1)], oof[m & (ya == 0)]):.4f} "
              f"none@3% {none:.3f} FR {refused:.3f}")
