"""What a summary of a named paper holds ("What is X?", "explain X", "Summarise the X paper"), and the two variants
docs/decisions.md records as measured and not adopted.

    python benchmarks/summaries.py [--order abstract|model] [--framing] [--label NAME]

Scores the 176 summary questions of benchmarks/data/summaries/ (over the training slices arxiv_a..arxiv_e; facts:
what X is and how it works), the held-out sets of heldout.py and the last turns of chat_heldout, offline
(extractive, re-ranking off). A summary reads on from the sentence introducing the paper in the abstract's order (as
evidence.pick does since 2026-12-03); ``--order model``: the sentence model ranks what follows it instead (before).
``--framing``: the words users ask what a paper is with (the learned gist terms: "explain", "tell", "about") count
as asking something of a named paper (as before 2026-12-03; since, they do not). Writes
benchmarks/results/summaries.json, keeping runs recorded under other labels.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DATA = HERE / "data" / "summaries"


def model_order() -> None:
    """evidence.pick with a summary's sentences scored by the sentence model, as for a question."""
    import assistant.qa.evidence as ev

    abstract_pick = ev.pick

    def pick(sentences, vecs, qvec, qterms, weights, count, gist=False, skip=frozenset(), wants_link=False):
        if not gist or not sentences:
            return abstract_pick(sentences, vecs, qvec, qterms, weights, count, gist, skip, wants_link)
        m = ev.model()
        score = m.probability(ev.sentence_features(sentences, vecs @ qvec, ev.term_shares(sentences, qterms, weights)))
        return ev.choose(sentences, vecs, score, count, m.redundancy, m.keep, gist=gist, skip=skip,
                         wants_link=wants_link)

    ev.pick = pick


def framing_asks() -> None:
    """answer._asks_little with the gist terms counted as asking something of a named paper (before 2026-12-03)."""
    import assistant.qa.answer as answer
    from assistant.search import decide

    learned = decide.gist_terms
    asks_little = answer._asks_little

    def with_framing(retriever, question, named):
        decide.gist_terms = lambda: frozenset()
        try:
            return asks_little(retriever, question, named)
        finally:
            decide.gist_terms = learned

    answer._asks_little = with_framing


def main() -> int:
    import chat_turns
    import _training  # noqa: F401  (training/ on sys.path: the fits' library)
    import fit_decisions
    import heldout
    from _bundled import bundled_index

    from assistant.service.evaluate import evaluate_questions, load_questions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--order", choices=("abstract", "model"), default="abstract")
    ap.add_argument("--framing", action="store_true",
                    help="gist words ask something of a named paper (as before 2026-12-03)")
    ap.add_argument("--label", default="current")
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "summaries.json")
    args = ap.parse_args()
    if args.order == "model":
        model_order()
    if args.framing:
        framing_asks()
    started = time.process_time()
    out = {}
    for path in sorted(DATA.glob("*_questions.jsonl")):
        corpus = fit_decisions.corpus_of(path.stem)
        settings = fit_decisions.corpus_settings(corpus, args.work / "iclr95")
        summary = evaluate_questions(load_questions(path), settings).summary()
        out[path.stem] = {"facts": summary["answer_fact_coverage"], "R@1": summary["R@1"]}
    bundled = bundled_index(args.work / "iclr95", llm_mode="off", rerank="off")
    for name, file in (("heldout_iclr", "heldout_iclr.jsonl"), ("mixed_heldout", "mixed_heldout.jsonl"),
                       ("iclr_fresh", "iclr_fresh.jsonl")):
        out[name] = {"facts": heldout.score(heldout.DATA / file, bundled)["answer_fact_coverage"]}
    for name in ("arxiv300", "arxiv300b"):
        settings = heldout.arxiv300_index(args.work, name, llm_mode="off", rerank="off")
        out[name] = {"facts": heldout.score(heldout.DATA / f"{name}_questions.jsonl", settings)["answer_fact_coverage"]}
    out["chat_heldout (last turn)"] = {"facts": chat_turns.score(chat_turns.SETS["chat_heldout"], bundled)["last_facts"]}
    for name, row in out.items():
        print(f"{name:34s} " + "  ".join(f"{k} {v:.3f}" for k, v in row.items() if v is not None))
    print(f"({time.process_time() - started:.0f} s CPU)")
    runs = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs[args.label] = {"date": time.strftime("%Y-%m-%d"), "order": args.order, "framing": args.framing,
                        "settings": "offline extractive, ASSISTANT_RERANK=off", "results": out}
    args.json.write_text(json.dumps(runs, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
