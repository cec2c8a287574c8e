"""Derived titles against the real ones: arXiv abstracts come with titles their authors wrote, so the title the
assistant would show for each abstract were it untitled (``titles.readable_title``) can be read against it, over
hundreds of papers nobody wrote a question for.

    python benchmarks/titles_arxiv.py [--sample dev|eval|work|fresh] [--n 400] [--label NAME] [--show]

Papers: training/inputs/arxiv-ml.jsonl.xz (19,972 arXiv ML abstracts with titles) less every paper of a held-out
arXiv slice (benchmarks/data/heldout/arxiv300*.jsonl). Disjoint samples (:func:`samples`): ``dev``
(random.Random(2026), read while the derivation is worked on), ``eval`` (random.Random(1207) from the rest; run
before a change to the derivation and after it, its rows never read), ``work`` (3,000 outside ``eval``, read by the
seventeenth session) and ``fresh`` (outside the three; its first runs recorded, its rows never read). Reported:
content-word F1 of shown against real title (stemmed, stopwords out; the bundled corpus's blind titles are read the
same way by benchmarks/titles.py); of the papers whose real title opens with a coined name ("FaceMoE: ..."), how
many shown titles carry it; how many share no content word with the real title; how many are generic (every content
word among the 300 commonest of the abstracts: "Large language models") or read as a clause ("We show", "... can be
..."); and where the shown titles came from (:data:`titles.TITLE_SOURCES`: a name the abstract introduces, what it
proposes, a name it is "called", else its first sentence, which says what the field is rather than what the paper
does), with the F1 of each. Writes benchmarks/results/titles_arxiv.json, keeping the runs recorded under other
labels. Offline, no index, a few seconds of CPU.
"""

from __future__ import annotations

import argparse
import json
import lzma
import random
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
PAPERS = ROOT / "training" / "inputs" / "arxiv-ml.jsonl.xz"
SEEDS = {"dev": 2026, "eval": 1207, "work": 17, "fresh": 1217}
#: The ``work`` sample's size: the 3,000 papers the seventeenth session worked the title rules out on.
WORK = 3000
#: A real title's leading name: "FaceMoE: Mixture of Experts ..." (one to three words before the colon, one of
#: them coined: inner capitals, digits or a hyphen, or all capitals).
LEADING_NAME = re.compile(r"^([^:]{2,40}):\s")


def coined(name: str) -> bool:
    words = name.split()
    return 1 <= len(words) <= 3 and any(
        any(c.isupper() for c in w[1:]) or any(c.isdigit() for c in w) or "-" in w or (w.isupper() and len(w) > 1)
        for w in words)


#: A title is generic when every content word of it is among this many most common ones of the arXiv abstracts
#: ("Large language models", "Sequence modeling"): it names a field, not a paper.
COMMON = 300
#: A title that reads as a clause: it opens with the authors ("We show") or holds a finite verb.
CLAUSE = re.compile(r"^(?:we|our|this (?:paper|work|study))\b|\s(?:is|are|was|were|can|could|has|have|will)\s", re.I)
#: A title that is a fragment of a sentence (defined 2026-12-07, before the title rules it was used to measure were
#: changed): it opens with a word no noun phrase opens with (a subordinator, preposition, question word, sentence
#: adverb, or a structured abstract's section label: "When", "By structural analysis", "Nowadays", "Objectives"), or
#: ends on punctuation or inside parentheses ("AIM-Bench.", "Backchannels (e.g").
FRAGMENT_OPENERS = {"when", "while", "whereas", "which", "who", "whose", "where", "why", "how", "what", "whether",
                    "if", "although", "though", "because", "since", "as", "by", "under", "in", "on", "at", "for",
                    "to", "from", "with", "without", "despite", "after", "before", "through", "nowadays", "recently",
                    "currently", "today", "here", "background", "purpose", "objective", "objectives", "aim", "aims",
                    "motivation", "context", "introduction", "abstract", "methods", "results", "conclusions"}


def fragment(title: str) -> bool:
    words = title.split()
    if not words:
        return True
    if words[0].lower().strip(":,") in FRAGMENT_OPENERS:
        return True
    return bool(re.search(r"[.,;:(\[–-]$", title)) or title.count("(") > title.count(")")


def held_out_ids() -> set[str]:
    """The papers of every held-out arXiv slice."""
    return {json.loads(line)["id"] for p in (HERE / "data" / "heldout").glob("arxiv300*.jsonl")
            if not p.stem.endswith("_questions") for line in p.read_text().splitlines() if line.strip()}


def read_papers() -> list[dict]:
    """The arXiv abstracts that have a title."""
    with lzma.open(PAPERS, "rt", encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r.get("title")]


def samples(n: int) -> dict[str, list[dict]]:
    """The samples, and the stems common across all the papers they are drawn from: ``dev`` (read while rules
    are worked out), ``eval`` (run before and after a change, never read; the seventeenth session ran it for
    four candidates in turn), ``work`` (3,000 drawn outside ``eval``, read by the seventeenth session) and
    ``fresh`` (outside all three, never run before its first recorded run)."""
    from assistant.text.terms import stem_terms

    held = held_out_ids()
    papers = sorted((r for r in read_papers() if r["id"] not in held), key=lambda r: r["id"])
    dev = random.Random(SEEDS["dev"]).sample(papers, n)
    taken = {r["id"] for r in dev}
    rest = [r for r in papers if r["id"] not in taken]
    df = Counter(t for r in papers for t in set(stem_terms(r["abstract"])))
    ev = random.Random(SEEDS["eval"]).sample(rest, n)
    outside_eval = [r for r in papers if r["id"] not in {e["id"] for e in ev}]
    work = random.Random(SEEDS["work"]).sample(outside_eval, WORK)
    seen = taken | {r["id"] for r in ev} | {r["id"] for r in work}
    fresh = random.Random(SEEDS["fresh"]).sample([r for r in papers if r["id"] not in seen], n)
    return {"dev": dev, "eval": ev, "work": work, "fresh": fresh, "common": {t for t, _ in df.most_common(COMMON)}}


def score(papers: list[dict], common: set[str]) -> dict:
    from assistant.text.terms import stem_terms
    from assistant.text.titles import TITLE_SOURCES, titled

    rows = []
    for r in papers:
        shown, source = titled(r["abstract"])
        real = " ".join(r["title"].split())
        want, got = set(stem_terms(real)), set(stem_terms(shown))
        overlap = len(want & got)
        m = LEADING_NAME.match(real)
        name = m.group(1) if m and coined(m.group(1)) else None
        rows.append({"id": r["id"], "shown": shown, "real": real, "source": source, "name": name,
                     "f1": round(2 * overlap / max(len(want) + len(got), 1), 3), "shares": overlap > 0,
                     "generic": bool(got) and got <= common, "clause": bool(CLAUSE.search(shown)),
                     "fragment": fragment(shown),
                     "name_in": bool(name) and name.lower() in shown.lower()})
    named = [r for r in rows if r["name"]]
    mean = lambda xs: round(sum(xs) / len(xs), 3) if xs else None  # noqa: E731
    by_source = {s: {"n": sum(r["source"] == s for r in rows),
                     "f1": mean([r["f1"] for r in rows if r["source"] == s])} for s in TITLE_SOURCES}
    return {"papers": len(rows), "content_f1_mean": mean([r["f1"] for r in rows]),
            "sharing_no_word": sum(not r["shares"] for r in rows), "generic": sum(r["generic"] for r in rows),
            "clause": sum(r["clause"] for r in rows), "fragment": sum(r["fragment"] for r in rows), "named": len(named),
            "name_in_title": sum(r["name_in"] for r in named), "by_source": by_source, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", choices=sorted(SEEDS), default="dev")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--label", default="latest")
    ap.add_argument("--show", action="store_true", help="print the dev sample's titles from the first sentence")
    args = ap.parse_args()
    drawn = samples(args.n)
    out = score(drawn[args.sample], drawn["common"])
    print(f"{out['papers']} arXiv abstracts ({args.sample}): content-word F1 with the real title {out['content_f1_mean']}; "
          f"{out['sharing_no_word']} share no content word; of the {out['named']} real titles opening with a coined "
          f"name, {out['name_in_title']} shown titles carry it; {out['generic']} generic (every word among the "
          f"{COMMON} commonest), {out['clause']} reading as a clause, {out['fragment']} fragments")
    print("by source: " + ", ".join(f"{s} {v['n']} (F1 {v['f1']})" for s, v in out["by_source"].items()))
    if args.show and args.sample == "dev":
        for r in out["rows"]:
            if r["source"] == "first sentence" or r["name"] and not r["name_in"] or r["generic"] or r["clause"]:
                print(f"  {r['source'][:5]:5} {r['f1']:.2f} shown {r['shown'][:70]!r:74} real {r['real'][:70]!r}")
    path = HERE / "results" / "titles_arxiv.json"
    runs = json.loads(path.read_text()) if path.exists() else {}
    runs.setdefault(args.sample, {})[args.label] = {k: v for k, v in out.items() if k != "rows"} | (
        {"sources": dict(Counter(r["source"] for r in out["rows"]))})
    path.write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
