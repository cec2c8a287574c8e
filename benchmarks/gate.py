"""Calibrate the relevance gate: which best-chunk cosine separates answerable questions from not.

Labelled data (all measured in this run against an index of the bundled ICLR corpus):
- positives: the answerable questions of ../shared/eval/dev.jsonl (followups as their
  condensed form, exactly as chat/eval retrieve them);
- negatives: its `none` questions plus the 300 BEIR SciFact claims (biomedical claims the ML
  corpus cannot answer) as out-of-domain questions.
The threshold is the middle of the plateau of maximal balanced accuracy (Youden's J, within
0.005) with a false-refusal rate <= 5% on the positives; the table shows the trade-off so a person can check the choice.

    python benchmarks/gate.py [--index-dir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from assistant.chat import Conversation
    from assistant.index import Index
    from assistant.retrieve import Retriever

    settings = bundled_index(args.index_dir, min_relevance=0.0)  # gate off: we want raw scores
    retriever = Retriever(Index(settings), settings)
    conv = Conversation(retriever, settings)
    pos, neg, neg_ood = [], [], []
    named = {"answerable": 0, "none": 0, "SciFact": 0}  # questions naming their top hit (Retriever.names)

    def search(query: str, kind: str) -> float:
        result = retriever.search(query, k=5)
        named[kind] += bool(result.hits) and retriever.names(query, result.hits[0])
        return result.confidence

    for line in (args.shared / "eval" / "dev.jsonl").read_text().splitlines():
        item = json.loads(line)
        kind = "none" if item["type"] == "none" else "answerable"
        (neg if kind == "none" else pos).append(search(conv.standalone(conv.replay(item)), kind))
    for line in (args.shared / "bench" / "scifact" / "queries.jsonl").read_text().splitlines():
        neg_ood.append(search(json.loads(line)["text"], "SciFact"))
    # A check, not calibration data: the in-repo second question set (12 in-domain `none` questions).
    extra_pos, extra_neg = [], []
    for line in (HERE / "data" / "extra_questions.jsonl").read_text().splitlines():
        item = json.loads(line)
        conf = retriever.search(conv.standalone(conv.replay(item)), k=5).confidence
        (extra_neg if item["type"] == "none" else extra_pos).append(conf)
    pos, negs = np.array(pos), np.array(neg + neg_ood)
    rows = []
    for t in np.round(np.arange(0.20, 0.60, 0.01), 2):
        fr = float((pos < t).mean())
        acc_none = float((np.array(neg) < t).mean()) if neg else None
        acc_ood = float((np.array(neg_ood) < t).mean())
        j = (1 - fr) + float((negs < t).mean()) - 1
        rows.append({"threshold": float(t), "false_refusal": fr, "none_acc": acc_none, "ood_acc": acc_ood, "J": j,
                     "extra_false_refusal": float((np.array(extra_pos) < t).mean()),
                     "extra_none_acc": float((np.array(extra_neg) < t).mean())})
    ok = [r for r in rows if r["false_refusal"] <= 0.05]
    # the middle of the max-J plateau: as far as the data allow from both kinds of mistake
    top_j = max(r["J"] for r in ok)
    plateau = [r for r in ok if r["J"] >= top_j - 0.005]
    mid = (plateau[0]["threshold"] + plateau[-1]["threshold"]) / 2
    best = min(plateau, key=lambda r: abs(r["threshold"] - mid))
    print(f"{'threshold':>9} {'false refusals':>14} {'dev none acc':>12} {'SciFact OOD acc':>15} {'J':>6}"
          f" | {'extra FR':>8} {'extra none':>10}")
    for r in rows:
        mark = "  <- chosen" if r is best else ""
        print(f"{r['threshold']:9.2f} {r['false_refusal']:14.3f} {r['none_acc']:12.3f} {r['ood_acc']:15.3f} "
              f"{r['J']:6.3f} | {r['extra_false_refusal']:8.3f} {r['extra_none_acc']:10.3f}{mark}")
    print(f"\npositives {len(pos)}, dev none {len(neg)}, SciFact claims {len(neg_ood)}; "
          f"chosen threshold {best['threshold']:.2f}")
    print(f"extra columns: benchmarks/data/extra_questions.jsonl ({len(extra_pos)} answerable, {len(extra_neg)} none), "
          "on the cosine alone (eval's figures add the name rule and the area word check)")
    print("questions that name their top hit's paper (answerable whatever their cosine): "
          + ", ".join(f"{k} {v}" for k, v in named.items()))
    short = short_questions(retriever, conv)
    if args.json:
        args.json.write_text(json.dumps({"chosen": best, "rows": rows, "named": named, "short": short}, indent=2))
    return 0


def short_questions(retriever, conv) -> list[dict]:
    """The second bar for short questions (``answer.SHORT_TERMS`` / ``answer.SHORT_GATE``): over every
    question file in benchmarks/data and dev.jsonl, the questions that are not area questions and do not
    name their paper, for each length cut and bar: answerable ones refused, `none` ones answered. A
    question past the gate whose words a top-3 paper holds is not held to the bar (as shipped)."""
    from assistant import answer

    items = []
    files = [SHARED / "eval" / "dev.jsonl"] + sorted((HERE / "data").glob("*.jsonl"))
    for path in files:
        if not path.exists() or path.name == "which_labels.jsonl":
            continue
        for line in path.read_text().splitlines():
            item = json.loads(line)
            query = conv.standalone(conv.replay(item))
            if answer.is_survey(query):
                continue
            found = retriever.search(query, k=5)
            if not found.hits or retriever.names(query, found.hits[0]):
                continue
            # a question whose words a top-3 paper holds is not held to the second bar
            held = answer.short_question_held(retriever, query, found)
            items.append((len(answer._terms(query)), found.confidence, item["type"] != "none", held))
    from assistant.retrieve import DEFAULT_GATE as gate
    rows = []
    print(f"\nshort questions (not area questions, not naming their paper; {len(items)} from "
          f"{len(files)} files): answerable refused / none answered, at the gate {gate:.2f} and at a second bar")
    print(f"{'terms <':>8} {'n answerable':>12} {'n none':>6} " + " ".join(f"{b:>11.2f}" for b in _BARS))
    for cut in (8, 10, 12, 14):
        sel = [(c, a, held) for n, c, a, held in items if n < cut]
        cells = []
        for bar in _BARS:
            passes = [c >= gate and (c >= bar or held) for c, _, held in sel]
            refused = sum(a and not ok for (_, a, _), ok in zip(sel, passes))
            answered = sum((not a) and ok for (_, a, _), ok in zip(sel, passes))
            cells.append(f"{refused:>4} / {answered:<4}")
            rows.append({"terms_below": cut, "bar": bar, "answerable_refused": refused, "none_answered": answered,
                         "answerable": sum(a for _, a, _ in sel), "none": sum(not a for _, a, _ in sel)})
        mark = "  <- shipped" if cut == answer.SHORT_TERMS else ""
        print(f"{cut:>8} {sum(a for _, a, _ in sel):>12} {sum(not a for _, a, _ in sel):>6} " + " ".join(
            f"{c:>11}" for c in cells) + mark)
    print(f"shipped: questions of fewer than {answer.SHORT_TERMS} terms need {answer.SHORT_GATE:.2f}")
    return rows


_BARS = (0.41, 0.43, 0.44, 0.45, 0.46, 0.47, 0.48, 0.49)


if __name__ == "__main__":
    sys.exit(main())
