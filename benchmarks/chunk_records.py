"""What storing each chunk's llama-index node in its metadata (``_node_content``, assistant/store/index.py) costs
the Chroma writes of an ingest, against the records without it and against the chunk text as Chroma
documents (which Chroma full-text indexes).

The first N arxiv-ml papers are chunked as an ingest chunks them; vectors are random unit 384-d vectors
(the embedding is the same work whichever way the records are written, and is left out). Each variant
writes a fresh PersistentClient in a child process: its CPU seconds (getrusage of the child), wall
time and store size on disk. Variants alternate over the repeats.

    python benchmarks/chunk_records.py --papers 2000 --repeats 3
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
VARIANTS = ("offsets", "node_content", "documents")


def _write(variant: str, papers_file: str, store: str) -> dict:
    import numpy as np

    import chromadb
    from chromadb.config import Settings as ChromaSettings

    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.chunks import chunk_papers, chunk_to_meta

    papers, _ = load_papers([Path(papers_file)])
    chunks = chunk_papers(papers, Settings())
    by_id = {p.id: p for p in papers}
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((len(chunks), 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    client = chromadb.PersistentClient(path=store, settings=ChromaSettings(anonymized_telemetry=False))
    coll = client.get_or_create_collection("chunks", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    started, cpu = time.perf_counter(), time.process_time()
    step = 1000
    for at in range(0, len(chunks), step):
        part = chunks[at:at + step]
        metas = [chunk_to_meta(c, by_id[c.paper_id]) for c in part]
        if variant != "node_content":  # the records as they were before: no node
            for m in metas:
                m.pop("_node_content"), m.pop("_node_type")
        kw = {"documents": [c.text for c in part]} if variant == "documents" else {}
        coll.upsert(ids=[c.id for c in part], embeddings=vecs[at:at + step], metadatas=metas, **kw)
    return {"chunks": len(chunks), "write_wall_s": round(time.perf_counter() - started, 2),
            "write_cpu_s": round(time.process_time() - cpu, 2)}


def _child(variant: str, papers_file: str) -> dict:
    store = tempfile.mkdtemp(prefix=f"records-{variant}-")
    try:
        code = (f"import json, sys; sys.path.insert(0, {str(HERE.parent)!r}); sys.path.insert(0, {str(HERE)!r}); "
                f"from chunk_records import _write; print(json.dumps(_write({variant!r}, {papers_file!r}, {store!r})))")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        size = sum(f.stat().st_size for f in Path(store).rglob("*") if f.is_file())
        return out | {"store_mb": round(size / 1e6, 1), "child_cpu_s": round(child_cpu, 2)}
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--papers", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "chunk_records.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="records-"))
    papers_file = work / "papers.jsonl"
    with open(SHARED / "corpus" / "arxiv-ml" / "papers.jsonl") as src, open(papers_file, "w") as dst:
        for i, line in enumerate(src):
            if i >= args.papers:
                break
            dst.write(line)
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for _ in range(args.repeats):
        for variant in VARIANTS:
            runs[variant].append(_child(variant, str(papers_file)))
            print(variant, runs[variant][-1], flush=True)
    shutil.rmtree(work, ignore_errors=True)

    def median(key: str, variant: str) -> float:
        values = sorted(r[key] for r in runs[variant])
        return values[len(values) // 2]

    summary = {v: {k: median(k, v) for k in ("write_cpu_s", "write_wall_s", "child_cpu_s", "store_mb")} for v in VARIANTS}
    result = {"papers": args.papers, "chunks": runs[VARIANTS[0]][0]["chunks"], "repeats": args.repeats,
              "median": summary, "runs": runs}
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
