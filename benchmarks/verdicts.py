"""The answerable verdict on every held-out set at once, read apart from its threshold: how well the answerable
model's probability separates absent topics from answerable questions (AUC), and what the user is told for each
(refused, answered under the unsure note, answered plainly). Offline, ASSISTANT_RERANK=off.

    python benchmarks/verdicts.py [--decisions assistant/data/decisions.json] [--label NAME]

Pooled over the single questions of the held-out sets that `heldout.py` scores (a question that names a paper,
answered whatever the model says, is left out; so are follow-ups). ``--decisions`` scores another fit of the
decisions (a refit measured before it is adopted) with everything else as shipped. Writes
benchmarks/results/verdicts.json, keeping the runs recorded under other labels.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "heldout"
def verdicts(work: Path) -> list[dict]:
    from heldout import SETS, corpus_settings

    from assistant.qa.answer import is_unsure, retrieve
    from assistant.search.retrieve import Retriever
    from assistant.service.evaluate import load_questions
    from assistant.store.index import Index

    rows = []
    for name, (path, corpus) in SETS.items():
        settings = corpus_settings(work, corpus, llm_mode="off", rerank="off")
        retriever = Retriever(Index(settings), settings)
        for item in load_questions(DATA / path):
            if "question" not in item or item.get("turns") or item["type"] == "named":
                continue
            found = retrieve(retriever, item["question"], 5)
            if found.named:
                continue
            rows.append({"set": name.split()[0], "id": item["id"], "absent": item["type"] == "none",
                         "p": found.probability, "answered": found.answerable, "unsure": is_unsure(found)})
    return rows


def summary(rows: list[dict]) -> dict:
    absent = [r for r in rows if r["absent"]]
    present = [r for r in rows if not r["absent"]]
    pairs = [(a["p"], b["p"]) for a in present for b in absent]
    auc = sum((x > y) + 0.5 * (x == y) for x, y in pairs) / max(len(pairs), 1)
    share = lambda xs, f: round(sum(map(f, xs)) / max(len(xs), 1), 3)  # noqa: E731
    return {"absent": len(absent), "answerable": len(present), "auc": round(auc, 4),
            "absent_refused": share(absent, lambda r: not r["answered"]),
            "absent_refused_or_marked": share(absent, lambda r: not r["answered"] or r["unsure"]),
            "answerable_refused": sum(not r["answered"] for r in present),
            "answerable_marked": share(present, lambda r: r["answered"] and r["unsure"]),
            "wrong_verdicts": sum(r["answered"] == r["absent"] for r in rows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=Path, help="another decisions.json to score (default: the shipped one)")
    ap.add_argument("--label", default="current")
    ap.add_argument("--work", type=Path, default=HERE / ".work", help="where the indexes are built")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "verdicts.json")
    args = ap.parse_args()
    from assistant.search import decide

    if args.decisions:
        decide.MODEL_FILE = args.decisions.resolve()
    out = summary(verdicts(args.work))
    print(json.dumps(out, indent=1))
    runs = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs[args.label] = {"date": time.strftime("%Y-%m-%d"), "decisions": str(args.decisions or "shipped"),
                        "settings": "offline extractive, ASSISTANT_RERANK=off", **out}
    args.json.write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
