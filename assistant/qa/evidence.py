"""Which sentences of a cited paper answer the question: ranked by relevance, redundancy removed (MMR), and never a
sentence that leans on the one before it without that one.

A sentence's relevance is its cosine to the question plus the IDF-weighted share of the question's terms it holds;
when the question names the paper and asks nothing else of it ("What is Qronos?"), the sentences that say what the
paper contributes ("We introduce Qronos ...") are what it asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: A sentence that states what its paper contributes ("we propose ...", "this paper introduces ...").
CONTRIBUTION_RE = re.compile(r"\b(?:we|this paper|this work)\s+(?:\w+\s+){0,2}?(?:propose|introduce|present|develop|"
                             r"show|demonstrate|find|study|investigate|analy[sz]e|establish|derive|prove)", re.I)
#: A sentence that leans on the one before it ("This ...", "Finally, ...", "To address these, ..."): quoted only
#: with that one.
_LEANS = re.compile(r"^\W*(?:this|these|those|such|it|its|they|their|there|finally|moreover|furthermore|"
                    r"additionally|in addition|however|also|thus|hence|therefore|then|second(?:ly)?|third(?:ly)?|"
                    r"lastly|besides|to (?:address|tackle|overcome|this end)|building on|based on (?:this|these))\b",
                    re.I)
#: Where the code or data is: quoted only when the question asks for a link.
_LINK = re.compile(r"https?://|github\.com|\\url\{", re.I)

#: A sentence's relevance: cosine to the question + TERM_SHARE x the share of the question's terms it holds.
TERM_SHARE = 0.5
#: MMR: relevance minus REDUNDANCY x the largest cosine to a sentence already picked.
REDUNDANCY = 0.5
#: A further sentence is quoted only while its relevance is at least KEEP x the first one's.
KEEP = 0.5
#: Added for a sentence that says what the paper contributes, when the question asks what the paper is.
GIST = 0.3


@dataclass
class Quote:
    """Sentences of one paper, in abstract order, with their relevance."""

    paper_id: str
    sentences: list[str]
    relevance: float


def leans_on_previous(sentence: str) -> bool:
    return bool(_LEANS.match(sentence))


def relevance(sentences: list[str], vecs: np.ndarray, qvec: np.ndarray, qterms: set[str],
              weights: dict[str, float]) -> np.ndarray:
    """Each sentence's relevance to the question: its cosine + TERM_SHARE x the IDF-weighted share of the
    question's terms it holds."""
    from assistant.search.decide import terms

    rarest = max(weights.values(), default=1.0)
    total = sum(weights.get(t, rarest) for t in qterms) or 1.0
    share = np.array([sum(weights.get(t, rarest) for t in qterms & terms(s)) / total for s in sentences])
    return vecs @ qvec + TERM_SHARE * share


def pick(sentences: list[str], vecs: np.ndarray, qvec: np.ndarray, qterms: set[str], weights: dict[str, float],
         count: int, gist: bool = False, skip: frozenset[str] = frozenset(), wants_link: bool = False) -> list[int]:
    """Indices of up to ``count`` sentences that answer the question, in abstract order (a sentence that leans on
    the one before brings it along). What a paper is (``gist``) takes two sentences at least, when it may."""
    if not sentences:
        return []
    score = relevance(sentences, vecs, qvec, qterms, weights)
    if gist:
        score = score + GIST * np.array([bool(CONTRIBUTION_RE.search(s)) for s in sentences])
    allowed = [i for i, s in enumerate(sentences) if s not in skip and (wants_link or not _LINK.search(s))]
    if not allowed:
        allowed = list(range(len(sentences)))
    picked: list[int] = []
    first = None
    while len(picked) < count and len(picked) < len(allowed):
        left = [i for i in allowed if i not in picked]
        mmr = {i: score[i] - REDUNDANCY * max((float(vecs[i] @ vecs[j]) for j in picked), default=0.0)
               for i in left}
        best = max(mmr, key=mmr.get)
        if first is not None and score[best] < KEEP * first and not (gist and len(picked) < min(2, count)):
            break
        first = score[best] if first is None else first
        picked.append(best)
    out = set(picked)
    for i in picked:  # "Finally, ..." or "This ..." comes with what it leans on
        j = i
        while j > 0 and leans_on_previous(sentences[j]) and j - 1 not in out and sentences[j - 1] not in skip:
            out.add(j - 1)
            j -= 1
    return sorted(out)
