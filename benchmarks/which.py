"""`assistant which`: how many of the papers that meet a criterion it lists, and how many it lists wrongly.

Labels: ``benchmarks/data/which_labels.jsonl``, 27 criteria over the bundled 95-paper ICLR corpus
("papers using diffusion models", "papers on LLM-based agents", ...), each labelled by reading all 95
abstracts: ``papers`` meet it (a substantial part of what the paper does), ``borderline`` are
arguable and not scored either way; topics the corpus does not cover have empty lists. The labels were made
without looking at any ranking. The held-out sets (``data/heldout/which_blind*.jsonl``) are
read the same way with ``--labels``.

Scored, in this run, on the shipped ``assistant.qa.synthesis.which`` (offline, since 2026-12-07: the fitted `which`
model on the question encoder's reading, assistant/data/which.json; docs/decisions.md), the hand rule it replaced and
``summarize`` still lists (``which(..., precise=True)``: fused score >= 0.6 of the best, an outlier on dense or fused,
cosine >= 0.3, chosen on which_labels.jsonl), the rule before that (a dense-only outlier with a per-paper cosine >=
the 0.41 gate), and the fitted `which` model on the embedder's reading, measured and not adopted
(training/fit_which.py, saved in results/which_model.json: at its threshold, chosen on the training criteria, and
at others, so a person can see the curve it sits on; never chosen here). Where this checkout has the criterion
encoder's weights (shipped: assistant/data/query_encoder.npz, training/criteria_train.py) and its model
(training/fit_which.py --encoder --folds -> results/which_encoder_model.json), also the eighth session's candidate,
measured and not adopted (docs/reader.md; fitted on 847 criteria read by that session's encoders, without the
contrasting pairs; the shipped model is the fit on the shipped encoder's reading).

    python benchmarks/which.py [--labels FILE] [--index-dir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np
import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent


def previous_rule(retriever, criterion: str) -> list[str]:
    """The rule before the hand rule: dense robust-z outlier and best-chunk cosine >= the gate."""
    from assistant.qa.synthesis import _paper_scores, strip_leadin
    from assistant.qa.which_model import robust_z as _robust_z

    ids, dense = _paper_scores(retriever, retriever.embed_query(strip_leadin(criterion)))
    z_cut = NormalDist().inv_cdf(1 - 1 / len(ids))
    keep = (_robust_z(dense) >= z_cut) & (dense >= retriever.threshold())
    return [ids[i] for i in np.flatnonzero(keep)]


def listed_at(retriever, criterion: str, decide, encoder: bool = False) -> list[str]:
    """What `which` would list if each topical paper of its reading (``encoder``: the criterion's vector the
    criterion encoder's, assistant/embed/query_encoder.py) were decided by ``decide(reading) -> bool mask`` (a name's
    writers, nothing for a criterion the corpus lacks, and the kind matches, as shipped)."""
    from assistant.qa import synthesis
    from assistant.search.names import papers_writing

    mended = retriever.mend(criterion)
    qvec = None
    if encoder:
        from assistant.embed import query_encoder

        qvec = query_encoder.encode(synthesis.strip_leadin(mended))
    reading = synthesis.read_criterion(retriever, mended, retriever.settings, qvec=qvec)
    if reading is None or reading.lacks:
        return []
    if reading.name is not None:
        return list(papers_writing(retriever.index, reading.name))
    return [p for p, keep in zip(reading.ids, decide(reading)) if keep or p in reading.kind]


def counts(listed: dict[str, list[str]], item: dict) -> tuple[int, int, int]:
    """(right, wrong, missed) for one criterion; borderline papers count as neither."""
    got = set(listed[item["criterion"]]) - set(item["borderline"])
    gold = set(item["papers"])
    return len(got & gold), len(got - gold), len(gold - got)


def prf(tp: int, fp: int, fn: int) -> dict:
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / max(p + r, 1e-9), 3)}


def score(listed: dict[str, list[str]], labels: list[dict]) -> dict:
    tp, fp, fn = (sum(c) for c in zip(*(counts(listed, item) for item in labels)))
    absent = sum(len(listed[i["criterion"]]) for i in labels if not i["papers"])
    return {**prf(tp, fp, fn), "listed_for_absent_topics": absent}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--labels", type=Path, default=HERE / "data" / "which_labels.jsonl")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "which.json")
    args = ap.parse_args()
    from assistant.qa import synthesis
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index
    from assistant.embed import query_encoder
    from fit_which import ENCODED, decision, load_model

    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    settings = bundled_index(args.index_dir, llm_mode="off")
    retriever = Retriever(Index(settings), settings)

    def shipped() -> dict[str, list[str]]:
        return {i["criterion"]: [f.paper_id for f in synthesis.which(retriever, i["criterion"]).papers] for i in labels}

    default = shipped()
    rule = {i["criterion"]: [f.paper_id for f in synthesis.which(retriever, i["criterion"], precise=True).papers]
            for i in labels}
    previous = {i["criterion"]: previous_rule(retriever, i["criterion"]) for i in labels}
    model = load_model()
    fitted = {i["criterion"]: listed_at(retriever, i["criterion"], decision(model)) for i in labels}
    result = {"labels": str(args.labels.name), "criteria": len(labels),
              "shipped": score(default, labels),
              "hand_rule": {"ratio": settings.tuning.which_ratio, "min_cosine": settings.tuning.which_min_cosine,
                            **score(rule, labels)},
              "fitted_not_adopted": {"threshold": model.threshold, **score(fitted, labels)},
              "previous": score(previous, labels), "per_criterion": [], "grid": []}
    if query_encoder.available() and ENCODED.exists():  # the criterion encoder and its model, not adopted
        encoded = load_model(ENCODED)
        listed = {i["criterion"]: listed_at(retriever, i["criterion"], decision(encoded), encoder=True)
                  for i in labels}
        result["encoder_not_adopted"] = {"threshold": encoded.threshold, **score(listed, labels)}
    print(f"{'criterion':58} {'meet':>4} {'borderline':>10} {'listed':>6} {'right':>5} {'before':>6} {'right':>5}")
    for item in labels:
        gold, border = set(item["papers"]), set(item["borderline"])
        now, before = set(default[item["criterion"]]) - border, set(previous[item["criterion"]]) - border
        row = {"criterion": item["criterion"], "meet": len(gold), "borderline": len(border),
               "listed": len(now), "right": len(now & gold), "listed_before": len(before),
               "right_before": len(before & gold)}
        result["per_criterion"].append(row)
        print(f"{item['criterion'][:58]:58} {len(gold):4} {len(border):10} {len(now):6} {len(now & gold):5} "
              f"{len(before):6} {len(before & gold):5}")
    grid = []
    for t in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
        grid.append(({"threshold": t}, {i["criterion"]: listed_at(retriever, i["criterion"], decision(model, t))
                                        for i in labels}))
    result["grid"] = [{**g, **score(listed, labels)} for g, listed in grid]
    print("\n(borderline papers are neither right nor wrong; 'listed' excludes them)\n")
    print(f"{'rule':40} {'precision':>9} {'recall':>6} {'F1':>5} {'listed for absent topics':>25}")
    for name, s in (("previous (dense outlier, cosine >= gate)", result["previous"]),
                    (f"hand rule (ratio {settings.tuning.which_ratio}, cosine >= "
                     f"{settings.tuning.which_min_cosine})", result["hand_rule"]),
                    ("shipped (encoder + which.json)", result["shipped"]),
                    (f"embedder's reading, model (p >= {model.threshold})", result["fitted_not_adopted"]),
                    *([("session 8 encoder model, not adopted", result["encoder_not_adopted"])]
                      if "encoder_not_adopted" in result else [])):
        print(f"{name:40} {s['precision']:9.3f} {s['recall']:6.3f} {s['f1']:5.3f} {s['listed_for_absent_topics']:25}")
    for g in result["grid"]:
        print(f"{'  fitted at p >= %.2f' % g['threshold']:40} {g['precision']:9.3f} "
              f"{g['recall']:6.3f} {g['f1']:5.3f} {g['listed_for_absent_topics']:25}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
