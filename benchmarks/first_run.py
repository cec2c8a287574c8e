"""A new user's first command: `assistant ask` in a default index directory that holds only what the repository's
index_store/ ships, so that the process builds the bundled corpus's index, then answers. CPU seconds (user +
system, as a child) and peak memory of the whole process, offline (extractive), ASSISTANT_RERANK=off.

    python benchmarks/first_run.py [--runs 3]

Writes benchmarks/results/first_run.json. The bundled corpus's vectors come from the table the package ships
(assistant/data/iclr2026_vectors.npz); to measure without it, run this script at a commit before it (a80061f).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Which papers study federated learning?"


def first_ask() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index_store"
        index.mkdir()
        shutil.copy(ROOT / "index_store" / ".gitkeep", index)
        env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "ASSISTANT_RERANK": "off", "ASSISTANT_LLM": "off",
               "ASSISTANT_INDEX_DIR": str(index)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-m", "assistant", "ask", QUESTION], env=env, capture_output=True,
                              text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert done.returncode == 0 and "[1]" in done.stdout, done.stderr
        return {"cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
                "peak_mb": after.ru_maxrss // 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [first_ask() for _ in range(args.runs)]
    cpu = sorted(r["cpu_s"] for r in runs)
    result = {"question": QUESTION, "runs": runs, "cpu_s_median": cpu[len(cpu) // 2],
              "peak_mb_max": max(r["peak_mb"] for r in runs)}
    out = ROOT / "benchmarks" / "results" / "first_run.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
