"""What the reader's features would add to the fitted decisions, on the same training rows: the answerable model and
the relevance model fitted leave one file out with and without them (reader_top: the reader's probability for the
top paper; reader_max3: the highest of the top three; per paper, its own). Measured, not adopted (docs/reader.md).

    python benchmarks/reader_features.py [--signals-cache benchmarks/.work/signals.json]

Reads fit_decisions.py's signals cache (run python -m training --only decisions first) and scores each question's
retrieved papers with training/models/reader (cached in benchmarks/.work/reader_scores.json). Prints, for each variant,
the answerable model's out-of-fold AUC and none accuracy at <= 3% false refusals, over all training files and
without parts_training (the topics held only apart, added with the reader), and that file's none accuracy; the
relevance model's gold kept at <= 8% non-gold. Writes benchmarks/results/reader_features.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import _training  # noqa: F401  (training/ on sys.path: the fits' library and the reader)
import fit_decisions as fd

HERE = Path(__file__).resolve().parent


def answerable(rows: list[dict], names: tuple[str, ...]) -> dict:
    x = np.array([[r["signals"][n] for n in names] for r in rows])
    y = np.array([r["type"] != "none" for r in rows], dtype=float)
    groups = [r["file"] for r in rows]
    oof = fd.out_of_fold(x, y, groups, fd.C["answerable"])
    t, none_acc, fr = fd.at_false_refusals(oof, y)
    parts = np.array([g == "parts_training" for g in groups])
    return {"auc": round(fd.auc(oof[y == 1], oof[y == 0]), 4), "none_accuracy": round(none_acc, 3),
            "false_refusals": round(fr, 3), "absent": int((y == 0).sum()), "answerable": int(y.sum()),
            "parts_none_accuracy": round(float(np.mean(oof[parts & (y == 0)] < t)), 3) if (parts & (y == 0)).any() else None}


def relevant(rows: list[dict], names: tuple[str, ...]) -> dict:
    pr, yr, gr = [], [], []
    for r in rows:
        if r["type"] == "none" or not r["gold"]:
            continue
        for pid, p in zip(r["hits"], r["papers"]):
            pr.append([(p | {"area": r["signals"]["area"]}).get(n, 0.0) for n in names])
            yr.append(pid in r["gold"])
            gr.append(r["file"])
    x, y = np.array(pr), np.array(yr, dtype=float)
    oof = fd.out_of_fold(x, y, gr, fd.C["relevant"])
    ok = [t for t in np.unique(oof) if np.mean(y[oof >= t] == 0) <= fd.MAX_NONGOLD]
    t = float(min(ok))
    return {"auc": round(fd.auc(oof[y == 1], oof[y == 0]), 4), "gold_kept": round(float(np.mean(oof[y == 1] >= t)), 3),
            "nongold_share": round(float(np.mean(y[oof >= t] == 0)), 3)}


READER_SIGNALS = ("reader_top", "reader_max3")


def add_reader(rows: list[dict], cache: Path) -> None:
    """Each row's papers and question with the reader's probabilities (its corpus's abstracts)."""
    from reader_model import reader

    scores = json.loads(cache.read_text()) if cache.exists() else {}
    papers_by: dict[str, dict] = {}
    model = reader()
    for n, r in enumerate(rows):
        key = f"{r['corpus']}\t{r['question']}"
        if key not in scores:
            if r["corpus"] not in papers_by:
                from assistant.store.index import Index

                papers_by[r["corpus"]] = Index(fd.corpus_settings(r["corpus"], fd.INDEX_DIR)).all_papers()
            papers = papers_by[r["corpus"]]
            scores[key] = [float(p) for p in model.probabilities(r["question"], [papers[h].abstract for h in r["hits"]])]
            if n % 100 == 0:
                print(f"  reader: {n}/{len(rows)} questions", flush=True)
        probs = scores[key]
        for p, v in zip(r["papers"], probs):
            p["reader"] = v
        r["signals"]["reader_top"] = probs[0] if probs else 0.0
        r["signals"]["reader_max3"] = max(probs[:3], default=0.0)
    cache.write_text(json.dumps(scores))


def main() -> int:
    from assistant.search import decide

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
    args = ap.parse_args()
    rows, _ = fd.training_signals(args.signals_cache)
    ans = fd.answerable_rows(rows)
    add_reader(ans, args.signals_cache.with_name("reader_scores.json"))
    with_q, with_p = decide.QUESTION_SIGNALS + READER_SIGNALS, decide.PAPER_SIGNALS + ("reader",)
    out = {}
    for label, sub in (("all files", ans), ("without parts_training", [r for r in ans if r["file"] != "parts_training"])):
        for variant, names in (("without reader", decide.QUESTION_SIGNALS), ("with reader", with_q)):
            out[f"answerable, {label}, {variant}"] = answerable(sub, names)
    for n in READER_SIGNALS + ("top_cos",):
        x = np.array([r["signals"][n] for r in ans])
        y = np.array([r["type"] != "none" for r in ans])
        out[f"{n} alone, AUC"] = round(fd.auc(x[y], x[~y]), 4)
    for variant, names in (("without reader", decide.PAPER_SIGNALS), ("with reader", with_p)):
        out[f"relevant, {variant}"] = relevant(ans, names)
    for k, v in out.items():
        print(f"{k:55} {v}")
    (HERE / "results" / "reader_features.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
