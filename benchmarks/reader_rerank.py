"""Could the reader (training/models/reader) or the question encoder (assistant/data/query_encoder.npz) re-rank in
place of SmolLM2 (issue 48, item 4)? Among the 19,972 distractors, on the training question files (the dev set and
benchmarks/data/*.jsonl, as benchmarks/rerank.py scores them), offline and extractive.

    python benchmarks/reader_rerank.py [--files dev,...] [--record FILE] [--reader-dir DIR] [--encoder FILE]
                                       [--label NAME] [--json OUT]

For every question, the search whose order the answer shows (the last one the question runs past the relevance
gate) is recorded: its fused top 20 and, for each of those papers, the reader's log-odds on three passages (title and
abstract, as SmolLM2 reads; the abstract alone, as the reader was trained; the paper's best chunk) and the encoder's
best-chunk cosine. Nothing is re-ordered while recording, so the rows are the package without re-ranking. Each
blend (fused + w x signal, the top 20 re-ordered when the top two fused scores are closer than the margin, as
``Retriever._rerank`` does) is then scored on the single-gold questions: R@1, R@5, MRR. Questions no search
recorded (refused at the gate) keep their order. ``--record FILE`` reads a recording instead of making one (~25 min
on 2 busy cores) and writes there when it makes one.

``--reader-dir DIR`` scores a recording's abstracts again with another reader (reader.onnx and manifest.json in
DIR: a candidate trained on other data), in place of the shipped one's ``reader_abstract``.

``--encoder FILE`` scores the recorded searches' ``encoder`` again with another question encoder (an npz as
query_encoder.py reads; training/question_encoder_train.py makes one), and adds ``encoder_swap``: its best-chunk
cosine minus the embedder's, so that fused + 0.5 x encoder_swap is the fused score with the encoder's cosine in
place of the embedder's (the dense weight is 0.5). Reported for every file and for the dev set with blind 4, 9 and
10 (the files benchmarks/rerank.py's SmolLM2 row was measured on). ``--label`` keeps the run under that name
beside the others in the JSON.

Also reported (``seen_gap``): whether the reader favours the distractors it was trained on. Of the arXiv papers in
the recorded top 20s, those of a held-out slice (benchmarks/data/heldout/arxiv300*.jsonl, never in its training)
against the rest, each signal's mean difference (trained on - never seen) at the same fused rank, weighed by the
unseen papers at each rank. Writes benchmarks/results/reader_rerank.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _results import save
from question_sets import question_files

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
DEPTH = 20
WEIGHTS = {"reader": (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 1.0), "encoder": (0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0)}
#: The files benchmarks/rerank.py's SmolLM2 row (label s12_training_dev4910) was measured on.
DEV4910 = ("dev", "blind_questions_4", "blind_questions_9", "blind_questions_10")
MARGINS = (0.05, 0.1, 100.0)  # 0.05 is the shipped close-call margin; 100: every question


def record(files: list[Path], index: Path) -> dict:
    """Each question's row (gold, the answer's ranking) and its recorded search (see the module's docstring)."""
    from assistant.config import Settings
    from assistant.embed import query_encoder
    from assistant.search import retrieve
    from assistant.service.evaluate import evaluate_questions, load_questions
    from assistant.store.dense import dense_side
    from reader_model import reader

    model, searches, at = reader(), {}, {}

    def recorded(self, query, order, fused, papers, side):
        top = [pid for pid in order[:DEPTH] if pid in papers]
        best = side.best_chunks(top)
        chunks = self.index.chunk_texts(list(best.values()))
        passages = {"title_abstract": [f"{papers[p].title}. {papers[p].abstract}" if papers[p].title
                                       else papers[p].abstract for p in top],
                    "abstract": [papers[p].abstract for p in top],
                    "chunk": [chunks.get(best[p]) or papers[p].abstract for p in top]}
        encoded = dense_side(self, query_encoder.encode(query)).exact(top)
        searches[(at["file"], at["row"])] = {  # the last search of a question is the one its answer shows
            "query": query, "top": top, "fused": [fused[p] for p in top], "encoder": [float(encoded[p]) for p in top],
            **{f"reader_{k}": model.logits(query, v).tolist() for k, v in passages.items()}}
        return order, {}

    retrieve.Retriever._rerank = recorded
    # re-ranking "on" with a margin no search falls outside, so every search past the gate is recorded
    settings = Settings(index_dir=index, llm_mode="off").replace(rerank="smollm2", rerank_margin=100.0)
    rows, started = {}, time.process_time()
    for path in files:
        at.update(file=path.stem, row=0)
        report = evaluate_questions(load_questions(path), settings,
                                    on_row=lambda _row: at.update(row=at["row"] + 1))
        rows[path.stem] = [{"id": r["id"], "gold": sorted(r["_gold"]), "hits": r["hits"][:10],
                            "search": searches.get((path.stem, i))} for i, r in enumerate(report.rows)]
        print(f"{path.stem}: {len(report.rows)} questions ({time.process_time() - started:.0f} s CPU)",
              file=sys.stderr, flush=True)
    return rows


def rescore(rows: dict, reader_dir: Path) -> None:
    """Each recorded search's ``reader_abstract`` from the reader in ``reader_dir`` (abstracts read from the bundled
    corpus and training/inputs/arxiv-ml.jsonl.xz by id)."""
    import lzma

    from assistant.text.corpus import load_papers
    from reader_model import Reader

    wanted = {pid for file_rows in rows.values() for row in file_rows if row["search"] for pid in row["search"]["top"]}
    abstracts = {p.id: p.abstract for p in load_papers()[0] if p.id in wanted}
    with lzma.open(HERE.parent / "training" / "inputs" / "arxiv-ml.jsonl.xz", "rt") as f:
        for line in f:
            if line.strip() and (p := json.loads(line)) and str(p["id"]) in wanted:
                abstracts[str(p["id"])] = p["abstract"]
    model = Reader(reader_dir)
    for file_rows in rows.values():
        for row in file_rows:
            if found := row["search"]:
                found["reader_abstract"] = model.logits(found["query"], [abstracts[p] for p in found["top"]]).tolist()


def rescore_encoder(rows: dict, path: Path, index: Path) -> None:
    """Each recorded search's ``encoder`` from the question encoder at ``path``, and ``encoder_swap`` (that cosine
    minus the embedder's, each paper's best chunk), read from the index's chunk vectors."""
    import numpy as np

    from assistant.config import Settings
    from assistant.embed import query_encoder
    from assistant.embed.embedder import embed_query
    from assistant.embed.embedders import get_embedder
    from assistant.store.index import Index

    settings = Settings.from_env(index_dir=index)
    vectors, embedder = Index(settings).chunk_vectors(), get_embedder(settings)

    def best(qvec, pids: list[str]) -> list[float]:
        return [float((vectors.matrix[list(vectors.rows(vectors.position[p]))] @ qvec).max()) for p in pids]

    for file_rows in rows.values():
        for row in file_rows:
            if found := row["search"]:
                asked = best(query_encoder.encode(found["query"], path), found["top"])
                dense = best(np.asarray(embed_query(embedder, found["query"])), found["top"])
                found["encoder"], found["encoder_swap"] = asked, [a - d for a, d in zip(asked, dense)]


def log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x > -30 else x


def scored(rows: dict, signal: str | None, weight: float, margin: float, squash: bool = False) -> dict:
    """R@1, R@5 and MRR over the single-gold questions with this blend (``signal`` None: the recorded order)."""
    n = r1 = r5 = 0
    rr = 0.0
    for file_rows in rows.values():
        for row in file_rows:
            if len(row["gold"]) != 1:
                continue
            found, gold = row["search"], row["gold"][0]
            order = row["hits"] if found is None else list(found["top"])
            if signal and found and len(order) > 1 and found["fused"][0] - found["fused"][1] < margin:
                blend = {p: f + weight * (log_sigmoid(s) if squash else s)
                         for p, f, s in zip(found["top"], found["fused"], found[signal])}
                order = sorted(order, key=lambda p: -blend[p])
            n += 1
            r1 += order[:1] == [gold]
            r5 += gold in order[:5]
            rr += 1 / (order.index(gold) + 1) if gold in order else 0.0
    return {"questions": n, "R@1": round(r1 / n, 4), "R@5": round(r5 / n, 4), "MRR": round(rr / n, 4)}


def grid(rows: dict) -> list[dict]:
    out = [{"signal": "none (the package without re-ranking)", **scored(rows, None, 0.0, 0.0)}]
    signals = ("reader_title_abstract", "reader_abstract", "reader_chunk", "encoder", "encoder_swap")
    found = [row["search"] for file_rows in rows.values() for row in file_rows if row["search"]]
    for signal in (s for s in signals if found and s in found[0]):
        squashes = (False, True) if signal.startswith("reader") else (False,)
        for squash in squashes:
            for margin in MARGINS:
                for w in WEIGHTS["reader" if signal.startswith("reader") else "encoder"] + \
                        ((0.4, 0.7) if signal == "encoder_swap" else ()):
                    out.append({"signal": signal + (" (log-sigmoid)" if squash else ""), "margin": margin,
                                "weight": w, **scored(rows, signal, w, margin, squash)})
    return out


def seen_gap(rows: dict) -> dict:
    """Each signal's mean over the trained-on distractors minus the never-seen ones, at the same fused rank."""
    import numpy as np

    held = {json.loads(line)["id"] for path in (HERE / "data" / "heldout").glob("arxiv300*.jsonl")
            if "questions" not in path.name for line in path.read_text().splitlines() if line.strip()}
    signals = ("fused", "reader_abstract", "reader_chunk", "encoder")
    slots = [(k, pid in held, *(found[s][k] for s in signals))
             for file_rows in rows.values() for row in file_rows if (found := row["search"]) and found["encoder"]
             for k, pid in enumerate(found["top"]) if "#" not in pid]  # bundled papers' ids hold a "#"
    a = np.array(slots, dtype=float)
    out = {"slots": len(a), "never_seen": int(a[:, 1].sum())}
    for n, name in enumerate(signals, 2):
        gaps, weights = [], []
        for k in range(DEPTH):
            at = a[:, 0] == k
            seen, unseen = a[at & (a[:, 1] == 0), n], a[at & (a[:, 1] == 1), n]
            if len(unseen) >= 5:
                gaps.append(seen.mean() - unseen.mean())
                weights.append(len(unseen))
        out[name] = round(float(np.average(gaps, weights=weights)), 4)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", help="comma-separated stems; default every training file")
    ap.add_argument("--distractors-index", type=Path, default=HERE / ".work" / "iclr_arxiv")
    ap.add_argument("--record", type=Path, help="a recording to read, or where to write the one made")
    ap.add_argument("--reader-dir", type=Path, help="score the abstracts again with this reader (a candidate)")
    ap.add_argument("--encoder", type=Path, help="score the searches again with this question encoder (a candidate)")
    ap.add_argument("--label", help="keep this run under this name beside the others in the JSON")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "reader_rerank.json")
    args = ap.parse_args()
    if args.record and args.record.exists():
        rows = json.loads(args.record.read_text())
    else:
        if not (args.distractors_index / "manifest.json").exists():
            print(f"no index at {args.distractors_index}: build it with benchmarks/retrieval.py --distractors")
            return 1
        files = question_files(args.shared)
        if args.files:
            files = [f for f in files if f.stem in args.files.split(",")]
        rows = record(files, args.distractors_index)
        if args.record:
            args.record.write_text(json.dumps(rows))
    if args.reader_dir:
        rescore(rows, args.reader_dir)
    if args.encoder:
        rescore_encoder(rows, args.encoder, args.distractors_index)
    out = {"date": time.strftime("%Y-%m-%d"), "depth": DEPTH, "files": sorted(rows)}
    for name, subset in (("results", rows), ("results_dev4910", {k: v for k, v in rows.items() if k in DEV4910})):
        if not subset:
            continue
        results = grid(subset)
        base = results[0]
        print(f"{name}: {'signal':34} {'margin':>6} {'weight':>6} {'R@1':>6} {'R@5':>6} {'MRR':>6}")
        for r in sorted(results[1:], key=lambda r: (-r["R@5"], -r["R@1"]))[:12] + [base]:
            print(f"{r['signal'][:34]:34} {r.get('margin', ''):>6} {r.get('weight', ''):>6} "
                  f"{r['R@1']:6.3f} {r['R@5']:6.3f} {r['MRR']:6.3f}")
        out[name] = results
    if not args.encoder:
        out["seen_gap"] = seen_gap(rows)
        print(f"trained-on minus never-seen distractors at the same fused rank: {out['seen_gap']}")
    save(args.json, out, args.label, {"reader": str(args.reader_dir or "shipped"),
                                      "encoder": str(args.encoder or "shipped")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
