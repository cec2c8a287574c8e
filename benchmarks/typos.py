"""Questions with typos: the dev set and the second question set, each question with two letters swapped in
two of its long words (seeded), evaluated with typos mended (the default) and without, in the same run,
next to the questions as spelt.

    python benchmarks/typos.py [--index-dir DIR] [--shared DIR] [--json OUT]

Without ``--index-dir`` the bundled corpus is ingested into a temporary index first.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
METRICS = ("R@1", "R@5", "area_nDCG@10", "none_accuracy", "false_refusal_rate", "first_citation_gold",
           "answer_fact_coverage")


def swap_letters(question: str, rng: random.Random, words: int = 2) -> str:
    """Two neighbouring letters swapped inside each of ``words`` random words of 6+ letters."""
    parts = question.split()
    long_words = [i for i, w in enumerate(parts) if len(re.sub(r"\W", "", w)) >= 6]
    for i in rng.sample(long_words, min(words, len(long_words))):
        w = parts[i]
        j = rng.randrange(1, len(w) - 2)
        parts[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(parts)


def with_typos(items: list[dict], seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for item in items:
        item = dict(item)
        if item.get("turns"):  # a follow-up: the typos go in its last turn, the one scored
            item["turns"] = item["turns"][:-1] + [swap_letters(item["turns"][-1], rng)]
        else:
            item["question"] = swap_letters(item["question"], rng)
        out.append(item)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from assistant.service.evaluate import evaluate_questions
    from assistant.search.retrieve import Retriever

    settings = bundled_index(args.index_dir, llm_mode="off")
    sets = {"second set": [json.loads(x) for x in (HERE / "data" / "extra_questions.jsonl").read_text().splitlines()]}
    dev = args.shared / "eval" / "dev.jsonl"
    if dev.exists():
        sets = {"dev": [json.loads(x) for x in dev.read_text().splitlines()], **sets}
    mend = Retriever.mend
    rows = []
    for name, items in sets.items():
        runs = (("as spelt", items, True), ("typos, mended (default)", with_typos(items), True),
                ("typos, not mended", with_typos(items), False))
        for label, questions, mending in runs:
            Retriever.mend = mend if mending else (lambda self, query: query)
            try:
                summary = evaluate_questions(questions, settings).summary()
            finally:
                Retriever.mend = mend
            rows.append({"set": name, "questions": label, **{m: summary.get(m) for m in METRICS}})
    print(f"{'set':11s} {'questions':25s} " + " ".join(f"{m[:12]:>12s}" for m in METRICS))
    for r in rows:
        print(f"{r['set']:11s} {r['questions']:25s} "
              + " ".join(f"{r[m]:12.3f}" if r[m] is not None else f"{'-':>12s}" for m in METRICS))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
