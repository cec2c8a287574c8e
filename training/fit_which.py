"""Fit a `which` model, measured and not adopted: P(a paper meets a criterion) from the signals `which` reads of it
(:data:`WHICH_FEATURES`, from assistant.qa.synthesis.read_criterion), on criteria labelled by reading every paper of
a corpus, in place of the hand rule (synthesis.meets_hand_rule). docs/decisions.md gives its figures and why it was
not adopted.

    python training/fit_which.py [--index-dir benchmarks/.work/iclr95] [--out benchmarks/results/which_model.json]

Criteria (``papers`` meet it, ``borderline`` are arguable and left out of the fit and of the scores):
- ``training/inputs/arxiv_a_criteria.jsonl`` over the arXiv training slice benchmarks/data/corpora/arxiv_a.jsonl;
- ``training/inputs/slice_*_criteria.jsonl`` over the 250-paper slices ``slice_X_ids.txt`` lists (of
  training/inputs/arxiv-ml.jsonl.xz, outside every benchmark slice; f-i from the seventh session, j-u the eighth);
- ``benchmarks/data/which_labels.jsonl`` over the bundled corpus.
Never a held-out set (benchmarks/which.py measures the saved model on benchmarks/data/heldout/which_blind*.jsonl).

``--encoder`` (measured, not adopted: docs/reader.md): each criterion read with the criterion encoder
(assistant/embed/query_encoder.py) instead of the embedder, fitted on the criteria the encoder never saw (its validation
fifth, or with ``--folds`` every criterion read by the one of five encoders that left it out), written to
``benchmarks/results/which_encoder_model.json``.

Rows: every paper of a criterion read as a topic (not a name, not a criterion the corpus lacks; those are decided
without the model), a paper whose contribution sentence is the kind asked for included. Logistic regression (C=1,
standardised signals); the threshold is the one with the best F1 of the decisions `which` makes with it over every
criterion (the listed papers: a name's writers, nothing for a lacking criterion, the kind matches and the papers at
or above it). Cross-validated leaving one corpus out: fitted and thresholded on five, scored on the sixth.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import INPUTS, PAPERS, read_jsonl, sha256  # noqa: E402
from fit_decisions import HERE, INDEX_DIR, ROOT, as_dict, corpus_settings, fit, predict  # noqa: E402

from assistant.qa.which_model import FEATURES as WHICH_FEATURES  # noqa: E402
from assistant.qa.which_model import features as which_features  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "which_model.json"
ENCODED = ROOT / "benchmarks" / "results" / "which_encoder_model.json"


def load_model(path: Path = OUT):
    """The saved model (:class:`assistant.search.decide.Logistic`)."""
    from assistant.search.decide import Logistic

    return Logistic.from_dict(json.loads(path.read_text())["model"])


def decision(model, threshold: float | None = None):
    """``reading -> bool mask``: the saved model's decision on each paper of a reading, at its threshold or this."""
    cut = model.threshold if threshold is None else threshold
    return lambda reading: model.probability(which_features(reading)) >= cut


C = 1.0
GRID = [round(float(t), 3) for t in np.arange(0.05, 0.95, 0.025)]


def sources() -> list[tuple[str, Path]]:
    """(corpus, criteria file): the arXiv slices first, then the bundled corpus."""
    out = [("arxiv_a", INPUTS / "arxiv_a_criteria.jsonl")]
    out += [(p.name.replace("_criteria.jsonl", ""), p) for p in sorted(INPUTS.glob("slice_*_criteria.jsonl"))]
    return out + [("bundled", HERE / "data" / "which_labels.jsonl")]


def slice_settings(corpus: str, index_dir: Path):
    """The index of a corpus (built first when missing): a training slice listed by ids is written out as JSONL."""
    if not corpus.startswith("slice_"):
        return corpus_settings(corpus, index_dir)
    from assistant.config import Settings
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    settings = Settings(index_dir=index_dir.parent / corpus, llm_mode="off", rerank="off")
    if not (settings.index.dir / "manifest.json").exists():
        ids = set((INPUTS / f"{corpus}_ids.txt").read_text().split())
        source = index_dir.parent / f"{corpus}.jsonl"
        source.parent.mkdir(parents=True, exist_ok=True)
        with source.open("w", encoding="utf-8") as fh:
            for p in read_jsonl(PAPERS):
                if str(p["id"]) in ids:
                    fh.write(json.dumps({"id": str(p["id"]), "title": p["title"], "abstract": p["abstract"]}) + "\n")
        ingest(load_papers([source])[0], settings)
    return settings


def read_all(index_dir: Path, encoder: bool = False, folds: Path | None = None) -> list[dict]:
    """Each criterion's reading: its corpus, the features of every paper, what is decided without the model.
    ``encoder``: read by the criterion encoder (assistant/embed/query_encoder.py), and of the arXiv slices only the
    criteria it kept for validation (criteria_train.fold_of 0): those it was trained on read better than a new
    criterion will. ``folds``: a folder of the encoders that left out the other fifths (``fold1.npz`` ...
    ``fold4.npz``, criteria_train.py --fold): every arXiv criterion read by the encoder that never saw it."""
    from assistant.embed import query_encoder
    from criteria_train import fold_of

    from assistant.qa.synthesis import strip_leadin

    from assistant.qa import synthesis
    from assistant.search.names import papers_writing
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    out = []
    for corpus, path in sources():
        settings = slice_settings(corpus, index_dir)
        retriever = Retriever(Index(settings), settings)
        started = time.time()
        for item in read_jsonl(path):
            fold = fold_of(item["criterion"]) if encoder and corpus != "bundled" else 0
            if fold and folds is None:
                continue
            mended = retriever.mend(item["criterion"])
            qvec = query_encoder.encode(strip_leadin(mended), folds / f"fold{fold}.npz" if fold else None) \
                if encoder else None
            reading = synthesis.read_criterion(retriever, mended, settings, qvec=qvec)
            fixed = None  # decided without the model: a name's writers, or nothing
            if reading.name is not None:
                fixed = set(papers_writing(retriever.index, reading.name))
            elif reading.lacks:
                fixed = set()
            plain = synthesis.read_criterion(retriever, mended, settings) if encoder else reading
            hand = fixed if fixed is not None else set(plain.kind) | {  # the hand rule as it reads: no encoder
                p for p, m in zip(plain.ids, synthesis.meets_hand_rule(plain, settings.tuning)) if m}
            out.append({"corpus": corpus, "criterion": item["criterion"], "ids": reading.ids, "hand": hand,
                        "x": which_features(reading), "kind": set(reading.kind), "fixed": fixed,
                        "meets": {str(i) for i in item["papers"]}, "skip": {str(i) for i in item.get("borderline", [])}})
        print(f"{corpus}: {sum(r['corpus'] == corpus for r in out)} criteria ({time.time() - started:.0f} s)", flush=True)
    return out


def rows_xy(crits: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for c in crits:
        if c["fixed"] is not None:
            continue
        keep = [i for i, p in enumerate(c["ids"]) if p not in c["skip"]]
        xs.append(c["x"][keep])
        ys += [int(c["ids"][i] in c["meets"]) for i in keep]
    return np.vstack(xs), np.asarray(ys)


def listed(c: dict, params, threshold: float) -> set[str]:
    if c["fixed"] is not None:
        return c["fixed"]
    meets = predict(params, c["x"]) >= threshold
    return c["kind"] | {p for p, m in zip(c["ids"], meets) if m}


def score(crits: list[dict], choose) -> dict:
    tp = fp = fn = absent = 0
    for c in crits:
        got = choose(c) - c["skip"]
        tp, fp, fn = tp + len(got & c["meets"]), fp + len(got - c["meets"]), fn + len(c["meets"] - got)
        absent += 0 if c["meets"] else len(got)
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / max(p + r, 1e-9), 3),
            "listed_for_absent": absent, "criteria": len(crits)}


def fit_and_threshold(crits: list[dict]):
    x, y = rows_xy(crits)
    params = fit(x, y, C)
    threshold = max(GRID, key=lambda t: score(crits, lambda c: listed(c, params, t))["f1"])
    return params, threshold


def cross_validate(crits: list[dict]) -> dict:
    """Leave one corpus out: fitted and thresholded on the others, scored on it; and pooled."""
    per, chosen = {}, {}
    for corpus in dict.fromkeys(c["corpus"] for c in crits):
        train = [c for c in crits if c["corpus"] != corpus]
        test = [c for c in crits if c["corpus"] == corpus]
        params, threshold = fit_and_threshold(train)
        per[corpus] = score(test, lambda c: listed(c, params, threshold)) | {"threshold": threshold}
        chosen.update({id(c): listed(c, params, threshold) for c in test})
    return {"pooled": score(crits, lambda c: chosen[id(c)]), "per_corpus": per,
            "shipped_hand_rule": {"pooled": score(crits, lambda c: c["hand"]), "per_corpus": {
                corpus: score([c for c in crits if c["corpus"] == corpus], lambda c: c["hand"])
                for corpus in dict.fromkeys(c["corpus"] for c in crits)}}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path, default=INDEX_DIR)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--encoder", action="store_true", help="read criteria with the criterion encoder "
                    "(assistant/embed/query_encoder.py; measured, not adopted) and write results/which_encoder_model.json")
    ap.add_argument("--folds", type=Path, help="with --encoder: the folder of the encoders that left out the other "
                    "fifths of the criteria (criteria_train.py --fold 1..4), to read and fit on every criterion")
    args = ap.parse_args()
    args.out = args.out or (ENCODED if args.encoder else OUT)
    crits = read_all(args.index_dir, encoder=args.encoder, folds=args.folds)
    cv = cross_validate(crits)
    params, threshold = fit_and_threshold(crits)
    print("leave one corpus out:", json.dumps(cv["pooled"]))
    print("the shipped hand rule:", json.dumps(cv["shipped_hand_rule"]["pooled"]))
    for corpus, s in cv["per_corpus"].items():
        print(f"  {corpus:8} {json.dumps(s)}")
    x, y = rows_xy(crits)
    provenance = {"script": "training/fit_which.py", "fitted_on": {corpus: f"{path.relative_to(ROOT)} "
                                                                           f"(sha256 {sha256(path)[:16]})"
                                                                   for corpus, path in sources()},
                  "rows": int(len(y)), "positives": int(y.sum()), "criteria": len(crits), "C": C,
                  "threshold_rule": "best F1 of the listed papers over every criterion",
                  "cross_validation": "leave one corpus out"}
    if args.encoder:
        from assistant.embed import query_encoder

        encoder = sha256(query_encoder.weights_path())[:16]
        provenance |= {"encoder": f"assistant/data/query_encoder.npz (sha256 {encoder})",
                       "arxiv_criteria": "only those the encoder kept for validation (never trained on)"
                       if args.folds is None else "every one, read by the encoder of the five that never saw it "
                                                  "(criteria_train.py --fold 0..4; 0 is the shipped one)",
                       "command": " ".join(["python training/fit_which.py", *sys.argv[1:]])}
    out = {"provenance": provenance, "cv": cv,
           "model": as_dict(params, WHICH_FEATURES, threshold),
           "in_sample": score(crits, lambda c: listed(c, params, threshold))}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"threshold {threshold}; in sample {json.dumps(out['in_sample'])}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
