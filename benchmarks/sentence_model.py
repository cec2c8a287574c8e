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


def features(sentences: list[str], cos: np.ndarray, shares: list[float]) -> list[list[float]]:
    """What the sentence model reads of each sentence of one paper."""
    from assistant.qa.evidence import CONTRIBUTION_RE, leans_on_previous

    n = len(sentences)
    return [[cos[i], shares[i], cos[i] - cos.max(), shares[i] - max(shares), float(bool(CONTRIBUTION_RE.search(s))),
             float(bool(re.search(r"\d", s))), i / max(n - 1, 1), float(i == 0), float(i == n - 1),
             math.log(len(s)), float(leans_on_previous(s))] for i, s in enumerate(sentences)]


def sentence_rows() -> list[dict]:
    """One row per fact question with one gold paper: its gold paper's sentences' features, labels, and the
    current score."""
    import fit_decisions as f

    from assistant.qa.evidence import relevance
    from assistant.search.decide import terms
    from assistant.service.api import retriever
    from assistant.service.evaluate import load_questions

    rows = []
    for path in f.question_files():
        r = retriever(f.corpus_settings(f.corpus_of(path.stem), HERE / ".work" / "iclr95"))
        papers, weights = r.papers(), r.term_weights()
        rarest = max(weights.values())
        for it in load_questions(path):
            facts, gold = it.get("answer_facts") or [], it.get("gold") or []
            if not facts or len(gold) != 1 or gold[0] not in papers:
                continue
            question = it.get("question") or it["turns"][-1]
            sents, svecs = r.sentence_vectors(gold[0], papers[gold[0]].abstract)
            labels = [any(x.lower() in s.lower() for x in facts) for s in sents]
            if not any(labels):  # a fact split over two sentences: no one sentence holds it
                continue
            qvec, qterms = r.embed_query(question), terms(question)
            total = sum(weights.get(t, rarest) for t in qterms) or 1.0
            shares = [sum(weights.get(t, rarest) for t in qterms & terms(s)) / total for s in sents]
            rows.append({"file": path.stem, "x": features(sents, svecs @ qvec, shares), "y": labels,
                         "current": relevance(sents, svecs, qvec, qterms, weights).tolist()})
    return rows


def lofo_scores(rows: list[dict]) -> list[np.ndarray]:
    """Each row's sentence scores from a model fitted on the other files."""
    from sklearn.linear_model import LogisticRegression

    out: list[np.ndarray] = [np.zeros(0)] * len(rows)
    for held_out in sorted({r["file"] for r in rows}):
        x = np.array([v for r in rows if r["file"] != held_out for v in r["x"]])
        y = np.array([v for r in rows if r["file"] != held_out for v in r["y"]])
        mean, scale = x.mean(0), x.std(0) + 1e-9
        model = LogisticRegression(C=1.0, max_iter=2000).fit((x - mean) / scale, y)
        for i, r in enumerate(rows):
            if r["file"] == held_out:
                out[i] = model.decision_function((np.array(r["x"]) - mean) / scale)
    return out


def hit_rate(rows: list[dict], scores: list, k: int) -> float:
    """How often a sentence holding the fact is among the k best-scored."""
    return float(np.mean([any(r["y"][i] for i in np.argsort(-np.asarray(s))[:k]) for r, s in zip(rows, scores)]))


def main() -> int:
    rows = sentence_rows()
    fitted = lofo_scores(rows)
    current = [r["current"] for r in rows]
    print(len(rows), "questions")
    result = {"questions": len(rows), "files": sorted({r["file"] for r in rows}), "hit_at_k": {}}
    for k in (1, 2, 3, 4):
        result["hit_at_k"][k] = {"current": round(hit_rate(rows, current, k), 4),
                                 "lr_lofo": round(hit_rate(rows, fitted, k), 4)}
        print(f"hit@{k}: current {hit_rate(rows, current, k):.3f}  LR(LOFO) {hit_rate(rows, fitted, k):.3f}")
    for name in ("arxiv_a_questions", "arxiv_b_questions"):
        part = [i for i, r in enumerate(rows) if r["file"] == name]
        sub = [rows[i] for i in part]
        print(name, "hit@1/2/4 current", [round(hit_rate(sub, [current[i] for i in part], k), 3) for k in (1, 2, 4)],
              "LR", [round(hit_rate(sub, [fitted[i] for i in part], k), 3) for k in (1, 2, 4)])
    (HERE / "results" / "sentence_model.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
