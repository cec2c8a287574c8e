"""Topics the corpus holds only apart: a question joining two things ("federated fine-tuning with low-rank
adapters") where papers cover each part and none covers both.

The question is cut in two at each place between its topical words; each half is read by the question encoder
(:mod:`assistant.embed.query_encoder`, all halves in one forward pass) against every paper's chunks. For the cut
where it is largest, ``apart`` is how far the paper that best joins the two halves falls below the best paper on
each (0 when one paper leads on both), weighted by how sharply each half singles papers out of the corpus (a half
such as "dataset" or "the model evaluated" leads nowhere in particular). A logistic model fitted on labelled
questions (training/fit_parts.py, ``assistant/data/parts.json`` with its provenance) reads that with the
answerable model's probability; at its threshold the question is refused with each part's papers listed.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from assistant.search.retrieve import Retriever

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "parts.json"
#: What the parts model may read of a question (it stores the names it was fitted on): the largest cut's
#: ``apart`` x ``peak``, its ``apart``, ``held`` (the lower of the two halves' best cosines), ``peak`` (the lower of
#: the halves' best cosine above their median paper) and the answerable model's log odds.
FEATURES = ("apart_peak", "apart", "held", "peak", "answerable_logit")
WORD = re.compile(r"\w[\w\-+/.']*")


@dataclass(frozen=True)
class Part:
    """One part of a question: the words naming it and the papers about it, best first."""

    text: str
    papers: tuple[str, ...]
    titles: tuple[str, ...] = ()  # each paper's display title

    def as_dict(self) -> dict:
        return {"part": self.text, "papers": [{"paper_id": pid, "title": title}
                                              for pid, title in zip(self.papers, self.titles)]}


@dataclass(frozen=True)
class Reading:
    """How the parts model read a question: its probability that the corpus holds the question only in parts, and
    the parts of the cut it read."""

    probability: float
    parts: tuple[Part, ...]


@functools.lru_cache(maxsize=1)
def model():
    """The fitted parts model (:class:`.decide.Logistic`), or None when the package has no parts.json."""
    from assistant.search.decide import Logistic

    if not MODEL_FILE.exists():
        return None
    return Logistic.from_dict(json.loads(MODEL_FILE.read_text(encoding="utf-8"))["parts"])


def cuts(question: str, max_words: int) -> list[tuple[str, str]]:
    """The question cut in two at each place between two topical words (its framing words, "papers", "anyone",
    "what", left out at both ends): [("federated fine-tuning", "low-rank adapters"), ...]; none for a question of
    more than ``max_words`` topical words (tuning.parts_max_words)."""
    from assistant.search.decide import framing_terms, terms

    framing = framing_terms()
    words = list(WORD.finditer(question))
    topical = [i for i, m in enumerate(words) if terms(m.group()) - framing]
    if len(topical) < 2 or len(topical) > max_words:
        return []
    start, end = words[topical[0]].start(), words[topical[-1]].end()
    return [(question[start:words[i].end()], question[words[j].start():end])
            for i, j in zip(topical, topical[1:])]


def cut_features(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """(apart x peak, apart, held, peak) of one cut, from each paper's best chunk cosine with each half."""
    import numpy as np

    apart = -float(np.max(np.minimum(a - a.max(), b - b.max())))
    peak = float(min(a.max() - np.median(a), b.max() - np.median(b)))
    return apart * peak, apart, float(min(a.max(), b.max())), peak


def features(retriever: Retriever, question: str, answerable: float) -> tuple[dict[str, float], list[Part]]:
    """The question's :data:`FEATURES` by name, and the parts of the cut they were read from (none: no cut)."""
    import numpy as np

    from assistant.embed import query_encoder
    from assistant.embed.embedder import one_blas_thread

    logit = math.log(max(answerable, 1e-6) / max(1.0 - answerable, 1e-6))
    tuning = retriever.settings.tuning
    pairs = cuts(question, tuning.parts_max_words)
    if not pairs:
        return dict(zip(FEATURES, (0.0, 0.0, 0.0, 0.0, logit))), []
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    vectors = retriever.index.chunk_vectors()
    with one_blas_thread():
        sims = vectors.matrix @ query_encoder.encode_many(texts).T
    best = np.maximum.reduceat(sims, vectors.starts, axis=0)
    if retriever.allowed is not None:
        best[[pid not in retriever.allowed for pid in vectors.paper_ids]] = -1.0
    column = {t: best[:, i] for i, t in enumerate(texts)}
    scored = [(cut_features(column[a], column[b]), a, b) for a, b in pairs]
    read, a, b = max(scored, key=lambda s: s[0][0])
    papers = retriever.papers()
    parts = []
    for text in (a, b):
        ids = _papers(vectors.paper_ids, column[text], tuning.parts_spread, tuning.parts_papers)
        parts.append(Part(text=text, papers=ids, titles=tuple(papers[pid].display_title for pid in ids)))
    return dict(zip(FEATURES, (*read, logit))), parts


def _papers(paper_ids: list[str], scores: np.ndarray, spread: float, most: int) -> tuple[str, ...]:
    """A part's papers: those within ``spread`` of its best one, at most ``most``, best first."""
    import numpy as np

    order = np.argsort(-scores)[:most]
    return tuple(paper_ids[i] for i in order if scores[i] >= scores[order[0]] - spread)


def read(retriever: Retriever, question: str, answerable: float) -> Reading | None:
    """The parts model's reading of a question (None when the package has no parts model or the question has no
    two topical halves)."""
    import numpy as np

    fitted = model()
    if fitted is None:
        return None
    x, parts = features(retriever, question, answerable)
    if not parts:
        return None
    probability = float(fitted.probability(np.asarray([x[n] for n in fitted.names], dtype=np.float64))[0])
    return Reading(probability=probability, parts=tuple(parts))


def held_apart(reading: Reading | None) -> bool:
    """Whether the reading says the corpus holds the question only in parts."""
    fitted = model()
    return reading is not None and fitted is not None and reading.probability >= fitted.threshold
