"""How papers without an id of their own are named: ``<stem>#<n>``, unique across files, stable across edits.

A text list's abstracts, and JSONL/CSV records without an ``id``, are numbered by their place in the file
(``mine#3``). Two rules keep such ids honest:

- **Two files never share an id.** The first file with a given stem (``x`` for ``a/x.txt``) numbers under it;
  another file of that name numbers under a longer stem (``b/x``), and keeps it on every later ingest (the
  index records which stem each file uses).
- **An edited file keeps the ids of what did not change.** When a file the index already holds is read again,
  the file as it was (the stored papers, in order) and as it is are aligned like two versions of a text (a
  diff over the abstracts' content hashes): an unchanged abstract keeps its id wherever it moved; one that
  was rewritten between the same unchanged neighbours takes the id of the one it replaced (an update); a new
  one takes its place's number if that is free, else the next unused number; one no longer there is dropped.

Pure functions: :func:`assign` gets what the index holds as plain records and returns the ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Iterable

from assistant.text.paper import Paper

_NUMBERED = re.compile(r"^(?P<stem>.+)#(?P<n>\d+)$")


@dataclass(frozen=True)
class Stored:
    """A paper the index holds, as the id assignment sees it."""

    id: str
    content_hash: str
    origin: str | None  # the file it came from (None: stored before origins were recorded)
    source: str  # that file's name
    position: int = 0  # its place in that file


def stem_candidates(origin: str) -> list[str]:
    """The stems a file may number under, shortest first: ``x``, ``b/x``, ``a/b/x``, ..."""
    path = PurePath(origin)
    parts = [p for p in path.with_suffix("").parts if p not in ("/", "")]
    return ["/".join(parts[-n:]) for n in range(1, len(parts) + 1)] or [path.stem or "papers"]


def numbered(pid: str) -> tuple[str, int] | None:
    """(stem, n) of an id of the form ``<stem>#<n>``."""
    m = _NUMBERED.match(pid)
    return (m["stem"], int(m["n"])) if m else None


def assign(papers: Iterable[Paper], stored: Iterable[Stored] = (), stems: dict[str, str] | None = None
           ) -> tuple[list[Paper], list[str], dict[str, str]]:
    """(the papers with their ids, ids of stored papers of the files read that those files no longer hold, the stem
    each file numbers under). ``stems``: what the index recorded (file -> stem); papers with an id of their own
    (``Paper.numbered`` False) keep it."""
    papers = list(papers)
    stored = list(stored)
    stems = dict(stems or {})
    owner = {stem: origin for origin, stem in stems.items()}
    for s in stored:  # stored before stems were recorded: the stem is held by that file's name
        key = numbered(s.id)
        if key and s.origin is None:
            owner.setdefault(key[0], f"name:{s.source}")
    by_origin: dict[str, list[int]] = {}
    for i, p in enumerate(papers):
        if p.numbered and p.origin:
            by_origin.setdefault(p.origin, []).append(i)
    taken_ids = {s.id for s in stored}
    dropped: list[str] = []
    out = list(papers)
    for origin, rows in by_origin.items():
        stem = stems.get(origin) or _choose_stem(origin, papers[rows[0]].source, owner)
        stems[origin], owner[stem] = stem, origin
        mine = [s for s in stored if s.origin == origin or (
            s.origin is None and s.source == papers[rows[0]].source and (numbered(s.id) or ("",))[0] == stem)]
        ids = _number(stem, [papers[i] for i in rows], mine, taken_ids - {s.id for s in mine})
        for i, pid in zip(rows, ids):
            out[i] = replace(papers[i], id=pid)
        kept = set(ids)
        dropped += [s.id for s in mine if s.id not in kept]
    # files whose papers all have ids of their own: a stored paper of theirs no longer in them is dropped too
    read = {p.origin for p in papers if p.origin}
    ids_now = {p.id for p in out}
    dropped += [s.id for s in stored if s.origin in read and s.origin not in by_origin and s.id not in ids_now]
    return out, list(dict.fromkeys(dropped)), stems


def _choose_stem(origin: str, name: str, owner: dict[str, str]) -> str:
    candidates = stem_candidates(origin)
    for stem in candidates:
        held = owner.get(stem)
        if held is None or held == origin or held == f"name:{name}":
            return stem
    return f"{candidates[-1]}~{len(owner)}"  # every ancestor taken (cannot happen for distinct paths)


def _number(stem: str, papers: list[Paper], mine: list[Stored], elsewhere: set[str]) -> list[str]:
    """Ids for one file's numbered papers (in file order), from the file as it was (``mine``) aligned with the file
    as it is: see the module."""
    from difflib import SequenceMatcher

    old = sorted(mine, key=lambda s: (s.position, numbered(s.id) or ("", 0), s.id))
    ids: list[str | None] = [None] * len(papers)
    match = SequenceMatcher(None, [s.content_hash for s in old], [p.content_hash for p in papers], autojunk=False)
    for tag, i1, i2, j1, j2 in match.get_opcodes():
        if tag in ("equal", "replace"):  # unchanged, or rewritten in place: the id of the one it replaces
            for k in range(min(i2 - i1, j2 - j1)):
                ids[j1 + k] = old[i1 + k].id
    used = {pid for pid in ids if pid}
    numbers = [key[1] for pid in list(used) + [s.id for s in mine] + list(elsewhere)
               if (key := numbered(pid)) and key[0] == stem]
    next_free = max(numbers, default=0) + 1
    taken = used | elsewhere | {s.id for s in mine}  # a dropped abstract's id is not handed to a new one
    for i, p in enumerate(papers):
        if ids[i] is not None:
            continue
        place = numbered(p.id)
        want = f"{stem}#{place[1] if place else i + 1}"
        if want in taken:
            want, next_free = f"{stem}#{next_free}", next_free + 1
        ids[i] = want
        taken.add(want)
    return [pid for pid in ids if pid is not None]
