"""Papers asked for by name: every paper of the bundled corpus whose title starts with a name no other paper has
("MergOPT", "Sample Weight Decay (SWD)") asked five ways, as typed and in lower case; the first citation must
be that paper.

    python benchmarks/names.py [--index-dir DIR] [--json OUT]

Offline and extractive. Without ``--index-dir`` the bundled corpus is ingested into a temporary index first.
Writes benchmarks/results/names.json unless --json says otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import _training  # noqa: F401  (training/ on sys.path: the fits' library)
from _bundled import bundled_index

HERE = Path(__file__).resolve().parent
ASKED = ["How does {} work?", "what is {}?", "how does {lower} work?", "{} results", "What problem does {} solve?"]


def paper_names(retriever) -> dict[str, str]:
    """paper id -> the name its title gives (a parenthesised acronym, else a leading coined word), when no other
    paper has that name."""
    from assistant.text.terms import stem_terms
    from assistant.search.retrieve import _name_like

    out = {}
    for pid, p in retriever.index.all_papers().items():
        acronym = re.search(r"\(([A-Z][A-Za-z0-9\-]*[A-Z0-9][A-Za-z0-9\-]*)\)", p.title)
        lead = re.match(r"^([A-Za-z][\w\-]*[A-Z][\w\-]*)", p.title)
        name = acronym.group(1) if acronym else lead.group(1) if lead and _name_like(lead.group(1)) else None
        if name and all(retriever.index.doc_freq(t) == 1 for t in stem_terms(name)):
            out[pid] = name
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", type=Path)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "names.json")
    args = ap.parse_args()
    from assistant.qa.answer import answer_question
    from assistant.store.index import Index
    from assistant.search.retrieve import Retriever

    settings = bundled_index(args.index_dir, llm_mode="off")
    retriever = Retriever(Index(settings), settings)
    names = paper_names(retriever)
    rows, misses = [], []
    for template in ASKED:
        ok = 0
        for pid, name in sorted(names.items()):
            q = template.format(name, lower=name.lower())
            ans = answer_question(retriever, q, settings)
            hit = ans.answerable and bool(ans.citations) and ans.citations[0].paper_id == pid
            ok += hit
            if not hit:
                misses.append({"question": q, "paper_id": pid, "answerable": ans.answerable,
                               "cited": [c.paper_id for c in ans.citations][:3]})
        rows.append({"asked": template.replace("{lower}", "{name in lower case}"), "papers": len(names),
                     "first_citation_is_the_paper": ok})
    print(f"{'asked':40s} {'first citation is the paper':>28s}")
    for r in rows:
        print(f"{r['asked']:40s} {r['first_citation_is_the_paper']:>22d}/{r['papers']}")
    for m in misses:
        print(f"  miss: {m['question']!r} ({m['paper_id']}): cited {m['cited'] or 'nothing'}")
    args.json.write_text(json.dumps({"rows": rows, "misses": misses}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
