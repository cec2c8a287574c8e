"""Groups for fine-tuning the reader on question-shaped queries: each question of training/inputs/questions/ (320)
and training/inputs/slice_*_details.jsonl (100) with its gold abstract and the three papers of its 250-paper slice
nearest to it by the embedder's cosine (title and abstract) that are not the gold. One question in five is kept for
validation (``split: val``) by a hash of its text. Runs in the package's environment (it embeds with the shipped
MiniLM); reader_train.py reads what it writes.

    python training/reader_questions_data.py [--out training/work/reader_question_groups.jsonl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "inputs"
NEGATIVES = 3


def questions() -> dict[str, list[dict]]:
    """Each slice letter: its questions ({question, gold})."""
    out: dict[str, list[dict]] = {}
    for path in sorted((INPUTS / "questions").glob("slice_*_questions.jsonl")):
        out.setdefault(path.name.split("_")[1], []).extend(
            json.loads(line) for line in path.read_text().splitlines() if line.strip())
    for path in sorted(INPUTS.glob("slice_*_details.jsonl")):
        out.setdefault(path.name.split("_")[1], []).extend(
            json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return out


def slice_papers(letters: set[str]) -> dict[str, list[dict]]:
    ids = {x: {line.strip() for line in (INPUTS / f"slice_{x}_ids.txt").read_text().splitlines() if line.strip()}
           for x in letters}
    out: dict[str, list[dict]] = {x: [] for x in letters}
    with lzma.open(INPUTS / "arxiv-ml.jsonl.xz", "rt") as f:
        for line in f:
            if line.strip():
                p = json.loads(line)
                for x, held in ids.items():
                    if str(p["id"]) in held:
                        out[x].append({"id": str(p["id"]), "title": p["title"], "abstract": p["abstract"]})
    return out


def is_val(question: str) -> bool:
    return int(hashlib.sha256(question.encode()).hexdigest(), 16) % 5 == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "work" / "reader_question_groups.jsonl")
    args = ap.parse_args()
    from assistant.embed.embedder import LocalMiniLM, embed_array

    embedder = LocalMiniLM()
    asked = questions()
    papers = slice_papers(set(asked))
    groups = []
    for x, items in asked.items():
        docs = embed_array(embedder, [f"{p['title']}. {p['abstract']}" for p in papers[x]])
        vecs = embed_array(embedder, [q["question"] for q in items])
        by_id = {p["id"]: p for p in papers[x]}
        for q, vec in zip(items, vecs):
            gold = q["gold"][0]
            near = [papers[x][i]["id"] for i in np.argsort(-(docs @ vec)) if papers[x][i]["id"] != gold][:NEGATIVES]
            groups.append({"query": q["question"], "kind": q.get("type", "detail"), "slice": x,
                           "passages": [by_id[pid]["abstract"] for pid in [gold, *near]],
                           "labels": [1] + [0] * NEGATIVES, "split": "val" if is_val(q["question"]) else "train"})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(g) + "\n" for g in groups))
    val = sum(g["split"] == "val" for g in groups)
    print(f"{len(groups)} groups ({val} for validation) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
