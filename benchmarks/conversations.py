"""Conversations, live and resumed: does every turn cite the papers it should? Offline (extractive),
ASSISTANT_RERANK=off, the bundled 95 papers.

    python benchmarks/conversations.py [--set benchmarks/data/heldout/conversations_blind.jsonl] [--label NAME]

A set holds conversations whose every turn names the papers its answer should cite (``cite``; [] for a topic the
corpus lacks or a "which of them" that none meets) and the arguable ones (``borderline``). Each conversation is run
live, turn by turn through :class:`Conversation` as ``chat`` runs it; then, for every turn after the first, it is
resumed from its saved turns (the chat store, as ``chat --continue`` does) and that turn alone is asked again.

A turn cites what it should when: ``cite`` is empty and it cites nothing; else it cites at least one paper of
``cite`` and none outside ``cite`` and ``borderline``. Reported per pattern (new, pronoun, among, reference, switch,
absent, named), live (every turn, and the turns after the first) and resumed (the turns after the first), with how
often a resumed turn cites what the live one did, and the follow-ups (pronoun, among, reference) whose earlier
turn was answered right ("after_a_right_turn": what the conversation itself resolves), and the reference turns
judged against the list the user was shown ("reference_as_shown": the set's positions applied to the live answer
before them, whose order and length may differ from the set's). A turn that raises
(a reference the conversation cannot resolve) cites nothing. Writes benchmarks/results/conversations.json, keeping
the runs recorded under other labels.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "data" / "heldout" / "conversations_blind.jsonl"


#: Turns that read an earlier answer: "after_a_right_turn" counts them only where the last turn before them that was
#: not an absent topic was answered right, which separates what the conversation resolves from what the single
#: question before it got wrong.
FOLLOWING = ("pronoun", "among", "reference")


def shown_right(listed: list[str], shown: list[str] | None, turn: dict, got: list[str] | None) -> bool:
    """A reference turn ("compare the first two") judged against the list the user saw: the positions its ``cite``
    has in the set's list (``listed``) applied to the papers the live answer before it cited (``shown``); a
    position past that list is right only as an error (it cites nothing)."""
    positions = [listed.index(p) for p in turn["cite"] if p in listed]
    shown = shown or []
    if any(i >= len(shown) for i in positions):
        return got is None
    return got is not None and set(got) == {shown[i] for i in positions}


def cited(ask, question: str) -> list[str] | None:
    """The papers one turn cites (in order), or None when the turn raised an error (it cites nothing)."""
    from assistant.errors import AssistantError

    try:
        answer = ask(question)
    except AssistantError:
        return None
    return [c.paper_id for c in answer.citations]


def right(turn: dict, got: list[str] | None) -> bool:
    want, ok = set(turn["cite"]), set(turn["cite"]) | set(turn.get("borderline") or [])
    got = set(got or [])
    return not got if not want else bool(got & want) and got <= ok


def run(path: Path, settings) -> dict:
    from assistant.chat.conversation import Conversation
    from assistant.chat.history import ChatStore
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    convs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    live_ok, later_ok, resumed_ok, same = defaultdict(list), defaultdict(list), defaultdict(list), []
    after_right = defaultdict(list)  # follow-ups whose earlier turn was answered right: the conversation's own share
    as_shown = []  # reference turns judged against the list the user was shown
    rows = []
    store_dir = Path(tempfile.mkdtemp())
    for conv_data in convs:
        conv = Conversation(Retriever(Index(settings), settings), settings)
        answers, live = [], []
        for turn in conv_data["turns"]:
            got = cited(lambda q: answers.append(conv.ask(q)) or answers[-1], turn["q"])
            if got is None:
                answers.append(None)
            live.append(got)
            live_ok[turn["pattern"]].append(right(turn, got))
        flags = [right(t, g) for t, g in zip(conv_data["turns"], live)]
        for t, turn in enumerate(conv_data["turns"]):
            earlier = [i for i in range(t) if conv_data["turns"][i]["pattern"] != "absent"]
            if turn["pattern"] in FOLLOWING and earlier and flags[earlier[-1]]:
                after_right[turn["pattern"]].append(flags[t])
            if turn["pattern"] == "reference" and earlier:
                as_shown.append(shown_right(conv_data["turns"][earlier[-1]]["cite"], live[earlier[-1]], turn,
                                            live[t]))
        for t in range(1, len(conv_data["turns"])):
            store = ChatStore(store_dir)
            cid = store.new()
            for a in answers[:t]:
                if a is not None:  # a turn that raised is not saved, as chat does
                    store.add_turn(cid, a)
            resumed = Conversation(Retriever(Index(settings), settings), settings)
            resumed.resume(store.load(cid))
            turn = conv_data["turns"][t]
            got = cited(resumed.ask, turn["q"])
            resumed_ok[turn["pattern"]].append(right(turn, got))
            later_ok[turn["pattern"]].append(right(turn, live[t]))
            same.append((got or []) == (live[t] or []))
        rows.append({"id": conv_data["id"], "live": live,
                     "right": [right(t, g) for t, g in zip(conv_data["turns"], live)]})
    shutil.rmtree(store_dir, ignore_errors=True)
    share = lambda xs: round(sum(xs) / len(xs), 3) if xs else None  # noqa: E731
    everything = lambda d: [x for xs in d.values() for x in xs]  # noqa: E731
    return {"conversations": len(convs), "turns": len(everything(live_ok)),
            "live": share(everything(live_ok)), "live_after_first": share(everything(later_ok)),
            "resumed": share(everything(resumed_ok)), "resumed_as_live": share(same),
            "by_pattern": {p: {"n": len(v), "live": share(v), "live_after_first": share(later_ok.get(p, [])),
                               "resumed": share(resumed_ok.get(p, []))} for p, v in sorted(live_ok.items())},
            "after_a_right_turn": {"n": len(everything(after_right)), "share": share(everything(after_right)),
                                   "by_pattern": {p: {"n": len(v), "share": share(v)}
                                                  for p, v in sorted(after_right.items())}},
            "reference_as_shown": {"n": len(as_shown), "share": share(as_shown)},
            "turns_detail": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, default=DEFAULT)
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--label", default="latest")
    args = ap.parse_args()
    settings = bundled_index(args.index_dir, rerank="off", llm_mode="off")
    result = run(args.set, settings)
    out = HERE / "results" / "conversations.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs.setdefault(args.set.stem, {})[args.label] = result
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(runs, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "turns_detail"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
