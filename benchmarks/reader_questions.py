"""How the reader (training/models/reader) and the embedder read question-shaped queries: the 320 questions of
training/inputs/questions/ (paraphrases, lookups, details, each answered by one paper of its 250-paper training
slice), a baseline for a reader trained on such questions. Offline.

    python benchmarks/reader_questions.py [--val-only] [--reader-dir DIR] [--label NAME] [--json OUT]

Per slice, every abstract is embedded with the shipped MiniLM (title and abstract, as one text); each question's
papers are ranked by cosine, and the cosine's top 20 re-ranked by the reader (question, abstract). Reported per
type and pooled: the gold paper first (top-1) and in the top 5, by the cosine and by the reader over the cosine's
top 20; and how often the gold is in that top 20 at all. Note: the slices' papers were among the reader's training
papers (as positives for their titles and topics; benchmarks/reader_rerank.py found no advantage from that). Writes
benchmarks/results/reader_questions.json (~3 min CPU for 320 questions).

Since the thirteenth session the folder holds 2,720 questions and a reader has been trained on them:
``--val-only`` reads only the fifth kept for validation (reader_questions_data.is_val, never trained on);
``--reader-dir DIR`` reads with another reader (reader.onnx and manifest.json in DIR); ``--label`` keeps the run
under that name beside the others in the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _results import save

HERE = Path(__file__).resolve().parent
INPUTS = HERE.parent / "training" / "inputs"
DEPTH = 20


def slices() -> dict[str, tuple[list[dict], list[dict]]]:
    """Each slice letter: (its papers, its questions)."""
    from reader_questions_data import slice_papers

    wanted = {p.name.split("_")[1]: p for p in sorted((INPUTS / "questions").glob("slice_*_questions.jsonl"))}
    papers = slice_papers(set(wanted))
    return {x: (papers[x], [json.loads(line) for line in path.read_text().splitlines() if line.strip()])
            for x, path in wanted.items()}


def ranks(papers: list[dict], questions: list[dict], embedder, reader) -> list[dict]:
    """Per question: its type and the gold paper's rank by the cosine and by the reader over the cosine's top 20
    (None: not there)."""
    from assistant.embed.embedder import embed_array

    docs = embed_array(embedder, [f"{p['title']}. {p['abstract']}" for p in papers])
    asked = embed_array(embedder, [q["question"] for q in questions])
    out = []
    for q, vec in zip(questions, asked):
        order = [papers[i]["id"] for i in np.argsort(-(docs @ vec))]
        top = order[:DEPTH]
        abstracts = {p["id"]: p["abstract"] for p in papers}
        logits = reader.logits(q["question"], [abstracts[pid] for pid in top])
        by_reader = [top[i] for i in np.argsort(-logits, kind="stable")]
        gold = q["gold"][0]
        out.append({"type": q["type"], "cosine": order.index(gold) + 1,
                    "reader": by_reader.index(gold) + 1 if gold in by_reader else None})
    return out


def summary(rows: list[dict]) -> dict:
    def share(test) -> float:
        return round(sum(test(r) for r in rows) / len(rows), 4)

    return {"questions": len(rows),
            "cosine_top1": share(lambda r: r["cosine"] == 1), "cosine_top5": share(lambda r: r["cosine"] <= 5),
            "in_cosine_top20": share(lambda r: r["cosine"] <= DEPTH),
            "reader_top1": share(lambda r: r["reader"] == 1),
            "reader_top5": share(lambda r: r["reader"] is not None and r["reader"] <= 5)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "reader_questions.json")
    ap.add_argument("--val-only", action="store_true", help="only the validation fifth (never trained on)")
    ap.add_argument("--reader-dir", type=Path, help="another reader (reader.onnx and manifest.json)")
    ap.add_argument("--label", help="keep this run under this name beside the others")
    args = ap.parse_args()
    from assistant.embed.embedder import LocalMiniLM
    from reader_model import Reader, reader
    from reader_questions_data import is_val

    started = time.process_time()
    embedder, model = LocalMiniLM(), Reader(args.reader_dir) if args.reader_dir else reader()
    rows = []
    for x, (papers, questions) in slices().items():
        if args.val_only:
            questions = [q for q in questions if is_val(q["question"])]
        rows += ranks(papers, questions, embedder, model)
        print(f"slice {x}: {len(questions)} questions over {len(papers)} papers "
              f"({time.process_time() - started:.0f} s CPU)", file=sys.stderr, flush=True)
    out = {"date": time.strftime("%Y-%m-%d"), "depth": DEPTH, "pooled": summary(rows),
           "by_type": {t: summary([r for r in rows if r["type"] == t]) for t in sorted({r["type"] for r in rows})}}
    for name, row in [("pooled", out["pooled"]), *out["by_type"].items()]:
        print(f"{name:11} {row}")
    save(args.json, out, args.label, {"val_only": args.val_only, "reader": str(args.reader_dir or "shipped")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
