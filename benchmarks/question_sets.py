"""Every question set at once: the dev set and each file in benchmarks/data, scored as `assistant eval` scores
them, one row per set and a pooled row, on the bundled 95 papers and (when it exists) on the index with the
19,972 arxiv-ml distractors that `benchmarks/retrieval.py --distractors` builds.

    python benchmarks/question_sets.py [--index-dir DIR] [--distractors-index DIR] [--json OUT]

Offline and extractive (no LLM). Writes benchmarks/results/question_sets.json unless --json says otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
KEYS = ("R@1", "R@5", "MRR", "area_nDCG@10", "none_accuracy", "false_refusal_rate", "first_citation_gold",
        "answer_fact_coverage")
HEAD = ("R@1", "R@5", "MRR", "area", "none", "FR", "cite1", "facts")


def question_files(shared: Path) -> list[Path]:
    files = [shared / "eval" / "dev.jsonl"] if (shared / "eval" / "dev.jsonl").exists() else []
    return files + sorted(p for p in (HERE / "data").glob("*.jsonl") if p.name != "which_labels.jsonl")


def score(files: list[Path], settings) -> dict:
    """Each file's summary, and the pooled one (every question of every file, weighed alike)."""
    from assistant.service.evaluate import EvalReport, evaluate_questions, load_questions

    out, rows = {}, []
    for path in files:
        report = evaluate_questions(load_questions(path), settings)
        rows += report.rows
        out[path.stem] = {k: report.summary()[k] for k in ("questions", "single_gold", *KEYS)}
    pooled = EvalReport(rows=rows).summary()
    out["pooled"] = {k: pooled[k] for k in ("questions", "single_gold", *KEYS)}
    return out


def table(title: str, results: dict) -> None:
    print(f"\n{title}")
    print(f"{'set':24} {'n':>4} " + " ".join(f"{h:>6}" for h in HEAD))
    for name, row in results.items():
        cells = " ".join(f"{row[k]:6.3f}" if row[k] is not None else f"{'-':>6}" for k in KEYS)
        print(f"{name:24} {row['questions']:>4} {cells}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path, help="an index of the bundled corpus (default: built in a temp dir)")
    ap.add_argument("--distractors-index", type=Path, default=HERE / ".work" / "iclr_arxiv")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "question_sets.json")
    args = ap.parse_args()
    from assistant.config import Settings

    files = question_files(args.shared)
    results = {"bundled_95": score(files, bundled_index(args.index_dir, llm_mode="off"))}
    table("bundled corpus (95 papers)", results["bundled_95"])
    if (args.distractors_index / "manifest.json").exists():
        results["with_distractors"] = score(files, Settings(index_dir=args.distractors_index, llm_mode="off"))
        table("with the 19,972 arxiv-ml distractors (area and none are not meaningful here)",
              results["with_distractors"])
    else:
        print(f"\nno index at {args.distractors_index}: run benchmarks/retrieval.py --distractors for that table")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
