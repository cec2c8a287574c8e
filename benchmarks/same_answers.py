"""Do two revisions answer alike? Every question of some question files, asked of each revision's own index of the
bundled corpus, offline, re-ranking off; the per-question rows (ranked papers, answerable, citations, facts)
and the summaries are compared field by field.

    python benchmarks/same_answers.py REV_A [REV_B] [--files F.jsonl ...] [--work DIR]

REV_B defaults to the working tree. Each revision is checked out into a temporary git worktree and run with
PYTHONPATH pointing at it, so both use this venv's packages, and with one PYTHONHASHSEED (--seed): before
2026-12-02 one signal of the answerable model depended on the order of a set, so a borderline question could be
answered in one process and refused in the next. Exit 0 when every row and summary is identical.
Used for the restructure of issue 30: `python benchmarks/same_answers.py ac3fc14` (docs/measured.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared"
FILES = [SHARED / "eval" / "dev.jsonl", HERE / "data" / "heldout" / "heldout_iclr.jsonl",
         HERE / "data" / "blind_questions_1.jsonl", HERE / "data" / "terse_queries.jsonl",
         HERE / "data" / "short_lookups.jsonl"]


def run(tree: Path, files: list[Path], work: Path, seed: int = 0) -> dict[str, list[dict]]:
    """{file name: its eval --json lines} for the code in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "ASSISTANT_RERANK": "off", "ORT_DISABLE_TELEMETRY": "1",
           "PYTHONWARNINGS": "ignore", "PYTHONHASHSEED": str(seed)}
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ASSISTANT_INDEX_DIR", "ASSISTANT_CHROMA_URL"):
        env.pop(var, None)
    # only the default index directory builds the bundled corpus on first use: build this one first
    subprocess.run([sys.executable, "-m", "assistant", "--index-dir", str(work / "idx"), "ingest", "--json"], cwd=tree,
                   env=env, capture_output=True, text=True, check=True)
    out = {}
    for f in files:
        print(f"  {tree.name}: {f.name}", file=sys.stderr, flush=True)
        res = subprocess.run([sys.executable, "-m", "assistant", "--index-dir", str(work / "idx"), "eval", str(f),
                              "--json"], cwd=tree, env=env, capture_output=True, text=True, check=True)
        out[f.name] = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return out


def checkout(rev: str, where: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(where), rev], cwd=ROOT, check=True)
    return where


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev_a")
    ap.add_argument("rev_b", nargs="?", help="default: the working tree")
    ap.add_argument("--files", nargs="+", type=Path, default=[f for f in FILES if f.exists()])
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=0, help="PYTHONHASHSEED of both runs")
    ap.add_argument("--seed-b", type=int, default=None, help="another PYTHONHASHSEED for REV_B (determinism check)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="same-answers-"))
    trees = []
    try:
        a = checkout(args.rev_a, work / "a")
        trees.append(a)
        b = checkout(args.rev_b, work / "b") if args.rev_b else ROOT
        if args.rev_b:
            trees.append(b)
        seed_b = args.seed if args.seed_b is None else args.seed_b
        rows_a, rows_b = run(a, args.files, work / "run-a", args.seed), run(b, args.files, work / "run-b", seed_b)
    finally:
        for tree in trees:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    differ = 0
    for name in rows_a:
        same = sum(x == y for x, y in zip(rows_a[name], rows_b[name]))
        total = max(len(rows_a[name]), len(rows_b[name]))
        differ += total - same
        print(f"{name:32s} {same}/{total} lines identical (questions and summary)")
    print("identical" if not differ else f"{differ} lines differ")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
