"""Experiment (issue 28, h28x): does SmolLM2's PMI of the question with its top paper help the answerable model?
Leave-one-file-out as fit_decisions.py, same threshold rule (ABSENT_SHARE), old features vs old + PMI features,
and the variant where the PMI model decides only in a band around the old model's threshold (band width chosen
on the other files' out-of-fold predictions, nested). Reads benchmarks/.work/signals.json and pmi.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fit_decisions import ABSENT_SHARE, C, exemplar_rows, fit, intent_vocab, out_of_fold, predict  # noqa: E402
from pmi_signal import answerable_rows  # noqa: E402

WORK = HERE / ".work"


def pmi_features(entry: dict, hits: list[str], ranks: int) -> dict[str, float]:
    base = np.array(entry["base"])
    per = [np.array(entry[p]) - base for p in hits[:ranks] if p in entry]
    lp1 = np.array(entry[hits[0]])
    d = per[0]
    out = {"pmi": float(d.mean()), "lp_top": float(lp1.mean()), "lp_base": float(base.mean()),
           "pmi_q25": float(np.quantile(d, 0.25)), "pmi_pos": float(np.mean(d > 0.5)),
           "pmi_min3": float(np.sort(d)[:3].mean())}
    if ranks > 1 and len(per) >= ranks:
        out["pmi_max3"] = max(float(x.mean()) for x in per)
    return out


def cost_threshold(p: np.ndarray, y: np.ndarray) -> float:
    cost = {float(t): (1 - ABSENT_SHARE) * np.mean(p[y == 1] < t) + ABSENT_SHARE * np.mean(p[y == 0] >= t)
            for t in np.unique(p)}
    return min(cost, key=cost.get)


def rates(decide: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(none accuracy, false refusals) of answer decisions."""
    return float(np.mean(~decide[y == 0])), float(np.mean(~decide[y == 1]))


def main() -> int:
    from assistant.search import decide

    cached = json.loads((WORK / "signals.json").read_text())
    rows = cached["rows"]
    # the out-of-fold intent probability, as fit_decisions.py computes it
    area_path = WORK / "area_oof.json"
    if area_path.exists():
        areas = json.loads(area_path.read_text())
    else:
        lab = [r for r in rows if r["type"] != "none"] + exemplar_rows(WORK / "iclr95")
        vocab = intent_vocab(lab)
        xi = np.array([decide.intent_features(r["question"], np.array(r["qvec"]), r["n_terms"], vocab) for r in lab])
        yi = np.array([r["type"] == "area" for r in lab], dtype=float)
        gi = np.array([r["file"] for r in lab])
        folds = {g: fit(xi[gi != g], yi[gi != g], C["intent"]) for g in sorted({r["file"] for r in rows})}
        areas = [float(predict(folds[r["file"]], decide.intent_features(
            r["question"], np.array(r["qvec"]), r["n_terms"], vocab)[None])[0]) for r in rows]
        area_path.write_text(json.dumps(areas))
    for r, a in zip(rows, areas):
        r["signals"]["area"] = a
    ans = answerable_rows(rows)
    pmi = json.loads((WORK / "pmi.json").read_text())
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    ans = [r for r in ans if r["question"] in pmi and r["hits"] and r["hits"][0] in pmi[r["question"]]]
    for r in ans:
        r["pmi"] = pmi_features(pmi[r["question"]], r["hits"], ranks)
    y = np.array([r["type"] != "none" for r in ans], dtype=float)
    g = [r["file"] for r in ans]
    ga = np.array(g)
    old = np.array([[r["signals"][n] for n in decide.QUESTION_SIGNALS] for r in ans])
    print(f"{len(ans)} questions ({int((y == 0).sum())} absent, {int(y.sum())} answerable)")
    from sklearn.metrics import roc_auc_score

    for name in ans[0]["pmi"]:
        v = np.array([r["pmi"][name] for r in ans])
        print(f"  AUC of {name} alone: {roc_auc_score(y, v):.3f}")
    oof_old = out_of_fold(old, y, g, C["answerable"])
    t_old = cost_threshold(oof_old, y)
    print(f"old: AUC {roc_auc_score(y, oof_old):.3f} threshold {t_old:.3f} none/FR "
          f"{rates(oof_old >= t_old, y)}")
    lo_old = np.log(oof_old / (1 - oof_old + 1e-12) + 1e-12) - np.log(t_old / (1 - t_old))
    for width in (1.0, 2.0):
        inb = np.abs(lo_old) < width
        if len(set(y[inb])) == 2:
            print(f"  in the old model's band |logit - t| < {width} ({int(inb.sum())} q., {int((y[inb] == 0).sum())} "
                  f"absent): AUC old {roc_auc_score(y[inb], oof_old[inb]):.3f}, " + ", ".join(
                      f"{n} {roc_auc_score(y[inb], np.array([r['pmi'][n] for r in ans])[inb]):.3f}"
                      for n in ans[0]["pmi"]))
    sets = {"pmi": ["pmi"], "pmi+lp": ["pmi", "lp_top", "lp_base"], "pmi+q25": ["pmi", "pmi_q25"],
            "pmi_all": ["pmi", "lp_top", "lp_base", "pmi_q25", "pmi_pos", "pmi_min3"]}
    if "pmi_max3" in ans[0]["pmi"]:
        sets["pmi+max3"] = ["pmi", "pmi_max3"]
    results = {"old": {"none": rates(oof_old >= t_old, y)[0], "fr": rates(oof_old >= t_old, y)[1]}}
    for label, names in sets.items():
        x = np.hstack([old, np.array([[r["pmi"][n] for n in names] for r in ans])])
        oof = out_of_fold(x, y, g, C["answerable"])
        t = cost_threshold(oof, y)
        none, fr = rates(oof >= t, y)
        # same false refusals as old: the threshold giving at most old's FR
        cands = [c for c in np.unique(oof) if np.mean(oof[y == 1] < c) <= results["old"]["fr"] + 1e-9]
        t_same = max(cands)
        n2, f2 = rates(oof >= t_same, y)
        print(f"{label}: AUC {roc_auc_score(y, oof):.3f} threshold {t:.3f} none {none:.3f} FR {fr:.3f}; "
              f"at old's FR: none {n2:.3f} FR {f2:.3f}")
        # band: the new model decides only where the old one is within +-delta (logit) of its threshold;
        # delta chosen for each held-out file on the other files' out-of-fold predictions (nested)
        lo = np.log(oof_old / (1 - oof_old + 1e-12) + 1e-12) - np.log(t_old / (1 - t_old))
        deltas = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 100.0]

        def band_decide(delta, mask):
            inb = np.abs(lo[mask]) < delta
            return np.where(inb, oof[mask] >= t, oof_old[mask] >= t_old), inb

        final = np.zeros(len(y), dtype=bool)
        inband = np.zeros(len(y), dtype=bool)
        chosen = {}
        for f in sorted(set(g)):
            tr = ga != f
            costs = {}
            for dl in deltas:
                dd, _ = band_decide(dl, tr)
                costs[dl] = (1 - ABSENT_SHARE) * np.mean(~dd[y[tr] == 1]) + ABSENT_SHARE * np.mean(dd[y[tr] == 0])
            dl = min(costs, key=lambda k: (round(costs[k], 6), k))
            chosen[f] = dl
            final[~tr], inband[~tr] = band_decide(dl, ~tr)
        nb, fb = rates(final, y)
        print(f"   band (nested delta, {sorted(set(chosen.values()))}): none {nb:.3f} FR {fb:.3f}, "
              f"in band {inband.mean():.3f} of questions")
        for dl in deltas:
            dd, inb = band_decide(dl, np.ones(len(y), dtype=bool))
            print(f"      delta {dl}: none/FR {tuple(round(v, 3) for v in rates(dd, y))} in band {inb.mean():.3f}")
        for cap in (0.02, 0.03, 0.043, 0.06):
            c_old = max(c for c in np.unique(oof_old) if np.mean(oof_old[y == 1] < c) <= cap)
            c_new = max(c for c in np.unique(oof) if np.mean(oof[y == 1] < c) <= cap)
            print(f"      FR <= {cap}: none old {rates(oof_old >= c_old, y)[0]:.3f} new {rates(oof >= c_new, y)[0]:.3f}")
        results[label] = {"none": none, "fr": fr, "none_at_old_fr": n2, "band_none": nb, "band_fr": fb}
    (WORK / "pmi_lofo.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
