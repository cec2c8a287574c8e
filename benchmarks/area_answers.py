"""What an offline area answer holds: the facts of benchmarks/data/area_facts/ (area questions with 2-4 facts from
different gold papers, written by helpers who saw only one corpus each; training data), by how many sentences
each paper of an area answer quotes (Settings.tuning.area_sentences), with the gold papers cited.

    python benchmarks/area_answers.py [--counts 1 2 3] [--work benchmarks/.work]

Facts count as in `assistant eval`: case-insensitive substrings of the answer's text. Writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: each file of data/area_facts/ and the corpus it is over (fit_decisions.corpus_settings's names)
FILES = {"iclr95.jsonl": "bundled", "arxiv_b.jsonl": "arxiv_b", "arxiv_e.jsonl": "arxiv_e"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    args = ap.parse_args()
    from assistant.service.evaluate import evaluate_questions, load_questions
    import _training  # noqa: F401  (training/ on sys.path: the fits' library)
    from fit_decisions import corpus_settings

    print(f"{'sentences':>9} {'file':10} {'facts':>9} {'questions':>9} {'gold cited':>10} {'citations':>9} {'chars':>6}")
    for count in args.counts:
        for name, corpus in FILES.items():
            items = load_questions(HERE / "data" / "area_facts" / name)
            settings = corpus_settings(corpus, args.work / "iclr95").replace(area_sentences=count)
            rows = evaluate_questions(items, settings).rows
            held = [[f.lower() in r["answer"].lower() for f in i["answer_facts"]] for i, r in zip(items, rows)]
            gold = sum(len(set(i["gold"]) & set(r["citations"])) for i, r in zip(items, rows))
            answered = [r for r in rows if r["answerable"]]
            chars = sum(len(r["answer"]) for r in answered) / max(len(answered), 1)
            print(f"{count:>9} {name[:-6]:10} {sum(map(sum, held)):>4} / {sum(map(len, held)):<3} "
                  f"{sum(map(all, held)):>3} / {len(items):<3} {gold:>4} / {sum(len(i['gold']) for i in items):<3} "
                  f"{sum(len(r['citations']) for r in rows):>9} {chars:>6.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
