"""The frozen held-out sets (benchmarks/data/heldout/): questions written blind by a helper who saw only the corpus,
never fitted on. Scored offline (extractive) as `assistant eval` scores them, plus what issue 28 asks of trust:
named-paper questions refused, citations to papers outside the gold on single-gold answers, and the area ranking of
the plain dense cosine (MiniLM, best chunk per paper) as a reference.

    python benchmarks/heldout.py [--json OUT] [--label NAME]

Sets: heldout_iclr.jsonl, casual_heldout.jsonl, mixed_heldout.jsonl, iclr_fresh.jsonl, casual_blind.jsonl,
area_blind.jsonl, lookup_blind.jsonl and lookup_blind_2.jsonl over the bundled 95 papers;
arxiv300_questions.jsonl over arxiv300.jsonl, 300 papers drawn from ../shared/corpus/arxiv-ml with random.Random(300),
arxiv300b_questions.jsonl over arxiv300b.jsonl, arxiv300c_questions.jsonl over arxiv300c.jsonl and
arxiv300d_questions.jsonl over arxiv300d.jsonl, arxiv300e_questions.jsonl over arxiv300e.jsonl and
arxiv300f_questions.jsonl over arxiv300f.jsonl, 300 others each
(see data/heldout/README.md). Writes benchmarks/results/heldout.json, keeping the
runs recorded under other labels (the first run is kept as "first_run").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "heldout"
KEYS = ("R@1", "R@5", "MRR", "area_nDCG@10", "dense_area_nDCG@10", "none_accuracy", "false_refusal_rate",
        "named_refused", "nongold_citations", "first_citation_gold", "answer_fact_coverage",
        "unsure_absent_answered", "unsure_answerable_answered", "area_cited_in_gold", "area_gold_cited")
HEAD = ("R@1", "R@5", "MRR", "area", "d-area", "none", "FR", "named-", "nongold", "cite1", "facts", "uns-abs",
        "uns-ans", "a-cit", "a-gold")


def arxiv300_index(work: Path, slice_name: str = "arxiv300", **overrides):
    """Settings for the index of one arXiv slice of benchmarks/data/heldout (built at the first call)."""
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.ingest import ingest

    settings = Settings(index_dir=work / slice_name, **overrides)
    if not (settings.index.dir / "manifest.json").exists():
        ingest(load_papers([DATA / f"{slice_name}.jsonl"])[0], settings)
    return settings


#: Each set (the name its runs are kept under): its question file and the corpus it is asked over ("iclr95": the
#: bundled papers; else the arXiv slice of that name beside it in data/heldout). In the order they were added; each
#: one's first run is a label in results/heldout.json.
SETS = {
    "heldout_iclr (95 papers)": ("heldout_iclr.jsonl", "iclr95"),
    "arxiv300": ("arxiv300_questions.jsonl", "arxiv300"),
    # 2026-12-02 (later): casual phrasings ("anything on X?"); first run casual_first_run_2026_12_02
    "casual_heldout (95 papers)": ("casual_heldout.jsonl", "iclr95"),
    # 2026-12-02: mixed casual and formal phrasings with absent near-topics; first run mixed_first_run_2026_12_02
    "mixed_heldout (95 papers)": ("mixed_heldout.jsonl", "iclr95"),
    # 2026-12-03, written before that day's changes: iclr_fresh_first_run_2026_12_03 and
    # arxiv300b_first_run_2026_12_03 (code ad84428)
    "iclr_fresh (95 papers)": ("iclr_fresh.jsonl", "iclr95"),
    "arxiv300b": ("arxiv300b_questions.jsonl", "arxiv300b"),
    # 2026-12-03, each written before the change it measured: arxiv300c_first_run_2026_12_03 (code a5890fd),
    # arxiv300d_first_run_2026_12_03 (code be79d84)
    "arxiv300c": ("arxiv300c_questions.jsonl", "arxiv300c"),
    "arxiv300d": ("arxiv300d_questions.jsonl", "arxiv300d"),
    # 2026-12-04, written after that day's changes (the unsure note) and first run on them:
    # arxiv300e_first_run_2026_12_04 (code fb3f269), arxiv300f_first_run_2026_12_04
    "arxiv300e": ("arxiv300e_questions.jsonl", "arxiv300e"),
    "arxiv300f": ("arxiv300f_questions.jsonl", "arxiv300f"),
    # 2026-12-06 (sixth session), before the refit on casual training files: casual_blind_first_run_2026_12_06
    # (code af86f25)
    "casual_blind (95 papers)": ("casual_blind.jsonl", "iclr95"),
    # 2026-12-07 (ninth session): 44 area questions with every gold paper, before the area ranking read the
    # question encoder: area_blind_first_run_fb9bcbb
    "area_blind (95 papers)": ("area_blind.jsonl", "iclr95"),
    # 2026-12-07 (twelfth session): 70 questions in a reader's own words, written for re-ranking among the 19,972
    # distractors (benchmarks/rerank.py --heldout): lookup_blind_first_run_a3be340
    "lookup_blind (95 papers)": ("lookup_blind.jsonl", "iclr95"),
    # 2026-12-07 (thirteenth session): 70 more, written blind before the question encoder was trained on arXiv
    # questions: lookup_blind_2_first_run
    "lookup_blind_2 (95 papers)": ("lookup_blind_2.jsonl", "iclr95"),
}


def corpus_settings(work: Path, corpus: str, **overrides):
    """Settings for a set's corpus: the bundled papers' index ("iclr95") or an arXiv slice's (built at first use)."""
    return bundled_index(work / "iclr95", **overrides) if corpus == "iclr95" else \
        arxiv300_index(work, corpus, **overrides)


def dense_ranking(settings, question: str, k: int = 10) -> list[str]:
    """The plain reference: papers by their best chunk's cosine to the question, nothing else."""
    import numpy as np

    from assistant.service.api import retriever

    found = retriever(settings)
    ids, best, _ = found.dense_all(found.embed_query(question))
    return [ids[i] for i in np.argsort(-best)[:k]]


def score(path: Path, settings) -> dict:
    from assistant.service.evaluate import SINGLE_GOLD, evaluate_questions, load_questions, ndcg_at

    items = load_questions(path)
    report = evaluate_questions(items, settings)
    out = {k: v for k, v in report.summary().items() if k != "by_type"}
    rows = report.rows
    named = [r for r in rows if r["type"] == "named"]
    out["named_refused"] = round(sum(not r["answerable"] for r in named) / len(named), 4) if named else None
    cited = [(c, r["_gold"]) for r in rows if r["type"] in SINGLE_GOLD and r["answerable"] for c in r["citations"]]
    out["nongold_citations"] = round(sum(c not in g for c, g in cited) / len(cited), 4) if cited else None
    area = [(i, r) for i, r in zip(items, rows) if r["type"] == "area"]
    dense = [ndcg_at(dense_ranking(settings, i["question"]), r["_gold"], 10) for i, r in area]
    out["dense_area_nDCG@10"] = round(sum(dense) / len(dense), 4) if dense else None
    # an area answer's citations: the share in gold or borderline, and the share of gold papers cited
    cited = [(c, r["_gold"] | set(i.get("borderline") or [])) for i, r in area if r["answerable"] for c in r["citations"]]
    out["area_cited_in_gold"] = round(sum(c in g for c, g in cited) / len(cited), 4) if cited else None
    gold = [(g, set(r["citations"])) for i, r in area for g in r["_gold"]]
    out["area_gold_cited"] = round(sum(g in c for g, c in gold) / len(gold), 4) if gold else None
    absent = [r for r in rows if r["answerable"] and r["type"] == "none"]
    present = [r for r in rows if r["answerable"] and r["type"] != "none"]
    out["unsure_counts"] = {"absent_answered": len(absent), "absent_marked": sum(r["unsure"] for r in absent),
                            "answerable_answered": len(present), "answerable_marked": sum(r["unsure"] for r in present)}
    out["misses"] = [{"id": r["id"], "type": r["type"], "answerable": r["answerable"], "top": r["hits"][:3],
                      "citations": r["citations"], "gold": sorted(r["_gold"])}
                     for r in rows if (r["type"] == "none") == r["answerable"]
                     or r["type"] in SINGLE_GOLD and (not r["hits"] or r["hits"][0] not in r["_gold"])]
    return out


def table(results: dict) -> None:
    print(f"{'set':22} {'n':>4} " + " ".join(f"{h:>7}" for h in HEAD))
    for name, row in results.items():
        cells = " ".join(f"{row[k]:7.3f}" if row.get(k) is not None else f"{'-':>7}" for k in KEYS)
        print(f"{name:22} {row['questions']:>4} {cells}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "heldout.json")
    ap.add_argument("--label", default="current", help="the name this run is kept under in the JSON")
    ap.add_argument("--work", type=Path, default=HERE / ".work", help="where the indexes are built")
    ap.add_argument("--sets", nargs="*", help="only these sets (default: all), e.g. mixed_heldout")
    args = ap.parse_args()
    overrides = dict(llm_mode="off", rerank="off")
    started = time.process_time()
    results = {name: score(DATA / path, corpus_settings(args.work, corpus, **overrides))
               for name, (path, corpus) in SETS.items() if not args.sets or any(name.startswith(s) for s in args.sets)}
    table(results)
    print(f"({time.process_time() - started:.0f} s CPU in this process)")
    runs = json.loads(args.json.read_text()) if args.json.exists() else {}
    runs[args.label] = {"date": time.strftime("%Y-%m-%d"), "settings": "offline extractive, ASSISTANT_RERANK=off",
                        "results": results}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(runs, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
