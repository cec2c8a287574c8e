"""Fit the sentence model of assistant/qa/evidence.py (which sentences of a cited paper an answer quotes) and store
it, with its provenance and leave-one-file-out error, in assistant/data/sentences.json.

    python training/fit_sentences.py [--index-dir DIR]

Every question with answer_facts of the training files (fit_decisions.question_files: the bundled 95 papers and the
arXiv training slices; and data/summaries/, what a named paper is; never benchmarks/data/heldout) is answered
offline as eval does (a conversation's earlier turns replayed), and each call of evidence.pick is recorded: the cited paper's sentences, their cosines to the
question and term shares, how many sentences it may quote, whether what the paper is was asked. A sentence is
labelled by whether it holds one of the question's facts. Then:

- a logistic regression over evidence.FEATURES on those labels, for the calls answering a question (a summary of
  what a paper is reads on from its introducing sentence in the abstract's order, and is scored so here too);
- MMR's redundancy weight and the keep ratio (a further sentence while its probability is at least keep x the
  first's), chosen end to end: the most questions whose answer holds all its facts, among the settings that quote
  on average no more sentences than the hand-set score did (so that facts are not bought with longer answers).

Both are cross-validated leave one file out (the held-out file's answers are picked with a model and settings chosen
on the others) and compared with the hand-set score they replace (cosine + 0.5 x term share, +0.3 for a contribution
when the paper's gist is asked, redundancy 0.5, keep 0.5), on the same recorded calls.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "training"))
HERE = ROOT / "benchmarks"  # question files and caches
OUT = ROOT / "assistant" / "data" / "sentences.json"
C = 1.0
REDUNDANCY = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
KEEP = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6)
#: The hand-set score the model replaced (evidence.py before 2026-12-02).
HAND_SET = {"term_share": 0.5, "gist": 0.3, "redundancy": 0.5, "keep": 0.5}


def record(index_dir: Path) -> list[dict]:
    """One row per fact question: its file, facts, and the calls its answer made to evidence.pick (each with the
    sentences' features and vectors). The conversation goes on with the hand-set score's choice."""
    import fit_decisions as f

    import assistant.qa.evidence as ev
    from assistant.service.api import conversation
    from assistant.service.evaluate import load_questions

    calls: list[dict] | None = None

    def recording(sentences, vecs, qvec, qterms, weights, count, gist=False, skip=frozenset(), wants_link=False):
        cos, shares = vecs @ qvec, ev.term_shares(sentences, qterms, weights)
        if calls is not None:
            calls.append({"sentences": sentences, "vecs": vecs, "x": ev.sentence_features(sentences, cos, shares),
                          "hand": hand_score(cos, shares, sentences, gist), "count": count, "gist": gist,
                          "skip": skip, "wants_link": wants_link})
        return ev.choose(sentences, vecs, hand_score(cos, shares, sentences, gist), count, HAND_SET["redundancy"],
                         HAND_SET["keep"], gist=gist, skip=skip, wants_link=wants_link)

    ev.pick = recording
    rows = []
    for path in question_files():
        conv = conversation(f.corpus_settings(corpus_of(path), index_dir))
        for item in load_questions(path):
            facts = [x.lower() for x in item.get("answer_facts") or []]
            if not facts:
                continue
            question = conv.replay(item)
            calls = []
            conv.ask(question)
            for c in calls:
                c["y"] = np.array([any(x in s.lower() for x in facts) for s in c["sentences"]])
            rows.append({"file": f.file_name(path), "id": item.get("id"), "facts": facts, "calls": calls})
            calls = None
        print(f"  {f.file_name(path)}: {sum(r['file'] == f.file_name(path) for r in rows)} fact questions",
              file=sys.stderr)
    return rows


def question_files() -> list[Path]:
    """fit_decisions' training files and the summary questions of data/summaries/ (what a named paper is)."""
    import fit_decisions as f

    return f.question_files() + sorted((HERE / "data" / "summaries").glob("*_questions.jsonl"))


def corpus_of(path: Path) -> str:
    import fit_decisions as f

    return f.corpus_of(f.file_name(path))


def hand_score(cos: np.ndarray, shares: np.ndarray, sentences: list[str], gist: bool) -> np.ndarray:
    from assistant.text.english import CONTRIBUTION_RE

    bonus = np.array([bool(CONTRIBUTION_RE.search(s)) for s in sentences], dtype=float) if gist else 0.0
    return cos + HAND_SET["term_share"] * shares + HAND_SET["gist"] * bonus


def answered(row: dict, scores: list[np.ndarray], redundancy: float, keep: float) -> tuple[bool, int]:
    """Whether the answer picked with these scores holds all the row's facts, and how many sentences it quotes."""
    from assistant.qa.evidence import choose

    quoted = []
    for c, score in zip(row["calls"], scores):
        quoted += [c["sentences"][i] for i in choose(c["sentences"], c["vecs"], score, c["count"], redundancy, keep,
                                                      gist=c["gist"], skip=c["skip"],
                                                      wants_link=c["wants_link"]).indices]
    text = "\n".join(quoted).lower()
    return all(x in text for x in row["facts"]), len(quoted)


def fit(rows: list[dict]):
    """The regression, on the calls answering a question (a summary, ``gist``, reads in the abstract's order)."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([c["x"] for r in rows for c in r["calls"] if c["y"].any() and not c["gist"]])
    y = np.concatenate([c["y"] for r in rows for c in r["calls"] if c["y"].any() and not c["gist"]])
    mean, scale = x.mean(0), x.std(0) + 1e-9
    lr = LogisticRegression(C=C, max_iter=3000).fit((x - mean) / scale, y)
    return mean, scale, lr.coef_[0], float(lr.intercept_[0])


def probabilities(params, row: dict) -> list[np.ndarray]:
    """Each call's sentence scores as evidence.pick makes them: the model's, or a summary's abstract order."""
    from assistant.qa.evidence import summary_scores

    mean, scale, w, b = params
    return [summary_scores(len(c["sentences"])) if c["gist"]
            else 1 / (1 + np.exp(-(((c["x"] - mean) / scale) @ w + b))) for c in row["calls"]]


def outcome(rows: list[dict], scored: list[list[np.ndarray]], redundancy: float, keep: float) -> tuple[float, float]:
    """(share of questions with all facts, mean sentences quoted)."""
    got = [answered(r, s, redundancy, keep) for r, s in zip(rows, scored)]
    return float(np.mean([g[0] for g in got])), float(np.mean([g[1] for g in got]))


def settle(rows: list[dict], scored: list[list[np.ndarray]], budget: float) -> tuple[float, float]:
    """The (redundancy, keep) with the most facts among those quoting at most ``budget`` sentences on average
    (ties: fewer sentences)."""
    best, key = (HAND_SET["redundancy"], HAND_SET["keep"]), None
    for red in REDUNDANCY:
        for keep in KEEP:
            facts, length = outcome(rows, scored, red, keep)
            if length <= budget and (key is None or (facts, -length) > key):
                best, key = (red, keep), (facts, -length)
    return best


def hit_at(rows: list[dict], scored: list[list[np.ndarray]], k: int) -> float:
    """Over calls with a fact sentence: a fact sentence among the k best-scored."""
    hits = [bool(c["y"][np.argsort(-s)[:k]].any()) for r, ss in zip(rows, scored) for c, s in zip(r["calls"], ss)
            if c["y"].any()]
    return float(np.mean(hits))


def leave_one_file_out(rows: list[dict], hand: list) -> tuple[list, dict]:
    """Each row's sentence scores and (redundancy, keep), from a model and settings chosen on the other files."""
    lofo: list = [None] * len(rows)
    settings = {}
    for held in sorted({r["file"] for r in rows}):
        train = [i for i, r in enumerate(rows) if r["file"] != held]
        params = fit([rows[i] for i in train])
        budget = outcome([rows[i] for i in train], [hand[i] for i in train], HAND_SET["redundancy"],
                         HAND_SET["keep"])[1]
        settings[held] = settle([rows[i] for i in train], [probabilities(params, rows[i]) for i in train], budget)
        for i, r in enumerate(rows):
            if r["file"] == held:
                lofo[i] = (probabilities(params, r), *settings[held])
    return lofo, settings


def scored(rows: list[dict], picks: list) -> tuple[dict, dict]:
    """Pooled and per-file figures of answers picked with ``picks`` (one (scores, redundancy, keep) per row)."""
    got = [answered(r, *pick) for r, pick in zip(rows, picks)]
    pooled = {"facts": round(float(np.mean([g[0] for g in got])), 4),
              "sentences_quoted": round(float(np.mean([g[1] for g in got])), 3),
              **{f"fact_sentence_top{k}": round(hit_at(rows, [pick[0] for pick in picks], k), 4) for k in (1, 2, 4)}}
    per_file = {f: round(float(np.mean([g[0] for g, r in zip(got, rows) if r["file"] == f])), 3)
                for f in sorted({r["file"] for r in rows})}
    return pooled, per_file


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index-dir", type=Path, default=HERE / ".work" / "iclr95")
    ap.add_argument("--calls-cache", type=Path, help="keep the recorded calls here and read them back when present")
    args = ap.parse_args()
    t0 = time.process_time()
    if args.calls_cache and args.calls_cache.exists():
        rows = pickle.loads(args.calls_cache.read_bytes())
        from assistant.qa.evidence import sentence_features

        for r in rows:  # features from the recorded cosines and term shares, as evidence computes them now
            for c in r["calls"]:
                c["x"] = sentence_features(c["sentences"], c["x"][:, 0], c["x"][:, 1])
    else:
        rows = record(args.index_dir)
        if args.calls_cache:
            args.calls_cache.write_bytes(pickle.dumps(rows))
    files = sorted({r["file"] for r in rows})
    hand = [[c["hand"] for c in r["calls"]] for r in rows]
    lofo, lofo_settings = leave_one_file_out(rows, hand)
    cv, per_file = {}, {f: {} for f in files}
    for name, picks in (("hand_set", [(h, HAND_SET["redundancy"], HAND_SET["keep"]) for h in hand]),
                        ("model_lofo", lofo)):
        cv[name], by_file = scored(rows, picks)
        for f, v in by_file.items():
            per_file[f][name] = v
    params = fit(rows)
    budget = outcome(rows, hand, HAND_SET["redundancy"], HAND_SET["keep"])[1]
    red, keep = settle(rows, [probabilities(params, r) for r in rows], budget)
    from assistant.qa.evidence import FEATURES

    mean, scale, w, b = params
    data = {"features": list(FEATURES), "mean": mean.tolist(), "scale": scale.tolist(), "weights": w.tolist(),
            "bias": b, "redundancy": red, "keep": keep, "C": C,
            "fitted_on": {"files": files, "questions": len(rows),
                          "calls": sum(len(r["calls"]) for r in rows),
                          "labelled_sentences": int(sum(len(c["y"]) for r in rows for c in r["calls"]
                                                        if c["y"].any())),
                          "script": "training/fit_sentences.py"},
            "cv": {"leave_one_file_out": cv, "per_file_facts": per_file,
                   "settings_per_fold": {k: list(v) for k, v in lofo_settings.items()}}}
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(data["cv"]["leave_one_file_out"], indent=1))
    print(f"redundancy {red}, keep {keep}; {time.process_time() - t0:.0f} s CPU; wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
