"""Chat turns: how each turn of a conversation is read (a new question, a follow-up on the paper talked about, "tell
me more", a choice among the papers just cited, chit-chat) and whether the last turn is answered from the right
papers. Offline (extractive), ASSISTANT_RERANK=off, the bundled 95 papers.

    python benchmarks/chat_turns.py [--sets chat_heldout conversations ...] [--label NAME]

Each conversation is replayed turn by turn through :class:`Conversation`, as ``chat`` and ``eval`` run it. The way a
turn was read is taken from what the conversation does with it, by the same public methods in every version of the
code: chit-chat is answered with ``CHAT_ONLY``; ``referenced`` (no number in the turn) pins the paper talked about
("more"); ``among`` picks among earlier papers; ``standalone`` rewrites a follow-up; else it is a new question.
Scored on the last turn: its first citation is gold, a gold paper is cited, the share of citations outside the
gold, its answer facts, and a chat turn answered as chat. Writes benchmarks/results/chat_turns.json, keeping the
runs recorded under other labels.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
SETS = {"chat_heldout": HERE / "data" / "heldout" / "chat_heldout.jsonl",
        "conversations": HERE / "data" / "conversations.jsonl",
        "conversations_2": HERE / "data" / "conversations_2.jsonl"}
LABELS = ("new", "followup", "more", "among", "chat")


def read_kind(conv, turn: str) -> str:
    """How the conversation reads ``turn`` before it is asked (see the module docstring)."""
    from assistant.chat import conversation

    # a method of the conversation since the turn model reads chit-chat; a function of the module before
    question = conv.without_chitchat(turn) if hasattr(conv, "without_chitchat") else \
        conversation.without_chitchat(turn)
    references = conversation.references
    numbers, positions = references(question)
    if conv.turns and not numbers and not positions and conv.referenced(question):
        # the paper talked about ("tell me more"), or since the turn model also a paper named in a follow-up
        return "more" if not hasattr(conv, "kind") or conv.kind(question) == "more" else "followup"
    if conv.among(question):
        return "among"
    return "followup" if conv.standalone(question) != question else "new"


def score(path: Path, settings) -> dict:
    from assistant.chat.conversation import CHAT_ONLY
    from assistant.service.api import conversation

    conv = conversation(settings)
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    confusion: Counter = Counter()
    last_rows = []
    for item in items:
        conv.clear()
        labels = item.get("labels") or ["new"] + ["followup"] * (len(item["turns"]) - 1)
        for i, (turn, label) in enumerate(zip(item["turns"], labels)):
            kind = read_kind(conv, turn)
            answer = conv.ask(turn)
            if answer.text == CHAT_ONLY:
                kind = "chat"
            confusion[(label, kind)] += 1
        gold = set(item.get("gold") or [])
        cited = [c.paper_id for c in answer.citations]
        facts = item.get("answer_facts") or []
        last_rows.append({"id": item["id"], "label": labels[-1], "read": kind, "gold": sorted(gold), "cited": cited,
                          "cite1": bool(cited) and cited[0] in gold, "gold_cited": bool(gold & set(cited)),
                          "nongold": sum(c not in gold for c in cited), "n_cited": len(cited),
                          "facts_ok": all(f.lower() in answer.text.lower() for f in facts) if facts else None,
                          "chat_ok": (answer.text == CHAT_ONLY) == (labels[-1] == "chat")})
    return summarise(confusion, last_rows)


def summarise(confusion: Counter, rows: list[dict]) -> dict:
    def mean(xs):
        xs = list(xs)
        return round(sum(xs) / len(xs), 4) if xs else None

    n_turns = sum(confusion.values())
    with_gold = [r for r in rows if r["gold"]]
    return {
        "conversations": len(rows), "turns": n_turns,
        "turn_accuracy": round(sum(v for (a, b), v in confusion.items() if a == b) / n_turns, 4),
        "per_label_recall": {lab: round(confusion[(lab, lab)] / total, 4) for lab in LABELS
                             if (total := sum(v for (a, _), v in confusion.items() if a == lab))},
        "last_cite1_gold": mean(r["cite1"] for r in with_gold),
        "last_gold_cited": mean(r["gold_cited"] for r in with_gold),
        "last_nongold_share": round(sum(r["nongold"] for r in with_gold)
                                    / max(1, sum(r["n_cited"] for r in with_gold)), 4),
        "last_facts": mean(r["facts_ok"] for r in rows if r["facts_ok"] is not None),
        "last_chat_ok": mean(r["chat_ok"] for r in rows),
        "confusion": {f"{a}->{b}": v for (a, b), v in sorted(confusion.items())},
        "misses": [r for r in rows if r["gold"] and not r["cite1"] or not r["chat_ok"] or r["facts_ok"] is False],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "chat_turns.json")
    ap.add_argument("--label", default="current", help="the name this run is kept under in the JSON")
    ap.add_argument("--work", type=Path, default=HERE / ".work", help="where the index is built")
    ap.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    args = ap.parse_args()
    started = time.process_time()
    settings = bundled_index(args.work / "iclr95", llm_mode="off", rerank="off")
    results = {name: score(SETS[name], settings) for name in args.sets}
    keys = ("turns", "turn_accuracy", "last_cite1_gold", "last_gold_cited", "last_nongold_share", "last_facts",
            "last_chat_ok")
    print(f"{'set':16} " + " ".join(f"{k.replace('last_', ''):>13}" for k in keys))
    for name, row in results.items():
        print(f"{name:16} " + " ".join(f"{row[k]:13.3f}" if isinstance(row[k], float) else f"{row[k]!s:>13}"
                                       for k in keys))
        print(f"{'':16} recall by label: {row['per_label_recall']}")
    print(f"({time.process_time() - started:.0f} s CPU in this process)")
    runs = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs[args.label] = {"date": time.strftime("%Y-%m-%d"), "settings": "offline extractive, ASSISTANT_RERANK=off",
                        "results": results}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(runs, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
