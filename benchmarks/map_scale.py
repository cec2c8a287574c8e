"""Does the map stay usable at 20k papers? HTML size, PNG time and load time in headless Chromium.

    python benchmarks/map_scale.py [--index-dir DIR] [--papers N]

With --index-dir, the real map of that index (t-SNE layout time included, cold and cached). Without
it, the 19,972 arxiv-ml abstracts with a stand-in layout (t-SNE of a 50-d TF-IDF SVD, since embedding
20k abstracts takes hours here): the HTML payload and the browser's work depend on the abstracts and
the number of marks, not on where the points sit. Writes benchmarks/results/map_scale.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"


def standin_map(n: int):
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.manifold import TSNE

    from assistant.qa.landscape import PALETTE, CorpusMap, MapPoint, MapTheme
    from assistant.qa.synthesis import cluster

    rows = [json.loads(line) for line in open(SHARED / "corpus" / "arxiv-ml" / "papers.jsonl")][:n]
    texts = [f"{r.get('title', '')}. {r.get('abstract', '')}" for r in rows]
    started = time.perf_counter()
    svd = TruncatedSVD(50, random_state=0).fit_transform(TfidfVectorizer(min_df=3, stop_words="english").fit_transform(texts))
    svd /= np.maximum(np.linalg.norm(svd, axis=1, keepdims=True), 1e-9)
    xy = TSNE(2, metric="cosine", init="pca", random_state=0).fit_transform(svd)
    groups = cluster(svd.astype(np.float32), 12)
    layout_s = time.perf_counter() - started
    theme = np.zeros(len(rows), dtype=int)
    for t, g in enumerate(groups):
        theme[g] = t
    points = [MapPoint(str(r.get("id", i)), r.get("title", ""), float(x), float(y), int(t), r.get("abstract", ""),
                       r.get("url"), (i // 500 + 1) if i % 500 == 0 and i < 5000 else None)
              for i, (r, (x, y), t) in enumerate(zip(rows, xy, theme))]
    themes = [MapTheme(f"theme {t}", PALETTE[t], int((theme == t).sum())) for t in range(len(groups))]
    return CorpusMap(points, themes, "tsne", "arxiv-ml (stand-in layout)", "stand-in query"), layout_s


def browser_load_seconds(path: Path) -> float:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    profile = tempfile.mkdtemp()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}", "--window-size=1400,900"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    try:
        started = time.perf_counter()
        driver.get(path.resolve().as_uri())
        while not driver.execute_script("return document.body.dataset.ready || document.body.dataset.error"):
            time.sleep(0.05)
        loaded = time.perf_counter() - started
        drawn = driver.execute_script("return document.querySelectorAll('#points circle').length")
        return loaded, drawn
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--papers", type=int, default=19972)
    args = ap.parse_args()
    from assistant.qa.landscape import write_html, write_png

    result: dict = {}
    if args.index_dir:
        from assistant.config import Settings
        from assistant.config import local_dir
        from assistant.store.opening import open_index
        from assistant.qa.landscape import build_map
        from assistant.search.retrieve import Retriever

        settings = Settings.from_env(index_dir=args.index_dir)
        shutil.rmtree(local_dir(settings) / "map", ignore_errors=True)
        retriever = Retriever(open_index(settings, build_default=False), settings)
        started = time.perf_counter()
        cmap = build_map(retriever, "federated learning")
        result["layout_cold_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        cmap = build_map(retriever, "federated learning")
        result["layout_cached_s"] = round(time.perf_counter() - started, 2)
    else:
        cmap, layout_s = standin_map(args.papers)
        result["standin_layout_s"] = round(layout_s, 1)
    result["papers"] = len(cmap.points)
    out = Path(tempfile.mkdtemp())
    started = time.perf_counter()
    html = write_html(cmap, out / "map.html")
    result["html_write_s"] = round(time.perf_counter() - started, 2)
    result["html_mb"] = round(html.stat().st_size / 1e6, 2)
    started = time.perf_counter()
    png = write_png(cmap, out / "map.png")
    result["png_write_s"] = round(time.perf_counter() - started, 2)
    result["png_kb"] = round(png.stat().st_size / 1e3)
    if shutil.which("chromium") and shutil.which("chromedriver"):
        loads = [browser_load_seconds(html) for _ in range(3)]
        result["browser_load_s_median"] = round(float(np.median([s for s, _ in loads])), 2)
        result["browser_marks_drawn"] = loads[0][1]
    shutil.rmtree(out, ignore_errors=True)
    (HERE / "results").mkdir(exist_ok=True)
    out_file = HERE / "results" / "map_scale.json"
    try:  # one section per kind of run, the other kept from earlier
        saved = json.loads(out_file.read_text())
    except (OSError, ValueError):
        saved = {}
    saved["real index" if args.index_dir else "stand-in layout"] = result
    out_file.write_text(json.dumps(saved, indent=2))
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:{width}s}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
