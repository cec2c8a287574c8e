"""When abstracts' sentences are embedded: at ingest (ASSISTANT_SENTENCES=ingest, the default) or on first sight
(lazy), as whole processes, both in one run.

    python benchmarks/ingest_sentences.py [--sizes 95,2000] [--questions 6]

For each corpus size (the bundled 95 ICLR abstracts; the first N arxiv-ml papers of training/inputs otherwise):
``assistant ingest`` into a fresh index in each mode (CPU seconds of the process, papers per CPU second, peak RSS),
then ``assistant ask`` of ``--questions`` questions new to each index (offline, ASSISTANT_RERANK=off), the two
modes alternating: CPU p50/p95/max and peak RSS per question. Writes benchmarks/results/ingest_sentences.json.
The bundled 95 abstracts' chunk and sentence vectors ship with the package (assistant/embed/shipped.py), so their
ingest measures reading that table, not the model: for the model's cost, use an arxiv-ml size.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUESTIONS = [
    "Which papers study graph neural networks or graph transformers for graph-level prediction tasks?",
    "What work exists on 3D content: generating, editing, or reconstructing scenes from images?",
    "membership inference attacks on diffusion models",
    "How do recent methods make LLM inference cheaper at long context?",
    "Is there anything on protein structure or molecule generation?",
    "Which papers evaluate safety risks of LLM agents that use tools?",
    "reinforcement learning from human feedback for code generation",
    "What is known about the loss landscape of transformers?",
]


def run(args: list[str], env: dict) -> tuple[float, float]:
    """(CPU seconds, peak RSS MB) of one ``python -m assistant`` process."""
    proc = subprocess.Popen([sys.executable, "-m", "assistant", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"assistant {' '.join(args[:2])} failed ({status})")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def corpus(size: int, work: Path) -> Path:
    if size == 95:
        return ROOT / "assistant" / "data" / "iclr2026"
    out = work / f"arxiv_{size}.jsonl"
    with lzma.open(ROOT / "training" / "inputs" / "arxiv-ml.jsonl.xz", "rt", encoding="utf-8") as fh:
        lines = [line for _, line in zip(range(size), fh)]
    out.write_text("".join(lines), encoding="utf-8")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="95,2000")
    ap.add_argument("--questions", type=int, default=6)
    args = ap.parse_args()
    base = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "ASSISTANT_RERANK": "off", "ASSISTANT_LLM": "off"}
    work = Path(tempfile.mkdtemp())
    result = {"cpus": os.cpu_count(), "sizes": {}}
    for size in (int(s) for s in args.sizes.split(",")):
        source = corpus(size, work)
        row = {}
        for mode in ("ingest", "lazy"):
            env = {**base, "ASSISTANT_SENTENCES": mode}
            cpu, rss = run(["ingest", str(source), "--index-dir", str(work / f"{size}-{mode}")], env)
            row[mode] = {"ingest_cpu_s": round(cpu, 2), "papers_per_cpu_s": round(size / cpu, 1),
                         "ingest_rss_mb": round(rss), "ask": []}
        for question in QUESTIONS[:args.questions]:
            for mode in ("ingest", "lazy"):
                env = {**base, "ASSISTANT_SENTENCES": mode}
                cpu, rss = run(["ask", question, "--index-dir", str(work / f"{size}-{mode}")], env)
                row[mode]["ask"].append({"cpu_s": round(cpu, 2), "rss_mb": round(rss)})
        for mode in ("ingest", "lazy"):
            cpus = sorted(a["cpu_s"] for a in row[mode]["ask"])
            row[mode]["ask_new_question"] = {
                "cpu_p50": statistics.median(cpus), "cpu_p95": cpus[min(len(cpus) - 1, int(0.95 * len(cpus)))],
                "cpu_max": cpus[-1], "rss_max_mb": max(a["rss_mb"] for a in row[mode]["ask"])}
        result["sizes"][size] = row
        print(json.dumps({size: {m: {k: v for k, v in r.items() if k != "ask"} for m, r in row.items()}}, indent=1))
    out = HERE / "results" / "ingest_sentences.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
