"""An abstract's sentences, verbatim: what answers quote and the sentence cache embeds."""

from __future__ import annotations

import re
from assistant.text.english import ABBREVIATIONS

_SPLIT = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[A-Z0-9\\(\[\"“*$])")


def split_sentences(text: str) -> list[str]:
    """Sentences of an abstract, verbatim (only whitespace between them is dropped)."""
    pieces = _SPLIT.split(text.strip())
    out: list[str] = []
    for piece in pieces:
        if out and (out[-1].endswith(ABBREVIATIONS) or len(out[-1]) < 12):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]
