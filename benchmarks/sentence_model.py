"""Would a fitted sentence model pick the sentence that answers better than evidence.py's hand-set score? A
measurement, no behaviour change.

    python benchmarks/sentence_model.py

Over every training question file (benchmarks/fit_decisions.question_files: the bundled 95 papers and the arXiv
training slices; never benchmarks/data/heldout) with answer_facts and one gold paper: each sentence of the gold
paper is labelled by whether it holds a fact. A logistic regression over 11 features (cosine, IDF-weighted term
share, both relative to the paper's best, a contribution sentence, a digit, position, first/last, length, leans on
the one before), fitted leave one file out, against evidence.relevance (cosine + 0.5 x term share): how often a
fact is among the top k sentences. Writes benchmarks/results/sentence_model.json.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    import fit_decisions as f
    from sklearn.linear_model import LogisticRegression

    from assistant.qa.evidence import CONTRIBUTION_RE, leans_on_previous, relevance
    from assistant.search.decide import terms
    from assistant.service.api import retriever
    from assistant.service.evaluate import load_questions

    rows = []
    for path in f.question_files():
        s = f.corpus_settings(f.corpus_of(path.stem), HERE / ".work" / "iclr95")
        r = retriever(s); papers = r.papers(); weights = r.term_weights()
        for it in load_questions(path):
            facts = it.get("answer_facts") or []
            gold = it.get("gold") or []
            if not facts or len(gold) != 1 or gold[0] not in papers: continue
            q = it.get("question") or it["turns"][-1]
            p = papers[gold[0]]
            sents, svecs = r.sentence_vectors(p.id if hasattr(p, "id") else gold[0], p.abstract)
            if not sents: continue
            qv = r.embed_query(q); qt = terms(q)
            base = relevance(sents, svecs, qv, qt, weights)
            cos = svecs @ qv
            rarest = max(weights.values()); total = sum(weights.get(t, rarest) for t in qt) or 1.0
            n = len(sents)
            lab = [any(x.lower() in s_.lower() for x in facts) for s_ in sents]
            if not any(lab): continue  # fact spans sentences
            feats = []
            shares = [sum(weights.get(t, rarest) for t in qt & terms(x)) / total for x in sents]
            for i, s_ in enumerate(sents):
                share = shares[i]
                feats.append([cos[i], share, cos[i] - cos.max(), share - max(shares), float(bool(CONTRIBUTION_RE.search(s_))),
                              float(bool(re.search(r"\d", s_))), i / max(n - 1, 1), float(i == 0), float(i == n - 1),
                              math.log(len(s_)), float(leans_on_previous(s_))])
            rows.append({"file": path.stem, "x": feats, "y": lab, "base": base.tolist()})
    print(len(rows), "questions")
    def hit(scores, y, k):
        top = np.argsort(-np.array(scores))[:k]
        return any(y[i] for i in top)
    files = sorted({r["file"] for r in rows})
    preds = {}
    for g in files:
        tr = [r for r in rows if r["file"] != g]
        X = np.array([x for r in tr for x in r["x"]]); Y = np.array([y for r in tr for y in r["y"]])
        mu, sd = X.mean(0), X.std(0) + 1e-9
        m = LogisticRegression(C=1.0, max_iter=2000).fit((X - mu) / sd, Y)
        for r in rows:
            if r["file"] == g:
                preds[id(r)] = m.decision_function((np.array(r["x"]) - mu) / sd)
    for k in (1, 2, 3, 4):
        b = np.mean([hit(r["base"], r["y"], k) for r in rows]); l = np.mean([hit(preds[id(r)], r["y"], k) for r in rows])
        print(f"hit@{k}: current {b:.3f}  LR(LOFO) {l:.3f}")
    for fl in ("arxiv_a_questions", "arxiv_b_questions"):
        rr = [r for r in rows if r["file"] == fl]
        print(fl, "hit@1/2/4 current", [round(float(np.mean([hit(r["base"], r["y"], k) for r in rr])), 3) for k in (1, 2, 4)],
              "LR", [round(float(np.mean([hit(preds[id(r)], r["y"], k) for r in rr])), 3) for k in (1, 2, 4)])

    result = {"questions": len(rows), "files": files,
              "hit_at_k": {k: {"current": round(float(np.mean([hit(r["base"], r["y"], k) for r in rows])), 4),
                               "lr_lofo": round(float(np.mean([hit(preds[id(r)], r["y"], k) for r in rows])), 4)}
                           for k in (1, 2, 3, 4)}}
    (HERE / "results" / "sentence_model.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
