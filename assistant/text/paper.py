"""One abstract as every stage holds it: :class:`Paper`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from assistant.text.titles import readable_title


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
    #: the file it was read from (an absolute path; ``bundled/<name>`` for the bundled corpus), None if unknown
    origin: str | None = field(default=None, compare=False)
    #: its id is its place in that file (``<stem>#<n>``: no id of its own), assigned by text/ids.py
    numbered: bool = field(default=False, compare=False)

    @property
    def display_title(self) -> str:
        """The title to show and export: a derived one made readable (:func:`readable_title`), a real one as is."""
        return readable_title(self.abstract) if self.title_derived else self.title

    @property
    def content_hash(self) -> str:
        """Hash of what is embedded: a changed title or abstract means new chunks."""
        return hashlib.sha256(f"{self.title}\n{self.abstract}".encode()).hexdigest()[:16]
