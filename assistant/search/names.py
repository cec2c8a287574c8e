"""Papers a question names: a word (or a run of capitalised words) that one paper of the index writes as a name.

A name is how the paper writes it: with a capital after its first letter ("WaterDrum", "ARC-JSD", "UML"), with a
digit ("GPT4o"), or capitalised inside a sentence ("we present Trinity, ..."). A question names the paper when one
of its words is such a name of exactly one paper and either no other paper has the word at all, in any case
("qronos", "Explain Trinity"), or the question writes it exactly as the paper does ("ASIDE?" where other papers say
"aside"). An acronym that is also an English word ("SPIRAL") names its paper in lower case only when it is all the
question asks about ("how does spiral work?", not "how do spiral galaxies form?"). A run of two or more capitalised
words ("the Synthetic Bootstrapped Pretraining paper") names the one paper that has the run. Nothing here knows
English phrasing: "What is X?", "X?", "explain x" all name X.
"""

from __future__ import annotations

import functools
import re


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*")


def _name_form(token: str) -> bool:
    """Written like a name whatever its place: a part with a capital after its first letter ("WaterDrum", "UML",
    "ARC-JSD"; not "Mixture-of-Experts"), or letters and digits ("GPT4o")."""
    if token.islower() and not any(c.isdigit() for c in token):  # most words of an abstract, at once
        return False
    parts = re.split(r"[-_.]", token)
    return any(any(c.isupper() for c in part[1:]) for part in parts) or \
        any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def names_in(text: str) -> set[str]:
    """The names a text keeps referring to (as written): a word written at least twice in name form, or
    capitalised and never in lower case ("Trinity", "Qronos", "UML"; not the "Bayesian" of one phrase, nor an
    "LMs" or "PINNs" mentioned in passing)."""
    written: dict[str, int] = {}
    lower = set()
    for m in _TOKEN.finditer(text):
        word = m.group()
        if len(word) < 2 or not any(c.isalpha() for c in word):
            continue
        if word[0].isupper() or _name_form(word):
            written[word] = written.get(word, 0) + 1
        else:
            lower.add(word)
    return {w for w, n in written.items() if n >= 2 and (_name_form(w) or w.lower() not in lower) or _coined(w)}


def _coined(word: str) -> bool:
    """A coined name, a name once written ("MergOPT", "WaterDrum", "ChatInject"): lower- and upper-case letters with
    a capital after the first, not an acronym's plural ("LLMs", "PINNs")."""
    letters = word.replace("-", "")
    return any(c.islower() for c in letters) and any(c.isupper() for c in letters[1:]) and \
        not (letters[:-1].isupper() and letters.endswith("s"))


def defined_acronyms(text: str) -> set[str]:
    """Acronyms the text spells out where it writes them: "UML: Unpaired Multimodal Learner", "Unpaired Multimodal
    Learner (UML)" (the initials of the words beside it, in order)."""
    out = set()
    words = [(m.group(), m.start()) for m in _TOKEN.finditer(text)]
    for i, (word, _) in enumerate(words):
        if not (2 <= len(word) <= 8 and word.isalpha() and word.isupper()):
            continue
        after, before = words[i + 1:i + 1 + len(word) + 2], words[max(0, i - len(word) - 2):i]
        for around in (after, before):
            initials = "".join(w[0] for w, _ in around if w[0].isupper())
            # or the capitals marking its letters inside the words: "PRISM (Progressive Robust dIscovery under
            # StreaMing data)", "Multi-Agent Systems (MAS)"
            marked = "".join(c for w, _ in around for c in w if c.isupper())
            ends = marked[:len(word)] if around is after else marked[-len(word):]
            if word in initials or len(around) > 1 and word == ends:
                out.add(word)
    return out


def paper_names(paper) -> frozenset[str]:
    """A paper's names, read from its abstract (a title's capitals say nothing; LaTeX made plain), the acronyms it
    defines, and name-form words of its title."""
    return _names(paper.title, paper.abstract)


@functools.lru_cache(maxsize=4096)
def _names(title: str, abstract: str) -> frozenset[str]:
    """Read once per process: a question asks for the names of each paper holding one of its words up to three
    times, which was ~0.1-0.2 s CPU of a one-shot ``ask``."""
    from assistant.text.latex import readable

    plain = readable(abstract)
    return frozenset(names_in(plain) | defined_acronyms(plain) | {w for w in _TOKEN.findall(title) if _name_form(w)})


def _papers_with_term(index, term: str) -> list[str]:
    """Ids of the papers whose BM25 text has the stemmed term (its postings in the BM25 matrix)."""
    retriever, ids = index.bm25()
    if retriever is None:
        return []
    tid = retriever.vocab_dict.get(term)
    if tid is None:
        return []
    indptr, indices = retriever.scores["indptr"], retriever.scores["indices"]
    import numpy as np

    end = indptr[tid + 1] if tid + 1 < len(indptr) else len(indices)
    return [ids[int(i)] for i in np.asarray(indices[indptr[tid]:end])]


def named_papers(index, question: str, most: int = 3) -> list[str]:
    """Ids of the papers the question names, in the order it names them (at most ``most``); [] if none."""
    papers = index.all_papers()
    asked = _topical(question)
    found: list[str] = []
    for m in _TOKEN.finditer(question):
        pid = _named_by(index, m.group(), papers, alone=_asks_only(asked, m.group()))
        if pid is not None and pid not in found:
            found.append(pid)
    if not found:
        found = _named_by_run(index, question, papers)
    return found[:most]


def name_words(index, question: str, paper_id: str) -> list[str]:
    """The question's words that are a name of ``paper_id`` and of no other paper ("ImageNet", which many
    abstracts name, is none of them)."""
    papers = index.all_papers()
    return [m.group() for m in _TOKEN.finditer(question)
            if _name_holder(index, m.group(), papers, shortest=1)[0] == paper_id]


def _name_holder(index, word: str, papers: dict, shortest: int = 3) -> tuple[str | None, set[str]]:
    """The one paper that has the question word as a name, if only one does, and the papers holding the word.
    A word under ``shortest`` letters has none: naming a paper takes 3 (too many fields' acronyms are two
    letters), but once a paper is named its two-letter acronym ("CL") is still its name, not something asked."""
    from assistant.text.terms import stem_terms

    if len(word) < shortest or not any(c.isalpha() for c in word):
        return None, set()
    stems = stem_terms(word)
    if not stems:
        return None, set()
    holders = set.intersection(*(set(_papers_with_term(index, t)) for t in stems))
    if not holders or len(holders) > 50:  # a field's word, not a paper's name
        return None, holders
    as_name = [pid for pid in holders if (p := papers.get(pid)) is not None
               and word.lower() in {n.lower() for n in paper_names(p)}]
    return (as_name[0] if len(as_name) == 1 else None), holders


def _named_by(index, word: str, papers: dict, alone: bool = False) -> str | None:
    """The one paper a question word names: the only one with it as a name, and the only one holding the word at
    all, or the only one writing it as the question does (an acronym that is an English word in capitals).
    ``alone``: the word is all the question asks about ("how does spiral work?", "How does CL work?"), so an acronym
    that is an English word, or of two letters, names the one paper holding it."""
    pid, holders = _name_holder(index, word, papers, shortest=2 if alone else 3)
    only_holder = len(holders) == 1
    if pid is None or len(word) < 3 and not only_holder:  # two letters: only the one paper holding them
        return None
    if not (_acronym_allowed(word, papers[pid]) or alone and only_holder):
        return None
    exact = word in paper_names(papers[pid]) and _name_form(word)
    if only_holder or exact and sum(word in paper_names(papers[h]) for h in holders if h in papers) == 1:
        return pid
    return None


def _acronym_allowed(word: str, paper) -> bool:
    """An acronym that is also an English word ("CLASH", "ASIDE") names a paper only when the question writes it
    in capitals too: "when do two values clash?" names nothing."""
    from assistant.embed.embedder import vocabulary_words

    forms = {n for n in paper_names(paper) if n.lower() == word.lower()}
    return not any(f.isupper() for f in forms) or word.lower() not in vocabulary_words() or word.isupper()


def _topical(question: str) -> set[str]:
    """The question's stemmed terms without how questions are framed ("how does ... work", "what is", "explain";
    :func:`.decide.framing_terms` and :func:`.decide.gist_terms`)."""
    from assistant.search.decide import framing_terms, gist_terms
    from assistant.text.terms import stem_terms

    return set(stem_terms(question)) - framing_terms() - gist_terms()


def _asks_only(topical: set[str], word: str) -> bool:
    """Whether the word is all the question (its :func:`_topical` terms) asks about: "how does spiral work?", not
    "when do two values clash?", which asks about values."""
    from assistant.text.terms import stem_terms

    own = set(stem_terms(word))
    return bool(own) and not topical - own


_RUN = re.compile(r"(?:[A-Z][\w-]*\s+){1,5}[A-Z][\w-]*")


def _named_by_run(index, question: str, papers: dict) -> list[str]:
    """The one paper that has a run of two or more capitalised words of the question ("Synthetic Bootstrapped
    Pretraining"), case aside; the run's first word may be the question's own first word, so runs are tried
    without it too."""
    from assistant.text.terms import stem_terms

    for m in _RUN.finditer(question):
        words = m.group().split()
        for run in (words, words[1:]) if m.start() == 0 else (words,):
            if len(run) < 2:
                continue
            phrase = " ".join(run).lower()
            rarest = min(stem_terms(" ".join(run)) or [""], key=lambda t: index.doc_freq(t) or 10**9)
            holders = [pid for pid in _papers_with_term(index, rarest)
                       if pid in papers and phrase in f"{papers[pid].title}\n{papers[pid].abstract}".lower()]
            if len(holders) == 1:
                return holders
    return []


def criterion_name(index, criterion: str) -> str | None:
    """The name a `which` criterion is about, written as only names are ("evaluated on ImageNet", "use MuJoCo",
    "compare against GPT-4o", "COCO"): a coined name, one with digits, or capitals (the lower-case parts of a
    hyphenated word left out: "MuJoCo-based" is "MuJoCo"), carrying at least half of the criterion's IDF weight,
    that no paper writing it spells out (an acronym such as "RL" or "MoE" stands for words a paper may write
    instead). None for a criterion of alternatives ("proteins, molecules or DNA") or with no such name. A name is
    never paraphrased, so the papers meeting the criterion are those whose text has it (:func:`papers_writing`)."""
    from assistant.search.decide import terms, topical
    from assistant.text.english import ALTERNATIVES

    if ALTERNATIVES.search(criterion):
        return None
    weights = index.term_weights()
    rarest = max(weights.values(), default=1.0)
    asked = topical(criterion)
    total = sum(weights.get(t, rarest) for t in asked) or 1.0
    for m in _TOKEN.finditer(criterion):
        name = "-".join(part for part in m.group().split("-") if not part.isalpha() or not part.islower())
        capitals = 2 <= len(name) <= 8 and name.isalpha() and name.isupper()
        coined = _coined(name) or any(c.isdigit() for c in name) and any(c.isalpha() for c in name)
        if name and (coined or capitals) and sum(weights.get(t, rarest) for t in terms(name) & asked) / total >= 0.5 \
                and _never_spelled_out(index, name, needs_holder=not coined):
            return name
    return None


def _never_spelled_out(index, word: str, needs_holder: bool) -> bool:
    """Whether the papers writing the word never spell it out: "COCO", "MNIST", "ImageNet" are names; "RL" and
    "MoE" stand for words ("reinforcement learning (RL)") a paper may write instead. ``needs_holder``: a word in
    capitals no paper writes says nothing either way (``which`` reads the criterion as a topic)."""
    from assistant.text.latex import readable

    papers = index.all_papers()
    held = False
    for pid in _writers(index, word):
        if _spelled_out(word, readable(papers[pid].abstract)):
            return False
        held = True
    return held or not needs_holder


def _spelled_out(acronym: str, text: str) -> bool:
    """Whether the text spells the acronym out beside it, in any case: "reinforcement learning (RL)", "Graph
    Neural Networks (GNNs)", "mixture of experts (MoE)" (a short word inside may be skipped)."""
    for m in re.finditer(rf"\(\s*{re.escape(acronym)}s?\s*\)", text):
        words = re.findall(r"[A-Za-z]+", text[max(0, m.start() - 120):m.start()])
        for n in (len(acronym), len(acronym) + 1):
            chosen = [w for w in words[-n:] if n == len(acronym) or len(w) > 3]
            if len(words) >= n and "".join(w[0] for w in chosen).lower() == acronym.lower():
                return True
    return False


def papers_writing(index, name: str) -> dict[str, str]:
    """The papers whose title or abstract writes ``name`` as a word (case aside), each with the first sentence of
    its abstract that does (the title when none does)."""
    from assistant.text.sentences import split_sentences

    found = _written(name)
    papers = index.all_papers()
    return {pid: next((x for x in split_sentences(papers[pid].abstract) if found.search(x)), papers[pid].title)
            for pid in _writers(index, name)}


@functools.lru_cache(maxsize=64)
def _written(name: str) -> re.Pattern:
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.I)


def writes(paper, name: str) -> bool:
    """Whether the paper's title or abstract writes ``name`` as a word (case aside)."""
    return bool(_written(name).search(f"{paper.title}\n{paper.abstract}"))


def _writers(index, name: str):
    """Ids of the papers whose title or abstract writes ``name`` as a word, one at a time (read through the BM25
    postings of its rarest term: at 20k papers a name is in few)."""
    from assistant.text.terms import stem_terms

    papers = index.all_papers()
    rarest = min(stem_terms(name) or [""], key=lambda t: index.doc_freq(t) or 10**9)
    for pid in _papers_with_term(index, rarest) if rarest else list(papers):
        p = papers.get(pid)
        if p is not None and writes(p, name):
            yield pid


#: Dashes, quotes and the like as a keyboard types them: "Jensen-Shannon" finds "Jensen–Shannon".
_TYPED = str.maketrans({**{c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"},
                        **{c: "'" for c in "\u2018\u2019\u201a\u201b\u2032"},
                        **{c: '"' for c in "\u201c\u201d\u201e\u201f\u2033"}})


_MARKS = re.compile("[\u0300-\u036f]")  # combining accents, as NFKD leaves them: "u" and its umlaut


def folded(text: str) -> str:
    """``text`` as a name is looked up: case, accents ("Nuwa" is "Nüwa"), fullwidth forms, typographic dashes and
    quotes and runs of white space set aside."""
    import unicodedata

    text = _MARKS.sub("", unicodedata.normalize("NFKD", text.translate(_TYPED)))
    return " ".join(text.casefold().split())


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1].rstrip() + "…"


def resolve_paper(index, ref: str) -> str:
    """The id of the paper ``ref`` calls: its id, a name only it has ("Qronos", "qronos"), or a part of one title
    only ("unlearning metric"). InputError when none does, or (listing them) when several do."""
    from assistant.errors import InputError

    ref = " ".join(str(ref).split())
    papers = index.all_papers()
    if ref in papers:
        return ref
    plain = ref.lower()
    holding = [pid for pid, p in papers.items() if plain in p.title.lower() or plain in p.abstract.lower()
               or plain in p.display_title.lower()]  # a name is in its paper's text: only these are read for names
    low = folded(ref)
    if not holding:  # typed otherwise than written ("Nuwa", "Jensen-Shannon"): the slower, folded reading
        holding = [pid for pid, p in papers.items() if low in folded(p.title) or low in folded(p.abstract)
                   or low in folded(p.display_title)]
    by_name = [pid for pid in holding if any(folded(n) == low for n in paper_names(papers[pid]))]
    in_titles = [pid for pid in holding if low in folded(papers[pid].title)
                 or low in folded(papers[pid].display_title)] if len(low) >= 3 else []
    if len(by_name) == 1 and set(in_titles) <= set(by_name):  # "federated", a name of one, in 7 titles: not it
        return by_name[0]
    whole = [pid for pid in holding if low in (folded(papers[pid].title), folded(papers[pid].display_title))]
    if len(whole) == 1 and not by_name:  # a title typed whole ("Large language models") names its paper
        return whole[0]
    by_title = list(dict.fromkeys(by_name + in_titles)) if len(by_name) == 1 else by_name or in_titles
    if len(by_title) == 1:
        return by_title[0]
    if by_title:
        shown = "; ".join(f"{pid} ({_cut(papers[pid].display_title, 60)})" for pid in by_title[:6])
        more = f" and {len(by_title) - 6} more" if len(by_title) > 6 else ""
        raise InputError(f"{ref!r} matches {len(by_title)} papers: {shown}{more}; name one by its id")
    raise InputError(f"not in the index: {ref!r} (no paper has that id, name or title); list them with: assistant "
                     "papers")
