"""Choosing among cited papers ("which of them use RL?"), on the hand-labelled `which` criteria: does the chat cite
the papers of the list that meet the property, and only those? Offline (extractive), ASSISTANT_RERANK=off, the
bundled 95 papers.

    python benchmarks/among.py [--lists 4] [--size 5] [--json OUT]

For each criterion of benchmarks/data/which_labels.jsonl (papers meeting it, borderline ones), ``--lists`` lists of
``--size`` papers an earlier answer might have cited, drawn with a fixed seed from the papers meeting it and the
papers the search ranks near it that do not (borderline ones left out), at least one of each where there are; for
the criteria no paper meets, lists of the papers the search ranks nearest. A chat resumed after an answer citing
that list is asked "which of them <property>?" through :meth:`Conversation.ask`, as ``chat`` asks it. A turn's
choice is right when it cites exactly the listed papers that meet the criterion (none: "none of them").

Reported per rule: the chat's (the closest sentence and those within a margin of it); ``which``'s decision over
the whole corpus kept to the list; that or else the chat's; their union; and, where its weights are built, the
criterion encoder's `which` kept to the list (assistant/embed/query_encoder.py, not adopted). Each from the same
conversation. Read with
care: ``which``'s thresholds were chosen on these labels (benchmarks/which.py), so the ``which`` rows are partly
in-sample; on the blind conversations (benchmarks/conversations.py) the ``which`` rule did worse (the research log,
2026-12-06). Precision and recall over
(list, paper) pairs, lists chosen exactly, and lists where none qualify answered "none". Writes
benchmarks/results/among.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
#: How a user asks each labelled criterion of the papers just cited (the criterion's words, as a verb phrase).
ASKED = {
    "papers using diffusion models": "use diffusion models",
    "papers on federated learning": "are about federated learning",
    "papers about reinforcement learning": "use reinforcement learning",
    "papers that introduce a new benchmark or dataset": "introduce a new benchmark or dataset",
    "papers on LLM safety, jailbreaks or adversarial attacks on language models":
        "are about LLM safety, jailbreaks or adversarial attacks on language models",
    "papers about graph neural networks or learning on graphs": "use graph neural networks or learn on graphs",
    "papers on continual learning or catastrophic forgetting": "deal with continual learning or catastrophic forgetting",
    "papers on vision-language or multimodal large language models": "are about vision-language or multimodal LLMs",
    "papers about knowledge distillation": "use knowledge distillation",
    "papers with theoretical analysis or convergence guarantees for optimization algorithms":
        "give a theoretical analysis or convergence guarantee for an optimization algorithm",
    "papers on LLM-based agents": "build LLM-based agents",
    "papers about privacy (differential privacy, membership inference, unlearning)":
        "deal with privacy (differential privacy, membership inference or unlearning)",
    "papers about time series forecasting": "do time series forecasting",
    "papers on robotics or embodied agents": "are about robotics or embodied agents",
    "papers on video generation or video understanding": "generate or understand videos",
    "papers about proteins, molecules or DNA": "work on proteins, molecules or DNA",
    "papers about music generation": "generate music",
    "papers on speculative decoding": "use speculative decoding",
    "papers on deep learning for tabular data": "work on tabular data",
    "papers on speech recognition": "do speech recognition",
}


def lists_for(item: dict, retriever, n_lists: int, size: int, rng: random.Random) -> list[list[str]]:
    """Lists an answer might have cited: meeting papers and near ones that do not, borderline ones left out."""
    meet, border = set(item["papers"]), set(item["borderline"])
    near = [h.paper_id for h in retriever.search(item["criterion"], k=30).hits
            if h.paper_id not in meet and h.paper_id not in border]
    out = []
    for _ in range(n_lists):
        if meet:
            yes = rng.sample(sorted(meet), min(len(meet), rng.randint(1, max(1, size - 2))))
            no = rng.sample(near[:15], min(size - len(yes), len(near[:15])))
        else:
            yes, no = [], near[:size + 3]
            no = rng.sample(no, min(size, len(no)))
        chosen = yes + no
        rng.shuffle(chosen)
        out.append(chosen)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lists", type=int, default=4)
    ap.add_argument("--size", type=int, default=5)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "among.json")
    args = ap.parse_args()
    from assistant.chat.conversation import Conversation
    from assistant.qa.answer import Answer, Citation
    from assistant.qa.synthesis import which
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    settings = bundled_index(None)
    retriever = Retriever(Index(settings), settings)
    papers = retriever.papers()
    labels = [json.loads(line) for line in (HERE / "data" / "which_labels.jsonl").read_text().splitlines()]
    rng = random.Random(2026)
    shipped = Conversation._choose_among
    corpus_which: dict[str, set[str]] = {}

    def closest(self, asked, among):
        """The chat's rule: the paper whose closest sentence scores best, those within a margin of it."""
        return shipped(self, asked, among, self._closest_sentences(asked, among))

    def which_in_list(self, asked, among):
        if asked not in corpus_which:
            corpus_which[asked] = {f.paper_id for f in which(self.retriever, asked).papers}
        return [pid for pid in among if pid in corpus_which[asked]]

    def which_only(self, asked, among):
        return which_in_list(self, asked, among)

    rules = {"closest sentence (shipped)": closest, "which∩list": which_only,
             "which∩list, else closest": lambda self, a, m: which_in_list(self, a, m) or closest(self, a, m),
             "union": lambda self, a, m: list(dict.fromkeys(closest(self, a, m) + which_in_list(self, a, m)))}
    from assistant.embed import query_encoder
    from fit_which import ENCODED, decision, load_model

    if query_encoder.available() and ENCODED.exists():  # the criterion encoder and its `which` model, not adopted
        from which import listed_at

        encoded, corpus_encoded = load_model(ENCODED), {}

        def encoder_in_list(self, asked, among):
            if asked not in corpus_encoded:
                corpus_encoded[asked] = set(listed_at(self.retriever, asked, decision(encoded), encoder=True))
            return [pid for pid in among if pid in corpus_encoded[asked]]

        rules["encoder which∩list (not adopted)"] = encoder_in_list
    wrapped = {name: (lambda rule: lambda self, asked, among, best: rule(self, asked, among))(rule)
               for name, rule in rules.items()}
    cases = [(item, listed) for item in labels if item["criterion"] in ASKED
             for listed in lists_for(item, retriever, args.lists, args.size, rng)]
    result = {"cases": len(cases), "lists": args.lists, "size": args.size, "rules": {}}
    for name, rule in wrapped.items():
        Conversation._choose_among = rule
        tp = fp = fn = exact = none_right = none_cases = read_as_among = 0
        for item, listed in cases:
            cited = [Citation(n=n, paper_id=pid, title=papers[pid].title, snippet="", score=0.0)
                     for n, pid in enumerate(listed, 1)]
            earlier = Answer(question=f"What work is there near {item['criterion']}?", text="", mode="extractive",
                             answerable=True, citations=cited, intent="area")
            conv = Conversation(retriever, settings)
            conv.resume([earlier])
            question = f"which of them {ASKED[item['criterion']]}?"
            read_as_among += conv.kind(question) == "among"
            got = {c.paper_id for c in conv.ask(question).citations}
            gold = set(item["papers"]) & set(listed)
            border = set(item["borderline"])
            tp += len(got & gold)
            fp += len(got - gold - border)
            fn += len(gold - got)
            exact += got - border == gold
            if not gold:
                none_cases += 1
                none_right += not got
        result["rules"][name] = {"precision": round(tp / max(tp + fp, 1), 3), "recall": round(tp / max(tp + fn, 1), 3),
                                 "lists_exact": round(exact / len(cases), 3),
                                 "none_right": f"{none_right} of {none_cases}", "read_as_among": read_as_among}
        print(name, result["rules"][name], flush=True)
    Conversation._choose_among = shipped
    args.json.parent.mkdir(exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
