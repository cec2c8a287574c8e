"""Search through a real `chroma run` as its corpus grows: client memory, start-up and search time, and
HNSW recall@10 against exact search (docs/chroma-scale.md).

The store side is synthetic where it must be: chunk *records* are real (the arxiv-ml abstracts, chunked as
an ingest chunks them, replicated under new ids past 19,972 papers, each record with its llama-index node),
chunk *vectors* are synthetic 384-d unit vectors: each paper draws a mix of two real MiniLM chunk vectors
of the bundled corpus, and each of its chunks adds Gaussian noise to that mix (cosine ~0.75 to it), so a
paper's chunks lie near each other as real ones do. Queries are real MiniLM embeddings of the question sets'
questions. Embedding 200k chunks on 2 cores would take hours and would not change what is measured here.

For each corpus size a fresh client process searches with ``k=10``:

- ``hnsw`` (the default of a server client): dense candidates from the HNSW query, re-scored exactly;
  BM25 memory-mapped; "cold" builds the client's BM25 cache from the server's records, "warm" reuses it.
- ``exact`` (what every server client did before): the client downloads every chunk vector into a matrix
  and holds every paper.

Recall: the chunk collection's raw HNSW top-10 chunks against exact top-10 (numpy over every vector), for
several ``ef_search``; the dense side's top-10 papers (HNSW candidates re-scored) against the exact
best-chunk ranking; and ``M`` 16 vs 32 on vectors-only collections of the largest size.

    python benchmarks/chroma_scale.py --sizes 50000,100000,200000 --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
DIM = 384
from assistant.store.dense import HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_M  # noqa: E402

HNSW_EF_SEARCH_RESTORE = HNSW_EF_SEARCH  # the chunk collection's ef_search after a sweep
NOISE = 0.6  # per-chunk Gaussian noise (norm) around its paper's mix: cosine ~0.75 to it


def start_server(work: Path, port: int | None = None) -> tuple[subprocess.Popen, str]:
    import socket

    if port is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    log = open(work / "server.log", "a")
    proc = subprocess.Popen([exe, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(work / "data")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGTERM)
    raise RuntimeError("chroma run did not start; see server.log")


def stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def centers(work: Path) -> np.ndarray:
    """Real MiniLM chunk vectors: the bundled corpus, ingested once into the work directory."""
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.index import Index
    from assistant.store.ingest import ingest

    settings = Settings(index_dir=work / "bundled", dense="exact")
    if not (work / "bundled" / "manifest.json").exists():
        ingest(load_papers()[0], settings)
    return Index(settings).chunk_vectors().matrix


def questions(n: int) -> list[str]:
    out = []
    for path in sorted((HERE / "data").glob("blind_questions_*.jsonl")):
        out += [q["question"] for q in map(json.loads, path.read_text().splitlines()) if q.get("question")]
    return out[:n]


class Corpus:
    """Real chunk records, replicated; synthetic vectors (see the module docstring)."""

    def __init__(self, center_vecs: np.ndarray, limit_papers: int | None = None):
        from assistant.config import Settings
        from assistant.text.corpus import load_papers
        from assistant.store.chunks import chunk_papers

        self.papers, _ = load_papers([SHARED / "corpus" / "arxiv-ml" / "papers.jsonl"])
        self.papers = self.papers[:limit_papers] if limit_papers else self.papers
        chunks = chunk_papers(self.papers, Settings())
        self.chunks_of: dict[str, list] = {}
        for c in chunks:
            self.chunks_of.setdefault(c.paper_id, []).append(c)
        self.centers = center_vecs
        self.rng = np.random.default_rng(7)
        self.vectors = np.zeros((0, DIM), dtype=np.float32)
        self.chunk_ids: list[str] = []
        self.chunk_paper: list[str] = []
        self.next = 0  # papers written so far (over the replicas)

    def grow(self, index, target: int) -> None:
        """Write paper + chunk records to the server until it holds ``target`` chunks."""
        from assistant.store.chunks import Chunk, chunk_to_meta, paper_to_meta

        batch = index.client.get_max_batch_size()
        while len(self.chunk_ids) < target:
            group_papers, group_chunks = [], []
            while len(self.chunk_ids) + len(group_chunks) < target and len(group_papers) < 1000:
                base = self.papers[self.next % len(self.papers)]
                copy = self.next // len(self.papers)
                paper = replace(base, id=base.id if copy == 0 else f"{base.id}~{copy}")
                self.next += 1
                group_papers.append(paper)
                group_chunks += [Chunk(f"{paper.id}::{c.number}", paper.id, c.number, c.text, c.start)
                                 for c in self.chunks_of[base.id]]
            vecs, paper_vecs = self._vectors(group_papers, group_chunks)
            by_id = {p.id: p for p in group_papers}
            for at in range(0, len(group_chunks), batch):
                part = group_chunks[at:at + batch]
                index.chunks.add(ids=[c.id for c in part], embeddings=vecs[at:at + batch],
                                 metadatas=[chunk_to_meta(c, by_id[c.paper_id]) for c in part])
            index.papers.add(ids=[p.id for p in group_papers], embeddings=paper_vecs,
                             metadatas=[paper_to_meta(p) for p in group_papers])
            self.vectors = np.concatenate([self.vectors, vecs])
            self.chunk_ids += [c.id for c in group_chunks]
            self.chunk_paper += [c.paper_id for c in group_chunks]

    def _vectors(self, papers, chunks) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.centers)
        mix = {}
        for p in papers:
            a, b = self.rng.integers(0, n, 2)
            w = self.rng.uniform(0.5, 0.9)
            v = w * self.centers[a] + (1 - w) * self.centers[b]
            mix[p.id] = v / np.linalg.norm(v)
        base = np.asarray([mix[c.paper_id] for c in chunks], dtype=np.float32)
        noise = self.rng.standard_normal((len(chunks), DIM)).astype(np.float32) * (NOISE / np.sqrt(DIM))
        vecs = base + noise
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rows: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            rows.setdefault(c.paper_id, []).append(i)
        paper_vecs = np.asarray([vecs[rows[p.id]].mean(axis=0) for p in papers], dtype=np.float32)
        paper_vecs /= np.linalg.norm(paper_vecs, axis=1, keepdims=True)
        return vecs, paper_vecs


# --- the client, in a fresh process -----------------------------------------------------------------


def client(url: str, index_dir: str, mode: str, qs: list[str]) -> dict:
    """Open the server's index as a CLI process would, search every question, report time and memory."""
    from assistant.config import Settings
    from assistant.store.index import Index
    from assistant.search.retrieve import Retriever

    started = time.perf_counter()
    settings = Settings(index_dir=Path(index_dir), chroma_url=url, dense=mode)
    retriever = Retriever(Index(settings), settings)
    retriever.embed_query("warm up the embedder")
    opened = time.perf_counter() - started
    first = time.perf_counter()
    retriever.search(qs[0], k=10)  # loads (or builds) BM25, and for ``exact`` downloads the matrix
    first = time.perf_counter() - first
    times = []
    for q in qs[1:]:
        t = time.perf_counter()
        retriever.search(q, k=10)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"mode": mode, "open_s": round(opened, 2), "first_search_s": round(first, 2),
            "search_ms_p50": round(times[len(times) // 2], 1), "search_ms_p95": round(times[int(len(times) * 0.95)], 1),
            "peak_rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM): ru_maxrss would include the parent's, as it survives exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_client(url: str, index_dir: Path, mode: str, qs: list[str]) -> dict:
    args = json.dumps([url, str(index_dir), mode, qs])
    proc = subprocess.run([sys.executable, __file__, "--client", args], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- recall and the dense side ------------------------------------------------------------------------


def exact_chunks(corpus: Corpus, qvecs: np.ndarray, k: int = 10) -> list[list[str]]:
    sims = qvecs @ corpus.vectors.T
    top = np.argsort(-sims, axis=1)[:, :k]
    return [[corpus.chunk_ids[j] for j in row] for row in top]


def exact_papers(corpus: Corpus, qvecs: np.ndarray, k: int = 10) -> tuple[list[list[str]], list[float]]:
    """Exact best-chunk ranking of papers, and the time of the matrix path's dense side per query (ms)."""
    from assistant.store.dense import top_indices as _top

    pids = corpus.chunk_paper
    starts = np.flatnonzero(np.r_[True, np.asarray(pids[1:]) != np.asarray(pids[:-1])])
    paper_of = [pids[s] for s in starts]
    out, ms = [], []
    for q in qvecs:
        t = time.perf_counter()
        best = np.maximum.reduceat(corpus.vectors @ q, starts)
        top = _top(best, 100)
        ms.append((time.perf_counter() - t) * 1000)
        out.append([paper_of[i] for i in top[:k]])
    return out, ms


class Server:
    """The `chroma run` under test; restarted on the same port and data to apply a new ef_search (a
    running server keeps the ef_search its loaded index was opened with)."""

    def __init__(self, work: Path):
        self.work = work
        self.proc, self.url = start_server(work)
        self.port = int(self.url.rsplit(":", 1)[1])

    def restart(self) -> None:
        stop_server(self.proc)
        self.proc, _ = start_server(self.work, self.port)

    def stop(self) -> None:
        stop_server(self.proc)


def ef_sweep(server: Server, name: str, corpus: Corpus, qvecs: np.ndarray, truth: list[list[str]],
             efs: list[int]) -> list[dict]:
    """Raw HNSW recall@10 of collection ``name`` at each ef_search (set, then the server restarted)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    def connect():
        return chromadb.HttpClient(host="127.0.0.1", port=server.port, settings=ChromaSettings(anonymized_telemetry=False))

    out = []
    for ef in efs:
        connect().get_collection(name).modify(configuration={"hnsw": {"ef_search": ef}})
        server.restart()
        coll = connect().get_collection(name)
        out.append(raw_recall(coll, corpus, qvecs, truth, ef) | {"ef_search_in_effect": coll.configuration["hnsw"]["ef_search"]})
        print(name, out[-1], flush=True)
    if efs and efs[-1] != HNSW_EF_SEARCH_RESTORE:
        connect().get_collection(name).modify(configuration={"hnsw": {"ef_search": HNSW_EF_SEARCH_RESTORE}})
        server.restart()
    return out


def raw_recall(collection, corpus: Corpus, qvecs: np.ndarray, truth: list[list[str]], ef: int) -> dict:
    for q in qvecs[:5]:  # the first queries after a restart load the index
        collection.query(query_embeddings=[q.tolist()], n_results=10, include=[])
    hits, ms = 0, []
    for q, want in zip(qvecs, truth):
        t = time.perf_counter()
        got = collection.query(query_embeddings=[q.tolist()], n_results=10, include=[])["ids"][0]
        ms.append((time.perf_counter() - t) * 1000)
        hits += len(set(got) & set(want))
    ms.sort()
    return {"ef_search": ef, "recall_at_10": round(hits / (10 * len(truth)), 4), "query_ms_p50": round(ms[len(ms) // 2], 1)}


def dense_side_recall(index, qvecs: np.ndarray, truth: list[list[str]]) -> dict:
    """The search's dense side (HNSW candidates, re-scored exactly): its top-10 papers against exact."""
    from assistant.store.dense import HnswDense
    from assistant.search.retrieve import Retriever

    retriever = Retriever(index, index.settings)
    hits, ms, missed = 0, [], 0
    for q, want in zip(qvecs, truth):
        t = time.perf_counter()
        side = HnswDense(retriever, q)
        pool = side.top(100)
        scores = side.exact(pool)
        ms.append((time.perf_counter() - t) * 1000)
        got = sorted(scores, key=lambda p: -scores[p])[:10]
        hits += len(set(got) & set(want))
        missed += side.vectors_read
    ms.sort()
    return {"recall_at_10": round(hits / (10 * len(truth)), 4), "dense_ms_p50": round(ms[len(ms) // 2], 1),
            "dense_ms_p95": round(ms[int(len(ms) * 0.95)], 1), "vectors_read_per_query": round(missed / len(truth), 1)}


def m_comparison(server: Server, corpus: Corpus, qvecs: np.ndarray, truth: list[list[str]],
                 efs: list[int]) -> list[dict]:
    """Vectors-only collections of every chunk, built with M = 16 and 32: load time and recall per ef_search."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    out = []
    for m in (16, 32):
        name = f"vectors_m{m}"
        client_api = chromadb.HttpClient(host="127.0.0.1", port=server.port,
                                         settings=ChromaSettings(anonymized_telemetry=False))
        coll = client_api.create_collection(name, metadata={"hnsw:space": "cosine", "hnsw:M": m,
                                                            "hnsw:construction_ef": 100}, embedding_function=None)
        batch = client_api.get_max_batch_size()
        t = time.perf_counter()
        for at in range(0, len(corpus.chunk_ids), batch):
            coll.add(ids=corpus.chunk_ids[at:at + batch], embeddings=corpus.vectors[at:at + batch],
                     metadatas=[{"paper_id": p} for p in corpus.chunk_paper[at:at + batch]])
        load = time.perf_counter() - t
        out += [{"M": m, "load_s": round(load, 1)} | row for row in ef_sweep(server, name, corpus, qvecs, truth, efs)]
        chromadb.HttpClient(host="127.0.0.1", port=server.port,
                            settings=ChromaSettings(anonymized_telemetry=False)).delete_collection(name)
    return out


def measure_size(server: Server, loader, corpus: Corpus, size: int, qs: list[str], qvecs: np.ndarray,
                 efs: list[int], exact_client: bool, work: Path) -> tuple[dict, object]:
    """Grow the server's index to ``size`` chunks and measure clients, the dense side and raw recall."""
    from assistant.config import Settings
    from assistant.store.index import Index

    t = time.perf_counter()
    corpus.grow(loader, size)
    load_s = time.perf_counter() - t
    loader.commit(loader.manifest or loader.new_manifest(DIM))
    print(f"{size} chunks, {corpus.next} papers written in {load_s:.0f} s", flush=True)
    row: dict = {"chunks": len(corpus.chunk_ids), "papers": corpus.next, "load_s": round(load_s, 1)}
    client_dir = work / f"client-{size}"
    row["hnsw_cold"] = run_client(server.url, client_dir, "hnsw", qs)
    row["hnsw_warm"] = run_client(server.url, client_dir, "hnsw", qs)
    if exact_client:
        row["exact_client"] = run_client(server.url, work / f"exact-{size}", "exact", qs)
    truth_papers, matrix_ms = exact_papers(corpus, qvecs)
    matrix_ms.sort()
    row["matrix_dense_ms_p50"] = round(matrix_ms[len(matrix_ms) // 2], 1)
    row["matrix_dense_ms_p95"] = round(matrix_ms[int(len(matrix_ms) * 0.95)], 1)
    row["matrix_mb"] = round(corpus.vectors.nbytes / 1e6, 1)
    row["dense_side"] = dense_side_recall(loader, qvecs, truth_papers)
    print(json.dumps(row), flush=True)
    row["raw_hnsw"] = ef_sweep(server, "chunks", corpus, qvecs, exact_chunks(corpus, qvecs), efs)
    # the loader's client was connected to the server before the restarts
    loader = Index(Settings(index_dir=work / "loader", chroma_url=server.url))
    return row, loader


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50000,100000,200000", help="chunk counts, ascending")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--efs", default="10,20,40,100,200")
    ap.add_argument("--no-exact-client", action="store_true", help="skip the download-everything client")
    ap.add_argument("--no-m", action="store_true", help="skip the M comparison")
    ap.add_argument("--limit-papers", type=int, help="use only the first N arxiv-ml papers (a quick check)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "chroma_scale.json")
    ap.add_argument("--client", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        print(json.dumps(client(*json.loads(args.client))))
        return
    from assistant.config import Settings
    from assistant.embed.embedder import embed_array
    from assistant.embed.embedders import get_embedder
    from assistant.store.index import Index

    efs = [int(e) for e in args.efs.split(",")]
    work = Path(tempfile.mkdtemp(prefix="chroma-scale-"))
    qs = questions(args.queries)
    qvecs = embed_array(get_embedder(Settings()), qs)
    corpus = Corpus(centers(work), args.limit_papers)
    server = Server(work)
    result: dict = {"sizes": [], "queries": len(qs), "noise": NOISE, "synthetic_vectors": True,
                    "hnsw": {"M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION}}
    try:
        loader = Index(Settings(index_dir=work / "loader", chroma_url=server.url), create=True)
        for size in (int(s) for s in args.sizes.split(",")):
            row, loader = measure_size(server, loader, corpus, size, qs, qvecs, efs, not args.no_exact_client, work)
            result["sizes"].append(row)
            args.out.write_text(json.dumps(result, indent=2))
        if not args.no_m:
            result["m_comparison"] = m_comparison(server, corpus, qvecs, exact_chunks(corpus, qvecs), efs)
        result["server_store_mb"] = round(sum(f.stat().st_size for f in (work / "data").rglob("*") if f.is_file()) / 1e6)
        args.out.write_text(json.dumps(result, indent=2))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
