"""Derived titles against titles written blind: for the 95 bundled abstracts (which have no titles, so every title
the assistant shows is derived), compare the title every command shows (``Paper.display_title``, i.e.
``titles.readable_title``) with benchmarks/data/heldout/titles_blind.jsonl (titles a helper wrote reading only the
abstracts; 71 of them name what the paper introduces).

    python benchmarks/titles.py [--json benchmarks/results/titles.json]

Reported: how many shown titles carry the paper's name where the blind title has one (the name, case-insensitive,
anywhere in the title; and at its start), the content-word F1 of shown against blind title (stemmed words, stopwords
out), and titles that share no content word with the blind one. Offline, no index, a second of CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from assistant.text.corpus import load_papers
    from assistant.text.terms import stem_terms

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "titles.json")
    args = ap.parse_args()
    blind = {r["id"]: r for r in map(json.loads, (HERE / "data" / "heldout" / "titles_blind.jsonl").read_text().splitlines())}
    papers = {p.id: p for p in load_papers()[0]}
    rows = []
    for pid, b in blind.items():
        shown = papers[pid].display_title
        want, got = set(stem_terms(b["title"])), set(stem_terms(shown))
        overlap = len(want & got)
        f1 = 2 * overlap / max(len(want) + len(got), 1)
        name = b.get("name")
        rows.append({"id": pid, "shown": shown, "blind": b["title"], "name": name, "f1": round(f1, 3),
                     "name_in": bool(name) and name.lower() in shown.lower(),
                     "name_first": bool(name) and shown.lower().startswith(name.lower()), "shares": overlap > 0})
    named = [r for r in rows if r["name"]]
    out = {"papers": len(rows), "named": len(named),
           "name_in_title": sum(r["name_in"] for r in named), "name_at_start": sum(r["name_first"] for r in named),
           "content_f1_mean": round(sum(r["f1"] for r in rows) / len(rows), 3),
           "sharing_no_word": sum(not r["shares"] for r in rows), "rows": rows}
    print(f"{out['papers']} bundled abstracts; of the {out['named']} whose blind title names what they introduce, the "
          f"shown title carries that name for {out['name_in_title']} ({out['name_at_start']} at its start)")
    print(f"content-word F1 with the blind title: mean {out['content_f1_mean']}; "
          f"{out['sharing_no_word']} shown titles share no content word with it")
    for r in rows:
        if r["name"] and not r["name_in"] or not r["shares"]:
            print(f"  {r['id']:26} shown {r['shown'][:60]!r:64} blind {r['blind'][:60]!r}")
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
