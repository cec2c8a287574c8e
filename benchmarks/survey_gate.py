"""Area questions ("which papers study X?") at the relevance gate, with and without its second look.

Questions: the 27 criteria of ``benchmarks/data/which_labels.jsonl`` (16 the bundled corpus covers, with
the papers that meet each, labelled by reading all 95 abstracts; 11 it does not), each asked three ways:
"Which papers on X?", "What work exists on X?", "Are there papers on X?". For each setting, over the
bundled corpus: how many answerable questions are refused, how many unanswerable ones are answered,
and of the papers an offline answer quotes, the share that meet the criterion (or are borderline) and the
share of its labelled papers (up to 4) it quotes. A second table scores the shipped rule on each of
nine phrasings alone: the three above and "Do any papers address X?", "Has anyone studied X?", "I am
looking for papers on X", "What has been done on X?", "What are the main approaches to X?" (which the area
rules first recognised on 2026-12-01), and "Is there a paper on X?" (a lookup, word-checked).

Settings: the shipped rule (the gate on the question as asked; an area question it passes is still
refused when no top-3 paper holds ``SURVEY_TOPIC_COVERAGE`` of its area's words, and one it refuses gets
a second look at its area alone with ``SURVEY_TOPIC_GATE`` and the same word check); the gate alone (as
before both); and other values of the two, so a person can see where the defaults sit.

    python benchmarks/survey_gate.py [--index-dir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
_FRAME = re.compile(r"^papers\s+(?:using|on|about|that|with)\s+", re.I)


def questions(criterion: str) -> list[str]:
    area = _FRAME.sub("", criterion)
    return [f"Which {criterion}?", f"What work exists on {area}?", f"Are there {criterion}?"]


def more_questions(criterion: str) -> list[str]:
    area = _FRAME.sub("", criterion)
    return [f"Do any papers address {area}?", f"Has anyone studied {area}?", f"I am looking for papers on {area}",
            f"What has been done on {area}?", f"What are the main approaches to {area}?",
            f"Is there a paper on {area}?", f"How do recent papers tackle {area}?", f"What's new in {area}?"]


def score(answer_mod, retriever, settings, labels, phrasing) -> dict:
    """Refusals, wrong answers and quoted-paper precision/recall over every criterion asked one way."""
    refused = answered = n_pos = n_neg = 0
    precision, recall = [], []
    for item in labels:
        gold, borderline = set(item["papers"]), set(item.get("borderline", []))
        for q in phrasing(item["criterion"]):
            ans = answer_mod.answer_question(retriever, q, settings)
            cited = [c.paper_id for c in ans.citations]
            if gold:
                n_pos += 1
                refused += not ans.answerable
                precision.append(sum(c in gold or c in borderline for c in cited) / len(cited) if cited else 0.0)
                recall.append(sum(c in gold for c in cited) / min(len(gold), 4))
            else:
                n_neg += 1
                answered += ans.answerable
    return {"refused": refused, "answerable_questions": n_pos, "answered": answered,
            "unanswerable_questions": n_neg, "quoted_precision": sum(precision) / len(precision),
            "quoted_recall": sum(recall) / len(recall)}


def _print(rows: list[dict], first: str) -> None:
    print(f"{first:36s} {'refused':>9s} {'answered':>9s} {'quoted precision':>17s} {'quoted recall':>14s}")
    for r in rows:
        print(f"{r['setting']:36s} {r['refused']:>4d}/{r['answerable_questions']:<4d} {r['answered']:>4d}/"
              f"{r['unanswerable_questions']:<4d} {r['quoted_precision']:17.3f} {r['quoted_recall']:14.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from assistant import answer as answer_mod
    from assistant.index import Index
    from assistant.retrieve import Retriever

    settings = bundled_index(args.index_dir, llm="off")
    retriever = Retriever(Index(settings), settings)
    labels = [json.loads(line) for line in (HERE / "data" / "which_labels.jsonl").read_text().splitlines()]
    shipped = (answer_mod.SURVEY_TOPIC_GATE, answer_mod.SURVEY_TOPIC_COVERAGE)
    settings_to_try = [("shipped", shipped), ("gate alone", (float("inf"), 0.0))]
    others = [(0.41, 0.65), (0.46, 0.65), (0.50, 0.65), (0.42, 0.0), (0.42, 0.5), (0.42, 0.6), (0.42, 0.7),
              (0.42, 0.75)]
    settings_to_try += [(f"second look {g:.2f}, words {c:.2f}", (g, c)) for g, c in others]
    rows = []
    for name, (gate, coverage) in settings_to_try:
        answer_mod.SURVEY_TOPIC_GATE, answer_mod.SURVEY_TOPIC_COVERAGE = gate, coverage
        rows.append({"setting": name, **score(answer_mod, retriever, settings, labels, questions)})
    answer_mod.SURVEY_TOPIC_GATE, answer_mod.SURVEY_TOPIC_COVERAGE = shipped
    _print(rows, "setting")
    by_phrasing = []
    for n in range(3):
        by_phrasing.append({"setting": questions("papers on X")[n],
                            **score(answer_mod, retriever, settings, labels, lambda c: [questions(c)[n]])})
    for n in range(8):
        by_phrasing.append({"setting": more_questions("papers on X")[n],
                            **score(answer_mod, retriever, settings, labels, lambda c: [more_questions(c)[n]])})
    print()
    _print(by_phrasing, "phrasing (shipped rule)")
    if args.json:
        args.json.write_text(json.dumps({"settings": rows, "by_phrasing": by_phrasing}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
