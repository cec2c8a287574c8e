"""`which` on criteria that share a key term a modifier apart ("dataset distillation" against "knowledge
distillation"): does it list the papers of the one asked and not those of its twin?

    python benchmarks/which_pairs.py [--all] [--label NAME]

Criteria: the contrasting pairs of ``training/inputs/slice_{j..o}_pairs.jsonl`` (144 criteria, two a pair, each
labelled by reading every paper of its 250-paper arXiv training slice: ``papers`` meet it, ``borderline`` are
arguable and not scored). By default only those the shipped question encoder kept for validation
(``criteria_train.fold_of`` 0: it was trained on the other four fifths, and the `which` model was fitted on none
of them); ``--all`` every one, the encoder's training criteria included. Each criterion is listed two ways, offline:
by the hand rule (``which(..., precise=True)``, what ``summarize`` lists) and by ``which`` as shipped (the fitted
`which` model, on the encoder's reading, where the package has it). Scored as benchmarks/which.py scores: precision
and recall over the listed papers, borderline ones left out; papers of the twin criterion listed are counted apart.
Writes benchmarks/results/which_pairs.json (under ``runs[label]`` with ``--label``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _results import save
from which import prf

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "which_pairs.json"


def pairs(every: bool) -> list[dict]:
    """The pair criteria, each with its corpus and its twin's papers."""
    from criteria_train import fold_of

    out = []
    for path in sorted((ROOT / "training" / "inputs").glob("slice_*_pairs.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for row in rows:
            twin = [r for r in rows if r["pair"] == row["pair"] and r is not row]
            if every or fold_of(row["criterion"]) == 0:
                out.append(row | {"corpus": path.name.replace("_pairs.jsonl", ""),
                                  "twin": {p for t in twin for p in t["papers"]} - set(row["papers"])})
    return out


def tally(rows: list[dict], key: str) -> dict:
    tp = fp = fn = twin = 0
    for r in rows:
        got = set(r[key]) - set(r["borderline"])
        gold = set(r["papers"])
        tp, fp, fn = tp + len(got & gold), fp + len(got - gold), fn + len(gold - got)
        twin += len(got & r["twin"])
    return {**prf(tp, fp, fn), "twin_papers_listed": twin, "listed": tp + fp}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every pair criterion, the encoder's training ones included")
    ap.add_argument("--label", help="keep this run under runs[LABEL] in the results file")
    args = ap.parse_args()
    from fit_which import slice_settings
    from fit_decisions import INDEX_DIR

    from assistant.qa import synthesis
    from assistant.search.retrieve import Retriever
    from assistant.store.index import Index

    rows = pairs(args.all)
    retrievers = {}
    for r in rows:
        if r["corpus"] not in retrievers:
            settings = slice_settings(r["corpus"], INDEX_DIR)
            retrievers[r["corpus"]] = Retriever(Index(settings), settings)
        retriever = retrievers[r["corpus"]]
        r["rule"] = [f.paper_id for f in synthesis.which(retriever, r["criterion"], precise=True).papers]
        r["shipped"] = [f.paper_id for f in synthesis.which(retriever, r["criterion"]).papers]
        print(f"{r['corpus']} pair {r['pair']:>2}: rule {len(r['rule']):>2} shipped {len(r['shipped']):>2} "
              f"meet {len(r['papers']):>2}  {r['criterion'][:70]}", flush=True)
    out = {"criteria": len(rows), "which": "every pair criterion" if args.all else "the encoder's validation fifth",
           "hand_rule": tally(rows, "rule"), "shipped": tally(rows, "shipped"),
           "per_criterion": [{k: (sorted(v) if isinstance(v, set) else v) for k, v in r.items()} for r in rows]}
    print(f"hand rule {json.dumps(out['hand_rule'])}\nshipped   {json.dumps(out['shipped'])}")
    save(OUT, out, args.label, {"argv": sys.argv[1:]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
