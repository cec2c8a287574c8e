"""Absent topics, topics the corpus holds only in parts, and answerable controls: what `ask` does with each.
Offline (extractive), ASSISTANT_RERANK=off, the bundled 95 papers.

    python benchmarks/parts.py [--set benchmarks/data/heldout/parts_blind.jsonl] [--label NAME] [--corpus NAME]

``--corpus arxiv300f`` (any held-out arXiv slice of benchmarks/heldout.py): the set is over that slice's index
(built in benchmarks/.work at first use), not the bundled papers.

Per type: ``none`` (a near-topic no paper covers) and ``parts`` (two things the corpus holds only apart): refused
(answerable false), and refused or marked unsure; for ``parts`` also whether the answer names the parts it holds
apart (``answer.parts``, when the code has it). ``answerable`` (one paper answers): refused (a false refusal), its
gold paper among the sources (R@5) and first cited, and an answer fact in the answer text. Writes
benchmarks/results/parts.json, keeping the runs recorded under other labels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "data" / "heldout" / "parts_blind.jsonl"


def run(path: Path, settings) -> dict:
    from assistant.qa.answer import answer_question
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    retriever = Retriever(Index(settings), settings)
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out: dict[str, dict[str, list]] = {}
    rows = []
    for item in items:
        answer = answer_question(retriever, item["question"], settings)
        kind = item["type"]
        got = out.setdefault(kind, {})
        refused = not answer.answerable
        marked = refused or bool(getattr(answer, "unsure", False))
        row = {"id": item["id"], "refused": refused, "unsure": bool(getattr(answer, "unsure", False)),
               "cited": [c.paper_id for c in answer.citations]}
        if kind in ("none", "parts"):
            got.setdefault("refused", []).append(refused)
            got.setdefault("refused_or_marked", []).append(marked)
            if kind == "parts":
                got.setdefault("parts_named", []).append(bool(getattr(answer, "parts", None)))
        else:
            gold = set(item["gold"])
            got.setdefault("false_refusal", []).append(refused)
            got.setdefault("marked_unsure", []).append(bool(getattr(answer, "unsure", False)))
            got.setdefault("r5", []).append(bool(gold & {h.paper_id for h in answer.sources[:5]}))
            got.setdefault("first_cited_gold", []).append(bool(row["cited"]) and row["cited"][0] in gold)
            text = answer.text.lower()
            got.setdefault("facts", []).append(any(f.lower() in text for f in item.get("answer_facts") or []))
        rows.append(row)
    share = lambda xs: round(sum(xs) / len(xs), 3) if xs else None  # noqa: E731
    return {"n": {k: len(next(iter(v.values()))) for k, v in out.items()},
            **{k: {m: share(xs) for m, xs in v.items()} for k, v in out.items()}, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, default=DEFAULT)
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--label", default="latest")
    ap.add_argument("--corpus", help="a held-out arXiv slice the set is over (default: the bundled papers)")
    args = ap.parse_args()
    if args.corpus:
        from heldout import corpus_settings

        settings = corpus_settings(HERE / ".work", args.corpus, rerank="off", llm_mode="off")
    else:
        settings = bundled_index(args.index_dir, rerank="off", llm_mode="off")
    result = run(args.set, settings)
    out = HERE / "results" / "parts.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs.setdefault(args.set.stem, {})[args.label] = result
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(runs, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
