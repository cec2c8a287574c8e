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
import shlex
import unicodedata
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Iterable, Iterator

from assistant.errors import InputError
from assistant.text.markup import without_markup
from assistant.text.paper import Paper
from assistant.text.safetext import UTF8_MULTIBYTE
from assistant.text.titles import derive_title, normalise_space

TEXT_SUFFIXES = {".txt", ".md", ".text", ""}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
CSV_SUFFIXES = {".csv", ".tsv"}
KNOWN_SUFFIXES = TEXT_SUFFIXES | JSONL_SUFFIXES | CSV_SUFFIXES | {".json"}
#: How a refusal names what ingest reads.
FORMATS_HINT = ("ingest reads .txt/.md lists (a header line, then abstracts separated by blank lines), "
                ".jsonl/.ndjson/.json records and .csv/.tsv tables")
ABSTRACT_FIELDS = ("abstract", "text", "summary")
#: Longer "abstracts" (a whole paper pasted into one paragraph) are cut here and reported:
#: embedding a 5 MB paragraph would take an hour and drown every other paper in chunks.
MAX_ABSTRACT_CHARS = 20_000

_URL_RE = re.compile(r"https?://[^\s<>\"'()\[\]{}]+[^\s<>\"'()\[\]{}.,;:!?]")


@dataclass
class ParseReport:
    """What parsing skipped or merged, so the CLI can tell the user."""

    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (dropped id, kept id)
    skipped: list[str] = field(default_factory=list)  # "file:line: reason": records not read
    #: what was read, but not as written: a field of the wrong type ignored, an abstract cut, bytes that were not
    #: UTF-8, a file read another way than its name says ("file:line: what was done")
    notes: list[str] = field(default_factory=list)
    files: int = 0
    #: the files (``origin_of``) a record of which was skipped: the papers the index holds from them are not
    #: removed by this read for being missing from it
    partial: set[str] = field(default_factory=set)

    def skip_record(self, path: Path, reason: str) -> None:
        """A record of ``path`` that could not be read: said to the user, and its file marked as read in part."""
        self.skipped.append(reason)
        self.partial.add(origin_of(path))


def bundled_corpus() -> Path:
    """Directory of the bundled ICLR 2026 abstracts (package data)."""
    return Path(str(resources.files("assistant") / "data" / "iclr2026"))


# --- readers --------------------------------------------------------------------------------


def _read_text(path: Path, report: ParseReport, strict: bool = False) -> str:
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
        return _not_utf8(path, data, exc.start, report, strict)


def _not_utf8(path: Path, data: bytes, at: int, report: ParseReport, strict: bool) -> str:
    """A file that is not UTF-8: read as Windows-1252 (what Excel and Windows editors save, Latin-1 within it)
    when no character in it is UTF-8's, else as UTF-8 with the bad bytes replaced (U+FFFD). Said as a note; with
    ``strict``, an InputError that says how to convert it."""
    quoted = shlex.quote(str(path))
    fix = f"convert it to UTF-8 (e.g. iconv -f cp1252 -t utf-8 {quoted} > fixed{path.suffix})"
    utf8 = bool(UTF8_MULTIBYTE.search(data))
    if strict:  # a UTF-8 file with a damaged byte is not Windows-1252: converting it would garble its accents
        said = (f"{path} is UTF-8 but for a damaged byte at {at}; mend or delete that byte" if utf8
                else f"{path} is not UTF-8 (byte {at}); {fix}")
        raise InputError(f"{said}, or drop --strict to read it anyway")
    if not utf8:
        report.notes.append(f"{path}: not UTF-8; read as Windows-1252 (Latin-1): if its accents look wrong, {fix}")
        return data.decode("cp1252", errors="replace")
    report.notes.append(f"{path}: invalid UTF-8 at byte {at}; the bytes that are not UTF-8 are shown as U+FFFD")
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


def parse_text_list(path: Path, text: str, report: ParseReport | None = None) -> list[Paper]:
    """A plain-text or Markdown list (text/textlist.py): a header line, then one abstract per blank-line-separated
    paragraph; what its layout says otherwise (no header line, one abstract a line, headings, bullets, labelled
    blocks) is read so, and said in ``report``'s notes where it could surprise."""
    from assistant.text.textlist import read_list

    report = report if report is not None else ParseReport()
    found = read_list(text)
    report.notes += [f"{path}: {note}" for note in found.notes]
    papers = []
    for entry in found.entries:
        position = len(papers) + 1
        record = {"collection": found.header} if found.header else {}
        if entry.authors:
            record["authors"] = entry.authors
        papers.append(replace(_make_paper(positional_id(path, position), entry.title, entry.abstract, str(path.name),
                                          position, record), numbered=True))
    return papers


def _make_paper(pid: str, title: str | None, abstract: str, source: str, position: int, record: dict) -> Paper:
    abstract = normalise_space(without_markup(abstract))
    title = normalise_space(without_markup(title)) if title else ""
    derived = not title
    if derived:
        title = derive_title(abstract)
    urls = tuple(dict.fromkeys(u.rstrip(".,;") for u in _URL_RE.findall(abstract)))
    authors = record.get("authors") or ()
    if isinstance(authors, str):
        authors = split_authors(authors)
    keywords = record.get("keywords") or ()
    if isinstance(keywords, str):
        keywords = [k.strip() for k in re.split(r"[;,]", keywords) if k.strip()]
    extra = {k: v for k, v in record.items() if k not in KNOWN_FIELDS and v not in (None, "")}
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


def split_authors(text: str) -> list[str]:
    """An author string's names: "A; B", "A, B, and C", "A and B", "A & B"; names written surname first keep
    whole: "Smith, John and Doe, Jane", "van der Berg, Anna", "Smith, J., Doe, J. and Lee, E."."""
    if ";" in text:
        return [" ".join(p.split()) for p in text.split(";") if p.strip()]
    pieces = [p.strip() for p in re.split(r",|\s+(?:and|&)\s+", text) if p.strip() and p.strip() not in ("and", "&")]
    # surname, given name(s), surname, given name(s), ...: every other piece a surname (one word, or particles and
    # a word), and there are pairs to make
    if len(pieces) % 2 == 0 and all(_surname(pieces[i]) for i in range(0, len(pieces), 2)) and (
            all(_INITIALS.match(pieces[i]) for i in range(1, len(pieces), 2)) or len(pieces) == 2
            or re.search(r",[^,]+\s+(?:and|&)\s+[^,]+,", text)):
        return [f"{pieces[i]}, {pieces[i + 1]}" for i in range(0, len(pieces), 2)]
    return [" ".join(p.split()) for p in pieces]


_INITIALS = re.compile(r"^(?:[A-Z][a-z]?\.?[\s-]*)+$")


def _surname(piece: str) -> bool:
    """One word, perhaps after lower-case particles: "Smith", "van der Berg"."""
    from assistant.text.english import NAME_PARTICLES

    words = piece.split()
    return bool(words) and all(w in NAME_PARTICLES for w in words[:-1]) and words[-1][:1].isupper()


#: Other names exports give the known fields (Zotero's "Abstract Note" and "Author"); JSONL keys are read
#: whatever their case, as CSV headers are.
FIELD_ALIASES = {"abstract note": "abstract", "author": "authors", "authors names": "authors"}
KNOWN_FIELDS = ("id", "_id", "title", "abstract", "text", "summary", "authors", "url", "date", "keywords")


def _known_names(rec: dict) -> dict:
    """``rec`` with each known field under its own name: a key in other case ("Abstract") or an alias ("Abstract
    Note") is read as the field it names, unless the record has that field too."""
    out = dict(rec)
    for key, value in rec.items():
        name = FIELD_ALIASES.get(key.strip().lower(), key.strip().lower()) if isinstance(key, str) else key
        if name in KNOWN_FIELDS and name not in out:
            out[name] = value
            out.pop(key, None)
    return out


def _name_of(value) -> str | None:
    """An author given as an object: {"name"}, {"literal"} (a collaboration), {"given", "family"} (CSL JSON,
    Crossref) or {"first", "last"}."""
    if isinstance(value, dict):
        for key in ("name", "literal"):
            if isinstance(value.get(key), str):
                return value[key]
        for first, last in (("given", "family"), ("first", "last")):
            if isinstance(value.get(last), str):
                return f"{value[first]} {value[last]}" if isinstance(value.get(first), str) else value[last]
    return None


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
            if name == "authors":
                value = [_name_of(v) or v for v in value]
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
    rec = _coerce_record(_known_names(_no_surrogates(rec)), where, notes)
    if notes and strict:
        raise InputError(notes[0].removesuffix("; ignored") + "; fix the record, or drop --strict to ignore the field")
    report.notes += notes
    pid = rec.get("id", rec.get("_id"))
    numbered = pid is None or str(pid).strip() == ""
    if numbered:
        pid = positional_id(path, record_no)
    abstract = next((rec[f] for f in ABSTRACT_FIELDS if isinstance(rec.get(f), str) and rec[f].strip()), None)
    if abstract is None:
        wrong = next((f for f in ABSTRACT_FIELDS if rec.get(f) is not None and not isinstance(rec[f], str)), None)
        report.skip_record(path, f"{where}: record {pid} has no 'abstract'" +
                           (f" ('{wrong}' is {_json_kind(rec[wrong])}, not text)" if wrong else ""))
        return None
    return replace(_make_paper(str(pid).strip(), rec.get("title"), normalise_space(abstract), path.name, position, rec),
                   numbered=numbered)


def _json_value(text: str):
    """json.loads, with what it raises besides JSONDecodeError as one reason: a line nested too deeply
    (RecursionError) or a number of more digits than Python converts (ValueError) is a malformed record, not a
    traceback that rejects the whole file."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        at = "" if exc.msg.endswith(" at") else " at"  # "Unterminated string starting at": "at column 26"
        return None, f"{exc.msg}{at} column {exc.colno}" if exc.lineno == 1 else f"{exc.msg}{at} line {exc.lineno}"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # int('9' * 5000): "Exceeds the limit (4300 digits) for integer string conversion"
        return None, f"a value it cannot read ({str(exc).split(';')[0]})"


def parse_jsonl(path: Path, text: str, report: ParseReport, strict: bool = False) -> list[Paper]:
    """One JSON object per line. Lines end at ``\n`` (or ``\r\n``) only: U+2028, U+2029 and U+0085 are valid
    inside a JSON string, so they do not end a record (str.splitlines would split there)."""
    papers = []
    record_no = 0
    for lineno, line in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        if not line.strip():
            continue
        record_no += 1
        where = f"{path}:{lineno}"
        rec, error = _json_value(line)
        if error is not None:
            msg = f"{where}: malformed JSON ({error})"
            if strict:
                raise InputError(msg + "; fix the line or drop --strict to skip bad records") from None
            report.skip_record(path, msg)
            continue
        if not isinstance(rec, dict):
            report.skip_record(path, f"{where}: not a JSON object")
            continue
        try:
            paper = _record_to_paper(rec, path, where, len(papers) + 1, record_no, report, strict)
        except RecursionError:  # a field nested too deeply to walk
            report.skip_record(path, f"{where}: malformed JSON (nested too deeply)")
            continue
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
        if any(FIELD_ALIASES.get(f.strip().lower(), f.strip().lower()) in ABSTRACT_FIELDS for f in fields):
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
        reader = csv.DictReader(io.StringIO(text), delimiter=delimiter, strict=True)  # a stray quote: an error
        header = [h.strip().lower() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise InputError(f"{path}: not valid CSV ({exc})") from None
    if not header:
        raise InputError(f"{path} is empty: a CSV file needs a header row naming an 'abstract' column, then a row "
                         "per paper")
    if not any(FIELD_ALIASES.get(f, f) in ABSTRACT_FIELDS for f in header):
        raise InputError(f"{path}: CSV has no 'abstract' column (found: {', '.join(header)}); name the column of "
                         "abstracts 'abstract'")
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
        raise InputError(f"{path}: not valid CSV after line {reader.line_num} ({exc}): a quoted field runs on past "
                         "its closing quote or to the end of the file; a quote inside a field is written twice "
                         '("")') from None
    return papers


def origin_of(path: Path) -> str:
    """What a paper records of the file it came from: its absolute path, or ``bundled/<name>`` for the bundled
    corpus (whose absolute path changes with every install)."""
    full = Path(path).expanduser().resolve()
    bundled = bundled_corpus().resolve()
    return f"bundled/{full.relative_to(bundled)}" if bundled in full.parents else str(full)


def parse_file(path: Path, report: ParseReport | None = None, strict: bool = False) -> list[Paper]:
    origin = origin_of(path)
    return [replace(p, origin=origin) for p in _parse_file(path, report, strict)]


def _parse_file(path: Path, report: ParseReport | None = None, strict: bool = False) -> list[Paper]:
    report = report if report is not None else ParseReport()
    text = _read_text(path, report, strict)
    suffix = path.suffix.lower()
    report.files += 1
    if suffix in JSONL_SUFFIXES:
        return parse_jsonl(path, text, report, strict)
    if suffix == ".json":
        data, error = _json_value(text)
        first_line = text.lstrip().split("\n", 1)[0]
        if error is not None and error.startswith("Extra data") and _json_value(first_line)[1] is None:
            # one JSON object per line saved as .json (the Kaggle arXiv snapshot, many dataset dumps)
            report.notes.append(f"{path}: holds one JSON record per line (JSON Lines); read as .jsonl")
            return parse_jsonl(path, text, report, strict)
        if error is not None:
            raise InputError(f"{path}: malformed JSON ({error})") from None
        records = data if isinstance(data, list) else [data]
        lines = []
        for r in records:
            try:
                lines.append(json.dumps(r))  # ASCII: no U+2028 or newline inside a record's line
            except (RecursionError, ValueError):
                lines.append("[")  # reported as malformed, with its record number
        return parse_jsonl(path, "\n".join(lines), report, strict)
    if suffix in CSV_SUFFIXES:
        return parse_csv(path, text, report, strict)
    kind = _looks_like_markup_or_code(text)
    if kind:
        raise InputError(f"{path} looks like {kind}, not abstracts: its markup would be indexed as papers; "
                         f"{FORMATS_HINT}")
    return parse_text_list(path, text, report)


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


def abstract_key(abstract: str) -> str:
    """What makes two abstracts the same (stored once): their text, case and Unicode composition aside."""
    return hashlib.sha256(unicodedata.normalize("NFC", abstract).lower().encode()).hexdigest()


def load_papers(paths: Iterable[Path] | None = None, strict: bool = False) -> tuple[list[Paper], ParseReport]:
    """Parse files/directories (default: the bundled corpus); identical abstracts are kept once. Papers without
    an id of their own are numbered per file, two files never sharing an id (text/ids.py; an ingest numbers
    them again against what the index holds)."""
    from assistant.text.ids import assign

    report = ParseReport()
    paths = list(paths) if paths else [bundled_corpus()]
    parsed: list[tuple[Path, Paper]] = []
    seen_text: dict[str, str] = {}
    named_files = {Path(p) for p in paths if not Path(p).is_dir()}
    for path in iter_files(paths, report):
        try:
            found = parse_file(path, report, strict)
        except InputError as exc:
            if strict or path in named_files:
                raise
            # a file met in a folder (an empty CSV, a log with NUL bytes): the folder's other files are read, and
            # what the index holds from this one is kept
            report.skip_record(path, f"{exc}; skipped")
            continue
        for paper in found:
            key = abstract_key(paper.abstract)
            if key in seen_text:
                report.duplicates.append((paper.id, seen_text[key]))
                continue
            if len(paper.abstract) > MAX_ABSTRACT_CHARS:
                report.notes.append(f"{path}: {paper.id} is {len(paper.abstract):,} characters; "
                                    f"kept the first {MAX_ABSTRACT_CHARS:,}")
                cut = paper.abstract[:MAX_ABSTRACT_CHARS].rsplit(" ", 1)[0]
                paper = replace(paper, abstract=cut)
            seen_text[key] = paper.id
            parsed.append((path, paper))
    named, _, _ = assign([p for _, p in parsed])
    papers: list[Paper] = []
    seen_id: dict[str, str] = {}
    for (path, _), paper in zip(parsed, named):
        if paper.id in seen_id:
            msg = f"{path}: duplicate id {paper.id} with different text (first seen in {seen_id[paper.id]}); kept the first"
            if strict:
                raise InputError(msg)
            report.skipped.append(msg)
            continue
        seen_id[paper.id] = str(path)
        papers.append(paper)
    return papers, report
