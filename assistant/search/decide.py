"""Decisions learned from data: what a question wants (one paper or an area), whether the corpus answers it,
and which retrieved papers are relevant enough to cite.

Each decision is a logistic regression over a few retrieval signals (and, for the intent, the question's own
embedding), fitted by ``training/fit_decisions.py`` on the project's question files, cross-validated leave one
file out, and stored with its provenance in ``assistant/data/decisions.json``. No English phrasing rule decides
here: the signals are cosines, term shares and ranks, the same in any wording.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import ChainMap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.text.terms import stem_sequence

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "decisions.json"

#: What ML writing in general says of what the top papers lack (:func:`field_signals`).
FIELD_SIGNALS = ("field_pair", "field_pair_parts", "field_term", "field_triple", "field_collocation")
#: The question-level signals the answerability model reads, in order.
QUESTION_SIGNALS = ("top_cos", "best3_cos", "standout", "coverage", "top_coverage", "unknown_share", "bm25_share",
                    "gap", "sentence_cos", "log_terms", "area", "missing_rare", "scatter", "pairs", "sentence_coverage", "ablate_gain",
                    "missing_topic") + FIELD_SIGNALS
#: A question term the top MISSING_DEPTH papers all lack is read by the missing-word model (3: chosen by the
#: cross-validated cost of the answerable model over 1, 3 and 10, see docs/decisions.md).
MISSING_DEPTH = 3
#: The paper-level signals the relevance model reads, in order.
#: The paper-level signals the relevance model reads, in order; "area" is the question's intent probability: an area
#: question's third or fourth paper is a gold one far more often than a lookup's (docs/log/research-log.md, 2026-12-03).
PAPER_SIGNALS = ("cos", "cos_drop", "fused_ratio", "inv_rank", "standout", "coverage", "sentence_cos", "named", "area")


@dataclass
class Logistic:
    """A fitted logistic regression: standardised features, weights, bias, and the decision threshold."""

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = ((np.atleast_2d(x) - self.mean) / self.scale) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-z))

    @classmethod
    def from_dict(cls, d: dict) -> "Logistic":
        return cls(names=tuple(d["features"]), mean=np.asarray(d["mean"], dtype=np.float64),
                   scale=np.asarray(d["scale"], dtype=np.float64), weights=np.asarray(d["weights"], dtype=np.float64),
                   bias=float(d["bias"]), threshold=float(d["threshold"]))


@functools.lru_cache(maxsize=1)
def _fitted() -> dict:
    """decisions.json, read once."""
    return json.loads(MODEL_FILE.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def models() -> dict:
    """The fitted models: ``intent`` (area vs one paper), ``answerable``, ``relevant``, ``missing_word`` (is a
    question word the retrieved papers lack the topic the corpus lacks, :class:`Logistic`), and
    ``area_dense_weight`` and ``area_asked_weight``, the shares of the embedder's cosine and of the question
    encoder's (Retriever.asked_vector) in an area question's ranking."""
    data = _fitted()
    out: dict = {name: Logistic.from_dict(data[name]) for name in ("intent", "answerable", "relevant", "missing_word")}
    out["area_dense_weight"] = float(data["area_ranking"]["dense_weight"])
    out["area_asked_weight"] = float(data["area_ranking"].get("asked_weight", 0.0))
    out["intent_vocab"] = list(data["intent"]["vocab"])
    return out


def terms(text: str) -> frozenset[str]:
    """The text's stemmed BM25 terms (cached: the same abstracts are read for question after question)."""
    return _terms(text)


def area_score(asked: float, dense: float, bm25: float, ceiling: float, asked_weight: float,
               dense_weight: float) -> float:
    """An area question's order key for one paper: the question encoder's cosine (``asked``), the embedder's
    (``dense``) and the paper's BM25 over the query's ceiling, by the fitted weights (:func:`models`); the fit
    (training/fit_decisions.py) scores its candidate weights with this same key."""
    return asked_weight * asked + dense_weight * dense + (1 - dense_weight - asked_weight) * bm25 / ceiling


@functools.lru_cache(maxsize=8192)
def _terms(text: str) -> frozenset[str]:
    from assistant.text.terms import stem_terms

    return frozenset(stem_terms(text))


def intent_features(question: str, qvec: np.ndarray, n_terms: int, vocab: list[str]) -> np.ndarray:
    """What the intent model reads: the question's embedding, its length in topical terms, and which of the
    model's words it has (the words that frame it: "papers", "summarise", "which paper", ...)."""
    import re

    words = set(re.findall(r"[a-z]+", question.lower()))
    return np.concatenate([qvec, [math.log1p(n_terms)], [float(w in words) for w in vocab]])


def area_probability(question: str, qvec: np.ndarray, n_terms: int | None = None) -> float:
    """How likely the question asks for an area (several papers) rather than one paper."""
    m = models()
    n = len(topical(question)) if n_terms is None else n_terms
    return float(m["intent"].probability(intent_features(question, qvec, n, m["intent_vocab"]))[0])


def coverage(weights: dict[str, float], qterms: set[str], text_terms: set[str], rarest: float) -> float:
    """The IDF-weighted share of the question's terms a text holds; a term no paper has weighs as the rarest."""
    total = sum(weights.get(t, rarest) for t in qterms)
    return sum(weights.get(t, rarest) for t in qterms & text_terms) / total if total else 0.0


@functools.lru_cache(maxsize=2048)
def text_sequence(text: str) -> tuple[str, ...]:
    """A paper's stemmed terms in order (cached: the same abstracts are read for question after question)."""
    return tuple(stem_sequence(text))


def pair_share(qpairs: set[tuple[str, str]], paper) -> float:
    """The share of the question's adjacent term pairs ("speculative decoding") the paper has adjacent too."""
    if not qpairs or paper is None:
        return 0.0
    seq = text_sequence(f"{paper.title}. {paper.abstract}")
    have = set(zip(seq, seq[1:])) | set(zip(seq[1:], seq))
    return len(qpairs & have) / len(qpairs)


@dataclass
class Signals:
    """What the decisions read of one retrieval."""

    question: dict[str, float]
    papers: list[dict[str, float]]  # one per hit, in rank order

    def question_vector(self, names: tuple[str, ...] = QUESTION_SIGNALS) -> np.ndarray:
        """The question's signals a model reads (``names``: its features, in its order)."""
        return np.array([self.question[n] for n in names], dtype=np.float64)

    def paper_matrix(self, names: tuple[str, ...] = PAPER_SIGNALS) -> np.ndarray:
        return np.array([[p[n] for n in names] for p in self.papers], dtype=np.float64).reshape(
            len(self.papers), len(names))


@functools.lru_cache(maxsize=1)
def framing_terms() -> frozenset[str]:
    """Stemmed words questions are framed with ("anyone", "paper", "studi", "exist"), learned from the question
    files (training/fit_decisions.py): not what a question is about, so no coverage counts them."""
    return frozenset(_fitted()["framing_terms"]["terms"])


@functools.lru_cache(maxsize=1)
def gist_terms() -> frozenset[str]:
    """The framing terms users ask what a named paper is with ("tell", "explain", "about", "summaris"), learned
    from summary questions (training/fit_decisions.py): they ask nothing else of it; other framing terms
    ("score", "report") may."""
    return frozenset(_fitted()["gist_terms"]["terms"])


def topical(question: str, framing: frozenset[str] | None = None) -> frozenset[str]:
    """The question's terms without its framing ones (all of them when nothing else is left)."""
    qterms = terms(question)
    return qterms - (framing_terms() if framing is None else framing) or qterms


def word_features(retriever, question: str, qvec: np.ndarray, word: str, paper_id: str | None = None) -> np.ndarray:
    """What the missing-word model reads of one question word: how far the question's vector moves without it
    (log), how close the word alone is to the question, and how close it comes to the nearest sentence of
    ``paper_id`` (the top paper). A word that carries the topic moves the question; "pls", "re", "anything in
    here" barely do. A word a paper says in other words ("heart-signal" for ECG) comes close to one of its
    sentences; the topic a paper lacks ("speculative") does not."""
    kept = _without(question, word)
    drop = 1.0 - float(retriever.embed_query(kept) @ qvec) if kept.strip() else 1.0
    alone = retriever.embed_query(word)
    return np.array([math.log(max(drop, 1e-4)), float(alone @ qvec), _nearest_sentence(retriever, paper_id, alone)])


def _without(question: str, word: str) -> str:
    """The question without one of its words (as written)."""
    return " ".join(w for w in re.findall(r"\S+", question) if w != word)


def _nearest_sentence(retriever, paper_id: str | None, vec: np.ndarray) -> float:
    """The cosine of a paper's sentence nearest to ``vec`` (0 without a paper)."""
    paper = retriever.papers().get(paper_id) if paper_id else None
    if paper is None:
        return 0.0
    sents, svecs = retriever.sentence_vectors(paper_id, paper.abstract)
    return float((svecs @ vec).max()) if svecs is not None and len(sents) else 0.0


def missing_probabilities(retriever, question: str, qvec: np.ndarray, missing: set[str],
                          model: Logistic | None = None, paper_id: str | None = None) -> dict[str, float]:
    """For each question term the retrieved papers lack, the probability that its word carries the question's
    topic (the missing-word model), ``paper_id`` being the paper the question is read against (the top one):
    "pls", "hey", "re", "anything in the corpus" barely move the question's vector and score low; "speculative"
    or "weather" move it, come close to no sentence of the paper, and score high. Terms no word of the question
    gives back (stemmed across a hyphen or a quote) are left out."""
    if not missing:
        return {}
    model = model or models()["missing_word"]
    out: dict[str, float] = {}
    words = missing_words(question, missing)
    # every variant in one batch; word_features then finds them kept
    retriever.embed_queries([k for k in (_without(question, w) for w in words) if k.strip()] + list(words))
    for word, lacked in words.items():
        p = float(model.probability(word_features(retriever, question, qvec, word, paper_id))[0])
        for t in lacked:
            out[t] = max(out.get(t, 0.0), p)
    return out


def missing_words(question: str, missing: set[str]) -> dict[str, list[str]]:
    """The question's words (as written, in order) that hold terms of ``missing``, with those terms."""
    out = {}
    for word in dict.fromkeys(re.findall(r"\S+", question)):
        lacked = [t for t in terms(word) if t in missing]
        if lacked:
            out[word] = lacked
    return out


def field_signals(question: str, papers: list, framing: frozenset[str]) -> dict[str, float]:
    """How often ML writing in general (:mod:`.background`) writes what the top papers lack: the question's
    adjacent term pairs none of ``papers`` writes adjacent (log count of the most written one; also among pairs
    whose two terms the papers do hold apart, a combination of things the corpus has in parts), its terms none
    of them holds, its adjacent triples none of them writes, and how tightly the field binds a lacked pair (log
    count times its pointwise mutual information). "Speculative decoding" is written often and names a topic; a
    user's own wording of what a paper says ("heart-signal models") is not; a pair the whole field writes ("large
    language") is not a topic either."""
    from assistant.search.background import collocation, is_vocabulary, pair_count, term_count, triple_count

    seqs = [text_sequence(f"{p.title}. {p.abstract}") for p in papers if p is not None]
    have = set().union(*(set(zip(x, x[1:])) | set(zip(x[1:], x)) for x in seqs)) if seqs else set()
    have3 = set().union(*(set(zip(x, x[1:], x[2:])) for x in seqs)) if seqs else set()
    held = set().union(*(set(x) for x in seqs)) if seqs else set()
    q = stem_sequence(question)
    lacked = {(a, b): pair_count(a, b) for a, b in zip(q, q[1:]) if a != b and a not in framing
              and b not in framing and (a, b) not in have}
    lacked = {pair: n for pair, n in lacked.items() if not is_vocabulary(n)}  # "large language" names no topic
    triples = {t: triple_count(*t) for t in zip(q, q[1:], q[2:]) if not set(t) & framing and t not in have3}
    triples = {t: n for t, n in triples.items() if not is_vocabulary(n)}  # "large language model" neither
    return {"field_pair": max((math.log1p(n) for n in lacked.values()), default=0.0),
            "field_pair_parts": max((math.log1p(n) for (a, b), n in lacked.items() if a in held and b in held),
                                    default=0.0),
            "field_term": max((math.log1p(term_count(t)) for t in set(q) - framing - held), default=0.0),
            "field_triple": max((math.log1p(n) for n in triples.values()), default=0.0),
            "field_collocation": max((math.log1p(n) * max(0.0, collocation(a, b, n)) for (a, b), n in lacked.items()),
                                     default=0.0)}


def paper_terms(papers: dict, hits) -> list[frozenset[str]]:
    """The terms of each hit's paper (title and abstract), in hit order."""
    return [terms(f"{p.title}\n{p.abstract}") if (p := papers.get(h.paper_id)) else frozenset() for h in hits]


def signals(retriever, question: str, found, named: str | None = None, depth: int = 5,
            area: float | None = None, framing: frozenset[str] | None = None, papers_only: bool = False,
            word_model: Logistic | None = None) -> Signals:
    """The signals of a retrieval (``found``: its hits, best first, with their dense and BM25 scores).

    ``named``: the paper the question names by a word only it has, if any; ``area``: the intent model's
    probability, when the caller has it (the fitting script passes its out-of-fold one); ``framing``: the
    framing terms (default: the fitted ones); ``papers_only``: only the papers' signals will be read;
    ``word_model``: the missing-word model (default: the fitted one; the fitting script passes its out-of-fold one)."""
    hits = found.hits[:depth]
    qvec = found.query_vector if found.query_vector is not None else retriever.embed_query(question)
    _, best, _ = retriever.dense_all(qvec)
    best = best[np.isfinite(best)]
    med = float(np.median(best)) if len(best) else 0.0
    mad = float(np.median(np.abs(best - med))) * 1.4826 + 1e-6 if len(best) else 1.0
    index = retriever.index
    known = index.term_weights()
    rarest = max(known.values(), default=1.0)
    qterms = topical(question, framing)
    papers = index.all_papers()
    held = paper_terms(papers, found.hits[:10])
    # a term the top papers lack weighs by how likely its word carries the topic, so that how a user talks
    # ("papers re X", "X, pls", "anything in the corpus on X?") does not read as a topic the corpus lacks
    carries = missing_probabilities(retriever, question, qvec, set(qterms) - set().union(*held[:MISSING_DEPTH]),
                                    word_model, hits[0].paper_id if hits else None)
    weights = ChainMap({t: known.get(t, rarest) * p for t, p in carries.items()}, known)
    ceiling = retriever.bm25_ceiling(question) or 1.0
    top_fused = hits[0].score if hits and hits[0].score > 0 else 1e-9
    rows = []
    qseq = stem_sequence(question)
    qpairs = {(a, b) for a, b in zip(qseq, qseq[1:]) if a != b}
    for rank, h in enumerate(hits, 1):
        p = papers.get(h.paper_id)
        text_terms = terms(f"{p.title}\n{p.abstract}") if p else set()
        sents, svecs = index.sentence_vectors(h.paper_id, p.abstract) if p else ([], None)
        rows.append({"cos": h.dense, "cos_drop": (hits[0].dense - h.dense), "fused_ratio": h.score / top_fused,
                     "inv_rank": 1.0 / rank, "standout": (h.dense - med) / mad,
                     "coverage": coverage(weights, qterms, text_terms, rarest),
                     "sentence_cos": float((svecs @ qvec).max()) if svecs is not None and len(sents) else 0.0,
                     "named": float(h.paper_id == named), "bm25": h.bm25,
                     "pairs": pair_share(qpairs, p), "sentence_coverage": max(
                         (coverage(weights, qterms, terms(x), rarest) for x in sents), default=0.0)})
    unknown = sum(weights[t] for t in qterms if t not in known)
    # the rarest question term the best-covering top-3 paper lacks (a topic's own word: "speculative"), and how
    # much more of the question the top 10 hold together than any one of them (its words scattered over papers)
    # (rarity by the corpus alone: a word no paper has counts as the rarest here, whatever it carries)
    missing = min((max((known.get(t, rarest) for t in qterms - h), default=0.0) for h in held[:3]), default=rarest)
    union = coverage(weights, qterms, set().union(*held), rarest) if held else 0.0
    total = sum(weights.get(t, rarest) for t in qterms) or 1.0
    first = rows[0] if rows else dict.fromkeys(PAPER_SIGNALS, 0.0) | {"bm25": 0.0, "sentence_coverage": 0.0}
    q = {"top_cos": first["cos"], "best3_cos": max((r["cos"] for r in rows[:3]), default=0.0),
         "standout": first["standout"], "coverage": max((r["coverage"] for r in rows[:3]), default=0.0),
         "top_coverage": first["coverage"], "unknown_share": unknown / total,
         "bm25_share": first["bm25"] / ceiling,
         "gap": (hits[0].score - hits[1].score) / top_fused if len(hits) > 1 else 1.0,
         "sentence_cos": first["sentence_cos"], "log_terms": math.log1p(len(qterms)),
         "area": area_probability(question, qvec, len(qterms)) if area is None else area,
         "missing_rare": missing / rarest, "pairs": max((r["pairs"] for r in rows[:3]), default=0.0),
         "sentence_coverage": first["sentence_coverage"], "scatter": union - max((r["coverage"] for r in rows[:3]), default=0.0),
         "missing_topic": max(carries.values(), default=0.0)}
    for r in rows:
        r["area"] = q["area"]
    q.update(field_signals(question, [papers.get(h.paper_id) for h in hits[:3]],
                           framing_terms() if framing is None else framing) if not papers_only
             else dict.fromkeys(FIELD_SIGNALS, 0.0))
    # one more embedding and dense pass: only when the question's signals are read, not the papers' alone
    q["ablate_gain"] = ablate_gain(retriever, question, hits[0].paper_id, first["cos"], qterms, held[0], known,
                                   rarest) if hits and not papers_only else 0.0
    return Signals(question=q, papers=rows)


def ablate_gain(retriever, question: str, paper_id: str, cos: float, qterms: set[str], paper_terms: set[str],
                weights: dict[str, float], rarest: float) -> float:
    """How much closer the paper comes to the question without the question's rarest term the paper lacks: a
    near miss ("speculative decoding" against a paper on LLM inference) comes much closer, a paper that says the
    same thing in other words does not (the word's meaning is in it)."""
    import re

    missing = qterms - paper_terms
    if not missing:
        return 0.0
    # equally rare terms (often several unknown to the corpus): the first the question writes. A set's order
    # changes with each process's hash seed, and picking by it made the same question answered in one run and
    # refused in the next
    seq = stem_sequence(question)
    in_question = sorted(missing, key=lambda t: (seq.index(t) if t in seq else len(seq), t))
    term = max(in_question, key=lambda t: weights.get(t, rarest))
    kept = " ".join(w for w in re.findall(r"\S+", question) if term not in terms(w))
    if not terms(kept):
        return 0.0
    ids, best, _ = retriever.dense_all(retriever.embed_query(kept))
    at = {pid: i for i, pid in enumerate(ids)}
    return float(best[at[paper_id]]) - cos if paper_id in at else 0.0


def unsure_below() -> float:
    """The answerable probability under which an answered question is said to be unsure: the model's even odds
    (its threshold is lower, so that it refuses at most 3% of answerable questions; between the two it answers
    questions it reads as more likely on a topic the corpus lacks). Stored with its cross-validated reading."""
    return float(_fitted()["answerable"]["unsure"]["below"])


def answerable_probability(s: Signals) -> float:
    model = models()["answerable"]
    return float(model.probability(s.question_vector(model.names))[0])


def relevant_probabilities(s: Signals) -> np.ndarray:
    if not s.papers:
        return np.zeros(0)
    model = models()["relevant"]
    return model.probability(s.paper_matrix(model.names))
