"""Answers with citations: decide what the question wants and whether the corpus answers it, number the relevant
papers, then ask the LLM or quote the sentences that answer.

The decisions (intent, answerable, which papers are relevant) are models fitted on data (:mod:`.decide`); a
paper the question names (:mod:`.names`) is answered from. Citations are ``[n]`` in the text, where n numbers the
sources sent for that answer. After generation the text is parsed: any ``[n]`` that is not a sent source is dropped
from the citation list and marked ``[n?]`` in the text, so a reader can see it was not backed.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from typing import Callable, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


from assistant.config import Settings
from assistant.prompts import NO_ANSWER_PHRASE, PARTS_PHRASE, UNSURE_CAUTION, render, system_prompt
from assistant.search.decide import terms, unsure_below
from assistant.search.parts import Part
from assistant.search.retrieve import Hit, Retrieval, Retriever
from assistant.text.english import ASKS_FOR_LINK
from assistant.text.safetext import inert_citations
from assistant.text.sentences import split_sentences

CITATION_RE = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
INCOMPLETE_MARK = "[answer incomplete: the LLM stream stopped early]"
LENGTH_MARK = "[answer cut at {n} tokens: raise ASSISTANT_MAX_TOKENS for longer answers]"


@dataclass(frozen=True)
class Citation:
    n: int
    paper_id: str
    title: str
    snippet: str
    score: float

    def as_dict(self) -> dict:
        return {"n": self.n, "paper_id": self.paper_id, "title": self.title, "snippet": self.snippet,
                "score": round(self.score, 4)}


class Answer(BaseModel):
    """One answer, immutable: what a stage decided is a new copy (``model_copy(update=...)``), never a change. The
    same record is shown, saved in a chat (``model_dump``) and resumed (``model_validate``: equal to what was saved);
    ``--json`` is :meth:`as_dict`, its stable view."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    question: str
    text: str = Field(validation_alias=AliasChoices("text", "answer"))
    mode: Literal["llm", "extractive"]
    answerable: bool
    citations: list[Citation] = []
    sources: list[Hit] = []
    #: citation numbers the LLM wrote that no source has (shown as ``[n?]``)
    invalid_citations: list[int | str] = []
    complete: bool = True
    model: str | None = None
    usage: dict = {}
    retrieval_query: str | None = None
    prompt: list[dict] | None = None
    retrieved: list[Hit] = []  # the full ranking (>= 10), sources are its head
    order: str = "fused"  # what ordered retrieved (Retrieval.order)
    support: list[dict] = []  # per cited sentence: is it backed by its source?
    read_as: str | None = None  # the question with its typos mended, when it had any
    #: An LLM answer that cited none of its sources: what those sources say, quoted as offline (verbatim,
    #: each sentence cited), so the reader has something checked beside the unchecked text.
    quoted: str = ""
    quoted_citations: list[Citation] = []
    #: Papers near the question that are not cited: the nearest ones when the corpus has no answer.
    related: list[Hit] = []
    #: What the question wanted, as decided: "paper" or "area".
    intent: str = "paper"
    #: Answered, but the answerable model reads the question as more likely on a topic the corpus lacks
    #: (:func:`.decide.unsure_below`): the answer says so above it.
    unsure: bool = False
    #: A question the corpus holds only in parts (:mod:`.parts`): each part and its papers (the refusal says so).
    parts: list[Part] = []

    def as_dict(self) -> dict:
        out = {"question": self.question, "answer": self.text, "mode": self.mode, "answerable": self.answerable,
               "citations": [c.as_dict() for c in self.citations],
               "sources": [h.as_dict() for h in self.sources], "complete": self.complete}
        if self.invalid_citations:
            out["invalid_citations"] = self.invalid_citations
        if self.model:
            out["model"] = self.model
        if self.usage:
            out["usage"] = self.usage
        if self.support:
            out["support"] = self.support
        if self.read_as:
            out["read_as"] = self.read_as
        if self.unsure:
            out["unsure"] = True
        if self.mode == "llm" and self.answerable and not self.citations:
            out["uncited"] = True  # the terminal warns; a script should not take the text as checked
        if self.quoted:
            out["quoted"] = {"text": self.quoted, "citations": [c.as_dict() for c in self.quoted_citations]}
        if self.related:
            out["related"] = [h.as_dict() for h in self.related]
        if self.parts:
            out["parts"] = [p.as_dict() for p in self.parts]
        if self.retrieval_query and self.retrieval_query != self.question:
            out["retrieval_query"] = self.retrieval_query
        return out



# --- deciding -----------------------------------------------------------------------------------


def retrieve(retriever: Retriever, question: str, k: int, read_parts: bool = True) -> Retrieval:
    """Search for a question and decide, from data (:mod:`.decide`), what it wants and whether the corpus answers
    it: ``ask``, ``chat`` and ``search`` agree on what is answerable.

    A question joining things the corpus holds only apart (the parts model, :mod:`.parts`: papers on each, none on
    both) is not answerable, and ``parts`` says which papers are on which part; ``read_parts`` False (a follow-up,
    retrieved with the words of the turns before it) leaves it unread.

    A paper the question names (:func:`.names.named_papers`) is answerable whatever the cosines, and leads the
    hits when the question says little else or the search already ranks it near the top. An area question's papers
    are ranked mostly by their cosine (framing words such as "which papers propose methods for" must not steer the
    lexical side: :data:`decide.models` holds the measured weight)."""
    from assistant.search import decide, parts

    mended = retriever.mend(question)
    qvec = retriever.embed_query(mended)
    area = decide.area_probability(mended, qvec) >= decide.models()["intent"].threshold
    found = retriever.search(mended, k=max(k, retriever.settings.tuning.pool), rerank=not area)
    named = [pid for pid in retriever.named(mended) if pid not in _outside(retriever)]
    top3 = [h.paper_id for h in found.hits[:3]]
    if named and not all(pid in [h.paper_id for h in found.hits] for pid in named):
        found = dc_replace(found, hits=_with_papers(retriever, found, named))
    s = decide.signals(retriever, mended, found, named=named[0] if named else None)
    probability = decide.answerable_probability(s)
    answerable = bool(found.hits) and (bool(named) or probability >= decide.models()["answerable"].threshold)
    # the parts model reads a question against the whole index; a /filter's few papers (or a view of some) are not it
    whole = retriever.allowed is None
    reading = parts.read(retriever, mended, probability) if read_parts and whole and found.hits and not named else None
    apart = parts.held_apart(reading)
    answerable = answerable and not apart
    # never looser than a bar the user set (ASSISTANT_MIN_RELEVANCE) on the top cosines
    if retriever.settings.search.min_relevance is not None and found.confidence < retriever.settings.search.min_relevance:
        answerable = bool(named)
    hits = found.hits
    order = "reranked" if any(h.likelihood is not None for h in hits) else "fused"
    if named and (_asks_little(retriever, mended, named) or any(pid in top3 for pid in named)):
        first = [h for pid in named for h in hits if h.paper_id == pid]
        hits, order = first + [h for h in hits if h.paper_id not in named], "named"
    elif area and answerable:
        hits, order = _area_order(retriever, mended, hits), "area"
    hits = [dc_replace(h, rank=n) for n, h in enumerate(hits, 1)]
    ordered = Retrieval(query=found.query, hits=hits, answerable=answerable, confidence=found.confidence,
                        query_vector=found.query_vector)
    relevance = decide.relevant_probabilities(decide.signals(retriever, mended, ordered, depth=max(k, 10),
                                                             named=named[0] if named else None,
                                                             area=s.question["area"], papers_only=True))
    out = dc_replace(ordered, hits=hits[:k], intent="area" if area and not named else "paper",
                     relevance={h.paper_id: float(p) for h, p in zip(hits, relevance)}, named=named,
                     probability=probability, order=order, parts=reading.parts if apart else (),
                     typed=question if mended != question else None)
    return out


def corpus_verdict(retriever: Retriever, query: str) -> tuple[bool, bool, tuple]:
    """(lacks, unsure, parts): whether the corpus has no paper on what the query asks (the answerable model's
    refusal, or the parts model's: ``which``, ``summarize`` and ``map`` list nothing for such a query), where it does
    not refuse, whether it reads the query below even odds (as an answer marked ``unsure``), and the parts of a
    query the corpus holds only apart, each with its papers (:mod:`.parts`)."""
    found = retrieve(retriever, query, 5)
    return not found.answerable, found.answerable and is_unsure(found), found.parts


def is_unsure(found: Retrieval) -> bool:
    """Answered below the answerable model's even odds (:func:`.decide.unsure_below`); never a named paper."""
    return not found.named and found.probability is not None and found.probability < unsure_below()


def _outside(retriever: Retriever) -> set[str]:
    """Papers a filter (chat's /filter) keeps out of reach."""
    if retriever.allowed is None:
        return set()
    return set(retriever.papers()) - retriever.allowed


def _name_terms(retriever: Retriever, paper_id: str, question: str) -> set[str]:
    """The question's terms that are the paper's name, and no other paper's (what is left says what is asked of
    it: "ImageNet", a name many abstracts write, is asked). Of several names of the paper in the question, its own
    is the one it writes most often: "what does Trinity reach on LiveCodeBench?" asks about the benchmark the
    Trinity paper names once."""
    from assistant.search.names import name_words

    words = name_words(retriever.index, question, paper_id)
    paper = retriever.papers().get(paper_id)
    if len(words) > 1 and paper is not None:
        text = f"{paper.title}\n{paper.abstract}".lower()
        times = {w: len(re.findall(r"(?<![\w-])" + re.escape(w.lower()) + r"(?![\w-])", text)) for w in words}
        words = [w for w in words if times[w] == max(times.values())]
    return {t for w in words for t in terms(w)}


def _with_papers(retriever: Retriever, found: Retrieval, paper_ids: list[str]) -> list[Hit]:
    """The hits with these papers added (scored as the search scores them), in fused order."""
    wider = retriever.search(found.query, k=len(found.hits) + 200)
    keep = {h.paper_id for h in found.hits} | set(paper_ids)
    return [h for h in wider.hits if h.paper_id in keep] or found.hits


def _area_order(retriever: Retriever, question: str, hits: list[Hit]) -> list[Hit]:
    """An area question's papers by what the question asks (the question encoder's cosine, which puts the papers
    about a topic above those sharing its words), the embedder's cosine and a smaller share of the lexical side
    (decide's fitted area weights)."""
    from assistant.search.decide import area_score, models

    w, wa = models()["area_dense_weight"], models()["area_asked_weight"]
    ceiling = retriever.bm25_ceiling(question) or 1.0
    asked: dict[str, float] = {}
    if wa:
        ids, best, _ = retriever.dense_all(retriever.asked_vector(question))
        asked = dict(zip(ids, best.tolist()))
    return sorted(hits, key=lambda h: -area_score(asked.get(h.paper_id, h.dense), h.dense, h.bm25, ceiling, wa, w))


def no_answer(question: str, mode: str, retrieval: Retrieval) -> Answer:
    """The refusal: nothing cited; the nearest papers are ``related`` (never citations). A question the corpus
    holds only in parts says so, and ``parts`` lists each part's papers (never citations either)."""
    text = NO_ANSWER_PHRASE
    if retrieval.parts:
        named = " and ".join(f"“{p.text}”" for p in retrieval.parts)
        text = f"{PARTS_PHRASE} It has papers on {named}, but none on both."
    return Answer(question=question, text=text, mode=mode, answerable=False, citations=[],
                  sources=[], related=retrieval.hits[:3], retrieval_query=retrieval.query,
                  parts=list(retrieval.parts))


def area_hits(retrieval: Retrieval) -> list[Hit]:
    """The papers an area answer cites: the top hit and every other the relevance model passes. ``map --query``
    numbers them and ``summarize`` adds them beside ``which``'s list, read to depth 10 (benchmarks/area_marks.py:
    held-out precision 0.647 -> 0.919 and recall 0.706 -> 0.810 against the hand-set cosine gate they used)."""
    from assistant.search.decide import models

    cut = models()["relevant"].threshold
    return retrieval.hits[:1] + [h for h in retrieval.hits[1:] if retrieval.relevance.get(h.paper_id, 0.0) >= cut]


def citable(retrieval: Retrieval, one_paper: bool = False, max_others: int = 2) -> list[Hit]:
    """The hits an answer may cite: those the relevance model passes (the top one always, as the question is
    answerable), at most ``max_others`` (tuning.max_others) besides a question's one paper; every named paper."""
    hits = retrieval.hits
    if not hits:
        return []
    named = [h for h in hits if h.paper_id in retrieval.named]
    if named:
        return named
    if one_paper:
        return hits[:1]
    passing = area_hits(retrieval)
    return passing if retrieval.intent == "area" else passing[:1 + max_others]


def answer_question(retriever: Retriever, question: str, settings: Settings | None = None,
                    on_token: Callable[[str], None] | None = None, retrieval_query: str | None = None,
                    k: int | None = None, pinned: list[str] | None = None, one_paper: bool = False,
                    gist: bool = False, skip: frozenset[str] = frozenset()) -> Answer:
    """Retrieve for ``retrieval_query`` (default: the question) and answer ``question`` with citations.

    ``one_paper``: the question is about one paper (a follow-up's "it"): the top hit is cited alone.
    ``pinned``: paper ids the user chose (the retriever's filter holds them): they are the sources, in that order,
    and the answerable model does not refuse. ``gist``: the question asks what they are ("compare the first and
    second"). ``skip``: sentences already shown ("tell me more"), quoted again only if nothing else is left."""
    settings = settings or retriever.settings
    typed = question
    question = retriever.mend(question)
    k = k or settings.search.top_k
    if pinned:
        full = retriever.search(retrieval_query or question, k=max(k, len(pinned)))
        by_id = {h.paper_id: h for h in full.hits}
        hits = [dc_replace(by_id[pid], rank=n) for n, pid in enumerate((p for p in pinned if p in by_id), 1)]
        full = dc_replace(full, hits=hits, answerable=bool(hits), named=[h.paper_id for h in hits])
    else:
        full = retrieve(retriever, retrieval_query or question, max(k, 10),
                        read_parts=retrieval_query in (None, typed, question))
        if retrieval_query not in (None, typed, question):  # a follow-up: the question asked is still this one
            full = dc_replace(full, answerable=full.answerable and bool(full.hits))
    retrieval = dc_replace(full, hits=full.hits[:k])
    mode = "llm" if settings.llm_enabled else "extractive"
    # answered below the answerable model's even odds: said above the answer, and told to the LLM; not of a
    # follow-up, which asks about the papers of the conversation, not whether the corpus has a topic
    unsure = is_unsure(full) and retrieval_query in (None, typed, question)
    if not retrieval.answerable or not retrieval.hits:
        answer = no_answer(typed, mode, retrieval)
    else:
        sources = citable(retrieval, one_paper=one_paper, max_others=settings.tuning.max_others)
        sent = dc_replace(retrieval, hits=[dc_replace(h, rank=n) for n, h in enumerate(sources, 1)])
        # what each paper contributes, when that is what is asked: an area's papers, a named paper asked nothing else
        # (a follow-up on one paper asks its own question, whatever the earlier turn it is retrieved with asked)
        gist = gist or retrieval.intent == "area" and not one_paper or bool(retrieval.named) and _asks_little(
            retriever, question, retrieval.named)
        if mode == "llm":
            answer = llm_answer(retriever, typed, sent, settings, on_token, unsure=unsure)
            if answer.answerable and not answer.citations:  # nothing checked: quote what the sources say
                quoted = extractive_answer(retriever, question, sent, gist=gist, skip=skip)
                answer = answer.model_copy(update={"quoted": quoted.text, "quoted_citations": quoted.citations})
        else:
            answer = extractive_answer(retriever, question, sent, gist=gist, skip=skip).model_copy(
                update={"question": typed})
        # the LLM found no source on it: the nearest papers are the ones it read
        answer = answer.model_copy(update={"related": retrieval.hits[:3] if not answer.answerable else
                                           [h for h in retrieval.hits if h.paper_id not in
                                            {s.paper_id for s in sources}][:3]})
    return answer.model_copy(update={"retrieved": full.hits, "order": full.order, "intent": full.intent,
                                     "unsure": answer.answerable and unsure,
                                     "read_as": question if question != typed else None})


def _asks_little(retriever: Retriever, question: str, named: list[str]) -> bool:
    """Whether a question that names papers asks nothing else of them ("What is Qronos?", "explain trinity"):
    then they lead the hits and what they contribute is the answer."""
    from assistant.search.decide import framing_terms, gist_terms, missing_probabilities, models

    # the words users ask what a paper is with ("explain", "tell", "about", "summarise") ask nothing else of it
    left = terms(question) - gist_terms() - set().union(*(_name_terms(retriever, pid, question) for pid in named))
    papers = retriever.papers()
    held = set().union(*(terms(f"{papers[pid].title}\n{papers[pid].abstract}") for pid in named if pid in papers))
    # a term the paper holds asks something of it ("training samples", "inference cost"), unless questions are
    # framed with it (decide.framing_terms: "paper", "studi", "work")
    if (left & held) - framing_terms():
        return False
    # a term it lacks, in under a tenth of the papers, asks something else when it carries the question's topic
    # (the missing-word model: "watermarking" does, "tell me" and "summarise" do not)
    common = max(2, len(papers) // 10)
    lacked = {t for t in left - held if retriever.doc_freq(t) < common}
    threshold = models()["missing_word"].threshold
    return all(p < threshold for p in missing_probabilities(retriever, question, retriever.embed_query(question),
                                                            lacked, paper_id=named[0]).values())


# --- sources and citations ------------------------------------------------------------------


def escape_source(text: str) -> str:
    """Source text as inert data: no tags, no citation markers that look like ours."""
    text = html.escape(text, quote=False)
    return CITATION_RE.sub(lambda m: f"(ref {m.group(1)})", text)


def escape_attribute(text: str) -> str:
    """A value inside a source tag's quoted attribute (a paper id, a theme): inert as :func:`escape_source`, and
    no quote can end the attribute and add others (``q" trusted="yes``); one line."""
    return escape_source(" ".join(text.split())).replace('"', "&quot;").replace("'", "&#x27;")


def format_sources(hits: list[Hit], abstracts: dict[str, str]) -> str:
    blocks = []
    for n, hit in enumerate(hits, 1):
        body = escape_source(abstracts.get(hit.paper_id, hit.snippet))
        blocks.append(f'<source n="{n}" id="{escape_attribute(hit.paper_id)}">\nTitle: {escape_source(hit.title)}\n{body}\n</source>')
    return "\n".join(blocks)


def parse_citations(text: str, n_sources: int) -> tuple[str, list[int], list[int | str]]:
    """(text with unknown citations marked, cited source numbers in order, unknown numbers). Anything
    bracketed that looks like a citation but names no source is marked unknown: ``[99?]``, ``[-1?]``,
    ``[1000?]``, and a range ``[1-3?]`` (listed as the string ``"1-3"``)."""
    from assistant.text.safetext import CITATION_LIKE

    cited: list[int] = []
    invalid: list[int | str] = []

    def repl(m: re.Match) -> str:
        parts = []
        for x in re.split(r"\s*[,;]\s*", m.group(1)):
            n = int(x) if re.fullmatch(r"\d{1,3}", x) else None
            if n is not None and 1 <= n <= n_sources:
                if n not in cited:
                    cited.append(n)
                parts.append(f"[{n}]")
            else:
                bad = int(x) if re.fullmatch(r"-?\d+", x) else x
                if bad not in invalid:
                    invalid.append(bad)
                parts.append(f"[{x}?]")
        return "".join(parts)

    return CITATION_LIKE.sub(repl, text), cited, invalid


def _citations(hits: list[Hit], numbers: list[int], snippets: dict[int, str] | None = None) -> list[Citation]:
    out = []
    for n in numbers:
        h = hits[n - 1]
        out.append(Citation(n=n, paper_id=h.paper_id, title=h.title,
                            snippet=(snippets or {}).get(n, h.snippet), score=h.score))
    return out



class MarkedStream:
    """Streamed tokens passed on with a citation to no source marked as the parsed answer marks it (``[99]`` ->
    ``[99?]``), so that what is streamed (to a terminal or a pipe) is the text the note under it describes. A
    bracket is held back until it closes, or until it runs on too long to be a citation."""

    HOLD = 24  # characters: "[12, 13, 14, 15]" and longer lists fit

    def __init__(self, on_token: Callable[[str], None], n_sources: int):
        self.on_token, self.n_sources, self.held = on_token, n_sources, ""

    def __call__(self, token: str) -> None:
        self.held += token
        cut = self.held.rfind("[")
        if cut != -1 and "]" not in self.held[cut:] and len(self.held) - cut < self.HOLD:
            ready, self.held = self.held[:cut], self.held[cut:]
        else:
            ready, self.held = self.held, ""
        if ready:
            self.on_token(parse_citations(ready, self.n_sources)[0])

    def flush(self) -> None:
        if self.held:
            self.on_token(parse_citations(self.held, self.n_sources)[0])
            self.held = ""


def llm_answer(retriever: Retriever, question: str, retrieval: Retrieval, settings: Settings,
               on_token: Callable[[str], None] | None = None, unsure: bool = False) -> Answer:
    """The LLM's answer from the numbered sources; ``unsure``: the answerable model reads the question as more
    likely on a topic the corpus lacks, and the prompt says so (:data:`~assistant.prompts.UNSURE_CAUTION`)."""
    from assistant.qa.llm import chat

    hits = retrieval.hits
    papers = retriever.papers()
    abstracts = {h.paper_id: papers[h.paper_id].abstract for h in hits if h.paper_id in papers}
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": render("answer", sources=format_sources(hits, abstracts), question=question,
                                                 caution=UNSURE_CAUTION if unsure else "")},
    ]
    marked = MarkedStream(on_token, len(hits)) if on_token else None
    completion = chat(settings, messages, on_token=marked)
    if marked:
        marked.flush()
    text, cited, invalid = parse_citations(completion.text.strip(), len(hits))
    answerable = NO_ANSWER_PHRASE.lower().rstrip(".") not in text.lower() or bool(cited)
    if completion.finish_reason == "length":
        text = f"{text}\n\n{LENGTH_MARK.format(n=settings.llm.max_tokens)}"
    elif not completion.complete:
        text = f"{text}\n\n{INCOMPLETE_MARK}"
    from assistant.qa.llm import estimate_cost

    cost = estimate_cost(settings, completion.model or settings.llm.model, completion.usage)
    return Answer(question=question, text=text, mode="llm", answerable=answerable,
                  citations=_citations(hits, cited) if answerable else [], sources=hits,
                  invalid_citations=invalid, complete=completion.complete, model=completion.model,
                  usage=completion.usage | ({"cost_usd": cost} if cost is not None else {}),
                  retrieval_query=retrieval.query, prompt=messages,
                  support=support_marks(retriever, text, hits, abstracts) if answerable else [])


#: A cited sentence counts as supported when its best-matching sentence in a cited abstract has


def support_marks(retriever: Retriever, text: str, hits: list[Hit], abstracts: dict[str, str]) -> list[dict]:
    """For each answer sentence that cites sources: does any cited abstract back it?"""
    from assistant.embed.embedder import embed_array

    claims = []
    for sentence in split_sentences(text.replace("\n", " ")):
        nums = [int(n) for group in CITATION_RE.findall(sentence) for n in re.split(r"\s*[,;]\s*", group)
                if 1 <= int(n) <= len(hits)]
        claim = CITATION_RE.sub("", sentence).replace("?]", "").strip(" -*")
        if nums and claim:
            claims.append((sentence, claim, sorted(set(nums))))
    if not claims:
        return []
    import numpy as np

    # each cited abstract's sentences and vectors as the index keeps them (embedded by the ingest): only the
    # answer's own sentences are embedded here
    by_source = {n: retriever.sentence_vectors(hits[n - 1].paper_id, abstracts.get(hits[n - 1].paper_id,
                                                                                   hits[n - 1].snippet))
                 for _, _, nums in claims for n in nums}
    flat = [(n, s) for n, (ss, _) in by_source.items() for s in ss]
    svecs = np.concatenate([v for _, v in by_source.values()]) if flat else np.zeros((0, 1), dtype=np.float32)
    cvecs = embed_array(retriever.embedder, [c for _, c, _ in claims])
    tuning = retriever.settings.tuning
    out = []
    for i, (sentence, claim, nums) in enumerate(claims):
        rows = [j for j, (n, _) in enumerate(flat) if n in nums]
        cos = float((svecs[rows] @ cvecs[i]).max()) if rows else 0.0
        held = terms(claim)
        overlap = max((len(held & terms(flat[j][1])) / max(len(held), 1) for j in rows), default=0.0)
        supported = cos >= tuning.support_cosine or overlap >= tuning.support_overlap
        out.append({"sentence": sentence, "citations": nums, "supported": supported,
                    "cosine": round(cos, 3), "overlap": round(overlap, 3)})
    return out




def extractive_answer(retriever: Retriever, question: str, retrieval: Retrieval, gist: bool = False,
                      skip: frozenset[str] = frozenset()) -> Answer:
    """Verbatim abstract sentences that answer the question (:func:`.evidence.pick`), each cited, the first of each
    paper after the paper's own title; ``retrieval``'s hits are the papers to cite, the first one the paper the
    question is about (up to tuning.top_sentences from it, and from each paper the question names;
    tuning.other_sentences from the others; tuning.area_sentences from each paper of an area)."""
    from assistant.qa.evidence import pick

    hits = retrieval.hits
    tuning = retriever.settings.tuning
    papers = retriever.papers()
    qvec = retrieval.query_vector if retrieval.query_vector is not None and retrieval.query == question \
        else retriever.embed_query(question)
    weights = retriever.term_weights()
    qterms = terms(question)
    wants_link = bool(ASKS_FOR_LINK.search(question))
    lines: list[str] = []
    snippets: dict[int, str] = {}
    several = len(hits) > 1 and retrieval.intent == "area"
    for n, h in enumerate(hits, 1):
        paper = papers.get(h.paper_id)
        sents, svecs = retriever.sentence_vectors(h.paper_id, paper.abstract if paper else h.snippet)
        count = tuning.area_sentences if several else tuning.other_sentences \
            if n > 1 and h.paper_id not in retrieval.named else tuning.top_sentences
        chosen = pick(sents, svecs, qvec, qterms, weights, count, gist=gist, skip=skip, wants_link=wants_link)
        # a paper is named by its title where it has one of its own (a derived one is its opening words again)
        name = f"{inert_citations(' '.join(paper.title.split()))} — " if paper and not paper.title_derived else ""
        for j, i in enumerate(chosen.indices):
            lines.append(f"- {name if j == 0 else ''}{inert_citations(sents[i])} [{n}]")  # its own "[7]" is not ours
        if chosen.lead is not None:
            snippets[n] = sents[chosen.lead]
    cited = sorted(snippets)
    return Answer(question=question, text="\n".join(lines), mode="extractive", answerable=True,
                  citations=_citations(hits, cited, snippets), sources=hits, retrieval_query=retrieval.query,
                  related=[])
