"""Terms of a text as BM25 sees them: lower-case words, English stop words removed, Snowball-stemmed."""

from __future__ import annotations

import functools
import re

#: An acronym after a one- or two-letter lower-case modifier ("iEEG", "fMRI", "sEMG", "dLLMs", "mBERT"): the token
#: also counts as the acronym, so a question on "EEG" reaches the paper that writes "iEEG".
_MODIFIED_ACRONYM = re.compile(r"(?<![\w-])([a-z]{1,2})([A-Z]{2,}[A-Za-z0-9]*)\b")


def stem_tokenize(texts: list[str]):
    """BM25 tokenisation: lower-case words, English stop words removed, Snowball-stemmed; a modified acronym
    ("iEEG") is read as itself and as the acronym ("iEEG EEG")."""
    bm25s = bm25s_module()
    texts = [_MODIFIED_ACRONYM.sub(r"\1\2 \2", t) for t in texts]
    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), show_progress=False)


@functools.lru_cache(maxsize=1)
def bm25s_module():
    """bm25s, imported without scipy, which it only uses (when present) to build its matrix: its numpy
    backend builds the same one (checked on the bundled corpus: equal data, indices and vocabulary), and
    loading and scoring never use scipy. Importing scipy.sparse was ~0.15 s CPU of every ``ask``."""
    import sys

    if "bm25s" in sys.modules or "scipy" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["scipy"] = None  # type: ignore[assignment]  # makes `import scipy.sparse` raise ImportError
    try:
        import bm25s
    finally:
        del sys.modules["scipy"]  # anything else that needs scipy imports it as usual
    return bm25s


def stem_terms(text: str) -> list[str]:
    """One text's stemmed BM25 terms in order, repeats kept (BM25 counts them); [] for stop words only."""
    return list(stem_sequence(text))


@functools.lru_cache(maxsize=8192)
def stem_sequence(text: str) -> tuple[str, ...]:
    """:func:`stem_terms` as a tuple, cached: a question's words and phrases are stemmed again by each decision
    signal and name lookup (~0.05-0.1 s CPU of an ask)."""
    tokens = stem_tokenize([text])
    if not tokens.ids or not tokens.ids[0]:
        return ()
    inv = {v: key for key, v in tokens.vocab.items()}
    return tuple(inv[i] for i in tokens.ids[0])


@functools.lru_cache(maxsize=1)
def stemmer():
    """The English Snowball stemmer BM25 and theme labels share."""
    import Stemmer

    return Stemmer.Stemmer("english")

