"""Fit the parts model (assistant/search/parts.py): does the corpus hold a question only in parts, papers on each
of two things it joins and none on both.

    python training/fit_parts.py [--out assistant/data/parts.json] [--rows FILE]

Data, all over the bundled corpus: the labelled parts files (benchmarks/data/parts/: questions joining topics
held only apart, type ``parts`` or ``none`` with kind ``parts``, against controls one paper answers), and every
answerable (lookup, paraphrase, fact, area) and absent-topic (``none``) question of the bundled corpus's question
files (fit_decisions.question_files). Never a held-out set. A question naming a paper is left out: it is never
refused. Each question is decided as ``ask`` decides it without the parts model (answer.retrieve), and read for
parts (parts.features) with the answerable model's probability.

A logistic regression over the features named in FEATURES. Its threshold is chosen on 5-fold cross-validated
probabilities: the lowest at which the questions it would newly refuse are at most ADDED_REFUSALS of the
answerable questions. The cross-validated figures are stored with the weights.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from fit_decisions import corpus_of, file_name, question_files

ROOT = Path(__file__).resolve().parents[1]
PARTS = ROOT / "benchmarks" / "data" / "parts"
OUT = ROOT / "assistant" / "data" / "parts.json"
#: What the model reads (of parts.FEATURES): the cut's apart x peak and the answerable model's log odds. With
#: held, peak and apart as well the cross-validated figures were the same (2026-12-07, research log).
FEATURES = ("apart_peak", "answerable_logit")
#: At most this share of the answerable training questions newly refused by the parts model.
ADDED_REFUSALS = 0.005
ANSWERABLE = ("lookup", "paraphrase", "fact", "area", "answerable")
C = 1.0
FOLDS = 5
SEED = 0


def questions() -> list[dict]:
    """(question, label, file) of every training question: label 1 held only in parts, 0 otherwise."""
    rows = []
    for path in sorted(PARTS.glob("*.jsonl")):
        for item in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines())):
            parts = item["type"] == "parts" or item.get("kind") == "parts"
            rows.append({"question": item["question"], "label": int(parts), "file": path.stem,
                         "kind": "parts" if parts else "answerable"})
    for path in question_files():
        if corpus_of(file_name(path)) != "bundled":
            continue
        for item in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines())):
            kind = item.get("type")
            if item.get("question") and kind in ANSWERABLE + ("none",):
                rows.append({"question": item["question"], "label": 0, "file": file_name(path),
                             "kind": "none" if kind == "none" else "answerable"})
    return rows


def read_rows(rows: list[dict]) -> list[dict]:
    """Each question decided as ``ask`` decides it, and its parts features."""
    from _bundled import bundled_index

    from assistant.qa.answer import retrieve
    from assistant.search import parts
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    settings = bundled_index(None, rerank="off", llm_mode="off")
    retriever = Retriever(Index(settings), settings)
    out = []
    for n, row in enumerate(rows, 1):
        found = retrieve(retriever, row["question"], 10, read_parts=False)
        if found.named:
            continue
        x, _ = parts.features(retriever, row["question"], found.probability)
        out.append({**row, "refused": not found.answerable, "features": x})
        if n % 100 == 0:
            print(f"  {n}/{len(rows)} questions read", file=sys.stderr, flush=True)
    return out


def fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    mean, scale = X.mean(0), X.std(0) + 1e-9
    clf = LogisticRegression(C=C, max_iter=5000).fit((X - mean) / scale, y)
    return mean, scale, clf.coef_[0], float(clf.intercept_[0])


def probabilities(X: np.ndarray, mean, scale, weights, bias) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(((X - mean) / scale) @ weights + bias)))


def threshold(p: np.ndarray, rows: list[dict]) -> float:
    """The lowest probability at which the answerable questions not already refused that reach it are at most
    ADDED_REFUSALS of all answerable questions."""
    answerable = [r for r in rows if r["kind"] == "answerable"]
    newly = np.sort([pi for pi, r in zip(p, rows) if r["kind"] == "answerable" and not r["refused"]])[::-1]
    allowed = int(math.floor(ADDED_REFUSALS * len(answerable)))
    return float(np.nextafter(newly[allowed], 1.0)) if allowed < len(newly) else 0.5


def figures(p: np.ndarray, rows: list[dict], t: float) -> dict:
    """Refused (by the answerable model or the parts model) per kind, and what the parts model adds."""
    out = {}
    for kind in ("parts", "answerable", "none"):
        sel = [(pi, r) for pi, r in zip(p, rows) if r["kind"] == kind]
        if sel:
            out[kind] = {"n": len(sel), "refused_before": round(np.mean([r["refused"] for _, r in sel]), 3),
                         "refused": round(np.mean([r["refused"] or pi >= t for pi, r in sel]), 3),
                         "read_as_parts": round(np.mean([pi >= t for pi, _ in sel]), 3)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--rows", type=Path, help="read the questions' features from (or save them to) this file")
    args = ap.parse_args()
    start = time.process_time()
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        rows = read_rows(questions())
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    X = np.array([[r["features"][f] for f in FEATURES] for r in rows], dtype=np.float64)
    y = np.array([r["label"] for r in rows])
    from sklearn.model_selection import StratifiedKFold

    cv = np.zeros(len(y))
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y):
        cv[test] = probabilities(X[test], *fit(X[train], y[train]))
    t = threshold(cv, rows)
    mean, scale, weights, bias = fit(X, y)
    from sklearn.metrics import roc_auc_score

    held = [i for i, r in enumerate(rows) if r["kind"] in ("parts", "answerable")]
    result = {"parts": {"features": list(FEATURES), "mean": mean.tolist(), "scale": scale.tolist(),
                        "weights": weights.tolist(), "bias": bias, "threshold": t,
                        "cv": {"folds": FOLDS, "seed": SEED, "auc_parts_vs_answerable":
                               round(float(roc_auc_score(y[held], cv[held])), 4), **figures(cv, rows, t)}},
              "provenance": {"command": "python training/fit_parts.py", "questions": len(rows),
                             "files": sorted({r["file"] for r in rows}), "added_refusals_at_most": ADDED_REFUSALS,
                             "C": C}}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["parts"]["cv"], indent=1))
    print(f"wrote {args.out} ({time.process_time() - start:.0f} s CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
