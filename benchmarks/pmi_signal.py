"""Experiment (issue 28, h28x): SmolLM2's per-token log-probabilities of each question after its top retrieved
papers (title. abstract) and after an empty passage, for the question files the answerable model is fitted on,
cached in benchmarks/.work/pmi.json (reruns are free). Reads the rows of fit_decisions.py's signals cache.

    python benchmarks/pmi_signal.py [--ranks 1] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"


def token_logprobs(model, context: list[int], question: list[int]) -> list[float]:
    """Per-token log-probabilities of ``question`` after BOS + ``context`` (SmolLM.token_logprobs), rounded."""
    return [round(float(v), 4) for v in model.token_logprobs(context, question)]


def answerable_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["file"] != "which_labels" and r["type"] != "followup" and not r["named"]]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1, help="score the top this many papers")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--index-dir", type=Path, default=WORK / "iclr95")
    args = ap.parse_args()
    from assistant.config import Settings
    from assistant.search.rerank import reranker
    from assistant.store.index import Index

    rows = answerable_rows(json.loads((WORK / "signals.json").read_text())["rows"])
    if args.limit:
        rows = rows[:args.limit]
    papers = Index(Settings(index_dir=args.index_dir, llm_mode="off", rerank="off")).all_papers()
    path = WORK / "pmi.json"
    cache = json.loads(path.read_text()) if path.exists() else {}
    r = reranker("smollm2")
    model = r._model
    started, n_new = time.time(), 0
    for i, row in enumerate(rows, 1):
        q = row["question"]
        entry = cache.setdefault(q, {"cpu": {}})
        asked = model.tokenize(" " + q.strip())[:400]
        if "base" not in entry:
            t0 = time.process_time()
            entry["base"] = token_logprobs(model, model.tokenize(r._head + r._tail), asked)
            entry["cpu"]["base"] = time.process_time() - t0
        for pid in row["hits"][:args.ranks]:
            if pid in entry:
                continue
            p = papers[pid]
            t0 = time.process_time()
            context, asked = r._pair(q, f"{p.title}. {p.abstract}" if p.title else p.abstract)
            entry[pid] = token_logprobs(model, context, asked)
            entry["cpu"][pid] = time.process_time() - t0
            n_new += 1
        if i % 25 == 0:
            path.write_text(json.dumps(cache))
            print(f"  {i}/{len(rows)} ({time.time() - started:.0f} s, {n_new} passages)", file=sys.stderr, flush=True)
    path.write_text(json.dumps(cache))
    print(f"{len(rows)} questions, {n_new} passages read ({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
