"""Fit the chat turn model (assistant/chat/turns.py): is a turn a new question, a follow-up on the paper talked
about, "tell me more", a choice among the papers just cited, or chit-chat.

    python training/fit_turns.py [--out assistant/data/turns.json]

Data: the package's labelled exemplars (assistant/data/turn_exemplars.jsonl, written on general ML topics without
reading the corpus), every turn of the conversation files in benchmarks/data (their ``labels``; a file without
them: the first turn new, the others follow-ups), and every single question of the question files (new). Never the
held-out sets. Each turn is read with the turn before it (the exemplars' ``previous``, the conversation's last
turn; none for a first turn or a single question). A multinomial logistic regression; its regularisation is
chosen by the leave-one-file-out accuracy on the files' turns (the exemplars are always fitted on), and that
cross-validated accuracy, per label, is stored with the weights.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from fit_decisions import file_name, question_files

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks"  # question and conversation files
EXEMPLARS = ROOT / "assistant" / "data" / "turn_exemplars.jsonl"
#: A word is a feature when it is in at least this many training texts.
VOCAB_MIN = 8
C_GRID = (0.03, 0.1, 0.3, 1.0)


def training_rows() -> list[dict]:
    """(text, label, file) of every training turn."""
    rows = [{"text": r["turn"], "label": r["label"], "file": "turn_exemplars", "previous": r.get("previous") or None}
            for r in map(json.loads, EXEMPLARS.read_text(encoding="utf-8").splitlines()[1:]) if r]
    for path in question_files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            turns = item.get("turns") or [item["question"]]
            labels = item.get("labels") or ["new"] + ["followup"] * (len(turns) - 1)
            rows += [{"text": t, "label": lab, "file": file_name(path), "previous": turns[i - 1] if i else None}
                     for i, (t, lab) in enumerate(zip(turns, labels))]
    return rows


def design(rows: list[dict], vectors: np.ndarray, vocab: list[str], previous: list[np.ndarray | None],
           fill: float) -> np.ndarray:
    from assistant.chat.turns import features

    return np.array([features(r["text"], v, vocab, p, fill) for r, v, p in zip(rows, vectors, previous)])


def previous_vectors(rows: list[dict], vectors: np.ndarray, embed) -> tuple[list[np.ndarray | None], float]:
    """Each row's previous turn's vector (None for a first turn or a single question), and the mean cosine to it
    over the rows that have one: what the model reads when there is none."""
    by_text = {r["text"]: v for r, v in zip(rows, vectors)}  # most previous turns are rows themselves
    texts = sorted({r["previous"] for r in rows if r["previous"]} - set(by_text))
    by_text |= dict(zip(texts, embed(texts))) if texts else {}
    previous = [by_text[r["previous"]] if r["previous"] else None for r in rows]
    cosines = [float(v @ p) for v, p in zip(vectors, previous) if p is not None]
    return previous, float(np.mean(cosines)) if cosines else 0.0


def fit(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(0), x.std(0) + 1e-9
    lr = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit((x - mean) / scale, y)
    return mean, scale, lr


def out_of_fold(x: np.ndarray, y: np.ndarray, files: np.ndarray, c: float) -> np.ndarray:
    """Each file's predicted labels from a model fitted on the other files and the exemplars."""
    pred = np.empty(len(y), dtype=object)
    for f in sorted(set(files) - {"turn_exemplars"}):
        test = files == f
        mean, scale, lr = fit(x[~test], y[~test], c)
        pred[test] = lr.predict((x[test] - mean) / scale)
    return pred


def report(y: np.ndarray, pred: np.ndarray, held: np.ndarray) -> dict:
    from assistant.chat.turns import LABELS

    yh, ph = y[held], pred[held]
    recall = {lab: round(float(np.mean(ph[yh == lab] == lab)), 4) for lab in LABELS if (yh == lab).any()}
    return {"accuracy": round(float(np.mean(yh == ph)), 4), "recall": recall, "n": int(held.sum()),
            "confusion": {f"{a}->{b}": n for (a, b), n in sorted(Counter(zip(yh, ph)).items()) if a != b}}


def main() -> int:
    from assistant.chat.turns import LABELS, vocabulary
    from assistant.embed.embedder import LocalMiniLM, embed_array

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assistant" / "data" / "turns.json")
    args = ap.parse_args()
    started = time.process_time()
    rows = training_rows()
    embedder = LocalMiniLM()
    vectors = embed_array(embedder, [r["text"] for r in rows])
    previous, fill = previous_vectors(rows, vectors, lambda texts: embed_array(embedder, texts))
    vocab = vocabulary([r["text"] for r in rows], VOCAB_MIN)
    x, y = design(rows, vectors, vocab, previous, fill), np.array([r["label"] for r in rows])
    files = np.array([r["file"] for r in rows])
    # judged on the conversation files' turns: the single questions are all "new" and would swamp the figure
    held = np.array([r["file"] != "turn_exemplars" and r["file"].startswith("conversations") for r in rows])
    scores = {}
    for c in C_GRID:
        scores[c] = report(y, out_of_fold(x, y, files, c), held)
        print(f"C={c}: leave-one-file-out accuracy {scores[c]['accuracy']:.3f} on {scores[c]['n']} conversation "
              f"turns; recall {scores[c]['recall']}")
    c = max(C_GRID, key=lambda k: (scores[k]["accuracy"], -k))
    singles = np.array([not h and f != "turn_exemplars" and lab == "new" for h, f, lab in zip(held, files, y)])
    oof = out_of_fold(x, y, files, c)
    single_new = float(np.mean(oof[singles] == "new"))
    print(f"chosen C={c}; single questions read as new (out of fold): {single_new:.3f} of {int(singles.sum())}")
    mean, scale, lr = fit(x, y, c)
    order = [list(lr.classes_).index(lab) for lab in LABELS]
    out = {"labels": list(LABELS), "vocab": vocab, "mean": mean.tolist(), "scale": scale.tolist(),
           "weights": lr.coef_[order].tolist(), "bias": lr.intercept_[order].tolist(), "C": c,
           "context_fill": fill,
           "features": [f"v{i}" for i in range(vectors.shape[1])] + ["log_words", "question_mark",
                                                                     "previous_cosine", "has_previous"]
           + [f"w:{w}" for w in vocab],
           "cv": {"conversation_turns": scores[c], "single_questions_new": round(single_new, 4),
                  "by_C": {str(k): v["accuracy"] for k, v in scores.items()}},
           "fitted_on": {"exemplars": "assistant/data/turn_exemplars.jsonl",
                         "files": sorted(set(files) - {"turn_exemplars"}),
                         "rows": dict(Counter(y.tolist()))},
           "script": "training/fit_turns.py"}
    args.out.write_text(json.dumps(out) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({time.process_time() - started:.0f} s CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
