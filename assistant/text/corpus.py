"""Parse abstract files into :class:`Paper` records. Pure parsing: no index, no network.

Formats:
- plain-text lists (``.txt``/``.md`` or anything else): a header line, then one abstract per
  blank-line-separated paragraph; ids are ``<file stem>#<n>`` (n = 1-based position after the header);
- JSONL (``.jsonl``/``.ndjson``) and CSV (``.csv``/``.tsv``; comma, tab or ``;``): field ``abstract``
  (or ``text``/``summary``), optional ``id`` (else ``<file stem>#<n>``, n = the record's 1-based
  number), ``title``, ``authors``, ``url``, ``date``, ``keywords``; other fields are kept as metadata.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Iterable, Iterator

from assistant.errors import InputError

TEXT_SUFFIXES = {".txt", ".md", ".text", ""}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
CSV_SUFFIXES = {".csv", ".tsv"}
KNOWN_SUFFIXES = TEXT_SUFFIXES | JSONL_SUFFIXES | CSV_SUFFIXES | {".json"}
#: How a refusal names what ingest reads.
FORMATS_HINT = ("ingest reads .txt/.md lists (a header line, then abstracts separated by blank lines), "
                ".jsonl/.ndjson/.json records and .csv/.tsv tables")
ABSTRACT_FIELDS = ("abstract", "text", "summary")
MAX_TITLE = 90
#: Longer "abstracts" (a whole paper pasted into one paragraph) are cut here and reported:
#: embedding a 5 MB paragraph would take an hour and drown every other paper in chunks.
MAX_ABSTRACT_CHARS = 20_000

_URL_RE = re.compile(r"https?://[^\s<>\"'()\[\]{}]+[^\s<>\"'()\[\]{}.,;:!?]")
_PARA_SPLIT = re.compile(r"\n[ \t\r\f\v]*\n")


@dataclass(frozen=True)
class Paper:
    """One abstract. ``title_derived`` is True when the title was made from the abstract."""

    id: str
    title: str
    abstract: str
    source: str
    position: int
    authors: tuple[str, ...] = ()
    url: str | None = None
    date: str | None = None
    keywords: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    title_derived: bool = False
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def display_title(self) -> str:
        """The title to show and export: a derived one made readable (:func:`readable_title`), a real one as is."""
        return readable_title(self.abstract) if self.title_derived else self.title

    @property
    def content_hash(self) -> str:
        """Hash of what is embedded: a changed title or abstract means new chunks."""
        return hashlib.sha256(f"{self.title}\n{self.abstract}".encode()).hexdigest()[:16]


@dataclass
class ParseReport:
    """What parsing skipped or merged, so the CLI can tell the user."""

    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (dropped id, kept id)
    skipped: list[str] = field(default_factory=list)  # "file:line: reason"
    files: int = 0


def bundled_corpus() -> Path:
    """Directory of the bundled ICLR 2026 abstracts (package data)."""
    return Path(str(resources.files("assistant") / "data" / "iclr2026"))


def normalise_space(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --- display -------------------------------------------------------------------------------

#: LaTeX that abstracts carry from their sources, as a terminal shows it (quotes stay verbatim in --json and
#: exports; only what a person reads is changed).
_LATEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π",
    "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Sigma": "Σ", "Phi": "Φ", "Omega": "Ω",
    "times": "×", "to": "→", "rightarrow": "→", "leftarrow": "←", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥",
    "approx": "≈", "sim": "~", "cdot": "·", "infty": "∞", "pm": "±", "neq": "≠", "ll": "≪", "gg": "≫",
    "in": "∈", "sqrt": "√", "ldots": "…", "dots": "…",
}
_SUPERSCRIPT = str.maketrans("0123456789+-n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ⁿ")
_TEXT_MACRO = re.compile(r"\\(?:emph|textit|textbf|textsc|texttt|underline|url|mathrm|mathbf|mathcal|mathit|"
                         r"text|operatorname)\{([^{}]*)\}")
_MATH = re.compile(r"\$(?!\s)([^$\n]{1,80}?)(?<!\s)\$")  # "$x$", not "costs $5 and $6"


#: LaTeX accents as combining marks (``N\\"uwa`` -> ``Nüwa``, ``\\'{e}`` -> ``é``, ``\\v{c}`` -> ``č``).
_ACCENT_MARKS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304",
                 ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
                 "r": "\u030a"}
_ACCENT = re.compile(r"\{?\\(?:([\"'`^~=.])\s*\{?(\\i|[A-Za-z])\}?|([uvHckr])\{(\\i|[A-Za-z])\})\}?")
_LETTERS = {"ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "aa": "å", "AA": "Å", "l": "ł", "L": "Ł",
            "oe": "œ", "OE": "Œ"}


def _accent(m: re.Match) -> str:
    mark = _ACCENT_MARKS[m.group(1) or m.group(3)]
    letter = m.group(2) or m.group(4)
    return unicodedata.normalize("NFC", ("i" if letter == "\\i" else letter) + mark)


def _math(body: str) -> str:
    body = _TEXT_MACRO.sub(r"\1", body)
    body = re.sub(r"\\([A-Za-z]+)", lambda m: _LATEX_SYMBOLS.get(m.group(1), m.group(0)), body)
    body = re.sub(r"\^\{?([0-9+\-n]{1,3})\}?", lambda m: m.group(1).translate(_SUPERSCRIPT), body)
    body = re.sub(r"\\([%&_#$])", r"\1", body)
    return body.replace("\\,", " ").replace("{", "").replace("}", "")


def readable(text: str) -> str:
    """Abstract text with its LaTeX markup as plain Unicode, for a person to read: ``86.2\\%`` -> ``86.2%``,
    ``\\emph{link function}`` -> ``link function``, ``$\\alpha$-mixture`` -> ``α-mixture``, ``SRe$^2$L`` ->
    ``SRe²L``, two backquotes ... two quotes -> curly quotes. Text without markup comes back as it is."""
    if "\\" not in text and "$" not in text and "``" not in text and "{" not in text and "**" not in text:
        return text
    text = _ACCENT.sub(_accent, text)
    text = re.sub(r"\{\\(ss|o|O|ae|AE|aa|AA|l|L|oe|OE)\}|\\(ss|o|O|ae|AE|aa|AA|l|L|oe|OE)\b\s?",
                  lambda m: _LETTERS[m.group(1) or m.group(2)], text)
    text = re.sub(r"\*\*([^*\n]+)\*\*", r"\1", text)  # Markdown bold: "**R**ectified **D**ecoupled"
    text = _MATH.sub(lambda m: _math(m.group(1)), text)
    for _ in range(2):  # one level of nesting: \textbf{\emph{x}}
        text = _TEXT_MACRO.sub(r"\1", text)
    text = re.sub(r"(?<![\\\w])\{([\w -]+)\}", r"\1", text)  # a bare group: "two {efficient} algorithms"
    text = re.sub(r"\\([%&_#$])", r"\1", text)
    text = re.sub(r"\\(times|to|approx|sim|cdot|pm|leq|geq)\b", lambda m: _LATEX_SYMBOLS[m.group(1)], text)
    return text.replace("``", "“").replace("''", "”")


# --- derived titles -------------------------------------------------------------------------

_INTRO_RE = re.compile(
    r"\b(?:we|this paper|this work|here we)\s+(?:\w+\s+){0,2}?"
    r"(?:propose|introduce|present|develop|design|release|construct|curate|call|dub|term)s?d?\b", re.I)
_WORD = r"[A-Z][\w.]*(?:[\-–][\w.]+)*"
_NAMED = re.compile(
    r"^\W*(?:a\s+(?:[\w\-]+\s+){0,6}?(?:called|named|dubbed|termed)\s+)?[*_`\\{]*(?:\\(?:emph|textbf|textsc)\{)?"
    r"(" + _WORD + r"(?:\s" + _WORD + r"){0,3})[*_`}]*"
    r"\s*(?:\([^)]{1,60}\))?\s*(?:,|:|—|---|--|–)\s*((?:a|an|the)\b[^.;:]{5,120})?"
)
_CALLED = re.compile(r"\b(?:called|named|dubbed|termed)\s+[*_`\\{]*(?:\\(?:emph|textbf|textsc)\{)?(" + _WORD + r")")
_ABBR = re.compile(r"\((?:\*\*)?([A-Z][A-Za-z0-9\-–]*[A-Z0-9][A-Za-z0-9\-–]*)(?:\*\*)?\)")
_SMALL = {"of", "for", "and", "in", "with", "to", "the", "via", "on", "a", "an", "by", "from"}
#: Capitalised words that open a sentence's object without naming anything.
_NOT_NAMES = {"a", "an", "the", "this", "these", "our", "we", "in", "it", "to", "first", "novel", "new", "two",
              "three", "several", "both", "each", "such", "here", "there", "they", "its", "their"}


def _distinctive(name: str) -> bool:
    """A coined name, not a sentence-initial word: CamelCase, ALLCAPS, digits or hyphens."""
    core = name.split()[0] if name.split() else ""
    if len(core) < 2:
        return False
    if core.lower() in {"a", "an", "the", "this", "these", "our", "we", "in", "it", "to", "first", "novel", "new"}:
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
        if cand[0].lower() in _SMALL or not cand[0][0].isalpha() or cand[0][0].lower() != letters[0]:
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


#: Where a noun phrase ends: a relative clause, an apposition, a participle, a new clause.
_PHRASE_END = re.compile(r"\s+(?:that|which|where|whereby|wherein|who|whose|while|whereas|but|thereby|so that|"
                         r"designed|trained|built|grounded|tailored|centered|spanning|consisting|comprising|allowing|"
                         r"enabling|using|leading)\b"
                         r"|\s+and\s+(?:show|shows|demonstrate|find|prove|evaluate|use|apply|analy[sz]e|release|"
                         r"provide|establish|study|investigate|introduce|propose|present)\b"
                         r"|\s*[,;:]|\s+[-–—]+\s|---|\s+\[|\s*—")
#: A word that may open a list of modifiers ("fine-grained, identity-preserving ...").
_LIST_WORD = re.compile(r"^[a-z]+(?:-[a-z]+)+$|^[a-z]+(?:ed|al|ive|ing|ic|ous|ent|able|ful)$")
_PREPOSITIONS = {"of", "for", "in", "with", "via", "on", "by", "from"}
#: Words that open a subordinate clause, not the sentence's subject ("While X has ..., Y ...").
_SUBORDINATE = {"while", "although", "though", "despite", "under", "as", "since", "when", "with", "in", "given",
                "because", "whereas", "unlike", "beyond", "for", "to", "after", "before", "through", "by", "if"}
#: Verbs that end the subject of an abstract's first sentence ("Sequence modeling | is dominated by ...").
_VERB = re.compile(r"\s(?:is|are|was|were|has|have|had|can|could|may|remains?|aims?|seeks?|offers?|achieves?|"
                   r"exhibits?|leverages?|requires?|lacks?|measures?|faces?|struggles?|suffers?|relies|rely|enables?|"
                   r"shows?|demonstrates?|excels?|plays?|learns?|provides?|poses?|yields?|allows?|depends?|"
                   r"involves?|typically|often|increasingly|usually)\b")
#: Words a title may not end on: the phrase would read as cut.
_DANGLING = _SMALL | {"and", "or", "as", "at", "that", "which", "is", "are", "such", "its", "their", "both",
                      "between", "into", "over", "under", "without", "across", "using", "toward", "towards"}


def _phrase(text: str, limit: int = MAX_TITLE) -> str:
    """``text`` up to where its first noun phrase ends, shortened by whole trailing prepositional phrases
    until it fits ``limit``; never ends on a preposition, article or conjunction. Empty when nothing fits."""
    text = normalise_space(text)[: 3 * limit]  # a phrase longer than that is cut anyway; each step below is O(n)
    m = _PHRASE_END.search(text)
    words = (text[: m.start()] if m else text).rstrip(" .").split()

    def last_preposition():
        return max((i for i, w in enumerate(words[:-1]) if i > 1 and w.lower() in _PREPOSITIONS), default=None)

    # before a comma the words may be the first of a list ("for fine-grained, identity-preserving ..."):
    # the prepositional phrase they end is dropped whole
    if m and m.group().strip() == "," and last_preposition() and _LIST_WORD.search(words[-1]):
        words = words[: last_preposition()]
    while words and (len(" ".join(words)) > limit or words[-1].lower() in _DANGLING):
        cut = last_preposition()
        words = words[:cut] if cut and len(" ".join(words)) > limit else words[:-1]
        while words and words[-1].lower() in _DANGLING:
            words = words[:-1]
    return " ".join(words)


def _named(name: str, desc: str | None) -> str:
    """``Name: a description`` cut to a whole phrase, or the name alone."""
    desc = _phrase(desc or "", MAX_TITLE - len(name) - 2) if desc else ""
    return f"{name}: {desc}" if len(desc.split()) >= 2 else _cut(name)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def readable_title(abstract: str) -> str:
    """The title an untitled abstract is shown and exported with.

    The name the abstract introduces, with what it is (``Mixture-of-Thought (MoT)``, ``Qronos: a new
    post-training quantization algorithm``), else the noun phrase of what it proposes (``A multi-stage pipeline
    for scalable data filtering``), else the subject of its first sentence (``Combining diverse foundation
    models``), else that sentence's first clause: never a sentence cut mid-phrase.
    """
    text = normalise_space(readable(abstract))
    fallback = ""
    for sentence in _introducing(text):
        if abbreviated := _abbreviated(sentence):
            return abbreviated
        m = _NAMED.search(sentence)
        if m:
            name = _clean_name(m.group(1))
            # "We introduce Qronos---a new ...": a capitalised word right after the verb, then what it is,
            # is a name even when it is not written like one
            if _distinctive(name) or (m.group(2) and m.start(1) <= 2 and len(name.split()) == 1
                                      and name.lower() not in _NOT_NAMES):
                return _named(name, m.group(2))
        if not fallback and re.match(r"\s*(?:a|an|the|two|three|new|novel)\b", sentence, re.I):
            phrase = _phrase(_clean_name(sentence))
            if len(phrase.split()) >= 4:  # "a novel approach" says nothing a title should
                fallback = _capital(phrase)
    m = _CALLED.search(text)
    if m and _distinctive(_clean_name(m.group(1))):
        return _cut(_clean_name(m.group(1)))
    if fallback:
        return fallback
    first = _clean_name(re.split(r"(?<=[.!?])\s+(?=[A-Z\\(])", text, maxsplit=1)[0])
    we = re.match(r"(?:we|this paper|this work)\s+[a-z]+\s+(?=(?:the|a|an)\s)", first, re.I)
    if we and len(_phrase(first[we.end():]).split()) >= 3:  # "We uncover the hidden lattice geometry of ..."
        return _capital(_phrase(first[we.end():]))
    clauses = [first]
    if first.split(" ", 1)[0].lower() in _SUBORDINATE and "," in first:  # "While X has ..., its Y ...": X, else Y
        clauses = [first.split(" ", 1)[1], first.split(",", 1)[1].strip()]
    for clause in clauses:
        verb = _VERB.search(clause)
        subject = clause[: verb.start()] if verb else ""
        if 2 <= len(subject.split()) <= 12 and "," not in subject and "—" not in subject:
            return _capital(_phrase(subject) or subject)
    return _capital(_phrase(first)) or _cut(first) or "(untitled)"


def _introducing(text: str):
    """What follows each "we introduce / propose ..." of a text, to the end of its sentence."""
    for intro in _INTRO_RE.finditer(text):
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
            desc = normalise_space(m.group(2) or "")
            return _cut(f"{name}: {desc}" if desc else name)
    m = _CALLED.search(text)
    if m and _distinctive(_clean_name(m.group(1))):
        return _cut(_clean_name(m.group(1)))
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z\\(])", text, maxsplit=1)[0]
    return _cut(_clean_name(first)) or _cut(first) or "(untitled)"


# --- readers --------------------------------------------------------------------------------


def _read_text(path: Path, report: ParseReport) -> str:
    try:
        data = path.read_bytes()
    except PermissionError:
        raise InputError(f"cannot read {path}: permission denied (check the file's permissions)") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    for bom, codec in ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
                       (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):  # Windows tools save "Unicode" text as UTF-16 with a byte-order mark
            try:
                return data[len(bom):].decode(codec)
            except UnicodeDecodeError as exc:
                raise InputError(f"{path} starts with a {codec.upper()} byte-order mark but is not valid "
                                 f"{codec.upper()} at byte {exc.start + len(bom)}; save it as UTF-8") from None
    if b"\x00" in data[:8192]:
        head = data[:8192]
        if len(head) >= 8 and (head[1::2].count(0) > 0.9 * (len(head) // 2) or head[0::2].count(0) > 0.9 * (len(head) // 2)):
            raise InputError(f"{path} looks like UTF-16 text without a byte-order mark; save it as UTF-8")
        raise InputError(f"{path} looks like a binary file, not abstracts; {FORMATS_HINT}")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.skipped.append(f"{path}: invalid UTF-8 at byte {exc.start}; undecodable bytes replaced with U+FFFD")
        return data.decode("utf-8", errors="replace")


_HTML_PAGE = re.compile(r"<\s*(?:!doctype\s+html|html)\b", re.I)
_ANY_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_CODE_LINE = re.compile(r"[;{}]\s*$|^\s*(?:function\b|var |let |const |import |export |@media\b|#include\b|"
                        r"[.#]?[\w-]+(?:\s*[,>+~]\s*[.#]?[\w-]+)*\s*\{)")


def _looks_like_markup_or_code(text: str) -> str | None:
    """'HTML', 'code' or None: a page or a script saved as .txt is not a list of abstracts. Abstracts do mention
    tags ("the <think> token") and braces (LaTeX), so this asks for page structure, or for most lines being code."""
    head = text[:20_000]
    if _HTML_PAGE.search(head) or len(_ANY_TAG.findall(head)) >= max(10, len(head) // 200):
        return "HTML"
    lines = [line for line in head.splitlines() if line.strip()]
    code = sum(1 for line in lines if _CODE_LINE.search(line))
    if code >= 5 and code >= 0.3 * len(lines):
        return "code (JavaScript, CSS or the like)"
    return None


def positional_id(path: Path, n: int) -> str:
    """``<file stem>#<n>``: the id of a text list's n-th abstract, and of a JSONL/CSV record n without an id."""
    return f"{path.stem}#{n}"


def parse_text_list(path: Path, text: str) -> list[Paper]:
    """A header line, then one abstract per blank-line-separated paragraph."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n", 1)
    body = lines[1] if len(lines) > 1 else ""
    header = normalise_space(lines[0])[:200]
    papers = []
    position = 0
    for para in _PARA_SPLIT.split(body):
        abstract = normalise_space(para)
        if not abstract:
            continue
        position += 1
        papers.append(_make_paper(positional_id(path, position), None, abstract, str(path.name), position,
                                  {"collection": header} if header else {}))
    return papers


def _make_paper(pid: str, title: str | None, abstract: str, source: str, position: int, record: dict) -> Paper:
    title = normalise_space(title) if title else ""
    derived = not title
    if derived:
        title = derive_title(abstract)
    urls = tuple(dict.fromkeys(u.rstrip(".,;") for u in _URL_RE.findall(abstract)))
    authors = record.get("authors") or ()
    if isinstance(authors, str):
        authors = [a.strip() for a in re.split(r";|\band\b|,(?=\s*[A-Z][^,]*(?:,|$))", authors) if a.strip()]
    keywords = record.get("keywords") or ()
    if isinstance(keywords, str):
        keywords = [k.strip() for k in re.split(r"[;,]", keywords) if k.strip()]
    known = {"id", "_id", "title", "abstract", "text", "summary", "authors", "url", "date", "keywords"}
    extra = {k: v for k, v in record.items() if k not in known and v not in (None, "")}
    return Paper(
        id=pid,
        title=title,
        abstract=abstract,
        source=source,
        position=position,
        authors=tuple(str(a) for a in authors),
        url=(str(record["url"]).strip() or None) if record.get("url") else (urls[0] if urls else None),
        date=str(record["date"]) if record.get("date") else None,
        keywords=tuple(str(k) for k in keywords),
        urls=urls,
        title_derived=derived,
        extra=extra,
    )


def _json_kind(value) -> str:
    if isinstance(value, bool):
        return "true/false"
    return {int: "a number", float: "a number", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _no_surrogates(value):
    """A JSON ``"\\ud800"`` decodes to a lone surrogate, which no UTF-8 file or database can hold: U+FFFD."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _coerce_record(rec: dict, where: str, notes: list[str]) -> dict:
    """The known fields of a JSONL/CSV record as the types Paper wants: a number where text is wanted is read as
    text, a list of names stays a list; anything else (a list or object as a title, a number as authors) is
    dropped, with a note saying which field and why. The record itself is kept."""
    rec = dict(rec)

    def drop(name: str, value) -> None:
        notes.append(f"{where}: '{name}' is {_json_kind(value)}, not text; ignored")
        rec.pop(name, None)

    for name in ("id", "_id", "title", "url", "date"):
        value = rec.get(name)
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            rec[name] = str(value)
            if name == "title":
                notes.append(f"{where}: 'title' is a number; read as the text {rec[name]!r}")
        else:
            drop(name, value)
    for name in ("authors", "keywords"):
        value = rec.get(name)
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, list):
            kept = [str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
            if len(kept) < len(value):
                notes.append(f"{where}: '{name}' holds {len(value) - len(kept)} item(s) that are not text; ignored")
            rec[name] = kept
        else:
            drop(name, value)
    return rec


def _record_to_paper(rec: dict, path: Path, where: str, position: int, record_no: int,
                     report: ParseReport, strict: bool = False) -> Paper | None:
    """A JSONL/CSV record as a Paper. Without an ``id`` it is ``<file stem>#<n>``, n = the record's 1-based
    number in the file, as text lists number their abstracts (title/abstract-only exports are common).
    Fields of the wrong JSON type are coerced or dropped and reported (with ``strict``: an InputError)."""
    notes: list[str] = []
    rec = _coerce_record(_no_surrogates(rec), where, notes)
    if notes and strict:
        raise InputError(notes[0] + "; fix the record or drop --strict to skip bad fields")
    report.skipped += notes
    pid = rec.get("id", rec.get("_id"))
    if pid is None or str(pid).strip() == "":
        pid = positional_id(path, record_no)
    abstract = next((rec[f] for f in ABSTRACT_FIELDS if isinstance(rec.get(f), str) and rec[f].strip()), None)
    if abstract is None:
        wrong = next((f for f in ABSTRACT_FIELDS if rec.get(f) is not None and not isinstance(rec[f], str)), None)
        report.skipped.append(f"{where}: record {pid} has no 'abstract'" +
                              (f" ('{wrong}' is {_json_kind(rec[wrong])}, not text)" if wrong else ""))
        return None
    return _make_paper(str(pid).strip(), rec.get("title"), normalise_space(abstract), path.name, position, rec)


def parse_jsonl(path: Path, text: str, report: ParseReport, strict: bool = False) -> list[Paper]:
    papers = []
    record_no = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record_no += 1
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            msg = f"{where}: malformed JSON ({exc.msg})"
            if strict:
                raise InputError(msg + "; fix the line or drop --strict to skip bad records") from None
            report.skipped.append(msg)
            continue
        if not isinstance(rec, dict):
            report.skipped.append(f"{where}: not a JSON object")
            continue
        paper = _record_to_paper(rec, path, where, len(papers) + 1, record_no, report, strict)
        if paper is None and strict:
            raise InputError(report.skipped[-1] + "; drop --strict to skip bad records")
        if paper:
            papers.append(paper)
    return papers


def _delimiter(path: Path, text: str) -> str:
    """Tab for .tsv, else comma, unless only another common delimiter gives the header an abstract
    column (spreadsheets in many locales export ``;``)."""
    default = "\t" if path.suffix.lower() == ".tsv" else ","
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    for delimiter in (default, ";", "\t", ",", "|"):
        fields = next(csv.reader([first], delimiter=delimiter), [])
        if any(f.strip().lower() in ABSTRACT_FIELDS for f in fields):
            return delimiter
    return default


def parse_csv(path: Path, text: str, report: ParseReport, strict: bool = False) -> list[Paper]:
    # csv refuses a field over 128 KB ("field larger than field limit") and with it the whole file; a long
    # abstract is cut and reported by load_papers, as in .txt and .jsonl files
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, min(len(text) + 1, 2**31 - 1)))
    try:
        return _parse_csv(path, text, report, strict)
    finally:
        csv.field_size_limit(limit)


def _parse_csv(path: Path, text: str, report: ParseReport, strict: bool) -> list[Paper]:
    delimiter = _delimiter(path, text)
    try:
        reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
        header = [h.strip().lower() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise InputError(f"{path}: not valid CSV ({exc})") from None
    if not any(f in header for f in ABSTRACT_FIELDS):
        raise InputError(f"{path}: CSV has no 'abstract' column (found: {', '.join(header) or 'nothing'})")
    papers = []
    try:
        for record_no, row in enumerate(reader, 1):
            rec = {(k or "").strip().lower(): (v.strip() if isinstance(v, str) else v) for k, v in row.items()}
            where = f"{path}:{reader.line_num}"
            paper = _record_to_paper(rec, path, where, len(papers) + 1, record_no, report, strict)
            if paper is None and strict:
                raise InputError(report.skipped[-1] + "; drop --strict to skip bad records")
            if paper:
                papers.append(paper)
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: not valid CSV ({exc})") from None
    return papers


def parse_file(path: Path, report: ParseReport | None = None, strict: bool = False) -> list[Paper]:
    report = report if report is not None else ParseReport()
    text = _read_text(path, report)
    suffix = path.suffix.lower()
    report.files += 1
    if suffix in JSONL_SUFFIXES:
        return parse_jsonl(path, text, report, strict)
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
        records = data if isinstance(data, list) else [data]
        lines = "\n".join(json.dumps(r) for r in records)
        return parse_jsonl(path, lines, report, strict)
    if suffix in CSV_SUFFIXES:
        return parse_csv(path, text, report, strict)
    kind = _looks_like_markup_or_code(text)
    if kind:
        raise InputError(f"{path} looks like {kind}, not abstracts: its markup would be indexed as papers; "
                         f"{FORMATS_HINT}")
    return parse_text_list(path, text)


def iter_files(paths: Iterable[Path], report: ParseReport | None = None) -> Iterator[Path]:
    """Files under the given paths, sorted; a missing path or a named file of another format is an error,
    another format met in a directory is skipped (and reported in ``report``)."""
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(f"no such file or directory: {path}")
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            found = [p for p in files if p.suffix.lower() in KNOWN_SUFFIXES]
            if not found:
                raise InputError(f"{path} holds no file ingest can read; {FORMATS_HINT}")
            if report is not None:
                report.skipped += [f"{p}: {p.suffix or 'this'} is not a format ingest reads; skipped"
                                   for p in files if p.suffix.lower() not in KNOWN_SUFFIXES]
            yield from found
        elif path.suffix.lower() not in KNOWN_SUFFIXES:
            raise InputError(f"cannot ingest {path}: {path.suffix} is not a format ingest reads; {FORMATS_HINT}")
        else:
            yield path


def load_papers(paths: Iterable[Path] | None = None, strict: bool = False) -> tuple[list[Paper], ParseReport]:
    """Parse files/directories (default: the bundled corpus); identical abstracts are kept once."""
    report = ParseReport()
    paths = list(paths) if paths else [bundled_corpus()]
    papers: list[Paper] = []
    seen_text: dict[str, str] = {}
    seen_id: dict[str, str] = {}
    for path in iter_files(paths, report):
        for paper in parse_file(path, report, strict):
            key = hashlib.sha256(unicodedata.normalize("NFC", paper.abstract).lower().encode()).hexdigest()
            if key in seen_text:
                report.duplicates.append((paper.id, seen_text[key]))
                continue
            if paper.id in seen_id:
                msg = f"{path}: duplicate id {paper.id} with different text (first seen in {seen_id[paper.id]}); kept the first"
                if strict:
                    raise InputError(msg)
                report.skipped.append(msg)
                continue
            if len(paper.abstract) > MAX_ABSTRACT_CHARS:
                report.skipped.append(f"{path}: {paper.id} is {len(paper.abstract):,} characters; "
                                      f"kept the first {MAX_ABSTRACT_CHARS:,}")
                cut = paper.abstract[:MAX_ABSTRACT_CHARS].rsplit(" ", 1)[0]
                paper = replace(paper, abstract=cut)
            seen_text[key] = paper.id
            seen_id[paper.id] = str(path)
            papers.append(paper)
    return papers, report
