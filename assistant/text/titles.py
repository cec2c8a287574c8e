"""Titles for abstracts that come without one: the name the abstract introduces (``Qronos: ...``), else a short
noun phrase; never a sentence cut mid-phrase."""

from __future__ import annotations

import functools
import re

from assistant.text.english import (
    ANAPHORA, APPOSITIVE_NAME, AUTHORS_DO, CALLED_NAME, CLAUSE_GOES_ON, CLAUSE_STOP, CUT_BEFORE, DANGLING_WORDS,
    FINITE_VERB, INTRODUCES_LATE, LIST_BREAKS, LIST_MODIFIER, NOT_COINED, NOT_NAMES, NOT_STUDIED, OPENS_NOUN_PHRASE,
    PHRASE_END, SHOWN_NAME_WORD, STUDIES, SUBJECT_ENDING_VERB, SUBORDINATE_OPENERS, TITLE_INTRODUCES,
    TITLE_SMALL_WORDS, named_pattern)
from assistant.text.latex import readable

MAX_TITLE = 90


def normalise_space(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


_NAMED = named_pattern(60)
#: The shown title reads a longer expansion: "CLASH (Character perspective-based LLM Assessments in ...), a ...".
_NAMED_SHOWN = named_pattern(160, SHOWN_NAME_WORD, versioned=True)
_ABBR = re.compile(r"\((?:\*\*)?([A-Z][A-Za-z0-9\-–]*[A-Z0-9][A-Za-z0-9\-–]*)(?:\*\*)?\)")


def _distinctive(name: str) -> bool:
    """A coined name, not a sentence-initial word: CamelCase, ALLCAPS, digits or hyphens."""
    core = name.split()[0] if name.split() else ""
    if len(core) < 2:
        return False
    if core.lower() in NOT_COINED:
        return False
    inner_caps = any(c.isupper() for c in core[1:])
    return inner_caps or any(c.isdigit() for c in core) or "-" in core or core.isupper()


def _clean_name(text: str) -> str:
    text = re.sub(r"\\(?:emph|textbf|textsc|textit)\{([^}]*)\}", r"\1", text)
    text = re.sub(r"[*_`{}]", "", text)
    text = text.replace('\\"u', "ü").replace("\\", "")
    return normalise_space(text).strip(" ,;:-–")


def _cut(text: str, limit: int = MAX_TITLE) -> str:
    text = normalise_space(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:-–")
    return cut + "…"


def _expansion(before: str, abbr: str) -> str | None:
    """The words right before ``(ABBR)`` that it abbreviates, e.g. ``Mixture-of-Thought`` for MoT."""
    words = _clean_name(before).split()[-10:]
    letters = [c.lower() for c in abbr if c.isalpha()]
    if not letters or not words:
        return None
    for k in range(1, len(words) + 1):
        cand = words[-k:]
        if cand[0].lower() in TITLE_SMALL_WORDS or not cand[0][0].isalpha() or cand[0][0].lower() != letters[0]:
            continue
        parts = [w for w in re.split(r"[\s\-–]+", " ".join(cand)) if w]
        if len(parts) < 2:
            continue
        # every letter of ABBR, in order, inside the words; most words must start with one of them
        joined, pos, ok = "".join(parts).lower(), 0, True
        for c in letters:
            pos = joined.find(c, pos)
            if pos < 0:
                ok = False
                break
            pos += 1
        initials = sum(1 for part in parts if part[0].lower() in letters)
        if ok and initials >= min(len(letters), len(parts)) * 0.6:
            return " ".join(cand)
    return None


def _phrase(text: str, limit: int = MAX_TITLE, extend: bool = False) -> str:
    """``text`` up to where its first noun phrase ends, shortened by whole trailing prepositional phrases
    until it fits ``limit``; never ends on a preposition, article or conjunction. Empty when nothing fits. With
    ``extend``, a bare phrase ("a framework") reads on through the clause that says what it does (:func:`_clause`).
    """
    text = normalise_space(text)[: 3 * limit]  # a phrase longer than that is cut anyway; each step below is O(n)
    m = PHRASE_END.search(text)
    # a comma after one or two modifiers goes on to the noun they modify ("a scalable, training-free method",
    # "a numerically stable, chunkwise parallelizable version of ...")
    while m and m.group().strip() == "," and _modifiers_only(text[: m.start()]) \
            and re.match(r"\s*[a-z][\w-]*", text[m.end():]) \
            and text[m.end():].split(None, 1)[0].lower() not in LIST_BREAKS:
        m = PHRASE_END.search(text, m.end())
    end = m.start() if m else len(text)
    if verb := FINITE_VERB.search(text, 0, end):  # a noun phrase has no finite verb: "... controller can be ..."
        end = verb.start()
    words = text[:end].rstrip(" .").split()
    if extend and m and len(words) <= 3 and m.group().strip().lower() in CLAUSE_GOES_ON:
        # "a framework" says nothing; the clause after it says what it does ("a framework that integrates ...
        # into ...", "a benchmark designed for ..."), kept only where it fits whole or cut before a modifier
        longer = _clause(text, m.start(), limit)
        if longer:
            return longer

    def last_preposition():
        return max((i for i, w in enumerate(words[:-1]) if i > 1 and w.lower() in CUT_BEFORE), default=None)

    # before a comma the words may be the first of a list ("for fine-grained, identity-preserving ..."):
    # the prepositional phrase they end is dropped whole
    if m and m.group().strip() == "," and last_preposition() and LIST_MODIFIER.search(words[-1]):
        words = words[: last_preposition()]
    while words and (len(" ".join(words)) > limit or words[-1].lower() in DANGLING_WORDS):
        cut = last_preposition()
        words = words[:cut] if cut and len(" ".join(words)) > limit else _without_last(words)
        while words and words[-1].lower() in DANGLING_WORDS:
            words = _without_last(words)
    return " ".join(words)


def _without_last(words: list[str]) -> list[str]:
    """``words`` less its last one; a word pointing back ("a solution optimizing both") takes the verb it is the
    object of along."""
    if words[-1].lower() in ANAPHORA and len(words) > 3 and words[-2].endswith("ing"):
        return words[:-2]
    return words[:-1]


def _clause(text: str, start: int, limit: int) -> str:
    """``text`` through the clause that goes on from ``start`` (to the next punctuation or finite verb), cut before
    its last modifiers to fit ``limit``; '' when it can only be cut mid-phrase."""
    stop = CLAUSE_STOP.search(text, start + 1)
    end = stop.start() if stop else len(text)
    if verb := FINITE_VERB.search(text, start, end):
        end = verb.start()
    words = text[:end].rstrip(" .").split()
    start_at = len(text[:start].split())
    while words and (len(" ".join(words)) > limit or words[-1].lower() in DANGLING_WORDS):
        if words[-1].lower() in DANGLING_WORDS:
            words = words[:-1]
            continue
        cut = max((i for i, w in enumerate(words[:-1]) if i > 3 and (w.lower() in CUT_BEFORE or (
            w.lower() in {"that", "which"} and i > start_at + 1))), default=None)
        if cut is None:
            return ""
        words = words[:cut]
        if len(words) > 2 and words[-2].lower() in CUT_BEFORE and words[-1].endswith("ing"):
            words = words[:-2]  # "... without relying" (on what was cut): the modifier goes whole
    pointing = any(w.lower().strip("()") in ANAPHORA or (w.lower() == "that" and words[i - 1].lower() in CUT_BEFORE)
                   for i, w in enumerate(words))  # "that converts such resources", "an evolution of that benchmark"
    verb_alone = re.search(r"\b(?:that|which)(?:\s+\w+ly)?\s+\S+$", " ".join(words))  # "... that separates"
    if len(words) <= 4 or pointing or verb_alone:
        return ""
    return " ".join(words)


#: A citation in parentheses ("(von Oswald et al., 2024)", "(2023)"): no part of a title.
_CITATION = re.compile(r"\s*\((?:[^()]*\bet al\b[^()]*|\s*(?:19|20)\d\d[a-z]?\s*)\)")


def _modifiers_only(text: str) -> bool:
    """Whether ``text`` (a noun phrase's start) is an article and at most two words: modifiers, not yet a noun."""
    words = text.split()
    return 2 <= len(words) <= 3 and words[0].lower() in {"a", "an", "the"}


def _named(name: str, desc: str | None) -> str:
    """``Name: a description`` cut to a whole phrase, or the name alone."""
    desc = _phrase(desc or "", MAX_TITLE - len(name) - 2, extend=True) if desc else ""
    return f"{name}: {desc}" if len(desc.split()) >= 2 else _cut(name)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


@functools.lru_cache(maxsize=32768)
def readable_title(abstract: str) -> str:
    """The title an untitled abstract is shown and exported with.

    The name the abstract introduces, with what it is (``Mixture-of-Thought (MoT)``, ``Qronos: a new
    post-training quantization algorithm``), else the noun phrase of what it proposes (``A multi-stage pipeline
    for scalable data filtering``), else of what it studies ("this paper initiates a theoretical study of ..."),
    else the subject of its first sentence (``Combining diverse foundation models``), else that sentence's first
    clause: never a sentence cut mid-phrase. Kept per abstract (a process shows the same papers' titles again, and
    ``show NAME`` reads every paper's).
    """
    return titled(abstract)[0]


#: Where a shown title came from (:func:`titled`): a name the abstract introduces, what it proposes, a name it
#: is "called", what it studies, or (none of these) its first sentence.
TITLE_SOURCES = ("name", "proposes", "called", "studies", "first sentence")


def titled(abstract: str) -> tuple[str, str]:
    """(:func:`readable_title`, which of :data:`TITLE_SOURCES` it came from)."""
    text = _CITATION.sub("", normalise_space(readable(abstract)))
    fallback = ""
    named: list[tuple[str, str]] = []  # (title, the name it carries), each introduction in order
    for sentence in _introducing(text, INTRODUCES_LATE):
        if abbreviated := _abbreviated(sentence):
            named.append((abbreviated, abbreviated.rsplit("(", 1)[-1].rstrip(")")))
            continue
        if (m := APPOSITIVE_NAME.search(sentence)) and _distinctive(_clean_name(m.group(2))):
            named.append((_named(_clean_name(m.group(2)), m.group(1)), _clean_name(m.group(2))))
            continue
        m = _NAMED_SHOWN.search(sentence)
        if m:
            name = _clean_name(m.group(1))
            # "We introduce Qronos---a new ...": a capitalised word right after the verb, then what it is,
            # is a name even when it is not written like one
            if _distinctive(name) or (m.group(3) and m.start(1) <= 2 and len(name.split()) <= 3
                                      and name.split()[0].lower() not in NOT_NAMES):
                # "RADAR (Reasoning-Ability and Difficulty-Aware Routing), a lightweight, ...": the words it
                # abbreviates say what it is better than the phrase after them
                spelled = _expansion(m.group(2) or "", name) if m.group(2) else None
                whole = f"{name}: {spelled}" if spelled and len(spelled.split()) >= 2 else ""
                named.append((whole if 0 < len(whole) <= MAX_TITLE else _named(name, m.group(3)), name))
                continue
        if not fallback and OPENS_NOUN_PHRASE.match(sentence):
            phrase = _phrase(_clean_name(sentence))
            if len(phrase.split()) >= 4:  # "a novel approach" says nothing a title should
                fallback = _capital(phrase)
    if named:
        # an abstract introducing several things (a benchmark, then the method): the name it writes most is its own
        return max(named, key=lambda t: text.count(t[1]))[0], "name"
    m = CALLED_NAME.search(text)
    if m and _distinctive(_clean_name(m.group(1))):
        return _cut(_clean_name(m.group(1))), "called"
    if fallback:
        return fallback, "proposes"
    if studied := _studied(text):
        return studied, "studies"
    return _from_first_sentence(text), "first sentence"


def _studied(text: str) -> str:
    """What the first "we study ..." of an abstract is about, as a phrase of three words or more ('' if none)."""
    for m in STUDIES.finditer(text):
        rest = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text[m.end():], maxsplit=1)[0]
        if NOT_STUDIED.match(rest):
            continue
        phrase = _phrase(_clean_name(rest))
        if len(phrase.split()) >= 3:
            return _capital(phrase)
    return ""


def _from_first_sentence(text: str) -> str:
    """What the first sentence is about: what "we uncover ..." names, else its subject, else its first phrase."""
    first = _clean_name(re.split(r"(?<=[.!?])\s+(?=[A-Z\\(])", text, maxsplit=1)[0])
    we = AUTHORS_DO.match(first)
    if we and len(_phrase(first[we.end():]).split()) >= 3:  # "We uncover the hidden lattice geometry of ..."
        return _capital(_phrase(first[we.end():]))
    clauses = [first]
    if first.split(" ", 1)[0].lower() in SUBORDINATE_OPENERS and "," in first:  # "While X has ..., its Y ...": X, else Y
        clauses = [first.split(" ", 1)[1], first.split(",", 1)[1].strip()]
    for clause in clauses:
        verb = SUBJECT_ENDING_VERB.search(clause)
        subject = clause[: verb.start()] if verb else ""
        if 2 <= len(subject.split()) <= 12 and "," not in subject and "—" not in subject:
            return _capital(_phrase(subject) or subject)
    return _capital(_phrase(first)) or _cut(first) or "(untitled)"


def _introducing(text: str, intro_re: re.Pattern = TITLE_INTRODUCES):
    """What follows each "we introduce / propose ..." of a text, to the end of its sentence."""
    for intro in intro_re.finditer(text):
        yield re.split(r"(?<=[.!?])\s+(?=[A-Z])", text[intro.end():], maxsplit=1)[0]


def _abbreviated(sentence: str) -> str | None:
    """"Long Name (LN)" when an introducing sentence's object is a name it abbreviates, else None."""
    m = _ABBR.search(sentence[:200])
    if not m:
        return None
    long_name = _expansion(sentence[: m.start()], m.group(1))
    # the introduced thing itself: starts the sentence's object, or is a capitalised name near it
    at = sentence.find(long_name) if long_name else -1
    if long_name and (at <= 5 or (at <= 40 and long_name[0].isupper())):
        return _cut(f"{long_name} ({m.group(1)})")
    return None


def derive_title(abstract: str) -> str:
    """The title an untitled abstract is stored, searched and matched with (``Paper.title``).

    Kept as it was: the gate, name matching and follow-up queries read ``Paper.title``, so changing it would
    change answers (a shorter title moved 3 terse queries); people see :func:`readable_title` instead.

    The named method/model/benchmark the abstract introduces (``Mixture-of-Thought (MoT)``,
    ``OpenAgentSafety: a comprehensive and modular framework ...``), else its first sentence cut at ~90 chars.
    """
    text = normalise_space(abstract)
    for sentence in _introducing(text):
        if abbreviated := _abbreviated(sentence):
            return abbreviated
        m = _NAMED.search(sentence)
        if m and _distinctive(_clean_name(m.group(1))):
            name = _clean_name(m.group(1))
            desc = normalise_space(m.group(3) or "")
            return _cut(f"{name}: {desc}" if desc else name)
    m = CALLED_NAME.search(text)
    if m and _distinctive(_clean_name(m.group(1))):
        return _cut(_clean_name(m.group(1)))
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z\\(])", text, maxsplit=1)[0]
    return _cut(_clean_name(first)) or _cut(first) or "(untitled)"
