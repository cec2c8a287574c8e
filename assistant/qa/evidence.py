"""Which sentences of a cited paper answer the question: ranked by a fitted sentence model, redundancy removed
(MMR), and never a sentence that leans on the one before it without that one.

The sentence model (``assistant/data/sentences.json``, fitted by ``training/fit_sentences.py`` on the question
files' answer facts, leave one file out) reads a sentence's cosine to the question, the IDF-weighted share of the
question's terms it holds (both also against the paper's best), whether it states what the paper contributes, a
number, its place and length, and whether it leans on the one before. How much redundancy costs and how far below
the first sentence a further one may score are fitted with it, end to end on the answers' facts. What a paper is,
when that is what is asked ("What is Qronos?"), is a summary read on from the sentence introducing it.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from assistant.text.english import BY_THE_AUTHORS, CONTRIBUTION_RE, INTRODUCES, LEANS_ON_PREVIOUS, LINK


MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "sentences.json"
#: What the sentence model reads of each sentence (:func:`sentence_features`).
FEATURES = ("cosine", "term_share", "cosine_below_best", "share_below_best", "contribution", "digit", "position",
            "first", "last", "log_length", "leans")


@dataclass(frozen=True)
class SentenceModel:
    """A logistic regression over :data:`FEATURES` (standardised) and how sentences are then picked: MMR with
    ``redundancy`` x the largest cosine to a sentence already picked, further sentences while their probability is
    at least ``keep`` x the first one's."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    redundancy: float
    keep: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(((np.atleast_2d(x) - self.mean) / self.scale) @ self.weights + self.bias)))


@functools.lru_cache(maxsize=1)
def model() -> SentenceModel:
    """The fitted sentence model (assistant/data/sentences.json)."""
    d = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    if tuple(d["features"]) != FEATURES:
        raise ValueError(f"{MODEL_FILE} was fitted on other features; refit: python training/fit_sentences.py")
    return SentenceModel(mean=np.asarray(d["mean"]), scale=np.asarray(d["scale"]), weights=np.asarray(d["weights"]),
                         bias=float(d["bias"]), redundancy=float(d["redundancy"]), keep=float(d["keep"]))


@dataclass(frozen=True)
class Chosen:
    """The sentences of one paper an answer quotes: ``indices`` in abstract order (with those they lean on), and
    ``lead``, the one picked first (what best answers; what the paper is, for a summary): the citation's snippet."""

    indices: list[int]
    lead: int | None


@dataclass
class Quote:
    """Sentences of one paper, in abstract order, with their relevance."""

    paper_id: str
    sentences: list[str]
    relevance: float


def leans_on_previous(sentence: str) -> bool:
    return bool(LEANS_ON_PREVIOUS.match(sentence))


def term_shares(sentences: list[str], qterms: set[str], weights: dict[str, float]) -> np.ndarray:
    """The IDF-weighted share of the question's terms each sentence holds (a term no paper has weighs the
    rarest's IDF)."""
    from assistant.search.decide import terms

    rarest = max(weights.values(), default=1.0)
    total = sum(weights.get(t, rarest) for t in qterms) or 1.0
    return np.array([sum(weights.get(t, rarest) for t in qterms & terms(s)) / total for s in sentences])


def relevance(sentences: list[str], vecs: np.ndarray, qvec: np.ndarray, qterms: set[str],
              weights: dict[str, float], term_share: float) -> np.ndarray:
    """Each sentence's cosine to ``qvec`` + ``term_share`` (tuning.term_share) x the share of ``qterms`` it holds
    (chat's choice among cited papers)."""
    return vecs @ qvec + term_share * term_shares(sentences, qterms, weights)


def sentence_features(sentences: list[str], cos: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """:data:`FEATURES` of each sentence of one paper."""
    n = len(sentences)
    rows = []
    for i, s in enumerate(sentences):
        rows.append([cos[i], shares[i], cos[i] - cos.max(), shares[i] - shares.max(),
                     float(bool(CONTRIBUTION_RE.search(s))), float(bool(re.search(r"\d", s))), i / max(n - 1, 1),
                     float(i == 0), float(i == n - 1), math.log(max(len(s), 1)), float(leans_on_previous(s))])
    return np.array(rows, dtype=np.float64).reshape(n, len(FEATURES))


def summary_scores(n: int) -> np.ndarray:
    """A summary's sentence scores: their places in the abstract, the first highest."""
    return 1.0 - np.arange(n) / n


def pick(sentences: list[str], vecs: np.ndarray, qvec: np.ndarray, qterms: set[str], weights: dict[str, float],
         count: int, gist: bool = False, skip: frozenset[str] = frozenset(), wants_link: bool = False) -> Chosen:
    """Up to ``count`` sentences that answer the question (a sentence that leans on the one before brings it
    along). What a paper is (``gist``) takes ``count`` sentences, when it has them."""
    if not sentences:
        return Chosen([], None)
    m = model()
    if gist:  # a summary reads on from the sentence introducing the paper: what it is, then how it works (the
        # model, fitted on questions asking a detail, prefers results; docs/decisions.md "Summaries")
        score = summary_scores(len(sentences))
    else:
        score = m.probability(sentence_features(sentences, vecs @ qvec, term_shares(sentences, qterms, weights)))
    return choose(sentences, vecs, score, count, m.redundancy, m.keep, gist=gist, skip=skip, wants_link=wants_link)


def choose(sentences: list[str], vecs: np.ndarray, score: np.ndarray, count: int, redundancy: float, keep: float,
           gist: bool = False, skip: frozenset[str] = frozenset(), wants_link: bool = False) -> Chosen:
    """:func:`pick`'s choice once each sentence is scored: up to ``count`` sentences, those a pick leans on
    included, by MMR (``score`` - ``redundancy`` x the largest cosine to a sentence picked), further ones while they
    score at least ``keep`` x the best. What a paper is (``gist``) is a summary: it starts from the paper's first
    sentence saying what it contributes ("We introduce Qronos, ..."), leaves out the background before the one
    introducing it, and takes ``count`` sentences when it has them."""
    allowed = [i for i, s in enumerate(sentences) if s not in skip and (wants_link or not LINK.search(s))]
    if not allowed:
        allowed = list(range(len(sentences)))
    contributions = [i for i in allowed if CONTRIBUTION_RE.search(sentences[i])] if gist else []
    introducing = [i for i in contributions if INTRODUCES.search(sentences[i])]
    if gist and not contributions:  # else a summary would open on the background ("LLMs have shown ...")
        contributions = introducing = [i for i in allowed if BY_THE_AUTHORS.search(sentences[i])]
    if introducing:
        allowed = [i for i in allowed if i >= introducing[0]]
    out: set[int] = set()

    def with_support(i: int) -> set[int]:  # "Finally, ..." or "This ..." comes with what it leans on
        need = {i}
        while i > 0 and leans_on_previous(sentences[i]) and i - 1 not in out and sentences[i - 1] not in skip:
            i -= 1
            need.add(i)
        return need - out

    # the first such sentence: abstracts say what the paper is before what it proves or finds
    first_pick = contributions[:1] if count else []
    if first_pick:
        out |= with_support(first_pick[0])
    best_score = max(score[i] for i in allowed) if out else None
    picked = list(first_pick)
    # a summary's length leaves out the background its first sentence leans on ("To address these challenges,
    # we propose X"): it comes with that sentence, and counted it would crowd out how X works (docs/log/research-log.md,
    # 2026-12-03)
    background = out - set(first_pick) if gist else set()

    def length(chosen: set[int]) -> int:
        return len(chosen - background)

    while (length(out) if gist else len(picked)) < count:
        # a summary's length is ``count`` with what its sentences lean on; an answer to a question quotes the
        # sentence that answers with what it leans on, whatever that costs
        left = [i for i in allowed if i not in (out if gist else picked)
                and (not gist or not out or length(out | with_support(i)) <= count)]
        if not left:
            break
        mmr = {i: score[i] - redundancy * max((float(vecs[i] @ vecs[j]) for j in picked), default=0.0) for i in left}
        best = max(mmr, key=mmr.get)
        # a summary takes ``count``: its scores are places in the abstract, not how well a sentence answers
        if best_score is not None and score[best] < keep * best_score and not gist:
            break
        best_score = score[best] if best_score is None else best_score
        picked.append(best)
        out |= with_support(best)
    return Chosen(sorted(out), picked[0] if picked else None)
