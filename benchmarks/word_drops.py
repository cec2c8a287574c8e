"""Does a missing word's drop *relative to the question's other words* tell a topic the corpus lacks from how a user
talks? (Measured here in session 28; built into the missing-word model and refitted in session 29, where the
answerable model did not gain, so not adopted: docs/decisions.md, "Session 29: the missing word's drop".)

    python benchmarks/fit_decisions.py --signals-cache benchmarks/.work/signals.json   # once, for the word examples
    python benchmarks/word_drops.py benchmarks/.work/signals.json

For each word example of fit_decisions (a question word the top papers lack, labelled by whether its question is on
an absent topic), every word of its question is dropped in turn and the question re-embedded; the word's own drop
(log 1 - cosine) minus the mean, or the largest, of the other words' drops is added to the missing-word model's
features, and its leave-one-file-out AUC is printed. A short question moves a lot without any of its words, so the
absolute drop reads "re" in "papers re LoRA" as a topic; the relative one does not. Costs one embedding per word of
every question that has a missing word.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    import fit_decisions as fd
    from assistant.service.api import retriever

    cache = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / ".work" / "signals.json"
    _, _, words = fd.gather([], None, cache)
    corpus = {fd.file_name(f): fd.corpus_of(fd.file_name(f)) for f in fd.question_files()}
    found_by: dict = {}
    drops_of: dict[str, dict[str, float]] = {}
    rel = []
    for w in words:
        c = corpus[w["file"]]
        if c not in found_by:
            found_by[c] = retriever(fd.corpus_settings(c, HERE / ".work" / "iclr95"))
        r, q = found_by[c], w["question"]
        if q not in drops_of:
            qv, toks = r.embed_query(q), list(dict.fromkeys(re.findall(r"\S+", q)))
            drops_of[q] = {t: math.log(max(1.0 - float(r.embed_query(" ".join(x for x in re.findall(r"\S+", q)
                                                                                 if x != t)) @ qv), 1e-4))
                           for t in toks if any(x != t for x in toks)}
        d = drops_of[q]
        mine, others = d.get(w["word"], 0.0), [v for k, v in d.items() if k != w["word"]] or [0.0]
        rel.append([mine - float(np.mean(others)), mine - max(others), math.log(max(len(d), 1))])
    x, y, g = fd.word_arrays(words)
    f = np.array(rel)
    for name, cols in (("as fitted", x), ("+ drop minus the others' mean", np.hstack([x, f[:, :1]])),
                       ("+ minus the largest", np.hstack([x, f[:, 1:2]])), ("+ both and log words", np.hstack([x, f]))):
        oof = fd.out_of_fold(cols, y, list(g), fd.C["missing_word"])
        print(f"{name:32s} leave-one-file-out AUC {fd.auc(oof[y == 1], oof[y == 0]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
