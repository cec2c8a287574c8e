"""Which 2-D projection for `assistant map`: neighbourhood preservation and time, measured in one run.

    python benchmarks/map_layout.py [--index-dir DIR ...] [--sample N]

For each index (default: the bundled ICLR corpus) it projects the paper vectors with PCA, t-SNE
(scikit-learn) and UMAP (when umap-learn is installed) and reports, per method, the seconds taken,
trustworthiness@10 (scikit-learn) and kNN recall@10: the share of each paper's 10 nearest neighbours
by cosine in 384-d that are still among its 10 nearest on the map. Writes benchmarks/results/map_layout.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def knn_recall(vecs: np.ndarray, xy: np.ndarray, k: int = 10) -> float:
    from sklearn.neighbors import NearestNeighbors

    hi = NearestNeighbors(n_neighbors=k + 1, metric="cosine").fit(vecs).kneighbors(return_distance=False)
    lo = NearestNeighbors(n_neighbors=k + 1).fit(xy).kneighbors(return_distance=False)
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(hi, lo)]))


def methods():
    from assistant.qa.landscape import project

    out = {"PCA": lambda v: project(v, "pca"), "t-SNE": lambda v: project(v, "tsne")}
    import importlib.util

    if importlib.util.find_spec("umap") is not None:
        def run_umap(v):
            import umap

            return umap.UMAP(n_neighbors=15, min_dist=0.1, metric="cosine", random_state=0).fit_transform(v)
        out["UMAP"] = run_umap
    return out


def measure(vecs: np.ndarray) -> dict:
    from sklearn.manifold import trustworthiness

    rows = {}
    for name, fn in methods().items():
        started = time.perf_counter()
        xy = fn(vecs)
        secs = time.perf_counter() - started
        rows[name] = {"seconds": round(secs, 2), "trustworthiness@10": round(float(trustworthiness(vecs, xy, n_neighbors=10, metric="cosine")), 3),
                      "knn_recall@10": round(knn_recall(vecs, xy), 3)}
        print(f"  {name}: {rows[name]}", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path, action="append", help="index to measure (repeatable)")
    ap.add_argument("--sample", type=int, default=0, help="random sample of at most N papers per index")
    args = ap.parse_args()
    from assistant.config import Settings
    from assistant.store.opening import open_index

    results = {}
    for d in args.index_dir or [None]:
        index = open_index(Settings.from_env(index_dir=d))
        got = index.papers.get(include=["embeddings"])
        vecs = np.asarray(got["embeddings"], dtype=np.float32)
        if args.sample and len(vecs) > args.sample:
            vecs = vecs[np.random.default_rng(0).choice(len(vecs), args.sample, replace=False)]
        label = f"{len(vecs):,} papers ({d.name if d else 'bundled ICLR'})"
        print(label, file=sys.stderr)
        results[label] = measure(vecs)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "map_layout.json").write_text(json.dumps(results, indent=2))
    print(f"\n{'corpus':32s} {'method':6s} {'seconds':>8} {'trust@10':>9} {'kNN@10':>7}")
    for label, rows in results.items():
        for name, r in rows.items():
            print(f"{label:32s} {name:6s} {r['seconds']:8.2f} {r['trustworthiness@10']:9.3f} {r['knn_recall@10']:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
