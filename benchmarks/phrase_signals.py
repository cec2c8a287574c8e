"""Phrase signals for the answerable model (measured in session 31, not adopted: docs/decisions.md): the question's
runs of topical words ("speculative decoding", "faster LLM inference"), each embedded alone; how well the top-3
papers and the whole corpus hold the worst-held run. Leave one file out, with them added to decide.QUESTION_SIGNALS.

    python benchmarks/phrase_signals.py [--signals-cache .work/signals.json]   (from benchmarks/, ~5 min CPU)
"""
import argparse
import json
import re
from pathlib import Path

import numpy as np

import fit_decisions as F
from assistant.search import decide
from assistant.search.retrieve import Retriever
from assistant.store.index import Index
HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
args = ap.parse_args()
work = HERE / ".work" / "iclr95"
cache = args.signals_cache
out = HERE / ".work" / "phrase_signals.json"  # the phrase readings, kept between runs
rows, framing, words = F.gather(F.question_files(), work, cache)
F.fit_intent(rows, work)
fr = frozenset(framing)
if out.exists():
    extra = json.loads(out.read_text())
else:
    retr = {}
    extra = []
    for k, r in enumerate(rows):
        c = r["corpus"]
        if c not in retr:
            retr[c] = Retriever(Index(F.corpus_settings(c, work)))
        R = retr[c]
        toks = re.findall(r"[\w\-']+", r["question"])
        runs, cur = [], []
        for w in toks:
            t = decide.terms(w)
            if t and not (t <= fr):
                cur.append(w)
            else:
                if cur: runs.append(" ".join(cur)); cur = []
        if cur: runs.append(" ".join(cur))
        vals = []
        for run in runs[:6]:
            v = R.embed_query(run)
            ids, best, _ = R.dense_all(v)
            pos = {p: i for i, p in enumerate(ids)}
            top3 = max((best[pos[h]] for h in r["hits"][:3] if h in pos), default=0.0)
            vals.append((float(top3), float(np.max(best)), len(run.split())))
        extra.append(vals)
        if k % 200 == 0: print(k, flush=True)
    out.write_text(json.dumps(extra))
def feats(vals):
    if not vals: return [0.5, 0.5, 0.0, 0.0]
    top3 = [v[0] for v in vals]; corp = [v[1] for v in vals]
    return [min(top3), min(corp), max(top3) - min(top3), min(t - c for t, c in zip(top3, corp))]
ans = [(r, e) for r, e in zip(rows, extra) if r["file"] != "which_labels" and r["type"] != "followup" and not r["named"]]
xa = np.array([[r["signals"][n] for n in decide.QUESTION_SIGNALS] for r, _ in ans])
xp = np.array([feats(e) for _, e in ans])
ya = np.array([r["type"] != "none" for r, _ in ans], dtype=float)
ga = [r["file"] for r, _ in ans]
for name, x in {"base": xa, "+phrase (4)": np.c_[xa, xp], "+min top3 only": np.c_[xa, xp[:, :1]],
                "+min corpus only": np.c_[xa, xp[:, 1:2]]}.items():
    oof = F.out_of_fold(x, ya, ga, F.C["answerable"])
    a = np.sort(oof[ya == 1]); t = a[int(np.floor(0.03 * len(a)))]
    print(f"{name:20s} AUC {F.auc(oof[ya == 1], oof[ya == 0]):.4f} none@3% {np.mean(oof[ya == 0] < t):.3f} FR {np.mean(oof[ya == 1] < t):.3f}")
print("phrase-only AUC (min top3):", F.auc(xp[ya == 1, 0], xp[ya == 0, 0]), "(min corpus):", F.auc(xp[ya == 1, 1], xp[ya == 0, 1]))
