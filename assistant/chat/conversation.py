"""Conversation state and follow-up handling. No terminal I/O here: the CLI renders.

Each turn is first read by the turn model (:mod:`assistant.chat.turns`): a new question, a follow-up on the
paper talked about, "tell me more", a choice among the papers the last answer cited, or chit-chat (answered with
a hint, not searched). A follow-up ("how much does it reduce forgetting?") is retrieved with the conversation's
help: with an LLM, the condense prompt rewrites it as a standalone question; without one, it is combined with the
previous question and the title of the previous answer's top paper. A new question is asked as it is, unless the
corpus cannot answer it on its own and the previous top paper holds its words (offline, it is combined too).
A turn that names sources of the previous answer ("[2]", "paper 3", "the second one", "the first and third
papers", "the last one") is answered from those papers only, in either mode; a choice ("which of them handles
fairness?") from the papers it cited, by each one's sentence closest to what is asked.
The same :meth:`Conversation.ask` serves ``chat`` and ``eval``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from pydantic import BaseModel, ConfigDict

from assistant.qa.answer import Answer, answer_question
from assistant.config import Settings
from assistant.errors import InputError
from assistant.search.retrieve import Retriever
from assistant.text.english import (
    COMPARING, COUNT_WORDS, FILLER_STEMS, GIST_STEMS, NUMBERED_SOURCE, ORDINALS, ORDINAL_SOURCE, ORDINAL_WORDS,
    RUN_OF_SOURCES)

#: "[2]", "[1, 3]": the answer's own citation markers.
_BRACKET = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


#: The reply to a line with nothing to search for ("thanks!", "hi").
CHAT_ONLY = "Ask me about the papers, e.g. \"what work exists on federated learning?\" or \"how does it work?\"."


def references(question: str) -> tuple[list[int], list[int]]:
    """Sources of the previous answer that a question names: (citation numbers as shown, e.g. ``[2]`` or
    "paper 2"; positions in its Sources list, e.g. "the second one" -> 2, "the last one" -> -1, "the first two"
    -> 1, 2, "the last two" -> -2, -1)."""
    numbers: list[int] = []
    for rx in (_BRACKET, NUMBERED_SOURCE):
        for m in rx.finditer(question):
            numbers += [int(n) for n in re.findall(r"\d+", m.group(1))]
    positions = [ORDINALS[w.lower()] for m in ORDINAL_SOURCE.finditer(question)
                 for w in re.findall(ORDINAL_WORDS, m.group(1), re.I)]
    for m in RUN_OF_SOURCES.finditer(question):
        count = COUNT_WORDS[m.group(2).lower()]
        positions += list(range(-count, 0)) if m.group(1).lower() == "last" else list(range(1, count + 1))
    return list(dict.fromkeys(numbers)), list(dict.fromkeys(positions))


def without_references(question: str) -> str:
    """The question with its references to earlier sources taken out (what the papers are asked)."""
    text = question
    for rx in (_BRACKET, NUMBERED_SOURCE, ORDINAL_SOURCE, RUN_OF_SOURCES):
        text = rx.sub(" ", text)
    return re.sub(r"\s+", " ", re.sub(r"\s+([?.,!;:])", r"\1", text)).strip()


class Turn(BaseModel):
    """One turn as asked and answered, immutable (a saved chat resumes the same turns)."""

    model_config = ConfigDict(frozen=True)

    question: str
    answer: Answer


@dataclass
class Conversation:
    retriever: Retriever
    settings: Settings
    turns: list[Turn] = field(default_factory=list)
    #: how the last question was read: (question, how many turns it was read after, the last of them, the kind);
    #: the turn is held, not its id, which a new turn may reuse once the old one is gone
    _kinds: tuple | None = field(default=None, repr=False)
    #: how many turns there were when the search scope (/filter) last changed: what earlier questions found is
    #: from another scope, so no "them" is made of it (:meth:`_area_list`)
    _scope_from: int = field(default=0, repr=False)

    def resume(self, answers: list[Answer]) -> None:
        """Continue a saved conversation: its answers become the earlier turns."""
        self.turns = [Turn(question=a.question, answer=a) for a in answers]

    def paper_count(self) -> int:
        return self.retriever.count()

    def paper(self, ref: str):
        """A paper of the index, by id, a name only it has or a part of one title (InputError when none matches)."""
        return self.retriever.paper(ref)

    def filter_size(self) -> int | None:
        """How many papers the /filter in force lets through (None: no filter)."""
        return len(self.retriever.allowed) if self.retriever.allowed is not None else None

    def set_filter(self, spec: str, scope_from: int | None = None) -> int:
        """Search only papers from source file or with keyword ``spec`` ("off" lifts it); how many remain. The scope
        changes at this turn, or at ``scope_from`` (a saved chat's filter, put back on resume)."""
        n = self.retriever.set_filter(spec)
        self._scope_from = len(self.turns) if scope_from is None else scope_from
        return n

    @property
    def scope_from(self) -> int:
        return self._scope_from

    def clear(self) -> None:
        self.turns.clear()
        self._scope_from = 0  # no earlier question is left to be from another scope

    def replay(self, item: dict) -> str:
        """Start afresh, ask an eval item's earlier turns, and return its last question (its ``turns``, else
        its ``question``): how eval and the gate benchmarks put each question in its conversation."""
        self.clear()
        turns = item.get("turns") or [item["question"]]
        for turn in turns[:-1]:
            self.ask(turn)
        return turns[-1]

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    @property
    def context(self) -> Turn | None:
        """The turn a follow-up reads: the last one that cited papers, else the last one. A refused, failed or
        chit-chat turn in between changes nothing ("is there anything on X?" refused, then "does it need labels?"
        is still about the paper talked about before)."""
        return next((t for t in reversed(self.turns) if _cited(t.answer)), self.last)

    def kind(self, question: str) -> str:
        """How the turn is read (:mod:`assistant.chat.turns`): "new", "followup", "more", "among" or "chat", among
        the kinds the conversation allows: no follow-up before a first answer, "more" only of the one paper talked
        about, a choice only after an answer citing several; a turn naming sources of the last answer ("[2]",
        "the second one") follows up, and one naming a paper (a word only it has) is not chit-chat."""
        from assistant.chat import turns

        if self._kinds is not None and self._kinds[:2] == (question, len(self.turns)) and self._kinds[2] is self.last:
            return self._kinds[3]
        numbers, positions = references(question)
        if self.turns and (numbers or positions):
            kind = "followup"
        else:
            named = set(self.retriever.named(question))
            talked = self._talked_about() if self.turns else None
            possible = {"new"} | ({"chat"} if not named else set())
            if self.turns:
                possible.add("followup")
                if self.context.answer.intent != "area" and talked and named <= {talked[0]}:
                    possible.add("more")
                if self._choices():
                    possible.add("among")
            kind = turns.read(question, self.retriever.embed_query(question), frozenset(possible),
                              self._previous_vector())
        self._kinds = (question, len(self.turns), self.last, kind)
        return kind

    def without_chitchat(self, question: str) -> str:
        """The question without the pleasantries it opens with ("cool, how big is the dataset?")."""
        from assistant.chat import turns

        return turns.without_chitchat(question, self.retriever.embed_query, keep=self._searchable,
                                      previous=self._previous_vector())

    def _previous_vector(self):
        """The vector of the turn this one follows (:attr:`context`; what the turn model reads it against), if any."""
        return self.retriever.embed_query(self.context.question) if self.turns else None

    def _searchable(self, text: str) -> bool:
        """Whether the corpus has something on ``text`` though the turn model reads it as chit-chat ("RLHF" alone
        looks like "lol"): it names a paper, or the corpus answers it."""
        return bool(self.retriever.named(text)) or self._answerable(text)

    def is_followup(self, question: str) -> bool:
        return bool(self.turns) and self.kind(question) == "followup"

    def referenced(self, question: str) -> list[tuple[str, str]]:
        """(paper id, title) of each source of the previous answer the question names, of the paper talked about
        when it asks for more, or of a paper it names besides it in a follow-up; [] if none.

        Numbers are the ``[n]`` the answer showed (``/show n`` opens the same paper); positions count
        down its Sources list. A number or position the answer does not have is an :class:`InputError`."""
        if not self.turns:
            return []
        numbers, positions = references(question)
        prev = self.referent()
        if not numbers and not positions:
            # "tell me more" after an answer about one paper (it led the citations): that paper; after an area
            # question's list it is not clear which, so it is asked as a follow-up
            first = [(c.paper_id, c.title) for c in sorted(prev.citations, key=lambda c: c.n)[:1]] or \
                [(h.paper_id, h.title) for h in prev.sources[:1] if prev.answerable]  # an LLM that cited none
            if first and self.kind(question) == "more":
                return first
            # a follow-up naming another paper is about it ("and CurlFlow?", "in CLASH, which models struggled?"),
            # and about both when it sets them side by side ("compare it with DeepEyes"), the named one first; one
            # that sets two named papers side by side ("LumiTex vs Part-X-MLLM") is about those two
            named = [pid for pid in self.retriever.named(question) if pid not in {pid for pid, _ in first}]
            if first and named and self.kind(question) == "followup":
                papers = self.retriever.papers()
                return [(pid, papers[pid].display_title) for pid in named if pid in papers] + \
                    (first if COMPARING.search(question) and len(named) == 1 else [])
            return []
        cited = sorted(prev.citations, key=lambda c: c.n)
        listed_hits = prev.sources or prev.related  # a refusal lists the nearest papers: "paper 1" is the first
        shown = [(c.paper_id, c.title) for c in cited] or [(h.paper_id, h.title) for h in listed_hits]
        listed = ", ".join(f"[{c.n}]" for c in cited) or "nothing"
        out: list[tuple[str, str]] = [self.numbered(n) for n in numbers]
        for pos in positions:
            if not shown or pos > len(shown) or -pos > len(shown):
                which = "last" if pos == -1 else f"last {-pos}" if pos < 0 else _ordinal_word(pos)
                raise InputError(f"the last answer cited {len(shown)} source(s) ({listed}), so there is no "
                                 f"{which} one; use /sources to list them")
            out.append(shown[pos - 1] if pos > 0 else shown[pos])
        return list(dict.fromkeys(out))

    def numbered(self, n: int) -> tuple[str, str]:
        """(paper id, title) of source [n] of the answer references point into: one it cited, or, when it cited
        none, its n-th listed paper. An LLM's [3], sent to it but not cited, was reached by "[3]" and ``/show 3``
        though no Sources list showed it: an InputError now, as offline."""
        prev = self.referent()
        cited = {c.n: (c.paper_id, c.title) for c in prev.citations}
        hits = prev.sources or prev.related
        if n in cited or not cited and 1 <= n <= len(hits):
            return cited.get(n) or (hits[n - 1].paper_id, hits[n - 1].title)
        listed = ", ".join(f"[{k}]" for k in sorted(cited)) or "nothing"
        raise InputError(f"the last answer has no source [{n}] (it cited {listed}); use /sources to list them")

    def referent(self) -> Answer:
        """The answer "[2]", "the second one", "the first two" point into: the last one that cited papers (a
        refused or failed turn does not change it; /sources shows it), else the last answer (a refusal's list of
        the nearest papers, when nothing was cited yet)."""
        return self.context.answer

    def among(self, question: str) -> list[tuple[str, str]]:
        """(paper id, title) of the papers a choice ("which of them ...?") is between; [] for any other turn."""
        return self._choices() if self.turns and self.kind(question) == "among" else []

    def _choices(self) -> list[tuple[str, str]]:
        """The papers a choice would be between: those the latest of the last 5 answers that cited several cited
        (after "which of them handles fairness?" and "what dataset does it use?", "do any of them use RL?" still
        means the list), unless an answer since cited a paper not on it (a refused turn cites none). With no such
        list, after an area question answered with fewer than two papers ("what's there on X?" citing one), "them"
        is that question's papers (:meth:`_area_list`)."""
        since: set[str] = set()  # the papers the answers after the list cited
        for turn in reversed(self.turns[-5:]):
            papers = list(dict.fromkeys((x.paper_id, x.title) for x in _cited(turn.answer)))
            if len(papers) >= 2:
                # a later answer citing a paper not on the list moved to another topic ("is there anything on ECG?"
                # after a list of RL papers): "them" is no longer the list
                return papers if since <= {pid for pid, _ in papers} else []
            since |= {pid for pid, _ in papers}
        return self._area_list() if self.turns else []

    def _all_cited(self, papers: list[tuple[str, str]]) -> bool:
        """Whether every one of ``papers`` was cited in the last 5 turns (a list of citations, not an area list)."""
        cited = {x.paper_id for t in self.turns[-5:] for x in _cited(t.answer)}
        return {pid for pid, _ in papers} <= cited

    def _area_list(self) -> list[tuple[str, str]]:
        """The papers of the area question a follow-up reads (:attr:`context`), when it was answered: those it cited,
        then those its search ranked next, tuning.among_area_list in all; [] after a question asking for one paper
        (which has no "them") or a refusal (which found nothing on it). Measured on the training and development
        conversations (docs/log/research-log.md, 2026-12-07, sixteenth session)."""
        prev = self.context.answer
        if prev.intent != "area" or not prev.answerable or self._asked_before_scope(self.context):
            return []
        listed: dict[str, str] = {}
        for x in [*_cited(prev), *prev.retrieved]:
            listed.setdefault(x.paper_id, x.title)
        papers = list(listed.items())[:self.settings.tuning.among_area_list]
        return papers if len(papers) >= 2 else []  # a choice is among several

    def _asked_before_scope(self, turn: Turn) -> bool:
        """Whether ``turn`` was asked before the search scope last changed (a /filter set or lifted since)."""
        return next((i for i, t in enumerate(self.turns) if t is turn), len(self.turns)) < self._scope_from

    def starts_afresh(self, question: str) -> bool:
        """Whether a question leaves the conversation's paper: it reads as a new question ("Different question: is
        there a paper on X?") and either names a paper by a word only that paper has ("How does MergOPT work?")
        or is not about the paper talked about (see :meth:`_continues`)."""
        if not self.turns or self.kind(question) != "new":
            return False
        return bool(self.retriever.named(question)) or not self._continues(question)

    def standalone(self, question: str) -> str:
        """The query used for retrieval: the question itself, or a rewrite that resolves references."""
        if not self.turns or self.starts_afresh(question):
            return question
        if self.settings.llm_enabled:
            if not self.is_followup(question) and self._answerable(question):
                return question  # not a follow-up, and the corpus answers it as asked: nothing for the LLM to resolve
            rewritten = self._condense(question)
            # A small local model may hand the follow-up back unresolved ("how much does it improve?"), or
            # rewrite it into something nothing in the corpus matches (the answerable model, as `ask` decides, not
            # the hand-set cosine gate): then it is combined as offline.
            unresolved = " ".join(rewritten.casefold().split()) == " ".join(question.casefold().split())
            if not self.is_followup(question) or not unresolved and self._answerable(rewritten):
                return rewritten
        elif not self.is_followup(question) and not self._continues(question):
            return question
        prev = self.context
        # The previous top paper's title anchors "it"; the previous question carries the topic.
        talked = self._talked_about()
        anchor = self._searched_title(talked[0]) if talked else ""
        base = prev.answer.retrieval_query or prev.question
        return " ".join(x for x in (base, anchor, question) if x)

    def _searched_title(self, paper_id: str) -> str:
        """The title a paper is searched with (``Paper.title``: for an untitled abstract, its first sentence, as
        the index holds it), not the one shown (``display_title``, which every command, Sources and saved chat
        show): a follow-up's query reads the same words whichever title was on screen."""
        paper = self.retriever.papers().get(paper_id)
        return paper.title if paper is not None else ""

    def _talked_about(self) -> tuple[str, str] | None:
        """(paper id, title) of the top paper of the answer a follow-up reads (:attr:`context`): its first citation,
        else (an LLM that cited nothing) its first source."""
        prev = self.context.answer
        if prev.citations:
            return prev.citations[0].paper_id, prev.citations[0].title
        if prev.sources and prev.answerable:
            return prev.sources[0].paper_id, prev.sources[0].title
        return None

    def _one_paper(self, question: str) -> bool:
        """Whether a follow-up is about one paper: the last answer was, or the intent model reads the follow-up so
        ("what datasets did it use?" after a list)."""
        from assistant.search.decide import area_probability, models

        return self.context.answer.intent != "area" or \
            area_probability(question, self.retriever.embed_query(question)) < models()["intent"].threshold

    def _answerable(self, question: str) -> bool:
        """Whether the corpus answers the question on its own, as ``ask`` would decide."""
        from assistant.qa.answer import retrieve

        return retrieve(self.retriever, question, 3).answerable

    def _continues(self, question: str) -> bool:
        """A question with no "it" that the corpus cannot answer on its own but whose words the previous top
        paper holds is about that paper ("How does the gain compare to the oracle upper bound?")."""
        top = (self._talked_about() or (None,))[0]
        if top is None or self._answerable(question):
            return False
        # "what's the core idea behind the alignment?": what any paper has ("core idea") says nothing of which
        return _holds(self.retriever, top, question, min_share=self.settings.tuning.continues_share)

    def _condense(self, question: str) -> str:
        from assistant.qa.llm import chat
        from assistant.prompts import render

        history = "\n".join(f"User: {t.question}\nAssistant: {t.answer.text[:600]}" + _source_list(t.answer)
                            for t in self.turns[-4:])
        prompt = render("condense", history=history, question=question)
        completion = chat(self.settings, [{"role": "user", "content": prompt}], stream=False, max_tokens=120,
                          temperature=0.0)
        rewritten = completion.text.strip().strip('"').splitlines()[0].strip() if completion.text.strip() else ""
        return rewritten or question

    def ask_offline(self, question: str) -> Answer:
        """The turn answered without the LLM (it failed): the extractive answer, its mode saying so."""
        saved = self.settings
        self.settings = saved.replace(llm_mode="off")
        try:
            return self.ask(question)
        finally:
            self.settings = saved

    def ask(self, question: str, on_token: Callable[[str], None] | None = None) -> Answer:
        typed, question = question, self.without_chitchat(question)
        if self.kind(question) == "chat" and not self._searchable(question):  # "thanks!", "hi": nothing to search
            answer = Answer(question=typed, text=CHAT_ONLY, mode="llm" if self.settings.llm_enabled else "extractive",
                            answerable=False, citations=[], sources=[])
            self.turns.append(Turn(question=typed, answer=answer))
            return answer
        # stored and shown as typed; the turn's retrieval query is the question itself
        answer = self._ask(question, on_token).model_copy(update={"question": typed})
        self.turns[-1] = Turn(question=typed, answer=answer)
        return answer

    def _ask(self, question: str, on_token: Callable[[str], None] | None = None) -> Answer:
        if self._asked_alone_before(question):  # the same question again gets the answer it got: not "of them"
            answer = answer_question(self.retriever, question, self.settings, on_token=on_token)
            self.turns.append(Turn(question=question, answer=answer))
            return answer
        pinned = self.referenced(question)
        if pinned:
            answer = self._ask_about(question, pinned, on_token)
        elif (among := self.among(question)) and (answer := self._ask_among(question, among, on_token)):
            pass
        else:
            query = self.standalone(question)
            one = not self.settings.llm_enabled and query != question and self._one_paper(question)
            answer = answer_question(self.retriever, question, self.settings, on_token=on_token, retrieval_query=query,
                                     one_paper=one)
        self.turns.append(Turn(question=question, answer=answer))
        return answer

    def _asked_alone_before(self, question: str) -> bool:
        """Whether an earlier turn asked this question word for word and searched for it as asked (read as a new
        question, not as "of them" or about a paper): "Which papers study federated learning?" asked again, or
        after /filter off, was read as a choice among the papers its first answer cited, and gave one."""
        key = " ".join(question.casefold().split())
        return any(t.answer.retrieval_query and " ".join(t.answer.retrieval_query.casefold().split()) == key
                   for t in self.turns)

    def _ask_about(self, question: str, pinned: list[tuple[str, str]],
                   on_token: Callable[[str], None] | None) -> Answer:
        """Answer from the named papers only. The user chose them, so the relevance gate does not apply.

        Offline, the papers' sentences are matched against the question without its reference words
        (noise to the embedder); when nothing else is left, each paper's gist is quoted if the question
        asks to compare or describe them ("compare the first and second", "tell me more about [2]"), else
        the previous question is asked of them ("and the last one?"). The LLM gets the question as asked
        and is told that the sources it is sent, numbered from [1] again in the order named, are the ones
        meant (no corpus text goes outside the sources block)."""
        from assistant.search.decide import terms

        gist = False
        skip: frozenset[str] = frozenset()
        if self.settings.llm_enabled:
            meant = "the source below, [1]" if len(pinned) == 1 else \
                f"the {len(pinned)} sources below, [1] to [{len(pinned)}] in the order they were named"
            asked = f"{question} (The user means {meant}.)"
        else:
            asked = without_references(question)
            held = terms(asked)
            # nothing asked but to compare or describe them ("compare the first and second"): their gist;
            # nothing at all ("and the last one?"): what the last question asked of another paper
            gist = not held - FILLER_STEMS and bool(held & GIST_STEMS)
            if not held - FILLER_STEMS and not gist:
                asked = self.context.question
            if self.kind(question) == "more":  # what the conversation has not quoted yet
                skip = self._quoted_so_far()
        answer = answer_question(self.retriever.within(pid for pid, _ in pinned), asked, self.settings,
                                 on_token=on_token,
                                 retrieval_query=" ".join([*(self._searched_title(pid) for pid, _ in pinned), asked]),
                                 k=len(pinned), pinned=[pid for pid, _ in pinned], gist=gist, skip=skip)
        if skip and answer.citations and all(sent in skip for pid, _ in pinned for sent in self._sentences(pid)):
            ids = " or ".join(c.paper_id for c in answer.citations)
            answer = answer.model_copy(update={"text": "Nothing more: every sentence of its abstract is quoted "
                                                       f"above (/show {ids} prints it whole)."})
        return answer.model_copy(update={"question": question})

    def _contributes(self, paper_id: str, question: str) -> bool:
        """Whether the question calls the paper by the name it contributes (its shown title leads with it: "MergOPT"),
        not by a name it only mentions (a dataset it uses, "ImageNet", which no other abstract happens to write)."""
        from assistant.search.names import name_words

        paper = self.retriever.papers().get(paper_id)
        shown = paper.display_title.casefold() if paper is not None else ""
        return any(w.casefold() in shown for w in name_words(self.retriever.index, question, paper_id))

    def _sentences(self, paper_id: str) -> list[str]:
        paper = self.retriever.papers().get(paper_id)
        return self.retriever.sentence_vectors(paper_id, paper.abstract)[0] if paper is not None else []

    def _quoted_so_far(self) -> frozenset[str]:
        """Every sentence the conversation's extractive answers quoted ("- <sentence> [n]"; a paper's first one
        after its own title, "<title> — <sentence>", without the title): what "tell me more" does not repeat."""
        from assistant.text.safetext import inert_citations

        papers = self.retriever.papers()
        out = set()
        for t in self.turns:
            titles = [f"{inert_citations(' '.join(papers[c.paper_id].title.split()))} — " for c in t.answer.citations
                      if c.paper_id in papers and not papers[c.paper_id].title_derived]
            for line in _QUOTED.findall(t.answer.text):
                out.add(next((line[len(x):] for x in titles if line.startswith(x)), line))
        return frozenset(out)

    def _closest_sentences(self, asked: str, paper_ids: list[str]) -> dict[str, float]:
        """Each paper's best sentence relevance to what is asked (within the filter, if any)."""
        from assistant.search.decide import topical
        from assistant.qa.evidence import relevance

        papers = self.retriever.papers()
        qvec = self.retriever.embed_query(asked)
        weights = self.retriever.term_weights()
        out: dict[str, float] = {}
        for pid in paper_ids:
            p = papers.get(pid)
            if p is not None and (self.retriever.allowed is None or pid in self.retriever.allowed):
                sents, vecs = self.retriever.sentence_vectors(pid, p.abstract)
                out[pid] = float(relevance(sents, vecs, qvec, topical(asked), weights,
                                               self.settings.tuning.term_share).max()) if len(sents) else 0.0
        return out

    def _choose_among(self, asked: str, among: list[str], best: dict[str, float]) -> list[str]:
        """The papers of ``among`` that answer a choice (``best``: each one's closest sentence to what is asked,
        scored as :func:`.evidence.relevance` scores it): the one that stands out and those within
        tuning.among_margin of it; none when no sentence comes close enough (tuning.among_min_cosine). Choosing by
        `which`'s reading of the corpus instead was measured and not adopted (benchmarks/among.py: better on the
        labelled criteria it was calibrated on, worse on the blind conversations; docs/log/research-log.md)."""
        top, tuning = max(best.values()), self.settings.tuning
        if top < tuning.among_min_cosine:
            return []
        return [pid for pid in among if best.get(pid, -1.0) >= top - tuning.among_margin]

    def _ask_among(self, question: str, among: list[tuple[str, str]],
                   on_token: Callable[[str], None] | None) -> Answer | None:
        """Answer a choice among the previous answer's papers from those papers, chosen by meaning
        (:meth:`_choose_among`): each paper's sentence closest to what is asked ("which of them handles fairness?":
        RESFL's "uncertainty-guided fairness-aware aggregation", not a paper sharing only the framing words);
        "none of them" when none comes close. A choice about a name ("which of them use MuJoCo?") is the papers
        that write it, as in `which`. None when the user names a paper none of them is ("the one with MergOPT"):
        asked of the corpus."""
        from assistant.search.names import criterion_name, writes

        asked = _asked_of_them(self.retriever.within(pid for pid, _ in among).mend(question)) or \
            self.context.question
        best = self._closest_sentences(asked, [pid for pid, _ in among])
        if not best:
            return None
        cited = self._all_cited(among)  # a list of citations, else an area question's papers (:meth:`_area_list`)
        name = criterion_name(self.retriever.index, asked)
        if name is not None:
            papers = self.retriever.papers()
            chosen = [pid for pid, _ in among if pid in best and writes(papers[pid], name)]
        else:
            chosen = self._choose_among(asked, [pid for pid, _ in among], best)
        if not chosen:
            if any(self._contributes(pid, question) for pid in self.retriever.named(question) if pid not in best):
                return None  # "the one with MergOPT": none of them is; the corpus has it
            none = f"writes {name}" if name else "addresses this"
            which = "cited earlier" if cited else "found for the earlier question"
            return Answer(question=question, text=f"None of the {len(among)} papers {which} {none}.",
                          mode="llm" if self.settings.llm_enabled else "extractive", answerable=False)
        if self.settings.llm_enabled and name is None:
            # an LLM reads every abstract and chooses by meaning, which the cosine cannot always do ("which of
            # them proposes a defense?": MiniLM prefers the attack paper that mentions defenses); it cites
            # only what it uses, and its citations are checked
            chosen = [pid for pid, _ in among if pid in best]
        chosen.sort(key=lambda pid: -best[pid])
        source = "from the previous answer" if cited else "found for the previous question"
        told = f"{question} (The user means the papers below, {source}.)" if self.settings.llm_enabled else asked
        answer = answer_question(self.retriever.within(chosen), told, self.settings, on_token=on_token,
                                 retrieval_query=asked, k=len(chosen), pinned=chosen)
        if not self.settings.llm_enabled and answer.answerable and not cited:
            # papers the user has not seen cited: say where they come from (an LLM is told so, above)
            lead = f"From the {len(among)} papers found for the earlier question:\n"
            return answer.model_copy(update={"question": question, "text": lead + answer.text})
        return answer.model_copy(update={"question": question})


#: A sentence an extractive answer quotes: "- <sentence> [n]".
_QUOTED = re.compile(r"^- (.*?) \[\d+(?:[,;]\s*\d+)*\]$", re.M)


def _cited(answer: Answer) -> list:
    """What an answer pointed at, in the order shown: its citations; for an LLM answer that cited nothing, the
    sources it was given; nothing for a refusal."""
    return sorted(answer.citations, key=lambda c: c.n) or (answer.sources if answer.answerable else [])


def _holds(retriever: Retriever, paper_id: str, question: str, min_share: float) -> bool:
    """Whether the paper holds ``min_share`` of the question's topical terms (IDF-weighted; terms in a fifth of the
    papers or more, "core", "idea", "use", say nothing of which paper)."""
    from assistant.search.decide import coverage, terms

    papers = retriever.papers()
    p = papers.get(paper_id)
    common = max(3, len(papers) // 5)
    topical = {t for t in terms(question) - FILLER_STEMS if retriever.doc_freq(t) <= common}
    if p is None or not topical:
        return False
    weights = retriever.term_weights()
    return coverage(weights, topical, terms(f"{p.title}\n{p.abstract}"), max(weights.values(), default=1.0)) \
        >= min_share


def _asked_of_them(question: str) -> str:
    """What a choice asks of the papers: its topical words, in order ("which of them handles fairness?" ->
    "handles fairness"), without the words that frame it (stopwords and the learned framing terms), which would
    pull every paper's cosine alike."""
    from assistant.search.decide import topical
    from assistant.text.terms import stem_terms

    keep = topical(question)
    return " ".join(w for w in re.findall(r"[\w-]+", question) if set(stem_terms(w)) & keep)


def _ordinal_word(pos: int) -> str:
    return next(w for w, p in ORDINALS.items() if p == pos and w.isalpha())


def _source_list(answer: Answer) -> str:
    """The Sources the user saw, so the condense prompt can resolve "the second paper"."""
    if not answer.citations:
        return ""
    return "\nSources: " + "; ".join(f"[{c.n}] {c.title}" for c in sorted(answer.citations, key=lambda c: c.n))
