"""The relevance model with and without the question's intent (its area probability), leave one file out on the
signals training/fit_decisions.py collects: AUC, and at its threshold rule (non-gold share <= MAX_NONGOLD) the
precision and gold recall of area and of single-gold questions' top-5 papers (the top one always cited).

    python benchmarks/relevance_variants.py [--index-dir DIR] [--signals-cache FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
import fit_decisions as F

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path, default=HERE / ".work" / "iclr95")
    ap.add_argument("--signals-cache", type=Path, default=HERE / ".work" / "signals.json")
    args = ap.parse_args()
    from assistant.search import decide

    rows, _, _ = F.gather(F.question_files(), args.index_dir, args.signals_cache)
    F.fit_intent(rows, args.index_dir)  # each question's out-of-fold area probability, as the fit reads it
    ans = [r for r in rows if r["file"] != "which_labels" and r["type"] != "followup" and not r["named"]]
    base = [n for n in decide.PAPER_SIGNALS if n != "area"]
    x, y, groups, area, is_area, rank = [], [], [], [], [], []
    for r in ans:
        if r["type"] == "none" or not r["gold"]:
            continue
        for j, (pid, p) in enumerate(zip(r["hits"], r["papers"])):
            x.append([p[n] for n in base])
            y.append(pid in r["gold"])
            groups.append(r["file"])
            area.append(r["signals"]["area"])
            is_area.append(r["type"] == "area")
            rank.append(j)
    x0, y = np.array(x), np.array(y, dtype=float)
    area, is_area, rank = np.array(area), np.array(is_area), np.array(rank)
    inv, drop = x0[:, base.index("inv_rank")], x0[:, base.index("cos_drop")]
    variants = {"paper signals": x0, "+ area probability (adopted)": np.c_[x0, area],
                "+ area, x rank, x cosine drop": np.c_[x0, area, area * inv, area * drop],
                "+ area, x every signal": np.c_[x0, area, area[:, None] * x0]}
    print(f"{'variant':32} {'AUC':>6} {'cut':>6} {'area prec.':>10} {'recall':>7} {'single prec.':>12} {'recall':>7}")
    for name, xv in variants.items():
        oof = F.out_of_fold(xv, y, groups, F.C["relevant"])
        ok = [t for t in np.unique(oof) if np.mean(y[oof >= t] == 0) <= F.MAX_NONGOLD]
        cut = float(min(ok))
        cited = (rank == 0) | (oof >= cut)

        def share(mask):
            c = cited & mask
            return (c & (y == 1)).sum() / max(c.sum(), 1), (c & (y == 1)).sum() / max((mask & (y == 1)).sum(), 1)

        (pa, ra), (ps, rs) = share(is_area), share(~is_area)
        print(f"{name:32} {F.auc(oof[y == 1], oof[y == 0]):6.4f} {cut:6.3f} {pa:10.3f} {ra:7.3f} {ps:12.3f} {rs:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
