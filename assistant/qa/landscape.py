"""The corpus map: every paper placed in 2-D by its embedding, coloured by theme, optionally with a query's papers.

The layout (projection, themes and their labels) depends only on the index's contents, so it is
computed once per index fingerprint and cached beside the index. t-SNE is the default projection:
benchmarks/map_layout.py measured it against PCA and UMAP for neighbourhood preservation and time.
Rendering (``write_html``, ``write_png``) places labels in pixel space so they never overlap.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError, InputError
from assistant.search.retrieve import Retriever

#: Colour per theme (Tableau 10 plus two), shared by the HTML and the PNG.
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac", "#1f9e89", "#8c6bb1"]
MAX_THEMES = len(PALETTE)
METHODS = ("tsne", "pca")
LAYOUT_VERSION = 4


@dataclass
class MapPoint:
    paper_id: str
    title: str
    x: float
    y: float
    theme: int
    abstract: str
    url: str | None = None
    mark: int | None = None  # citation-style number when the query retrieved it


@dataclass
class MapTheme:
    label: str
    colour: str
    size: int


@dataclass
class CorpusMap:
    points: list[MapPoint]
    themes: list[MapTheme]
    method: str
    name: str
    query: str | None = None
    answerable: bool | None = None
    layout_cached: bool = False
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def marked(self) -> list[MapPoint]:
        return sorted((p for p in self.points if p.mark), key=lambda p: p.mark)

    def as_dict(self) -> dict:
        return {"papers": len(self.points), "method": self.method, "query": self.query, "answerable": self.answerable,
                "themes": [{"label": t.label, "papers": t.size, "colour": t.colour} for t in self.themes],
                "highlighted": [{"n": p.mark, "paper_id": p.paper_id, "title": p.title} for p in self.marked],
                "layout_cached": self.layout_cached, "seconds": round(self.seconds, 2)}


# --- layout -------------------------------------------------------------------------------------


def project(vecs: np.ndarray, method: str = "tsne") -> np.ndarray:
    """2-D coordinates for unit vectors: t-SNE on cosine distance (PCA-initialised) or PCA."""
    n = len(vecs)
    if n == 0:
        return np.zeros((0, 2))
    if n < 4:
        return np.array([[math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)] for i in range(n)])
    from sklearn.decomposition import PCA

    if method == "pca" or n < 8:
        return PCA(n_components=2, random_state=0).fit_transform(vecs)
    from sklearn.manifold import TSNE

    perplexity = float(min(30.0, max(2.0, (n - 1) / 3)))
    return TSNE(n_components=2, perplexity=perplexity, metric="cosine", init="pca", random_state=0,
                learning_rate="auto").fit_transform(vecs)


def theme_count(n: int, per: float) -> int:
    """As in ``summarize`` (sqrt(n / ``per``): tuning.themes_per), capped so every theme keeps a distinct colour and a
    readable label."""
    return max(1, min(MAX_THEMES, n, round(math.sqrt(n / per))))


def _layout(retriever: Retriever, method: str) -> tuple[dict, bool]:
    """Ids, coordinates, theme per paper and theme labels; cached per index fingerprint and method."""
    from assistant.qa.synthesis import cluster, label_terms
    from assistant.store.layout import map_cache

    index = retriever.index
    fingerprint = (index.manifest or {}).get("fingerprint") or index.fingerprint()
    cache_dir = map_cache(retriever.settings)
    cache = cache_dir / f"v{LAYOUT_VERSION}-{method}-{fingerprint}.json"
    if cache.exists():
        try:
            return json.loads(cache.read_text()), True
        except (OSError, ValueError):  # a damaged cache is recomputed, never fatal
            pass
    got = index.papers.get(include=["embeddings"])
    ids = list(got["ids"])
    vecs = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), -1)
    xy = project(vecs, method)
    groups = cluster(vecs, theme_count(len(ids), retriever.settings.tuning.themes_per))
    papers = index.all_papers()
    weights = index.term_weights()
    # biggest themes choose their words first; later ones may not reuse them, so labels stay distinct
    used: set[str] = set()
    labels: dict[int, str] = {}
    order = sorted(range(len(groups)), key=lambda g: -len(groups[g]))
    for g in order:
        stems, words = label_terms([papers[ids[i]].abstract for i in groups[g] if ids[i] in papers], used, weights)
        used |= set(stems)
        labels[g] = ", ".join(words) if words else "other"
    theme_of = np.zeros(len(ids), dtype=int)
    for rank, g in enumerate(order):
        theme_of[groups[g]] = rank
    data = {"ids": ids, "xy": np.round(xy, 4).tolist(), "theme": theme_of.tolist(),
            "labels": [labels[g] for g in order]}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        for old in cache_dir.glob(f"v*-{method}-*.json"):
            old.unlink(missing_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(cache)
    except OSError:  # a read-only index still gets its map, just not cached
        pass
    return data, False


def build_map(retriever: Retriever, query: str | None = None, method: str = "tsne") -> CorpusMap:
    """Lay out every paper in the index; with a query, number the papers it retrieves like citations."""
    if method not in METHODS:
        raise InputError(f"unknown layout {method!r}; choose one of: {', '.join(METHODS)}")
    started = time.perf_counter()
    index = retriever.index
    if index.count() == 0:
        raise InputError("the index is empty; add papers with: assistant ingest PATHS")
    data, cached = _layout(retriever, method)
    papers = index.all_papers()
    marks: dict[str, int] = {}
    answerable = None
    if query:
        from assistant.qa.answer import area_hits, retrieve

        # a map query names an area: one the corpus lacks numbers nothing (as `which` lists nothing)
        retrieval = retrieve(retriever, query, max(retriever.settings.search.top_k, 10))
        answerable = retrieval.answerable
        if answerable and retrieval.hits:  # the papers an area answer to the query cites
            marks = {h.paper_id: n for n, h in enumerate(area_hits(retrieval), 1)}
    xy = np.asarray(data["xy"], dtype=float).reshape(-1, 2)
    points = []
    for pid, (x, y), theme in zip(data["ids"], xy, data["theme"]):
        paper = papers.get(pid)
        if paper is None:
            continue
        points.append(MapPoint(pid, paper.display_title, float(x), float(y), int(theme), paper.abstract,
                               paper.url, marks.get(pid)))
    sizes = np.bincount([p.theme for p in points], minlength=len(data["labels"]))
    themes = [MapTheme(label, PALETTE[t % len(PALETTE)], int(sizes[t])) for t, label in enumerate(data["labels"])]
    name = _corpus_name(papers)
    return CorpusMap(points, themes, method, name, query, answerable, cached, time.perf_counter() - started)


def _corpus_name(papers: dict) -> str:
    """The header most papers came with (e.g. "ICLR 2026 Papers"), else just the count."""
    from collections import Counter

    headers = Counter(str(p.extra.get("collection") or "").strip() for p in papers.values())
    name, count = headers.most_common(1)[0] if headers else ("", 0)
    return name if name and count * 2 >= len(papers) else f"{len(papers):,} papers"


# --- label placement ----------------------------------------------------------------------------


def _overlaps(box, boxes) -> float:
    x0, y0, x1, y1 = box
    total = 0.0
    for a0, b0, a1, b1 in boxes:
        w = min(x1, a1) - max(x0, a0)
        h = min(y1, b1) - max(y0, b0)
        if w > 0 and h > 0:
            total += w * h
    return total


def place_labels(anchors: list[tuple[float, float]], sizes: list[tuple[float, float]], width: float, height: float,
                 taken: list[tuple] | None = None, gap: float = 0.0) -> list[tuple[float, float]]:
    """Centre for each label near its anchor, avoiding earlier labels and ``taken`` boxes, inside the frame.

    Greedy, in the order given: candidate positions on rings of growing radius around the anchor;
    the first that overlaps nothing wins, else the least-overlapping one."""
    boxes = list(taken or [])
    out = []
    for (ax, ay), (w, h) in zip(anchors, sizes):
        best, best_cost = (ax, ay), float("inf")
        # the anchor itself (for centred labels), then rings just clear of it
        candidates = [(ax, ay)] if gap == 0 else []
        for step in range(14):
            radius = gap + step * max(h, 8) * 0.6
            for k in (6, 2, 0, 4, 7, 5, 1, 3):  # above, below, right, left, then diagonals
                c, s = math.cos(k * math.pi / 4), math.sin(k * math.pi / 4)
                candidates.append((ax + c * (radius + w / 2 * abs(c)), ay + s * (radius + h / 2 * abs(s))))
        for cx, cy in candidates:
            cx = min(max(cx, w / 2 + 2), width - w / 2 - 2)
            cy = min(max(cy, h / 2 + 2), height - h / 2 - 2)
            overlap = _overlaps((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), boxes)
            cost = overlap + 1e-3 * math.hypot(cx - ax, cy - ay)
            if cost < best_cost:
                best, best_cost = (cx, cy), cost
            if overlap == 0:  # candidates come nearest first
                break
        w2, h2 = w / 2, h / 2
        boxes.append((best[0] - w2, best[1] - h2, best[0] + w2, best[1] + h2))
        out.append(best)
    return out


def _to_frame(cmap: CorpusMap, width: float, height: float, pad: float) -> np.ndarray:
    """Points scaled (aspect kept) into a width x height frame with padding; y grows downwards."""
    xy = np.array([[p.x, p.y] for p in cmap.points], dtype=float).reshape(-1, 2)
    if len(xy) == 0:
        return xy
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.maximum(hi - lo, 1e-9)
    scale = min((width - 2 * pad) / span[0], (height - 2 * pad) / span[1])
    offset = np.array([(width - span[0] * scale) / 2, (height - span[1] * scale) / 2])
    out = (xy - lo) * scale + offset
    out[:, 1] = height - out[:, 1]
    return out


def _layout_labels(cmap: CorpusMap, frame: np.ndarray, width: float, height: float, theme_size, mark_size,
                   point_r: float) -> tuple[list, list]:
    """Where theme labels and citation numbers go, in frame pixels (numbers first: they sit next to their point)."""
    index = {p.paper_id: i for i, p in enumerate(cmap.points)}
    marked = cmap.marked
    mark_anchor = [tuple(frame[index[p.paper_id]]) for p in marked]
    # the marked points themselves are obstacles for every label
    dots = [(x - point_r * 2, y - point_r * 2, x + point_r * 2, y + point_r * 2) for x, y in mark_anchor]
    sizes = [mark_size(p.mark) for p in marked]
    mark_pos = place_labels(mark_anchor, sizes, width, height, taken=dots, gap=point_r * 2 + 3)
    taken = dots + [(x - w / 2, y - h / 2, x + w / 2, y + h / 2) for (x, y), (w, h) in zip(mark_pos, sizes)]
    centre = {}
    for t, theme in enumerate(cmap.themes):
        members = frame[[i for i, p in enumerate(cmap.points) if p.theme == t]]
        centre[t] = tuple(np.median(members, axis=0)) if len(members) else (width / 2, height / 2)
    theme_pos = place_labels([centre[t] for t in range(len(cmap.themes))],
                             [theme_size(t.label) for t in cmap.themes], width, height, taken=taken)
    return theme_pos, mark_pos


# --- HTML ---------------------------------------------------------------------------------------

HTML_W, HTML_H = 1200.0, 800.0


def write_html(cmap: CorpusMap, path: Path) -> Path:
    """One self-contained page: inline SVG drawing, data gzip+base64 inline, no network at view time."""
    from importlib.resources import files

    n = len(cmap.points)
    point_r = _point_radius(n, HTML_W, HTML_H)
    frame = _to_frame(cmap, HTML_W, HTML_H, pad=40)
    theme_font, mark_font = 15.0, 12.0
    theme_pos, mark_pos = _layout_labels(
        cmap, frame, HTML_W, HTML_H,
        theme_size=lambda s: (0.6 * theme_font * len(s) + 10, theme_font + 6),
        mark_size=lambda m: (0.62 * mark_font * len(str(m)) + 10, mark_font + 6), point_r=point_r + 2)
    papers = [[p.paper_id, p.title, round(float(x), 1), round(float(y), 1), p.theme, p.mark or 0, p.url or "",
               p.abstract] for p, (x, y) in zip(cmap.points, frame)]
    marked_pos = {p.paper_id: pos for p, pos in zip(cmap.marked, mark_pos)}
    payload = {
        "name": cmap.name, "method": cmap.method.upper() if cmap.method == "pca" else "t-SNE", "query": cmap.query,
        "answerable": cmap.answerable, "width": HTML_W, "height": HTML_H, "r": point_r,
        "themes": [[t.label, t.colour, t.size, round(x, 1), round(y, 1)] for t, (x, y) in zip(cmap.themes, theme_pos)],
        "marks": {pid: [round(x, 1), round(y, 1)] for pid, (x, y) in marked_pos.items()},
        "papers": papers,
    }
    blob = base64.b64encode(gzip.compress(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(),
                                          compresslevel=9, mtime=0)).decode()
    template = files("assistant").joinpath("templates/map.html").read_text(encoding="utf-8")
    title = f"Map of {cmap.name}" + (f": {cmap.query}" if cmap.query else "")
    page = (template.replace("{{TITLE}}", _html_escape(title)).replace("{{DATA}}", blob))
    _write(path, page.encode("utf-8"))
    return path


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _point_radius(n: int, width: float, height: float) -> float:
    """Marks shrink as the corpus grows so the cloud keeps its shape (area per point ~ frame area / n)."""
    return float(min(6.0, max(1.2, 0.35 * math.sqrt(width * height / max(n, 1)))))


def _write(path: Path, data: bytes) -> None:
    from assistant.store.files import write_atomically

    try:
        write_atomically(Path(path), data)  # whole or not at all: a full disk leaves no empty file behind
    except OSError as exc:
        # the file system said no (permissions, a full disk): exit 1, as the README's table says, not an input error
        raise AssistantError(f"cannot write {path}: {exc.strerror or exc}") from exc


# --- PNG ----------------------------------------------------------------------------------------


def write_png(cmap: CorpusMap, path: Path, width_px: int = 1920, height_px: int = 1200) -> Path:
    """A static figure for papers and slides: themes coloured and labelled, the query's papers numbered."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patheffects as pe
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    dpi = 120
    marked = cmap.marked
    legend_rows = min(len(marked), 10)
    plot_h = height_px - (28 * (legend_rows + 1) if legend_rows else 0) - 60
    fig = plt.figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    ax = fig.add_axes((0, 1 - (plot_h + 50) / height_px, 1, plot_h / height_px))
    ax.set_xlim(0, width_px)
    ax.set_ylim(plot_h, 0)
    ax.set_axis_off()
    n = len(cmap.points)
    point_r = _point_radius(n, width_px, plot_h)
    frame = _to_frame(cmap, width_px, plot_h, pad=30)
    theme_font, mark_font = 15, 12
    bold = FontProperties(family="DejaVu Sans", weight="bold")
    px = dpi / 72  # points to pixels

    def text_size(text: str, size: float, pad: float) -> tuple[float, float]:
        ext = TextPath((0, 0), text, size=size * px, prop=bold).get_extents()
        return ext.width + pad, size * px + pad

    theme_pos, mark_pos = _layout_labels(cmap, frame, width_px, plot_h,
                                         theme_size=lambda s: text_size(s, theme_font, 10),
                                         mark_size=lambda m: text_size(str(m), mark_font, 10), point_r=point_r + 2)
    colours = [PALETTE[p.theme % len(PALETTE)] for p in cmap.points]
    size_pt = (point_r * 72 / dpi * 2) ** 2
    alpha = 0.5 if marked else 0.85
    ax.scatter(frame[:, 0], frame[:, 1], s=size_pt, c=colours, alpha=alpha, linewidths=0)
    halo = [pe.withStroke(linewidth=4, foreground="white")]
    for t, (x, y) in zip(cmap.themes, theme_pos):
        ax.text(x, y, t.label, ha="center", va="center", fontsize=theme_font, fontproperties=bold, color=t.colour,
                path_effects=halo, zorder=4)
    index = {p.paper_id: i for i, p in enumerate(cmap.points)}
    for p, (lx, ly) in zip(marked, mark_pos):
        x, y = frame[index[p.paper_id]]
        ax.plot([x, lx], [y, ly], color="#333333", linewidth=0.8, zorder=5)
        ax.scatter([x], [y], s=(point_r * 2 + 5) ** 2 * (72 / dpi) ** 2, c=PALETTE[p.theme % len(PALETTE)],
                   edgecolors="black", linewidths=1.5, zorder=6)
        ax.text(lx, ly, str(p.mark), ha="center", va="center", fontsize=mark_font, fontproperties=bold, zorder=7,
                bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": "black", "linewidth": 1})
    method = "PCA" if cmap.method == "pca" else "t-SNE"
    head = f"{cmap.name}: {n:,} papers, {len(cmap.themes)} themes ({method} of MiniLM abstract embeddings)"
    fig.text(0.012, 1 - 18 / height_px, head, fontsize=14, fontproperties=bold, va="top")
    if cmap.query:
        found = f"{len(marked)} papers" if marked else "no paper in the index matches"
        fig.text(0.012, 1 - 44 / height_px, f"Query: “{cmap.query}” — {found}", fontsize=12, va="top")
    for row, p in enumerate(marked[:legend_rows]):
        y = (28 * (legend_rows - row)) / height_px
        title = p.title if len(p.title) <= 110 else p.title[:107] + "…"
        fig.text(0.012, y, f"[{p.mark}] {title}  ({p.paper_id})", fontsize=11, va="bottom")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    plt.close(fig)
    _write(path, buf.getvalue())
    return path


def check_out(path: Path, force: bool = False) -> Path:
    """The output path, checked before any work: a known suffix, an existing folder, and no file of the user's there
    unless ``force``."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm", ".png"):
        raise InputError(f"cannot write a map as {path.suffix or 'a file without suffix'!r}; "
                         "use --out NAME.html or NAME.png")
    if not path.parent.is_dir():
        raise InputError(f"folder {path.parent} does not exist; create it or pick another --out path")
    if path.is_dir():
        raise InputError(f"cannot write the map to {path}: it is a directory")
    if path.exists() and not force:
        raise InputError(f"{path} already exists; add --force to overwrite it, or choose another --out name")
    return path


def write_map(cmap: CorpusMap, path: Path, force: bool = False) -> Path:
    path = check_out(path, force)
    return write_png(cmap, path) if path.suffix.lower() == ".png" else write_html(cmap, path)


def default_out(query: str | None) -> Path:
    if not query:
        return Path("map.html")
    import re

    # letters of any script kept ("Nüwa" was "n-wa", a CJK query "query" for every one); no separator, dot or
    # control character, so the name stays in the folder it is written to
    slug = re.sub(r"[\W_]+", "-", query.casefold()).strip("-")[:40].strip("-") or "query"
    return Path(f"map-{slug}.html")
