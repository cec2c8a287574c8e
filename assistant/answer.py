"""Answers with citations: number the retrieved papers, then ask the LLM or extract sentences.

Citations are ``[n]`` in the text, where n numbers the sources sent for that answer. After
generation the text is parsed: any ``[n]`` that is not a sent source is dropped from the
citation list and marked ``[n?]`` in the text, so a reader can see it was not backed.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Callable

import numpy as np

from .config import Settings
from .prompts import NO_ANSWER_PHRASE, render, system_prompt
from .retrieve import Hit, Retrieval, Retriever
from .safetext import inert_citations

CITATION_RE = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
EXTRACTIVE_LABEL = "Extractive answer (no LLM configured): verbatim sentences from the abstracts."
INCOMPLETE_MARK = "[answer incomplete: the LLM stream stopped early]"
LENGTH_MARK = "[answer cut at {n} tokens: raise ASSISTANT_MAX_TOKENS for longer answers]"
#: A sentence that states what its paper contributes ("we propose ...", "this paper introduces ...").
CONTRIBUTION_RE = re.compile(r"\b(?:we|this paper|this work)\s+(?:\w+\s+){0,2}?(?:propose|introduce|present|develop|"
                             r"show|demonstrate|find|study|investigate|analy[sz]e|establish|derive|prove)", re.I)
#: Questions about an area rather than one paper: "what work exists on X?", "which papers study X?",
#: "are there papers on X?", "papers on X", "summarise work on X". (A singular "which paper ..." or
#: "is there a paper ..." is a lookup: taken as an area question, "is there a paper on protein structure
#: prediction with language models?" passed the area's second look on generic words.)
SURVEY_RE = re.compile(
    r"^\s*(?:(?:which|what)\s+(?:(?!(?:paper|work|study|article|method|approach)\s)\w+\s+){0,3}?"
    r"(?:papers|works|studies|articles|approaches|methods)\b"
    r"|what\s+(?:(?:\w+\s+){0,2}?(?:work|research|literature))\s+(?:exists?|is there|has been done)"
    r"|(?:are|is) there\s+(?:any\s+)?(?:papers|works|studies|research|work(?!\s+(?:that|which|where)\s+(?!(?:stud|"
    r"address|tackl|explor|investigat|focus|deal|cover|examin|look|use)\w*\s)))\b"
    r"|(?:any\s+)?(?:papers|works?|studies|research)\s+(?:on|about|in|using|regarding|into)\b"
    r"|(?:list|find|show(?: me)?|give me|(?:i\s*(?:'m|am)\s+)?looking for|can you (?:find|list|show(?: me)?))\s+"
    r"(?:\w+\s+){0,2}?(?:papers|works?|studies|research|literature)\b"
    r"|(?:do|does|did)\s+(?:any|some)\s+(?:papers?|works?|studies|research)\b"
    r"|has\s+any(?:one|body)\s+(?:\w+\s+)?(?:studied|worked|looked|written|done|explored|tackled|addressed)\b"
    r"|what\s+has\s+been\s+(?:done|written|published|proposed)\b"
    r"|what\s+(?:research|work|literature)\s+(?:address|tackle|stud|explor|investigat|cover|deal)"
    r"|how\s+(?:do|did|have)\s+(?:(?:the|recent|existing|current|other|some|these|different)\s+)?"
    r"(?:papers|works|studies|methods|approaches)\b"
    r"|what(?:'s|s|\s+is)\s+new\s+(?:in|on|about|for)\s+(?!(?:it|this|that|them|they|these|those)\b)"
    r"|(?:the\s+)?(?:recent|latest)\s+(?:work|advances|progress|papers|research|developments)\s+(?:in|on|about)\b"
    r"|(?:summari[sz]e|overview of|survey)\b)", re.I)
#: Added to a contribution sentence's score in an offline survey answer (scores are ~0.2-0.9): enough that
#: "we propose X" wins over the background sentence that restates the topic (which matches it best).
SURVEY_CONTRIBUTION = 0.5
#: A sentence's worth for a question: this share from its cosine to the question, the rest from the
#: IDF-weighted share of the question's terms it adds.
COSINE_SHARE = 0.6
#: Details a question often asks of a paper that its abstract may not state ("what datasets did it
#: use?", "which baselines ...", "how many GPUs ...", "what are its limitations?"). Offline, when no
#: cited abstract mentions the thing asked for, the answer says so under the quoted sentences instead
#: of letting them pass for an answer.
DETAIL_RE = re.compile(
    r"\b(?:what|which|how many)\s+(?:\w+\s+){0,3}?(datasets?|benchmarks?|baselines?|metrics?|hyper-?parameters?|"
    r"hardware|gpus?|languages?|optimi[sz]ers?|backbones?|architectures?|parameters?|licen[cs]es?|limitations?|"
    r"weakness(?:es)?|drawbacks?|shortcomings?)\b", re.I)
#: A request for a paper's gist ("what is X about?", "tell me about X", "summarise the X paper", "explain
#: X", "what does X propose?"). When the question also names the top hit's paper, the answer quotes that
#: paper only and leads with what it contributes.
OVERVIEW_RE = re.compile(
    r"^\s*(?:what\s+(?:is|are)\s+.+\babout\b|tell\s+me\s+(?:more\s+)?about\b|summari[sz]e\b|explain\b|describe\b"
    r"|give\s+(?:me\s+)?(?:an?\s+)?(?:overview|summary)\s+of\b"
    r"|what\s+(?:does|do)\s+.+\s+(?:do|propose|introduce|contribute)\b)",
    re.I)
#: A sentence that only says where the code or data is: the answer to nothing but "where is the code?".
BOILERPLATE_RE = re.compile(r"https?://|\\url\{|github\.com|\b(?:code|data|models?|implementation)s?\b[^.]{0,40}"
                            r"\b(?:is|are|will be)\s+(?:publicly\s+|freely\s+)?(?:available|released)", re.I)
#: A sentence that answers the one before it ("... relies on surface-level features. To address these, we propose
#: Think-as-Locals ..."): what a question asking for the remedy wants, though it repeats none of its words.
_ANSWERS_PREVIOUS = re.compile(
    r"^\s*(?:to\s+(?:address|tackle|overcome|mitigate|fill|bridge|close|solve|resolve|remedy|alleviate|counter|"
    r"handle|fix)\s+(?:this|these|them|both|such|that|those|the\s+(?:above|gap|issue|problem|challenge)s?)\b"
    r"|to\s+this\s+end\b|(?:motivated|inspired|guided)\s+by\s+(?:this|these)\b)", re.I)
#: A question that asks how a problem is dealt with ("what do the authors propose to reduce reliance on X?").
_ASKS_REMEDY = re.compile(
    r"\b(?:propos|introduc|suggest|address|tackl|overcom|mitigat|solv|resolv|remed|alleviat|counter|fix|"
    r"reduc|avoid|prevent|lessen|curb)\w*", re.I)
_ASKS_FOR_CODE = re.compile(r"\b(?:code|github|repo(?:sitory)?|implementation|available|release[ds]?|url|link)\b", re.I)


#: What a question asks for, when it says so: "which RAG benchmarks ...", "what benchmark does ... introduce",
#: "how many levels ...", "what is this method called". The sentence that restates the question shares most
#: of its words; the one that answers holds the asked-for word *and* something the question does not have
#: of the kind that answers: a name, a number, a list. Such a sentence gains ANSWER_BONUS.
ANSWER_BONUS = 0.25
_ASKED = re.compile(r"\b(?:which|what|how\s+many|how\s+much)\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.I)
_AUX = re.compile(r"\b(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|might|may|of|in|"
                  r"on|for|from|to|with|by|that|the|a|an|this|these|it|its|they|their)\b.*", re.I)
_ASKS_NAME = re.compile(r"\b(?:what|how)\s+(?:is|are|was)\s+(?:it|they|this|that|the\s+[\w-]+|this\s+[\w-]+)\s+"
                        r"(?:called|named)\b|\bwhat\s+(?:is|was)\s+(?:the|its|their)\s+name\b|\bname\s+of\b", re.I)
_KIND_OF = re.compile(r"\b(?:which|what)\s+(?:kinds?|types?|sorts?|forms?|class(?:es)?)\s+of\s+"
                      r"((?:[\w-]+\s+){0,2}[\w-]+)", re.I)
_COPULA_FIRST = re.compile(r"^(?:is|are|was|were)\s+(?:the|its|their)\s+", re.I)
_GENERIC_ASKED = {"paper", "work", "studi", "articl", "author", "approach", "method", "one", "kind", "type"}
_NUMBER = re.compile(r"(?:\d[\d,.]*%?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                     r"dozens?|hundreds?|thousands?|millions?|billions?)", re.I)
_SET_OFF = re.compile(r"^(?:_[^_\s]|\*[^*\s]|[\"“][^\"”\s]|\\(?:textit|emph|textbf)\{)")
_LISTING = re.compile(r"\b(?:such as|like|including|e\.\s?g\.|namely|i\.\s?e\.)\s|:\s", re.I)


def asked_for(question: str) -> tuple[set[str], str]:
    """The stemmed words a question says it asks for ("which RAG benchmarks" -> {rag, benchmark}) and the
    kind of thing that answers: "name" ("what is this method called?"), "number" ("how many levels"),
    "any" (a name, a number or a list: "which benchmarks"), "" when it does not say."""
    kinds = asked_kinds(question)
    if kinds is None:
        return set(), "name"
    return set(kinds), "any" if "any" in kinds.values() else "number" if kinds else ""


def asked_kinds(question: str) -> dict[str, str] | None:
    """Each word :func:`asked_for` finds, with the kind its own phrase asks for: in "How many tasks ..., and what
    overall F1 ...?" a number answers "tasks", anything "F1". None for a name question."""
    if _ASKS_NAME.search(question):
        return None
    kinds: dict[str, str] = {}
    for m in _KIND_OF.finditer(question):  # "which kind of dangerous knowledge": the kind of its head noun
        head = _AUX.sub("", m.group(1)).split()
        for word in _terms(head[-1] if head else "") - _GENERIC_ASKED:
            kinds[word] = "kind"
    for m in _ASKED.finditer(question):
        if _KIND_OF.match(question, m.start()):
            continue
        kind = "number" if m.group().lower().startswith("how") else "any"
        # "which are the games ...?" asks for games (a list); "what is the cost ...?" for a description
        phrase = _COPULA_FIRST.sub("", m.group(1)) if m.group().lower().startswith("which") else m.group(1)
        asked = _AUX.sub("", phrase).split()
        for word in _terms(" ".join(asked)) - _GENERIC_ASKED:
            kinds[word] = "any" if kinds.get(word, kind) == "any" else kind
        # "which datasets?": a plural asks for a list of names, which the abstract may give without the word
        # ("high mAP on FACET and CARLA")
        if kind == "any" and asked and not _terms(" ".join(asked)) & _GENERIC_ASKED \
                and asked[-1].lower().endswith("s") and not asked[-1].lower().endswith("ss") and _terms(asked[-1]):
            for word in _terms(asked[-1]) - _GENERIC_ASKED:
                kinds[word] = "list"
    return kinds


#: How much more a term of what the question asks counts than one of the words that identify its paper,
#: when an offline answer picks sentences ("In the FL framework that skips aggregation, *what kind of network
#: does each client train*?": the sentence that answers shares few of the identifying words).
ASKED_WEIGHT = 2.0
_WH = re.compile(r"\b(?:what|which|how|where|when|who|why|whether)\b", re.I)
_IDENTIFY = re.compile(r"^(?:which|what)\s+(?:[\w-]+\s+){0,2}?(?:paper|work|study|article|method|approach|"
                       r"framework|model)\b", re.I)


def asked_terms(question: str) -> set[str]:
    """The terms of what a question asks, as against the words that identify the paper it asks about:
    "In the work on X that Y, *what pathology appears when ...*", "Which paper X, and *what part of ...*"."""
    spans = [m.start() for m in _WH.finditer(question)] + [len(question)]
    out: set[str] = set()
    for a, b in zip(spans, spans[1:]):
        if not _IDENTIFY.match(question[a:b]):
            out |= _terms(question[a:b])
    return out if out != _terms(question) else set()


def _known_names(question: str) -> set[str]:
    """The question's words (as typed and stemmed), and the acronyms of its runs of words ("VQA" of "visual
    question answering")."""
    from .retrieve import _WORD

    words = [w.lower() for w in _WORD.findall(question)]
    initials = "".join(w[0] for w in words)
    return set(words) | _terms(question) | \
        {initials[i:j] for i in range(len(initials)) for j in range(i + 2, min(i + 7, len(initials) + 1))}


def bears_answer(sentence: str, known: set[str], asked: set[str] | dict[str, str], kind: str, window: int = 5) -> bool:
    """Whether a sentence holds, within ``window`` words of an asked-for word, something new of the kind that
    answers it ("benchmarks, such as TyDi QA", "a benchmark LiveDRBench", "four levels"); ``known``:
    :func:`_known_names` of the question. A name question takes any new name. ``asked`` may give each word its
    own kind (:func:`asked_kinds`): then "how many tasks" wants a number near "tasks", not "tasks such as"."""
    from .retrieve import _name_like

    words = sentence.split()
    clean = [w.replace("\\%", "%").strip(".,;:()[]{}\"'*_$~") for w in words]

    def new_name(w: str, first: bool = False) -> bool:
        # a name, or a capitalised word inside the sentence ("Llama3 and Qwen3 families", "Qronos")
        return (_name_like(w) or not first and w[:1].isupper()) and w.lower() not in known \
            and re.sub(r"[^a-z]", "", w.lower()) not in known and not _terms(w) <= known

    def set_off(i: int) -> bool:  # a term the abstract marks as its own: _diversity collapse_, "zero-shot evolution"
        return bool(_SET_OFF.match(words[i])) and clean[i].lower() not in known

    def new_number(i: int) -> bool:
        return bool(_NUMBER.fullmatch(clean[i])) and not words[i].startswith("(") and clean[i].lower() not in known

    if kind == "name":
        return any(new_name(w, j == 0) for j, w in enumerate(clean))
    kinds = asked if isinstance(asked, dict) else dict.fromkeys(asked, kind)
    at = [(i, hit) for i, w in enumerate(clean) if w and (hit := _terms(w) & kinds.keys())]
    for i, hit in at:
        # "which kind of dangerous knowledge?": "... minimizing biothreat proxy knowledge": a word the question
        # does not have says what kind
        if any(kinds[t] == "kind" for t in hit) and i > 0 and _terms(clean[i - 1]) and \
                not _terms(clean[i - 1]) <= known and clean[i - 1].lower() not in known:
            return True
        near = range(max(0, i - window), min(len(words), i + window + 1))
        if any(new_number(j) for j in near):
            return True
        if any(kinds[t] in ("any", "list") for t in hit) and (
                any(new_name(clean[j], j == 0) or set_off(j) for j in near)
                or _LISTING.search(" ".join(words[i:i + window + 1]))):
            return True
    if "list" in kinds.values() and sum(new_name(w, j == 0) for j, w in enumerate(clean)) >= 2:
        return True  # "which datasets?": "it achieves high mAP on FACET and CARLA"
    # "what RLVR-based method do they propose?": "we propose Think-as-Locals to ... via RLVR" names it further off
    return any(kinds[t] in ("any", "list") for _, hit in at for t in hit) and bool(CONTRIBUTION_RE.search(sentence)) \
        and any(new_name(w, j == 0) for j, w in enumerate(clean))


def is_survey(question: str) -> bool:
    return bool(SURVEY_RE.search(question))


#: The framing of an area question ("which papers study", "what work exists on", "are there papers
#: about"): what is left is the area.
_SURVEY_FRAME = re.compile(
    r"^\s*what(?:'s|s|\s+is)\s+new\s+(?:in|on|about|for)\s+"
    r"|^\s*(?:(?:what\s+(?:is|are)|show\s+me|summari[sz]e)\s+)?(?:the\s+)?(?:recent|latest)\s+(?:work|advances|"
    r"progress|papers|research|developments)\s+(?:in|on|about)\s+"
    r"|^\s*(?:has\s+any(?:one|body)\s+(?:\w+\s+)?|what\s+has\s+been\s+)"
    r"(?:studied|worked|looked|written|done|explored|tackled|addressed|published|proposed)\s+"
    r"(?:(?:on|about|in|into|at|for|regarding)\s+)?"
    r"|^\s*(?:(?:which|what|are\s+there|is\s+there|list|find|show(?:\s+me)?|summari[sz]e|give\s+me|"
    r"how\s+(?:do|did|have)|"
    r"(?:i\s*(?:'m|am)\s+)?looking\s+for|can\s+you\s+(?:find|list|show(?:\s+me)?))\s+)?"
    r"(?:(?:are|is)\s+)?(?:(?:any|all|the|some|recent|existing|other)\s+)?(?:\w+\s+){0,2}?"
    r"(?:papers?|works?|studies|articles?|research|literature|approaches|methods)\s+"
    r"(?:(?:exists?|is\s+there|has\s+been\s+done|(?:have|has)\s+been\s+(?:proposed|developed|published)"
    r")\s+)?(?:(?:that|which)\s+)?"
    r"(?:(?:study|studies|work|works|focus(?:es)?\s+on|deal(?:s)?\s+with|address(?:es)?|tackle[s]?|investigate[s]?|"
    r"explore[s]?|cover[s]?|examine[s]?|use[s]?|propose[s]?|introduce[s]?|explain[s]?|are|is|exist|exists)\s+)?"
    r"(?:(?:on|about|in|with|using|into|regarding|for|of|to|towards)\s+)?", re.I)
#: An area question the gate refuses gets a second look at its area alone ("Are there papers about time
#: series forecasting?": the framing pulls every cosine down, 0.35 -> 0.47 for the one paper on it). It is
#: answered when the area's best cosine reaches SURVEY_TOPIC_GATE and one of its top 3 papers holds
#: SURVEY_TOPIC_COVERAGE of the area's words (IDF-weighted): the cosine alone does not tell "time series
#: forecasting" (0.47, one paper) from "question answering over hour-long videos" (0.46, none), the
#: words do (1.0 against 0.58). Both sit mid-plateau on 60 area questions over the bundled corpus
#: (benchmarks/survey_gate.py); the dev set's figures do not move.
SURVEY_TOPIC_GATE = 0.42
SURVEY_TOPIC_COVERAGE = 0.65
#: The word check reads at most this many terms of an area: a longer one spreads them over facets
#: ("filtering or curating it, synthesizing more of it, or auditing what a model was trained on") and its
#: setting, and no one paper holds most of them (dev area questions: 40% and 57%); see :func:`area_focus`.
COVERAGE_MAX_TERMS = 6


def survey_topic(question: str) -> str:
    """The area an area question asks about: "Which papers study federated learning?" -> "federated learning"."""
    topic, framed = _SURVEY_FRAME.subn("", question, count=1)
    topic = topic.strip(" ?.!")
    # no framing recognised: the question is not split into framing and area (nor checked as an area)
    return topic if framed and topic != question.strip(" ?.!") and len(topic) >= 3 else question


#: Where a long area's head ends and what qualifies it begins: an elaboration (":", "(", "i.e.", "such
#: as"), a relative or participle clause (", where ...", "that ...", ", comparing ...") or a means
#: ("with / using / via / from ..."). "Question answering over hour-long videos | with multimodal models":
#: the qualifier's words are everywhere in the corpus, the head's are not.
_AREA_HEAD_END = re.compile(
    r"\s*(?:[:;(]|,?\s+(?:i\.\s?e\.|e\.\s?g\.)|,\s+(?:such\s+as|for\s+example|for\s+instance|like|where|which|who|"
    r"whose|\w+ing)\b"
    r"|\s+(?:that|which|where|with|using|via|from)\b)", re.I)


#: Verbs that say what papers do with an area ("Which papers *do* knowledge distillation", "*modify or build
#: on* LoRA"), not what the area is: left out of the words checked (the framing takes "study", "use", ...).
_AREA_VERBS = re.compile(
    r"^(?:(?:or|and|and/or)\s+)?(?:(?:(?:do|does|perform|modify|build|extend|improve|apply|develop|present|report|"
    r"train|evaluate|analy[sz]e|compare|design|employ|leverage|adapt|enhance|handle|solve|target|benchmark|"
    r"create|make|use)s?|doing|performing|modifying|modifies|building|extending|improving|applying|applies|"
    r"developing|evaluating|comparing|designing|employing|leveraging|adapting|enhancing|handling|solving|making|"
    r"using)\b"
    r"(?:\s+(?:on\s+top\s+of|on|upon|with))?(?:\s*,\s*|\s+(?:or|and|and/or)\s+|\s+))+", re.I)


_LEADING_LIST = re.compile(r"^(?:[\w-]+(?:\s*,\s*|\s+(?:or|and|and/or)\s+))+[\w-]+\s+", re.I)


def area_focus(topic: str) -> str | None:
    """See :func:`_area_focus`."""
    return _area_focus(topic)[0]


def _area_focus(topic: str) -> tuple[str | None, bool]:
    """The words of an area the corpus must hold for the area to count as covered, without the verbs that
    say what papers do with it: the area itself when it is short (<= :data:`COVERAGE_MAX_TERMS` terms),
    else its head ("question answering over hour-long videos" of "... with multimodal models"), cut to its
    first :data:`COVERAGE_MAX_TERMS` terms when that is long too ("load balancing of expert routing in
    sparse mixture-of-experts language models": the area's own words come first, its setting last), after
    any list of single words it starts with (facets: "curate, filter or audit | the pretraining data ...").
    And whether it was cut so."""
    topic = _AREA_VERBS.sub("", topic.strip()) or topic
    if len(_terms(topic)) <= COVERAGE_MAX_TERMS:
        return topic, False
    head = _AREA_HEAD_END.split(topic, maxsplit=1)[0].strip(" ,")
    # a list of single words first ("curate, filter, synthesize or audit | the pretraining data of LLMs")
    # names facets no one paper holds together; what they share follows it
    head = _LEADING_LIST.sub("", head) if _terms(_LEADING_LIST.sub("", head)) else head
    if not _terms(head):
        return None, False
    return _first_terms(head), len(_terms(head)) > COVERAGE_MAX_TERMS


def _first_terms(text: str) -> str:
    """The text up to its :data:`COVERAGE_MAX_TERMS`-th stemmed term."""
    words: list[str] = []
    for word in text.split():
        words.append(word)
        if len(_terms(" ".join(words))) >= COVERAGE_MAX_TERMS:
            break
    return " ".join(words)


#: An area question whose best cosine reaches this is not checked by its words: its papers say it in their own
#: ("foundation models for ECG *or* EEG signals", "tricking a language model into obeying ..."). No `none` area
#: question of the question files or of survey_gate's criteria reaches it past the gate (at most 0.587 of 59);
#: 4 of the 18 answerable ones the word check refused there do.
STRONG_AREA_COSINE = 0.6

#: The share of a cut area's words (see :func:`_area_focus`) a top paper must hold: a cut is a rougher
#: reading of the area than a head. Over every area question with a cut head in the question files and
#: the labelled criteria, past the gate: absent topics 0.21-0.43, answerable ones 0.59-1.0.
CUT_AREA_COVERAGE = 0.5


def lacks_area(retriever: Retriever, topic: str, paper_ids: list[str]) -> bool:
    """An area none of its top 3 papers holds in words (its :func:`area_focus`) is one the corpus lacks; an
    area with no words to check is not."""
    return area_focus(topic) is not None and not holds_area(retriever, topic, paper_ids)


#: A means that qualifies a long area's head ("accelerate LLM inference | with speculative decoding, where ...");
#: "with respect to" is no means.
_MEANS = re.compile(r"^(?:with(?!\s+(?:respect|regard)\b)|using|via)\s+", re.I)


def area_means(topic: str) -> str | None:
    """The means a long area's head is qualified by, to its first :data:`COVERAGE_MAX_TERMS` terms ("speculative
    decoding" of "accelerate LLM inference with speculative decoding, where a small draft model ..."), else None.
    A top paper must hold it as it holds the head: a generic means ("with multimodal models") is in every
    abstract, a specific one is part of the area. Over the question files, 8 of the 13 `none` area questions
    with a means hold 0.0-0.45 of its words (no answerable one has a means there)."""
    topic = _AREA_VERBS.sub("", topic.strip()) or topic
    end = _AREA_HEAD_END.search(topic)
    if len(_terms(topic)) <= COVERAGE_MAX_TERMS or end is None:
        return None
    rest = topic[end.start():].strip()
    if not _MEANS.match(rest):
        return None
    means = _first_terms(_AREA_HEAD_END.split(_MEANS.sub("", rest), maxsplit=1)[0].strip(" ,"))
    return means if _terms(means) else None


def holds_area(retriever: Retriever, topic: str, paper_ids: list[str]) -> bool:
    """Whether one of the top 3 papers holds the area's words (its :func:`area_focus`, else its whole text) and
    its :func:`area_means`, if any."""
    focus, cut = _area_focus(topic)
    share = CUT_AREA_COVERAGE if cut else SURVEY_TOPIC_COVERAGE
    if topic_coverage(retriever, focus or topic, paper_ids) < share:
        return False
    means = area_means(topic)
    return means is None or topic_coverage(retriever, means, paper_ids) >= CUT_AREA_COVERAGE


#: Stemmed words that qualify an area without saying what it is ("evaluators *themselves*", "*new*
#: methods", "*existing* work"); BM25's stop-word list keeps them, the area's word check does not.
_VAGUE = {"themselv", "itself", "ourselv", "own", "each", "other", "also", "veri", "new", "novel", "exist",
          "recent", "current", "various"}


def topic_coverage(retriever: Retriever, topic: str, paper_ids: list[str]) -> float:
    """The largest IDF-weighted share of the topic's terms that one of these papers (the top 3) contains
    (a term no paper has weighs as much as the rarest one)."""
    weights = retriever.index.term_weights()
    rarest = max(weights.values(), default=1.0)
    terms = _terms(topic) - _VAGUE or _terms(topic)
    total = sum(weights.get(t, rarest) for t in terms)
    papers = retriever.index.all_papers()
    shares = [sum(weights.get(t, rarest) for t in terms & _terms(f"{p.title}\n{p.abstract}")) / total
              for pid in paper_ids[:3] if (p := papers.get(pid)) is not None] if total else []
    return max(shares, default=0.0)


@dataclass
class Citation:
    n: int
    paper_id: str
    title: str
    snippet: str
    score: float

    def as_dict(self) -> dict:
        return {"n": self.n, "paper_id": self.paper_id, "title": self.title, "snippet": self.snippet,
                "score": round(self.score, 4)}


@dataclass
class Answer:
    question: str
    text: str
    mode: str  # "llm" | "extractive"
    answerable: bool
    citations: list[Citation] = field(default_factory=list)
    sources: list[Hit] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    complete: bool = True
    model: str | None = None
    usage: dict = field(default_factory=dict)
    retrieval_query: str | None = None
    prompt: list[dict] | None = None
    retrieved: list[Hit] = field(default_factory=list)  # the full ranking (>= 10), sources are its head

    support: list[dict] = field(default_factory=list)  # per cited sentence: is it backed by its source?
    read_as: str | None = None  # the question with its typos mended, when it had any
    #: An LLM answer that cited none of its sources: what those sources say, quoted as offline (verbatim,
    #: each sentence cited), so the reader has something checked beside the unchecked text.
    quoted: str = ""
    quoted_citations: list[Citation] = field(default_factory=list)

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
        if self.mode == "llm" and self.answerable and not self.citations:
            out["uncited"] = True  # the terminal warns; a script should not take the text as checked
        if self.quoted:
            out["quoted"] = {"text": self.quoted, "citations": [c.as_dict() for c in self.quoted_citations]}
        if self.retrieval_query and self.retrieval_query != self.question:
            out["retrieval_query"] = self.retrieval_query
        return out


# --- sentences ------------------------------------------------------------------------------

_ABBREV = ("e.g.", "i.e.", "et al.", "etc.", "vs.", "cf.", "Fig.", "Eq.", "Sec.", "approx.", "resp.", "w.r.t.")
_SPLIT = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[A-Z0-9\\(\[\"“*$])")


def split_sentences(text: str) -> list[str]:
    """Sentences of an abstract, verbatim (only whitespace between them is dropped)."""
    pieces = _SPLIT.split(text.strip())
    out: list[str] = []
    for piece in pieces:
        if out and (out[-1].endswith(_ABBREV) or len(out[-1]) < 12):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]


def _terms(text: str) -> set[str]:
    from .index import stem_terms

    return set(stem_terms(text))


# --- sources and citations ------------------------------------------------------------------


def _escape(text: str) -> str:
    """Source text as inert data: no tags, no citation markers that look like ours."""
    text = html.escape(text, quote=False)
    return CITATION_RE.sub(lambda m: f"(ref {m.group(1)})", text)


def format_sources(hits: list[Hit], abstracts: dict[str, str]) -> str:
    blocks = []
    for n, hit in enumerate(hits, 1):
        body = _escape(abstracts.get(hit.paper_id, hit.snippet))
        blocks.append(f'<source n="{n}" id="{_escape(hit.paper_id)}">\nTitle: {_escape(hit.title)}\n{body}\n</source>')
    return "\n".join(blocks)


def parse_citations(text: str, n_sources: int) -> tuple[str, list[int], list[int | str]]:
    """(text with unknown citations marked, cited source numbers in order, unknown numbers). Anything
    bracketed that looks like a citation but names no source is marked unknown: ``[99?]``, ``[-1?]``,
    ``[1000?]``, and a range ``[1-3?]`` (listed as the string ``"1-3"``)."""
    from .safetext import CITATION_LIKE

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


# --- answering ------------------------------------------------------------------------------


def retrieve(retriever: Retriever, question: str, k: int) -> Retrieval:
    """Search for a question as asked; an area question or a framed lookup the gate refuses gets its second
    look (:data:`SURVEY_TOPIC_GATE`): ``ask``, ``chat`` and ``search`` agree on what is answerable."""
    mended = retriever.mend(question)  # "Which paeprs ..." is an area question too
    found = _retrieve(retriever, mended, k)
    found.typed = question if mended != question else None
    return found


#: "Is there a paper on X?", "How does the paper on X do Y?": a lookup (one paper is wanted) that names its
#: topic as an area question does.
_PAPER_ON = re.compile(r"\b(?:a|an|any|one|the)\s+(?:single\s+)?(?:paper|work|study|article)\s+"
                       r"(?:on|about|regarding|into)\s+(.+)$", re.I)


#: A question of fewer stemmed terms than SHORT_TERMS must reach SHORT_GATE, not only the gate, unless it
#: names its paper or a top-3 paper holds its words (as an area's are checked): a short question matches
#: a paper on part of its words at a higher cosine than a long one does ("How do mixture-of-experts
#: models route tokens to experts?" 0.44 to papers on routing queries and merging "experts"), while
#: "what about diffusion models?" in a chat (0.46) is about words the papers have. The bar is the middle
#: of the plateau over every question set in benchmarks/data and the dev set (benchmarks/gate.py, "short
#: questions").
SHORT_TERMS = 10
SHORT_GATE = 0.46
#: Stemmed words that ask rather than say what about: left out when a short question's words are checked.
_ASKING = {"what", "about", "which", "how", "who", "where", "when", "whi", "ani", "doe", "do", "did", "can", "were",
           "has", "have", "been", "it", "some", "tell", "me", "paper", "propos", "method", "work", "studi",
           "approach", "use", "introduc", "show", "exist"}


def said_words(question: str) -> str:
    """The words of a question that say what about (those that ask, "which paper proposes", aside)."""
    return " ".join(w for w in re.findall(r"[\w-]+", question) if not _terms(w) <= _ASKING)


def short_question_held(retriever: Retriever, question: str, found: Retrieval) -> bool:
    """Whether a top-3 paper holds the words of a question (:func:`said_words`)."""
    return topic_coverage(retriever, said_words(question), [h.paper_id for h in found.hits]) >= SURVEY_TOPIC_COVERAGE


#: How many papers each of an area question's two rankings contributes to their blend.
AREA_POOL = 20


def _area_ranking(retriever: Retriever, asked: list[Hit], topic: str, k: int) -> list[Hit]:
    """An area question's papers ranked by the question as asked and by its area alone, each score divided by
    its list's best and the two averaged (on the question's scale): the framing ("Which papers study ...")
    pulls some papers up that the area alone does not, and the area alone loses what the framing says
    ("... report reducing ..."). Over the question files' area questions, nDCG@10 0.968 -> 0.972 pooled (the
    area alone: 0.973, but lower on two sets), no set lower; quoted precision on survey_gate's 81 area
    questions 0.885 -> 0.908. ``asked``: the question's top :data:`AREA_POOL` (or ``k``) hits."""
    alone = retriever.search(topic, k=max(k, AREA_POOL)).hits
    if not asked or not alone:
        return asked[:k] or alone[:k]
    top_asked, top_alone = asked[0].score or 1e-9, alone[0].score or 1e-9
    blend: dict[str, float] = {}
    for hits, top in ((asked, top_asked), (alone, top_alone)):
        for h in hits:
            blend[h.paper_id] = blend.get(h.paper_id, 0.0) + h.score / top / 2
    by_id = {h.paper_id: h for h in alone} | {h.paper_id: h for h in asked}
    order = sorted(blend, key=lambda pid: -blend[pid])[:k]
    return [dc_replace(by_id[pid], score=blend[pid] * top_asked, rank=n) for n, pid in enumerate(order, 1)]


#: The framing of a lookup ("Which paper studies", "What method was proposed for", "Is there a benchmark that
#: evaluates"): what is left describes the paper.
_LOOKUP_FRAME = re.compile(
    r"^\s*(?:which|what|is\s+there\s+(?:a|an|any)|any)\s+(?:[\w-]+\s+){0,2}?(?:paper|work|study|article|method|"
    r"approach|framework|model|benchmark|technique|system)\s+(?:(?:that|which)\s+)?(?:(?:was|is|were|has\s+been)\s+)?"
    r"[\w-]+\s+(?:(?:on|about|for|to)\s+)?", re.I)


def _retrieve(retriever: Retriever, question: str, k: int) -> Retrieval:
    survey = is_survey(question)
    # an area question's wider list feeds its blended ranking: its top k are those a search for k returns
    # (the candidate pool does not depend on k below 25)
    # an area question lists many papers, so its top two are often close: not re-ranked (ASSISTANT_RERANK)
    found = retriever.search(question, k=max(k, AREA_POOL) if survey else k, rerank=not survey)
    wide, found.hits = found.hits, found.hits[:k]
    if not survey:
        if found.answerable and found.confidence < max(SHORT_GATE, retriever.threshold()) \
                and len(_terms(question)) < SHORT_TERMS and not retriever.names(question, found.hits[0]) \
                and not short_question_held(retriever, question, found):
            found.answerable = False
        # the topic must be in the papers' words, as an area's must; no second look (taken as an area
        # question, "is there a paper on protein structure prediction ...?" passed the second look)
        named = _PAPER_ON.search(question)
        if found.answerable and named and lacks_area(retriever, named.group(1).strip(" ?.!"),
                                                     [h.paper_id for h in found.hits]):
            found.answerable = False
        if not found.answerable:
            # "How does MergOPT work?": "how", "does" and "work" match other abstracts better (MergOPT's paper
            # was 4th, cosine 0.15); a name only one paper has says which paper is meant
            if (hit := retriever.named_paper(question, k=max(k, AREA_POOL))) is not None:
                wider = retriever.search(question, k=max(k, AREA_POOL))
                hits = [hit, *(h for h in wider.hits if h.paper_id != hit.paper_id)][:k]
                return dc_replace(wider, hits=[dc_replace(h, rank=n) for n, h in enumerate(hits, 1)], answerable=True)
        # A lookup the gate refuses gets the second look an area question gets, at its description: the
        # framing pulls the cosine down ("Which paper studies a scaled-up linear-RNN layer that exactly
        # solves a regression each step?" 0.40, its description alone 0.49), and a top paper must hold the
        # description's words. Over the question files: 3 more answerable questions answered, no `none`
        # (not "the paper on X": taken so, "is there a paper on protein structure prediction ...?" passed).
        desc = _LOOKUP_FRAME.sub("", question, count=1).strip(" ?.!")
        if not found.answerable and not named and desc != question.strip(" ?.!") and _terms(desc):
            second = retriever.search(desc, k=k)
            if second.confidence >= max(SURVEY_TOPIC_GATE, retriever.threshold()) and \
                    holds_area(retriever, desc, [h.paper_id for h in second.hits]):
                second.answerable = True
                return second
        return found
    topic = survey_topic(question)
    if found.answerable:
        # past the gate, a short area no top paper holds in words is one the corpus lacks (as in `which`)
        if topic != question and found.confidence < STRONG_AREA_COSINE and \
                lacks_area(retriever, topic, [h.paper_id for h in found.hits]):
            found.answerable = False
        if found.answerable and topic != question:
            found.hits = _area_ranking(retriever, wide, topic, k)
        return found
    if topic == question:
        return found
    second = retriever.search(topic, k=k)
    # never looser than a gate the user raised (ASSISTANT_MIN_RELEVANCE)
    if second.confidence >= max(SURVEY_TOPIC_GATE, retriever.threshold()) and \
            holds_area(retriever, topic, [h.paper_id for h in second.hits]):
        second.answerable = True
        return second
    return found


def _kind_first(retriever: Retriever, question: str, found: Retrieval, wide: int = 100) -> dict[str, str]:
    """"Which papers introduce a new benchmark?": papers whose contribution sentence says so (as ``which``
    finds them) go first, in fused order among the top ``wide``; similarity alone cited 2 of 3 right.
    Returns those papers' sentences (quoted as they are), {} for any other question."""
    from .synthesis import contribution_matches

    kind = contribution_matches(question, retriever.index.all_papers())
    first = [h for h in retriever.search(found.query, k=wide).hits if h.paper_id in kind] if kind else []
    if not first:
        return {}
    hits = first + [h for h in found.hits if h.paper_id not in kind]
    found.hits = [dc_replace(h, rank=n) for n, h in enumerate(hits, 1)]
    found.answerable = True
    return {h.paper_id: kind[h.paper_id] for h in first}


def no_answer(question: str, mode: str, retrieval: Retrieval) -> Answer:
    return Answer(question=question, text=NO_ANSWER_PHRASE, mode=mode, answerable=False, citations=[],
                  sources=retrieval.hits, retrieval_query=retrieval.query)


def answer_question(retriever: Retriever, question: str, settings: Settings | None = None,
                    on_token: Callable[[str], None] | None = None, retrieval_query: str | None = None,
                    k: int | None = None, pinned: list[str] | None = None, one_paper: bool = False,
                    gist: bool = False, skip: frozenset[str] = frozenset()) -> Answer:
    """Retrieve for ``retrieval_query`` (default: the question) and answer ``question`` with citations.

    ``one_paper``: the question is about one paper (a follow-up's "it"), so an extractive answer quotes
    the top hit only; the others stay in the Sources.

    ``pinned``: paper ids the user named (the retriever's filter holds them): they are the sources, in
    that order, every one is used, and the relevance gate does not refuse. ``gist``: the question asks
    for what they are ("compare the first and second"), so an extractive answer quotes what each contributes.
    ``skip``: sentences already shown ("tell me more"), which an extractive answer quotes only if nothing else is
    left."""
    settings = settings or retriever.settings
    typed = question
    # typos mended (Retriever.search) for the area rules and for matching sentences; the answer keeps
    # the question as typed, and so does the LLM's prompt
    question = retriever.mend(question)
    survey = is_survey(question) and not pinned
    k = k or settings.top_k
    evidence: dict[str, str] = {}
    if retrieval_query in (None, typed) and not pinned:
        full = retrieve(retriever, question, max(k, 10))
        if survey:
            evidence = _kind_first(retriever, question, full)
    else:
        full = retriever.search(retrieval_query or question, k=max(k, 10), rerank=not survey)
    if pinned:
        found = {h.paper_id: h for h in full.hits}
        full.hits = [dc_replace(found[pid], rank=n) for n, pid in enumerate((p for p in pinned if p in found), 1)]
    retrieval = Retrieval(query=full.query, hits=full.hits[:k], answerable=full.answerable or bool(pinned),
                          confidence=full.confidence, query_vector=full.query_vector)
    mode = "llm" if settings.llm_enabled else "extractive"
    quote = dict(every_paper=bool(pinned), survey=survey, one_paper=one_paper and not pinned, evidence=evidence,
                 gist=gist, skip=skip)
    if not retrieval.answerable or not retrieval.hits:
        answer = no_answer(typed, mode, retrieval)
    elif mode == "llm":
        answer = llm_answer(retriever, typed, retrieval, settings, on_token)
        if answer.answerable and not answer.citations:  # nothing checked: quote what the sources say
            quoted = extractive_answer(retriever, question, retrieval, **quote)
            answer.quoted, answer.quoted_citations = quoted.text, quoted.citations
    else:
        answer = extractive_answer(retriever, question, retrieval, **quote)
        answer.question = typed
    answer.retrieved = full.hits
    answer.read_as = question if question != typed else None
    return answer


def llm_answer(retriever: Retriever, question: str, retrieval: Retrieval, settings: Settings,
               on_token: Callable[[str], None] | None = None) -> Answer:
    from .llm import chat

    hits = retrieval.hits
    papers = retriever.index.all_papers()
    abstracts = {h.paper_id: papers[h.paper_id].abstract for h in hits if h.paper_id in papers}
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": render("answer", sources=format_sources(hits, abstracts), question=question)},
    ]
    completion = chat(settings, messages, on_token=on_token)
    text, cited, invalid = parse_citations(completion.text.strip(), len(hits))
    answerable = NO_ANSWER_PHRASE.lower().rstrip(".") not in text.lower() or bool(cited)
    if completion.finish_reason == "length":
        text = f"{text}\n\n{LENGTH_MARK.format(n=settings.max_tokens)}"
    elif not completion.complete:
        text = f"{text}\n\n{INCOMPLETE_MARK}"
    answer = Answer(question=question, text=text, mode="llm", answerable=answerable,
                    citations=_citations(hits, cited) if answerable else [], sources=hits,
                    invalid_citations=invalid, complete=completion.complete, model=completion.model,
                    usage=completion.usage, retrieval_query=retrieval.query, prompt=messages)
    if answer.answerable:
        answer.support = support_marks(retriever, answer.text, hits, abstracts)
    from .llm import estimate_cost

    cost = estimate_cost(settings, completion.model or settings.model, completion.usage)
    if cost is not None:
        answer.usage = {**answer.usage, "cost_usd": cost}
    return answer


#: A cited sentence counts as supported when its best-matching sentence in a cited abstract has
#: cosine >= SUPPORT_COSINE, or covers >= SUPPORT_OVERLAP of its content terms.
SUPPORT_COSINE = 0.6
SUPPORT_OVERLAP = 0.5


def support_marks(retriever: Retriever, text: str, hits: list[Hit], abstracts: dict[str, str]) -> list[dict]:
    """For each answer sentence that cites sources: does any cited abstract back it?"""
    from .embedder import embed_array

    claims = []
    for sentence in split_sentences(text.replace("\n", " ")):
        nums = [int(n) for group in CITATION_RE.findall(sentence) for n in re.split(r"\s*[,;]\s*", group)
                if 1 <= int(n) <= len(hits)]
        claim = CITATION_RE.sub("", sentence).replace("?]", "").strip(" -*")
        if nums and claim:
            claims.append((sentence, claim, sorted(set(nums))))
    if not claims:
        return []
    source_sents = {n: split_sentences(abstracts.get(hits[n - 1].paper_id, hits[n - 1].snippet))
                    for _, _, nums in claims for n in nums}
    flat = [(n, s) for n, ss in source_sents.items() for s in ss]
    vecs = embed_array(retriever.index.embedder, [c for _, c, _ in claims] + [s for _, s in flat])
    cvecs, svecs = vecs[:len(claims)], vecs[len(claims):]
    out = []
    for i, (sentence, claim, nums) in enumerate(claims):
        rows = [j for j, (n, _) in enumerate(flat) if n in nums]
        cos = float((svecs[rows] @ cvecs[i]).max()) if rows else 0.0
        terms = _terms(claim)
        overlap = max((len(terms & _terms(flat[j][1])) / max(len(terms), 1) for j in rows), default=0.0)
        supported = cos >= SUPPORT_COSINE or overlap >= SUPPORT_OVERLAP
        out.append({"sentence": sentence, "citations": nums, "supported": supported,
                    "cosine": round(cos, 3), "overlap": round(overlap, 3)})
    return out


def unstated_detail(question: str, cited: list, n_lines: int) -> str:
    """A note when the question asks for a detail (:data:`DETAIL_RE`) no cited abstract mentions; else ""."""
    m = DETAIL_RE.search(question)
    if not m or not cited:
        return ""
    word = m.group(1)
    if any(p is not None and _terms(word) <= _terms(f"{p.title}\n{p.abstract}") for p in cited):
        return ""
    lines = "the sentence above is" if n_lines == 1 else "the sentences above are"
    if len(cited) == 1:
        return f"\n\nThe cited abstract does not mention {word}: {lines} the closest it comes."
    return f"\n\nNone of the cited abstracts mentions {word}: {lines} the closest they come."


def _named(retriever: Retriever, question: str, hits: list[Hit]) -> list[Hit]:
    """The hits the question names, each by a word that names none of the others: "compare CLASH and
    ChatInject" names two papers; "GNNs" in three abstracts is the field's word, and quoting all three
    answered a question about one of them with the other two."""
    words = [retriever.name_words(question, h, in_abstract=True) for h in hits]
    return [h for i, h in enumerate(hits)
            if words[i] - set().union(*(w for j, w in enumerate(words) if j != i))]


def extractive_answer(retriever: Retriever, question: str, retrieval: Retrieval,
                      max_papers: int = 4, max_sentences: int = 6, quota_top: int = 4,
                      keep_ratio: float = 0.5, every_paper: bool = False, survey: bool = False,
                      one_paper: bool = False, evidence: dict[str, str] | None = None, gist: bool = False,
                      skip: frozenset[str] = frozenset()) -> Answer:
    """Verbatim abstract sentences chosen for the question, each cited.

    Sentences are scored by cosine similarity to the question plus the IDF-weighted share of the
    question's (stemmed) terms they add; the top paper contributes up to ``quota_top`` sentences
    (each must add uncovered terms), other papers one, and a paper is only included while its
    retrieval score stays close to the top one. With ``every_paper`` (papers the user named) each
    of the first ``max_papers`` hits is used and they share the sentence budget. A ``survey``
    question ("which papers study X?") gets one sentence per paper, favouring the sentence that says
    what the paper contributes over background. ``one_paper`` (a follow-up's "it"): the top hit only,
    with any other paper the question names ("compare it with DeepEyes"). ``evidence``: papers that
    qualify by one sentence of theirs ("we introduce X, a benchmark"): each is quoted, by that sentence.
    ``gist``: what each paper contributes is wanted, not sentences matching the question's words.
    """
    hits = retrieval.hits
    papers = retriever.index.all_papers()
    top = hits[0].score or 1e-9
    if survey:  # "which papers study X?" asks for the list: every source close enough, as many as -k asks for
        max_papers = max_sentences = max(max_papers, max_sentences, len(hits))
    # papers the question names ("compare LongFilter and DeepEyes", "what is DeepEyes about?")
    named = [] if every_paper else _named(retriever, question, hits[:max_papers])
    overview = gist or bool(named) and named[0] is hits[0] and bool(OVERVIEW_RE.search(question))
    if overview:  # the gist: its best sentences, though they add none of the question's few words
        keep_ratio = 0.0
    survey = survey and not overview  # "summarise the GeneBreaker paper" is about one paper
    if survey:
        named = []
    if one_paper and named and named[0] is not hits[0]:
        named = [hits[0], *named]
    if every_paper or len(named) > 1:
        chosen_hits = hits[:max_papers] if every_paper else named
        quota_first = quota_rest = max(1, min(quota_top, max_sentences // max(len(chosen_hits), 1)))
    elif overview or one_paper:
        chosen_hits, quota_first, quota_rest = hits[:1], quota_top, 1
    else:
        evidence = evidence or {}
        # the top hit always (it leads the fused ranking, though its own best chunk may be under the gate
        # when BM25 carried it), the others while close to it and similar enough on their own
        chosen_hits = [h for h in hits[:max_papers] if h is hits[0] or h in named or h.paper_id in evidence
                       or h.score >= 0.6 * top and h.dense >= retriever.threshold() * 0.9]
        quota_first, quota_rest = (1 if survey else quota_top), 1
    sentences: list[tuple[int, str]] = []
    blocks = []
    for n, h in enumerate(hits, 1):
        if h not in chosen_hits:
            continue
        paper = papers.get(h.paper_id)
        sents, svecs = retriever.index.sentence_vectors(h.paper_id, paper.abstract if paper else h.snippet)
        fresh = [i for i, s in enumerate(sents) if s not in skip]
        if skip and fresh and len(fresh) < len(sents):  # "tell me more": what was not shown yet
            sents, svecs = [sents[i] for i in fresh], svecs[fresh]
        sentences += [(n, s) for s in sents]
        blocks.append(svecs)
    qvec = retrieval.query_vector if retrieval.query_vector is not None and retrieval.query == question \
        else retriever.embed_query(question)
    vecs = np.concatenate(blocks) if blocks else np.zeros((0, qvec.shape[0]), dtype=np.float32)
    cos = vecs @ qvec
    weights = dict(retriever.index.term_weights())
    qterms = _terms(question)
    if not (survey or overview):
        for t in asked_terms(question) & qterms:
            weights[t] = weights.get(t, 1.0) * ASKED_WEIGHT
    total = sum(weights.get(t, 1.0) for t in qterms) or 1.0
    sterms = [_terms(s) & qterms for _, s in sentences]
    asks_code = bool(_ASKS_FOR_CODE.search(question))
    # the answer-bearing bonus orders the top paper's sentences, and such a sentence is quoted while the
    # paper's quota lasts (its words may be few: "we propose a benchmark LiveDRBench with 100 tasks")
    asked, kind = asked_for(question) if not (survey or overview) else (set(), "")
    if kind in ("any", "number"):
        # the kind of a word most abstracts have ("what kind of model") is not told by the word before it
        asked = {t: k for t, k in (asked_kinds(question) or {}).items()
                 if k != "kind" or retriever.index.doc_freq(t) <= len(papers) // 5}
    # "Which paper proposes ...?", "deep research benchmark high fan-out": the paper is what is asked, so the
    # sentence in which it names what it contributes ("we propose a benchmark LiveDRBench ...") bears the answer
    identify = not (survey or overview or kind) and (not _WH.search(question)
                                                      or bool(_IDENTIFY.match(question.strip())))
    known = _known_names(question) if kind or identify else set()
    bonus = [ANSWER_BONUS * (bears_answer(s, known, asked, kind) if kind else
                             bool(CONTRIBUTION_RE.search(s)) and bears_answer(s, known, set(), "name"))
             if (kind or identify) and n == 1 else 0.0 for n, s in sentences]
    picked: list[tuple[int, int]] = []  # (source n, sentence index)
    for n in sorted({n for n, _ in sentences}):
        idx = [i for i, (m, _) in enumerate(sentences) if m == n]
        covered: set[str] = set()
        first_gain = None
        # Greedy coverage: each further sentence must add question terms the earlier ones missed,
        # so a two-part question ("which dataset ..., and by how much ...") gets both answers.
        for _ in range(quota_first if n == 1 else quota_rest):
            gains = {i: COSINE_SHARE * float(cos[i])
                     + (1 - COSINE_SHARE) * sum(weights.get(t, 1.0) for t in sterms[i] - covered) / total
                     + (SURVEY_CONTRIBUTION * bool(CONTRIBUTION_RE.search(sentences[i][1]))
                        if survey or overview else 0.0)
                     + bonus[i]
                     for i in idx if (n, i) not in picked and (asks_code or not BOILERPLATE_RE.search(sentences[i][1]))}
            if not gains:
                break
            best = max(gains, key=gains.get)
            given = (evidence or {}).get(hits[n - 1].paper_id)
            best = next((i for i in gains if sentences[i][1] == given), best)
            if first_gain is not None and not bonus[best] and gains[best] < keep_ratio * first_gain:
                # past the cut, only a sentence that bears the answer is still quoted
                bearing = [i for i in gains if bonus[i]]
                if not bearing:
                    break
                best = max(bearing, key=gains.get)
            first_gain = gains[best] - bonus[best] if first_gain is None else first_gain
            picked.append((n, best))
            covered |= sterms[best]
    if _ASKS_REMEDY.search(question) and not (survey or overview):
        # a picked sentence that states the problem asked about, followed by "To address this, we propose X":
        # that sentence answers (it shares none of the question's words, so coverage never picks it)
        follow = [(n, i + 1) for n, i in picked if n == 1 and i + 1 < len(sentences) and sentences[i + 1][0] == n
                  and (n, i + 1) not in picked and _ANSWERS_PREVIOUS.match(sentences[i + 1][1])]
        picked += follow[:1]
    picked = picked[:max_sentences]
    lines = []
    snippets: dict[int, str] = {}
    for n, i in picked:
        # keep each paper's sentences in their abstract order
        lines.append((n, i, f"{inert_citations(sentences[i][1])} [{n}]"))  # its own "[7]" is not ours
        snippets.setdefault(n, sentences[i][1])
    lines.sort(key=lambda t: (t[0], t[1]))  # by source, so a survey answer reads down the ranking
    text = "\n".join(f"- {line}" for _, _, line in lines)
    cited = sorted(snippets)
    if not survey:
        text += unstated_detail(question, [papers.get(hits[n - 1].paper_id) for n in cited], len(lines))
    return Answer(question=question, text=text, mode="extractive", answerable=True,
                  citations=_citations(hits, cited, snippets), sources=hits, retrieval_query=retrieval.query)
