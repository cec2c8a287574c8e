"""Training data for the reader (training/reader_train.py): groups of (query, passages, labels), made from arXiv
abstracts and the project's training questions, never from a held-out set or its corpus.

    python training/reader_data.py [--papers training/inputs/arxiv-ml.jsonl.xz] [--out training/work/reader_groups.jsonl]

Inputs: the arXiv ML abstracts (19,972 with titles) minus every paper of a held-out slice
(benchmarks/data/heldout/arxiv300*.jsonl) and minus the bundled ICLR corpus (the held-out sets of the bundled corpus
are asked over it: matched by title); the training question files over the arXiv slices
(benchmarks/data/corpora/arxiv_*_questions.jsonl, with their slices). A passage is an abstract alone (a title is
what many queries are made of). Groups, each a query with 4 passages:

- ``title``: a paper's title -> its own abstract (positive) and three BM25 neighbours of the title (hard negatives:
  they share its words, and are about something else);
- ``topic``: the same with the title as a user types a topic: lower case, without a leading "Name:";
- ``parts``: the topics of two papers of one area joined ("<A's topic> for <B's topic>", "... with ..."), against
  A's abstract, B's abstract and two neighbours of the joined query: all negative (each covers one part; no
  single paper covers both: what a reader must tell from "mentions X");
- ``question``: a training question over its slice -> a gold abstract (positive) and three BM25 neighbours that are
  not gold; a question the slice has no paper on (``none``) -> four neighbours, all negative.

The second stage (``--stage criteria``, written to ``training/work/reader_criteria_groups.jsonl``) teaches it what
it is asked besides topics (:func:`criterion_groups`): ``which`` criteria labelled by helpers over training slices
(``training/inputs/*_criteria.jsonl``, 220 criteria over 1,300 papers) and detail questions (``*_details.jsonl``),
with 1,500 of the first stage's groups replayed so topics are not forgotten; one query in five is kept for
validation.

Deterministic: ``random.Random(seed)``; writes one JSON object per line and a summary with the inputs' sha256.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from _inputs import INPUTS, PAPERS, read_jsonl, sha256

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONNECTORS = ("for", "with", "in", "applied to", "under", "and")


def held_out_ids() -> set[str]:
    out = set()
    for path in sorted((ROOT / "benchmarks" / "data" / "heldout").glob("arxiv300*.jsonl")):
        if not path.name.endswith("_questions.jsonl"):
            out |= {str(r["id"]) for r in read_jsonl(path)}
    return out


def bundled_titles() -> set[str]:
    """Normalised first sentences of the bundled corpus's abstracts (it lists no titles): an arXiv paper whose
    abstract starts the same way is one of them."""
    out = set()
    for path in sorted((ROOT / "assistant" / "data" / "iclr2026").glob("*.txt")):
        body = path.read_text(encoding="utf-8").split("\n", 1)[1]
        for para in re.split(r"\n\s*\n", body):
            if para.strip():
                out.add(norm(para)[:120])
    return out


def norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def topic(title: str) -> str:
    """A title as a user types a topic: without a leading "Name:", lower case, at most 10 words."""
    text = title.split(":", 1)[1] if ":" in title and len(title.split(":", 1)[0].split()) <= 3 else title
    words = text.strip().split()
    return " ".join(words[:10]).lower().rstrip(".")


def short(phrase: str, words: int = 6) -> str:
    """A topic cut to its first words, as a part of a longer question."""
    return " ".join(phrase.split()[:words])


class Neighbours:
    """BM25 over a set of abstracts (bm25s, stemmed): the papers a query's words point at."""

    def __init__(self, ids: list[str], texts: list[str]):
        import bm25s
        import Stemmer

        self.ids = ids
        self.stemmer = Stemmer.Stemmer("english")
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False),
                        show_progress=False)

    def top(self, query: str, k: int) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        docs, _ = self.bm25.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(i)] for i in docs[0]]


def arxiv_groups(papers: list[dict], rng: random.Random, n_title: int, n_parts: int) -> list[dict]:
    ids = [p["id"] for p in papers]
    by_id = {p["id"]: p for p in papers}
    near = Neighbours(ids, [p["abstract"] for p in papers])
    groups = []
    for p in rng.sample(papers, min(n_title, len(papers))):
        kind = rng.choice(("title", "topic"))
        query = p["title"] if kind == "title" else topic(p["title"])
        negatives = [i for i in near.top(query, 12) if i != p["id"]]
        rng.shuffle(negatives)
        passages = [p["id"]] + negatives[:3]
        groups.append({"kind": kind, "query": query, "ids": passages, "labels": [1, 0, 0, 0]})
    for a in rng.sample(papers, min(n_parts, len(papers))):
        pool = [i for i in near.top(a["title"], 50)[10:] if i != a["id"]]
        if not pool:
            continue
        b = by_id[rng.choice(pool)]
        query = f"{short(topic(a['title']))} {rng.choice(CONNECTORS)} {short(topic(b['title']))}"
        others = [i for i in near.top(query, 10) if i not in (a["id"], b["id"])]
        groups.append({"kind": "parts", "query": query, "ids": [a["id"], b["id"]] + others[:2],
                       "labels": [0, 0, 0, 0]})
    return groups


def question_groups(rng: random.Random) -> list[dict]:
    groups = []
    for qpath in sorted((ROOT / "benchmarks" / "data" / "corpora").glob("arxiv_*_questions.jsonl")):
        slice_papers = read_jsonl(qpath.with_name(qpath.name.replace("_questions", "")))
        near = Neighbours([str(p["id"]) for p in slice_papers], [p["abstract"] for p in slice_papers])
        for q in read_jsonl(qpath):
            gold = [str(g) for g in q.get("gold") or []]
            others = [i for i in near.top(q["question"], 10) if i not in gold]
            if gold:
                groups.append({"kind": "question", "query": q["question"], "ids": [rng.choice(gold)] + others[:3],
                               "labels": [1, 0, 0, 0], "papers": "slice:" + qpath.stem})
            else:
                groups.append({"kind": "question_none", "query": q["question"], "ids": others[:4],
                               "labels": [0, 0, 0, 0], "papers": "slice:" + qpath.stem})
    return groups


def slice_papers(criteria: Path, all_papers: dict[str, dict]) -> list[dict]:
    """The papers a criteria file was labelled over: ``arxiv_a`` is a benchmark slice (benchmarks/data/corpora),
    ``slice_X`` is listed by id in ``slice_X_ids.txt`` beside it (drawn by /training/README.md's command)."""
    name = criteria.name.replace("_criteria.jsonl", "")
    if name.startswith("arxiv_"):
        return [dict(p, id=str(p["id"])) for p in read_jsonl(ROOT / "benchmarks" / "data" / "corpora" / f"{name}.jsonl")]
    ids = criteria.with_name(f"{name}_ids.txt").read_text().split()
    return [all_papers[i] for i in ids]


def validation_query(query: str) -> bool:
    """One criterion or detail question in five is kept for validation, by a hash of its text (never by group:
    the groups of one criterion share its query)."""
    import hashlib

    return int(hashlib.sha256(query.encode()).hexdigest(), 16) % 5 == 0


def criterion_groups(all_papers: dict[str, dict], rng: random.Random) -> list[dict]:
    """Labelled criteria (``training/inputs/*_criteria.jsonl``: ``papers`` meet it, ``borderline`` are arguable) and
    detail questions (``*_details.jsonl``: one gold paper) over the slices they were labelled on. A criterion gives a
    group per paper that meets it, against three that do not and share its words (BM25 over the slice, borderline
    papers never used); a criterion no paper meets gives one group of four, all negative. A detail question: its
    paper against three neighbours."""
    groups = []
    for crit in sorted(INPUTS.glob("*_criteria.jsonl")):
        papers = slice_papers(crit, all_papers)
        near = Neighbours([p["id"] for p in papers], [p["title"] + ". " + p["abstract"] for p in papers])
        for item in read_jsonl(crit):
            meets, skip = [str(i) for i in item["papers"]], {str(i) for i in item.get("borderline", [])}
            others = [i for i in near.top(item["criterion"], 40) if i not in meets and i not in skip]
            split = "val" if validation_query(item["criterion"]) else "train"
            base = {"kind": "criterion", "query": item["criterion"], "split": split, "papers": "slice:" + crit.stem}
            if not meets:
                groups.append(base | {"kind": "criterion_none", "ids": others[:4], "labels": [0, 0, 0, 0]})
            for pid in meets:
                negatives = rng.sample(others[:16], 3)
                groups.append(base | {"ids": [pid] + negatives, "labels": [1, 0, 0, 0]})
        details = crit.with_name(crit.name.replace("_criteria", "_details"))
        for item in read_jsonl(details) if details.exists() else []:
            gold = [str(g) for g in item["gold"]]
            others = [i for i in near.top(item["question"], 10) if i not in gold]
            groups.append({"kind": "detail", "query": item["question"], "ids": gold[:1] + others[:3],
                           "labels": [1, 0, 0, 0], "papers": "slice:" + details.stem,
                           "split": "val" if validation_query(item["question"]) else "train"})
    return groups


#: The slices drawn for labelled criteria, in the order drawn: (seed, names). Each draw samples 250 papers a name
#: from the pool left by the draws before it (the first for session 7's four helpers; the second and third, session 8's twelve).
DRAWS = ((4807, "fghi"), (4808, "jklmno"), (4809, "pqrstu"))


def draw_slices(papers: list[dict], draws=DRAWS) -> None:
    """The slices the criteria of ``slice_X_criteria.jsonl`` were labelled over: papers outside every benchmark
    slice (``papers`` is already without the held-out ones and the bundled corpus), 250 a slice, each draw from what
    the draws before it left. Rewriting an existing slice file gives it the same ids (the draws are seeded)."""
    used = set()
    for path in (ROOT / "benchmarks" / "data" / "corpora").glob("arxiv_?.jsonl"):
        used |= {str(r["id"]) for r in read_jsonl(path)}
    pool = [p for p in papers if str(p["id"]) not in used]
    for seed, names in draws:
        pick = random.Random(seed).sample(range(len(pool)), 250 * len(names))
        for k, name in enumerate(names):
            ids = sorted(str(pool[i]["id"]) for i in pick[k * 250:(k + 1) * 250])
            (INPUTS / f"slice_{name}_ids.txt").write_text("\n".join(ids) + "\n")
        print(f"{len(pool)} papers in the pool; wrote slices {', '.join(names)}")
        taken = {pool[i]["id"] for i in pick}
        pool = [p for p in pool if p["id"] not in taken]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=Path, default=PAPERS)
    ap.add_argument("--out", type=Path, default=HERE / "work" / "reader_groups.jsonl")
    ap.add_argument("--titles", type=int, default=9000)
    ap.add_argument("--parts", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=4848)
    ap.add_argument("--stage", choices=("topics", "criteria"), default="topics",
                    help="topics: the first training's groups; criteria: the second's (labelled criteria and detail "
                         "questions, with --replay groups of the first's so it is not forgotten)")
    ap.add_argument("--replay", type=int, default=1500)
    ap.add_argument("--draw-slices", action="store_true", help="write the criteria slices' ids (DRAWS; done "
                                                                "before they were labelled) and stop")
    ap.add_argument("--replay-from", type=Path, default=HERE / "work" / "reader_groups.jsonl")
    args = ap.parse_args()
    if args.stage == "criteria" and args.out == HERE / "work" / "reader_groups.jsonl":
        args.out = HERE / "work" / "reader_criteria_groups.jsonl"
    rng = random.Random(args.seed)
    held, bundled = held_out_ids(), bundled_titles()
    papers = [p for p in read_jsonl(args.papers) if str(p["id"]) not in held
              and norm(p["abstract"])[:120] not in bundled and p.get("title") and p.get("abstract")]
    if args.draw_slices:
        draw_slices(papers)
        return 0
    if args.stage == "criteria":
        from reader_train import read_groups

        if not args.replay_from.exists():
            raise SystemExit(f"missing {args.replay_from}: the criteria stage replays the first stage's groups; run "
                             "python training/reader_data.py first")
        groups = criterion_groups({str(p["id"]): dict(p, id=str(p["id"])) for p in papers}, rng)
        replay = read_groups(args.replay_from)
        groups += [g | {"split": "train", "kind": "replay_" + g["kind"]}
                   for g in rng.sample(replay, min(args.replay, len(replay)))]
    else:
        groups = arxiv_groups(papers, rng, args.titles, args.parts) + question_groups(rng)
    texts = {str(p["id"]): p["abstract"] for p in papers}
    for qpath in sorted((ROOT / "benchmarks" / "data" / "corpora").glob("arxiv_?.jsonl")):
        texts.update({str(p["id"]): p["abstract"] for p in read_jsonl(qpath)})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        for g in groups:
            if "passages" not in g:  # a replayed group has its passages
                g["passages"] = [texts[i] for i in g["ids"]]
            fh.write(json.dumps(g, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for g in groups:
        kinds[g["kind"]] = kinds.get(g["kind"], 0) + 1
    summary = {"stage": args.stage, "groups": len(groups), "kinds": kinds,
               "validation": sum(g.get("split") == "val" for g in groups), "papers_used": len(papers), "held_out_excluded": len(held),
               "seed": args.seed, "inputs": {str(args.papers.name): sha256(args.papers)} | (
                   {f.name: sha256(f) for f in sorted(INPUTS.glob("*_criteria.jsonl")) + sorted(INPUTS.glob(
                       "*_details.jsonl")) + sorted(INPUTS.glob("slice_*_ids.txt"))}
                   | {args.replay_from.name: sha256(args.replay_from)} if args.stage == "criteria" else {}),
               "out_sha256": sha256(args.out)}
    args.out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
