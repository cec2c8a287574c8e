"""Retrieval quality, measured in one run: BEIR SciFact and the ICLR dev questions.

    python benchmarks/retrieval.py [--work DIR] [--skip-scifact] [--distractors]

- SciFact (../shared/bench/scifact): nDCG@10, R@100, MRR@10 for BM25 alone, dense alone, the hybrid
  and (where SmolLM2's weights are installed) the hybrid with re-ranking, the default there, all on one
  index, next to the published reference numbers.
- ICLR dev questions (../shared/eval/dev.jsonl) on the bundled 95-paper corpus, and with
  ``--distractors`` on the same corpus plus the 19,972 arxiv-ml abstracts.

Indexes are built under --work (default benchmarks/.work, git-ignored) and reused on later runs.
Results go to benchmarks/results/retrieval.json and print as a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
PUBLISHED = {"BM25 (BEIR paper)": 0.665, "all-MiniLM-L6-v2 (MTEB)": 0.645, "BM25 + cross-encoder": 0.688,
             "e5-small-v2": 0.689, "bge-small-en-v1.5": 0.713, "e5-base-v2": 0.719, "monoT5-3B rerank": 0.777}


def progress_printer(label):
    last = [0.0]

    def cb(done, total):
        now = time.time()
        if now - last[0] > 15 or done == total:
            print(f"  {label}: {done}/{total} papers embedded", file=sys.stderr, flush=True)
            last[0] = now
    return cb


def systems(settings) -> list[tuple[str, object]]:
    """The retrievers compared, as settings: the lexical and dense sides alone and fused, none re-ranked, then
    the default (fused, re-ranked) where SmolLM2's weights are installed."""
    from assistant.search.rerank import SMOLLM2, smollm2_path

    plain = settings.replace(rerank="off")
    out = [("BM25 alone", plain.replace(dense_weight=0.0)), ("dense alone", plain.replace(dense_weight=1.0))]
    if smollm2_path() is None:
        return out + [("hybrid (default)", plain)]
    return out + [("hybrid", plain), ("hybrid + rerank (default)", settings.replace(rerank=SMOLLM2))]


def scifact(work: Path, shared: Path) -> dict:
    from assistant.config import Settings
    from assistant.service.evaluate import evaluate_beir

    out = {}
    for name, settings in systems(Settings.from_env(index_dir=work / "scifact")):
        started = time.time()
        out[name] = evaluate_beir(shared / "bench" / "scifact", settings, progress=progress_printer("scifact"))
        out[name]["seconds"] = round(time.time() - started, 1)
    return out


def dev(index_dir: Path, shared: Path, paths: list[Path] | None = None) -> dict:
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.service.evaluate import evaluate_questions, load_questions
    from assistant.store.ingest import ingest

    settings = Settings.from_env(index_dir=index_dir)
    papers, _ = load_papers()
    if paths:
        papers += load_papers(paths)[0]
    ingest(papers, settings, progress=progress_printer(index_dir.name))
    out = {}
    for name, variant in systems(settings):
        out[name] = evaluate_questions(load_questions(shared / "eval" / "dev.jsonl"), variant).summary()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="retrieval benchmarks")
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--distractors", action="store_true", help="also evaluate with the 19,972 arxiv-ml abstracts")
    args = ap.parse_args()
    if not args.shared.exists():
        print(f"no shared data at {args.shared}; nothing to measure", file=sys.stderr)
        return 1
    args.work.mkdir(parents=True, exist_ok=True)
    out_file = HERE / "results" / "retrieval.json"
    try:  # sections not measured in this run are kept from earlier runs
        results: dict = {k: v for k, v in json.loads(out_file.read_text()).items() if k != "machine"}
    except (OSError, ValueError):
        results = {}
    results["machine"] = machine()
    if not args.skip_scifact:
        results["scifact"] = scifact(args.work, args.shared)
    results["dev_95"] = dev(args.work / "iclr", args.shared)
    if args.distractors:
        results["dev_20k"] = dev(args.work / "iclr_arxiv", args.shared, [args.shared / "corpus" / "arxiv-ml" / "papers.jsonl"])
    (HERE / "results").mkdir(exist_ok=True)
    out_file.write_text(json.dumps(results, indent=2))
    print_tables(results)
    return 0


def machine() -> dict:
    import os
    import platform

    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def print_tables(results: dict) -> None:
    if "scifact" in results:
        print("\nBEIR SciFact (300 test queries)")
        print(f"{'system':38s} {'nDCG@10':>8} {'R@100':>7} {'MRR@10':>7}")
        for name, r in results["scifact"].items():
            print(f"{name + ' (ours)':38s} {r['nDCG@10']:8.3f} {r['R@100']:7.3f} {r['MRR@10']:7.3f}")
        for name, v in PUBLISHED.items():
            print(f"{name + ' (published)':38s} {v:8.3f}")
    for key, title in (("dev_95", "ICLR dev questions, 95 papers"), ("dev_20k", "ICLR dev questions, 95 + 19,972 arxiv-ml papers")):
        if key not in results:
            continue
        print(f"\n{title}")
        cols = ("R@1", "R@5", "MRR", "area_nDCG@10", "none_accuracy", "false_refusal_rate", "first_citation_gold",
                "answer_fact_coverage")
        print(f"{'system':26s} " + " ".join(f"{c[:12]:>12}" for c in cols))
        for name, r in results[key].items():
            print(f"{name:26s} " + " ".join(f"{(r[c] if r[c] is not None else float('nan')):12.3f}" for c in cols))


if __name__ == "__main__":
    sys.exit(main())
