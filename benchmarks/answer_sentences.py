"""Which sentence answers, the paper given: the 2,720 question-shaped queries of training/inputs/questions/ (written
blind over 16 training slices, each with its one paper and the sentence of its abstract that best answers; no fit
reads them), each gold paper read as an extractive answer reads the paper a question is about
(:func:`assistant.qa.evidence.pick`, tuning.top_sentences, the shipped sentence model), with the sentence vectors and
term weights of the index holding the arXiv abstracts. Offline.

    python benchmarks/answer_sentences.py [--index benchmarks/.work/iclr_arxiv] [--label NAME]

Reported per type (paraphrase, lookup, detail) and pooled: the answering sentence quoted first (the answer's lead,
shown as the Sources snippet); the answering sentence among those quoted; for detail questions, every answer fact
in the quoted sentences; and the same for the sentences the question's cosine ranks first, as many as were quoted
(a reference: the cosine alone, no model). A question whose answering sentence the package's splitter does not
return as one of the abstract's sentences (a different split) counts by the sentence holding most of its words.
Separates the sentence choice from retrieval: benchmarks/heldout.py's facts read both. The index is the one
``benchmarks/retrieval.py --distractors`` builds. Writes benchmarks/results/answer_sentences.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)

HERE = Path(__file__).resolve().parent
INPUTS = HERE.parent / "training" / "inputs" / "questions"


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def answering(sentences: list[str], wanted: str) -> int:
    """The index of the sentence that is (or holds most of the words of) the answering sentence."""
    target = words(wanted)
    return max(range(len(sentences)), key=lambda i: len(target & words(sentences[i])) / max(len(target), 1))


def read(retriever, q: dict, count: int) -> dict:
    """One question: where the answering sentence falls in what the answer quotes, by the model and by the cosine."""
    import numpy as np

    from assistant.qa.evidence import pick
    from assistant.search.decide import terms

    paper = retriever.papers()[q["gold"][0]]
    sentences, vecs = retriever.sentence_vectors(paper.id, paper.abstract)
    question = retriever.mend(q["question"])
    qvec = retriever.embed_query(question)
    chosen = pick(sentences, vecs, qvec, terms(question), retriever.term_weights(), count)
    by_cosine = [int(i) for i in np.argsort(-(vecs @ qvec), kind="stable")[:len(chosen.indices)]]
    want = answering(sentences, q["answer_sentence"])

    def facts(indices) -> bool:
        quoted = " ".join(sentences[i] for i in indices).lower()
        return all(f.lower() in quoted for f in q.get("answer_facts") or [])

    return {"type": q["type"], "quoted": len(chosen.indices),
            "lead": chosen.lead == want, "among": want in chosen.indices, "facts": facts(chosen.indices),
            "cosine_lead": by_cosine[:1] == [want], "cosine_among": want in by_cosine, "cosine_facts": facts(by_cosine),
            "has_facts": bool(q.get("answer_facts"))}


def summary(rows: list[dict]) -> dict:
    def share(key: str, subset: list[dict]) -> float | None:
        return round(sum(r[key] for r in subset) / len(subset), 4) if subset else None

    detail = [r for r in rows if r["has_facts"]]
    return {"questions": len(rows), "quoted_mean": round(sum(r["quoted"] for r in rows) / len(rows), 2),
            "lead_is_answering": share("lead", rows), "answering_quoted": share("among", rows),
            "facts_quoted": share("facts", detail),
            "cosine_lead_is_answering": share("cosine_lead", rows),
            "cosine_answering_quoted": share("cosine_among", rows),
            "cosine_facts_quoted": share("cosine_facts", detail)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, default=HERE / ".work" / "iclr_arxiv")
    ap.add_argument("--label", default="latest")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "answer_sentences.json")
    args = ap.parse_args()
    if not (args.index / "manifest.json").exists():
        print(f"no index at {args.index}: build it with benchmarks/retrieval.py --distractors")
        return 1
    from assistant.config import Settings
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    started = time.process_time()
    settings = Settings.from_env(index_dir=args.index, llm_mode="off")
    retriever = Retriever(Index(settings), settings)
    questions = [json.loads(line) for path in sorted(INPUTS.glob("slice_*_questions.jsonl"))
                 for line in path.read_text().splitlines() if line.strip()]
    rows = [read(retriever, q, settings.tuning.top_sentences) for q in questions]
    out = {"date": time.strftime("%Y-%m-%d"), "top_sentences": settings.tuning.top_sentences,
           "pooled": summary(rows),
           "by_type": {t: summary([r for r in rows if r["type"] == t]) for t in sorted({r["type"] for r in rows})},
           "cpu_s": round(time.process_time() - started, 1)}
    for name, row in [("pooled", out["pooled"]), *out["by_type"].items()]:
        print(f"{name:11} {row}")
    runs = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs[args.label] = out
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
