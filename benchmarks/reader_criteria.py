"""Does the reader read a `which` criterion better than the cosine? On the criteria the reader's second stage kept
for validation (training/reader_data.py's validation_query: one in five, never trained on), over every paper of the
slice each was labelled on.

    python benchmarks/reader_criteria.py [--model DIR ...] [--label NAME]

For each model folder (default: the shipped training/models/reader) and for the cosine `which` reads: the AUC with
which its per-paper score tells the papers that meet a criterion from those that do not (borderline papers left
out), pooled over the criteria. Then the fitted `which` model (training/fit_which.py's signals) with and without
each reader's logit and its robust z-score as two more signals, fitted and thresholded leaving one criterion out,
scored by precision and recall as `which` lists. Writes benchmarks/results/reader_criteria.json (keyed by label).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import _training  # noqa: F401  (training/ on sys.path: the fits' library and the reader)

HERE = Path(__file__).resolve().parent


def leave_one_criterion_out(crits: list[dict], extra: list[str]) -> dict:
    """The fitted `which` model on the signals plus ``extra`` readers' logits, one criterion left out at a time."""
    from fit_which import fit_and_threshold, listed, score

    from assistant.qa.which_model import robust_z as _robust_z

    wide = [dict(c, x=np.hstack([c["x"]] + [np.column_stack([c[m], _robust_z(c[m])]) for m in extra]))
            for c in crits]
    chosen = {}
    for k, c in enumerate(wide):
        params, threshold = fit_and_threshold(wide[:k] + wide[k + 1:])
        chosen[id(c)] = listed(c, params, threshold)
    return score(wide, lambda c: chosen[id(c)])


def auc(scores: list[float], labels: list[int]) -> float:
    from fit_decisions import auc as pooled_auc

    s, y = np.asarray(scores), np.asarray(labels, dtype=bool)
    return round(pooled_auc(s[y], s[~y]), 4)


def main() -> int:
    from fit_which import INDEX_DIR, read_all, slice_settings
    from reader_data import validation_query
    from reader_model import Reader, model_dir

    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, action="append", help="a reader's folder (repeatable)")
    ap.add_argument("--label", default="run")
    args = ap.parse_args()
    models = {str(m): Reader(m) for m in (args.model or [model_dir()])}
    crits = [c for c in read_all(INDEX_DIR) if c["corpus"] != "bundled" and validation_query(c["criterion"])]
    abstracts = {}
    for corpus in dict.fromkeys(c["corpus"] for c in crits):
        settings = slice_settings(corpus, INDEX_DIR)
        abstracts[corpus] = {pid: p.abstract for pid, p in Retriever(Index(settings), settings).papers().items()}
    for n, c in enumerate(crits, 1):
        for name, model in models.items():
            c[name] = model.logits(c["criterion"], [abstracts[c["corpus"]][p] for p in c["ids"]]).astype(float)
        print(f"{n}/{len(crits)} {c['criterion'][:60]}", flush=True)
    keep = [(c, i) for c in crits for i, p in enumerate(c["ids"]) if p not in c["skip"]]
    labels = [int(c["ids"][i] in c["meets"]) for c, i in keep]
    out = {"criteria": len(crits), "pairs": len(keep),
           "auc": {"cosine": auc([float(c["x"][i, 0]) for c, i in keep], labels)}
           | {name: auc([float(c[name][i]) for c, i in keep], labels) for name in models},
           "fitted_which_leave_one_criterion_out": {"signals": leave_one_criterion_out(crits, [])}
           | {f"signals + {name}": leave_one_criterion_out(crits, [name]) for name in models}}
    print(json.dumps(out, indent=1))
    path = HERE / "results" / "reader_criteria.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[args.label] = out
    path.write_text(json.dumps(saved, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
