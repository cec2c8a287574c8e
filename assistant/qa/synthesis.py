"""Whole-corpus answers (``which``) and area summaries (``summarize``).

``which`` reads the criterion against every paper in the index, not only the top k (:func:`read_criterion`, one
record: each paper's best-chunk cosine, BM25 and the two fused as search fuses them), unless the corpus lacks the
criterion (the answerable model, as ``ask`` decides). Offline, the criterion is read by the question encoder and a
paper qualifies when the fitted `which` model (:mod:`.which_model`) gives it at least its threshold. The hand rule
it replaced (:func:`meets_hand_rule`) still decides ``summarize``'s papers (``precise``), where a wrong paper costs
more than a missing one: (1) the fused score within ``tuning.which_ratio`` of the best paper's, (2) an outlier for
the criterion against the corpus's own distribution, on its dense or its fused score (robust z-score above the level
at which, under a normal null, less than one paper of the corpus would pass by chance: z > Φ⁻¹(1 - 1/N)), and (3) a
best chunk's cosine of at least ``tuning.which_min_cosine``. With an LLM configured, a looser candidate set is
judged in batches by the model. Two criteria are read otherwise: "papers that introduce X" by each paper's
contribution sentence, and a criterion about a name ("evaluated on ImageNet", "use MuJoCo":
:func:`.names.criterion_name`) by the papers that write it, since a name is never paraphrased.

``summarize`` takes the area's papers, clusters their vectors into themes (Ward linkage on
unit vectors), labels each theme by its distinctive terms, and gives each paper its one-line
contribution, cited.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from statistics import NormalDist

import numpy as np

from assistant.qa import which_model
from assistant.qa.answer import Citation, area_hits, corpus_verdict, is_unsure, retrieve
from assistant.config import Settings, TuningSettings
from assistant.search.names import criterion_name, papers_writing
from assistant.search.retrieve import Retriever, fuse
from assistant.text.english import (
    ALTERNATIVES, CONTRIBUTION_RE, CRITERION_LEADIN, INTRODUCES_OBJECT, KIND_OF_PAPER, LABEL_STOPWORDS, LISTED_NUMBERS,
    NONE_VERDICT, OBJECT_FILLER)


@dataclass
class Finding:
    paper_id: str
    title: str
    evidence: str
    score: float

    def as_dict(self) -> dict:
        return {"paper_id": self.paper_id, "title": self.title, "evidence": self.evidence,
                "score": round(self.score, 4)}


@dataclass
class WhichResult:
    criterion: str
    papers: list[Finding]
    mode: str
    read_as: str | None = None  # the criterion with its typos mended, when it had any
    #: the answerable model reads the criterion as more likely a topic the corpus lacks (as ``ask``'s ``unsure``)
    unsure: bool = False
    #: the name the criterion is about ("evaluated on ImageNet"), when the papers listed are those that write it
    name: str | None = None
    #: a criterion joining things the corpus holds only apart (no paper listed): each part and its papers
    parts: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"criterion": self.criterion, "count": len(self.papers), "mode": self.mode,
                "papers": [p.as_dict() for p in self.papers]} | ({"read_as": self.read_as} if self.read_as else {}) \
            | ({"unsure": True} if self.unsure else {}) | ({"name": self.name} if self.name else {}) \
            | ({"parts": [p.as_dict() for p in self.parts]} if self.parts else {})


@dataclass
class Theme:
    label: str
    papers: list[Finding]


@dataclass
class Summary:
    area: str
    themes: list[Theme]
    answer: str
    citations: list[Citation] = field(default_factory=list)
    mode: str = "extractive"
    #: Why the answer is not what was asked for (an LLM synthesis that cited nothing), else "".
    note: str = ""
    read_as: str | None = None  # the area with its typos mended, when it had any
    #: the answerable model reads the area as more likely a topic the corpus lacks (as ``ask``'s ``unsure``)
    unsure: bool = False
    #: markers of the LLM's synthesis that name no source, shown there as ``[n?]`` (as ``ask``'s)
    invalid_citations: list = field(default_factory=list)
    #: False when the LLM's synthesis stopped early (cut at max_tokens, or its stream broke off): marked at its end
    complete: bool = True

    def as_dict(self) -> dict:
        out = {"area": self.area, "mode": self.mode, "complete": self.complete,
               "themes": [{"label": t.label, "papers": [{"paper_id": p.paper_id, "title": p.title,
                                                         "evidence": p.evidence} for p in t.papers]}
                          for t in self.themes],
               "answer": self.answer, "citations": [c.as_dict() for c in self.citations]}
        if self.note:
            out["note"] = self.note
        if self.invalid_citations:
            out["invalid_citations"] = list(self.invalid_citations)
        if self.read_as:
            out["read_as"] = self.read_as
        if self.unsure:
            out["unsure"] = True
        return out


def strip_leadin(text: str) -> str:
    stripped = CRITERION_LEADIN.sub("", text).strip(" ?.")
    return stripped or text


def _paper_scores(retriever: Retriever, qvec: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Best-chunk cosine of every paper in the index (within the retriever's filter)."""
    ids, best, _ = retriever.dense_all(qvec)
    keep = np.isfinite(best)
    return [pid for pid, k in zip(ids, keep) if k], best[keep]


def best_sentence(retriever: Retriever, query: str, qvec: np.ndarray, paper, prefer_contribution: bool = False) -> str:
    """The paper's sentence that best matches the query. ``prefer_contribution`` (a summary's one line
    per paper, every paper already on the area): of the sentences saying what the paper contributes
    ("we propose ..."), the one matching the query best, scored as an area answer scores sentences;
    any sentence only when none does. Scored without that preference, the opening sentence that
    restates the area won for half the papers."""
    from assistant.search.decide import terms

    sentences, vecs = retriever.sentence_vectors(paper.id, paper.abstract)
    if not sentences:
        return paper.abstract
    qterms = terms(query)
    tuning = retriever.settings.tuning
    if prefer_contribution:
        weights = retriever.term_weights()
        total = sum(weights.get(t, 1.0) for t in qterms) or 1.0
        score = (tuning.summary_line_cosine * (vecs @ qvec)
                 + (1 - tuning.summary_line_cosine)
                 * np.array([sum(weights.get(t, 1.0) for t in qterms & terms(s)) / total
                                                  for s in sentences])
                 + 2.0 * np.array([bool(CONTRIBUTION_RE.search(s)) for s in sentences]))  # the rest is in [-0.6, 1]
    else:
        shares = np.array([len(qterms & terms(s)) / max(len(qterms), 1) for s in sentences])
        score = vecs @ qvec + tuning.which_evidence_terms * shares
    return sentences[int(np.argmax(score))]


def which(retriever: Retriever, criterion: str, settings: Settings | None = None,
          precise: bool = False) -> WhichResult:
    """Every paper in the index that meets the criterion, each with the sentence that qualifies it (the
    criterion read with its typos mended, as search reads a query). Offline, a topical criterion is decided by the
    fitted `which` model (:mod:`.which_model`); ``precise``: by the hand rule (:func:`meets_hand_rule`) instead, which
    lists fewer of the papers that meet it and fewer that do not (``summarize``'s papers)."""
    settings = settings or retriever.settings
    result = _which(retriever, retriever.mend(criterion), settings, precise)
    if result.criterion != criterion:
        result.criterion, result.read_as = criterion, result.criterion
    return result


@dataclass(frozen=True)
class WhichReading:
    """How ``which`` reads a criterion against every paper of the index, before it decides: each paper's best-chunk
    cosine (``dense``), its BM25 score and the two fused as search fuses them; the name the criterion is about, and
    for a criterion about no name, the papers whose contribution sentence is the kind of paper asked for and the
    answerable model's verdict (what :func:`_which` decides on: the fitted model, :mod:`.which_model`, or the hand
    rule)."""

    query: str
    qvec: np.ndarray
    ids: list[str]
    dense: np.ndarray
    lexical: np.ndarray
    fused: np.ndarray
    name: str | None = None
    kind: dict[str, str] = field(default_factory=dict)
    lacks: bool = False
    unsure: bool = False
    parts: tuple = ()


def read_criterion(retriever: Retriever, criterion: str, settings: Settings,
                   qvec: np.ndarray | None = None) -> WhichReading | None:
    """The criterion read against every paper (None when the index has none in reach). ``qvec``: the criterion's
    vector made elsewhere (the question encoder's, which the fitted model reads; training/fit_which.py --encoder
    fits it so); by default the embedder's, as for a question (the hand rule's and the LLM judge's reading)."""
    query = strip_leadin(criterion)
    qvec = retriever.embed_query(query) if qvec is None else qvec
    ids, dense = _paper_scores(retriever, qvec)
    if not ids:
        return None
    bm25 = retriever.bm25_all(query)
    pos = retriever.bm25_positions()
    lexical = np.array([float(bm25[pos[p]]) if bm25 is not None and p in pos else 0.0 for p in ids])
    # each side divided by its best, as search's fusion reads them
    top = max(float(dense.max()), 1e-9)
    blend = fuse(dict(zip(ids, (dense / top).tolist())), dict(zip(ids, lexical.tolist())), settings.search.dense_weight)
    fused = np.array([blend[p] for p in ids])
    reading = WhichReading(query, qvec, ids, dense, lexical, fused)
    # "evaluated on ImageNet": a name, never paraphrased; the papers that write it, each with the sentence that does
    name = criterion_name(retriever.index, query)
    if name is not None:
        return replace(reading, name=name)
    # "papers that introduce a benchmark": a kind of paper, found by what its contribution sentence says; read
    # from the criterion without its framing, so "introduce a new benchmark" lists the same papers
    kind = contribution_matches(query, retriever.papers())
    # a criterion the corpus lacks (the answerable model, as `ask` decides) lists nothing
    lacks, unsure, parts = corpus_verdict(retriever, query) if not kind else (False, False, ())
    return replace(reading, kind=kind, lacks=lacks, unsure=unsure, parts=parts)


def meets_hand_rule(reading: WhichReading, tuning: TuningSettings) -> np.ndarray:
    """Which papers of a topical reading qualify: fused score within ``tuning.which_ratio`` of the best paper's, an
    outlier on the dense or the fused score (robust z above the level at which, under a normal null, less than one
    paper of the corpus would pass by chance), and a best-chunk cosine of at least ``tuning.which_min_cosine``."""
    z_cut = NormalDist().inv_cdf(1 - 1 / max(len(reading.ids), 2))
    outlier = (which_model.robust_z(reading.dense) >= z_cut) | (which_model.robust_z(reading.fused) >= z_cut)
    ratio = reading.fused / max(float(reading.fused.max()), 1e-9)
    return (ratio >= tuning.which_ratio) & outlier & (reading.dense >= tuning.which_min_cosine)


def _which(retriever: Retriever, criterion: str, settings: Settings, precise: bool) -> WhichResult:
    mode = "llm" if settings.llm_enabled else "extractive"
    fitted = None if mode == "llm" or precise else which_model.model()
    qvec = None
    if fitted is not None:  # the model was fitted on criteria read by the question encoder
        from assistant.embed import query_encoder

        qvec = query_encoder.encode(strip_leadin(criterion))
    reading = read_criterion(retriever, criterion, settings, qvec=qvec)
    if reading is None:
        return WhichResult(criterion, [], mode)
    ids, dense, fused, query = reading.ids, reading.dense, reading.fused, reading.query
    order = np.argsort(-fused)
    papers = retriever.papers()
    if reading.name is not None:
        writing = papers_writing(retriever.index, reading.name)
        return WhichResult(criterion, [Finding(ids[i], papers[ids[i]].display_title, writing[ids[i]], float(fused[i]))
                                       for i in order if ids[i] in writing], mode, name=reading.name)
    if reading.lacks:
        return WhichResult(criterion, [], mode, parts=list(reading.parts))
    kind, tuning = reading.kind, settings.tuning
    if mode == "llm":
        ratio = fused / max(float(fused.max()), 1e-9)
        candidates = [ids[i] for i in order if ids[i] in kind
                      or ratio[i] >= tuning.which_llm_ratio and dense[i] >= tuning.which_llm_min_cosine]
        keep = set(_llm_judge(settings, criterion, [papers[p] for p in candidates[:tuning.which_judged]]))
        chosen = [i for i in order if ids[i] in keep]
    else:
        meets = meets_hand_rule(reading, tuning) if fitted is None else which_model.meets(reading, fitted)
        chosen = [i for i in order if ids[i] in kind or meets[i]]
    findings = [Finding(ids[i], papers[ids[i]].display_title,
                        kind.get(ids[i]) or (best_sentence(retriever, query, reading.qvec, papers[ids[i]])
                                             if n < tuning.which_embedded_evidence
                                             else _sharing_sentence(query, papers[ids[i]])), float(fused[i]))
                for n, i in enumerate(chosen)]
    return WhichResult(criterion, findings, mode, unsure=reading.unsure and bool(findings))


def _words(text: str) -> set[str]:
    """Lower-case words, a plural "s" dropped: light enough that "optimizer" does not match "optimization"
    (as their shared stem would), close enough that "datasets" matches "dataset"."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in re.findall(r"[a-z0-9][a-z0-9-]*", text.lower())}


def contribution_matches(criterion: str, papers: dict) -> dict[str, str]:
    """For a "papers that introduce X" criterion, each paper whose contribution sentence ("we introduce
    ...") holds every word of X (or of one of its "or" alternatives), with that sentence; {} otherwise."""
    from assistant.text.sentences import split_sentences

    m = KIND_OF_PAPER.match(criterion)
    if not m:
        return {}
    alternatives = [_words(alt) - OBJECT_FILLER for alt in ALTERNATIVES.split(m.group(1))]
    alternatives = [alt for alt in alternatives if alt]
    if not alternatives:
        return {}
    found: dict[str, str] = {}
    for pid, paper in papers.items():
        text = paper.abstract.lower()
        if not any(all(w in text for w in alt) for alt in alternatives):  # a cheap pass first: 20k papers
            continue
        for sentence in split_sentences(paper.abstract):
            if INTRODUCES_OBJECT.search(sentence) and any(alt <= _words(sentence) for alt in alternatives):
                found[pid] = sentence
                break
    return found


def _sharing_sentence(query: str, paper) -> str:
    """The paper's sentence sharing most of the query's terms (a stated contribution breaks ties)."""
    from assistant.qa.answer import split_sentences
    from assistant.search.decide import terms

    qterms = terms(query)
    sentences = split_sentences(paper.abstract) or [paper.abstract]
    return max(sentences, key=lambda s: len(qterms & terms(s)) + 0.5 * bool(CONTRIBUTION_RE.search(s)))


def _llm_judge(settings: Settings, criterion: str, candidates: list, batch: int = 10) -> list[str]:
    from assistant.qa.answer import escape_source as _escape
    from assistant.qa.llm import chat
    from assistant.prompts import render

    keep: list[str] = []
    for start in range(0, len(candidates), batch):
        group = candidates[start:start + batch]
        block = "\n".join(f'<source n="{i}">\n{_escape(p.abstract)}\n</source>' for i, p in enumerate(group, 1))
        completion = chat(settings, [{"role": "user", "content": render("judge", criterion=criterion, sources=block)}],
                          stream=False, temperature=0.0)
        for n in verdict_numbers(completion.text):
            if 1 <= n <= len(group):
                keep.append(group[n - 1].id)
    return keep


def verdict_numbers(text: str) -> list[int]:
    """The source numbers a judge's reply lists, read as the prompt asks for them: a list of numbers at the start of
    its first line ("1, 4"; "Sources 2 and 3."), or none when it starts by saying none ("None. Source 1 ... not
    this." names no paper). Numbers the reply mentions later, in its reasons, are not a verdict."""
    first = (text.strip().splitlines() or [""])[0]
    if NONE_VERDICT.match(first):
        return []
    found = LISTED_NUMBERS.match(first)
    return [int(n) for n in re.findall(r"\d+", found.group(1))] if found else []


# --- summaries ---------------------------------------------------------------------------------


#: Above this many vectors, linkage runs over k-means centroids (it needs n² memory).
LINKAGE_LIMIT = 2000


def cluster(vecs: np.ndarray, k: int) -> list[list[int]]:
    """Agglomerative clustering of unit vectors down to (at most) k clusters, Ward linkage.

    On unit vectors squared Euclidean distance is 2 - 2·cosine, so Ward merges the pair of themes
    whose union stays most similar inside; it gives far more even themes than average linkage
    (on the ICLR corpus at k=8: largest theme 19 papers instead of 37, smallest 5 instead of 2).
    Large sets are first grouped into 256 k-means centroids, which are then clustered the same way."""
    n = len(vecs)
    if n == 0:
        return []
    if k <= 1:
        return [list(range(n))]
    if k >= n:
        return [[i] for i in range(n)]
    if n > LINKAGE_LIMIT:
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=256, n_init=1, random_state=0).fit(vecs)
        cents = km.cluster_centers_ / np.maximum(np.linalg.norm(km.cluster_centers_, axis=1, keepdims=True), 1e-9)
        top = cluster(cents, k)
        owner = np.empty(len(cents), dtype=int)
        for c, members in enumerate(top):
            owner[members] = c
        groups: list[list[int]] = [[] for _ in top]
        for i, label in enumerate(km.labels_):
            groups[owner[label]].append(i)
        return [g for g in groups if g]
    from scipy.cluster.hierarchy import fcluster, linkage

    labels = fcluster(linkage(vecs.astype(np.float64), method="ward"), k, criterion="maxclust")
    groups = {}
    for i, label in enumerate(labels):
        groups.setdefault(int(label), []).append(i)
    return sorted(groups.values(), key=min)


_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{2,}")


def _label(texts: list[str], exclude: set[str], weights: dict[str, float], n: int = 3) -> str:
    """The cluster's most distinctive terms (tf x idf), shown in their most common surface form."""
    words = label_terms(texts, exclude, weights, n)[1]
    return ", ".join(words) if words else "other"


def label_terms(texts: list[str], exclude: set[str], weights: dict[str, float],
                n: int = 3) -> tuple[list[str], list[str]]:
    """Stems and surface words of the n most distinctive terms (stems in ``exclude`` are skipped)."""
    from assistant.text.terms import stemmer

    stem = stemmer()
    from bm25s.stopwords import STOPWORDS_EN

    stop = set(STOPWORDS_EN) | LABEL_STOPWORDS
    counts: Counter = Counter()
    surface: dict[str, Counter] = {}
    for text in texts:
        seen = set()
        for word in _WORD.findall(text):
            low = word.lower()
            if low in stop:
                continue
            s = stem.stemWord(low)
            if s in exclude:
                continue
            # a coined name keeps its capitals ("FedGEM", "CREDO"); another word is shown in lower case
            surface.setdefault(s, Counter())[word if any(c.isupper() for c in word[1:]) else low] += 1
            if s not in seen:
                counts[s] += 1
                seen.add(s)
    # papers using the term x its idf, with a small bonus for repetition within those papers (a count that
    # grew with cluster size let function words like "were" win on large corpora)
    scored = sorted(counts, key=lambda s: -(counts[s] * weights.get(s, 1.0)
                                            * (1 + 0.1 * min(sum(surface[s].values()) / counts[s], 3))))
    return scored[:n], [surface[s].most_common(1)[0][0] for s in scored[:n]]


def summarize(retriever: Retriever, area: str, settings: Settings | None = None, max_papers: int = 24,
              on_token: Callable[[str], None] | None = None) -> Summary:
    """Group an area's papers into themes, each paper with its one-line contribution, cited (the area read
    with its typos mended, as search reads a query). With an LLM, its synthesis is streamed to ``on_token``."""
    settings = settings or retriever.settings
    typed, area = area, retriever.mend(area)
    summary = _summarize(retriever, area, settings, max_papers, on_token)
    if area != typed:
        summary.area, summary.read_as = typed, area
    return summary


def _summarize(retriever: Retriever, area: str, settings: Settings, max_papers: int,
               on_token: Callable[[str], None] | None) -> Summary:
    from assistant.text.terms import stem_terms

    found = which(retriever, area, settings.replace(llm_mode="off"), precise=True)
    ids = [f.paper_id for f in found.papers]
    # besides `which`'s papers, those an area answer to it cites; an area the corpus lacks (the answerable model,
    # as `ask` decides) lists nothing
    retrieval = retrieve(retriever, strip_leadin(area), max(settings.search.top_k, 10))
    unsure = found.unsure if ids else retrieval.answerable and is_unsure(retrieval)
    if retrieval.answerable:
        ids += [h.paper_id for h in area_hits(retrieval) if h.paper_id not in ids]
    ids = ids[:max_papers]
    if not ids:
        from assistant.prompts import NO_ANSWER_PHRASE

        return Summary(area, [], NO_ANSWER_PHRASE)
    papers = retriever.papers()
    vec_by_id = retriever.paper_vectors(ids)
    vecs = np.stack([vec_by_id[i] for i in ids])
    k = max(1, min(len(ids), round(math.sqrt(len(ids) / retriever.settings.tuning.themes_per))))
    clusters = cluster(vecs, k)
    query = strip_leadin(area)
    qvec = retriever.embed_query(query)
    exclude = set(stem_terms(query))
    weights = retriever.term_weights()
    numbers = {pid: n for n, pid in enumerate(ids, 1)}
    themes = []
    for members in sorted(clusters, key=lambda c: min(ids.index(ids[i]) for i in c)):
        findings = [Finding(ids[i], papers[ids[i]].display_title,
                            best_sentence(retriever, query, qvec, papers[ids[i]], prefer_contribution=True),
                            0.0) for i in sorted(members)]
        label = _label([papers[f.paper_id].abstract for f in findings], exclude, weights)
        themes.append(Theme(label, findings))
    lines = [f"{len(ids)} paper{'s' if len(ids) != 1 else ''} in {len(themes)} theme{'s' if len(themes) != 1 else ''}:"]
    for t in themes:
        lines.append(f"\n**{t.label}**")
        for f in t.papers:
            lines.append(f"- {f.evidence} [{numbers[f.paper_id]}]")
    citations = [Citation(n=numbers[f.paper_id], paper_id=f.paper_id, title=f.title, snippet=f.evidence, score=0.0)
                 for t in themes for f in t.papers]
    citations.sort(key=lambda c: c.n)
    summary = Summary(area, themes, "\n".join(lines), citations, unsure=unsure)
    if settings.llm_enabled:
        summary = _llm_synthesis(settings, summary, on_token)
    return summary


def _llm_synthesis(settings: Settings, summary: Summary, on_token: Callable[[str], None] | None) -> Summary:
    """Ask the model for a written synthesis over the themed evidence (streamed to ``on_token``, a marker naming no
    source shown as ``[n?]`` as it comes); citations are validated, and a synthesis that stopped early is marked."""
    from assistant.qa.answer import (INCOMPLETE_MARK, LENGTH_MARK, MarkedStream, escape_attribute,
                                     escape_source as _escape, parse_citations)
    from assistant.qa.llm import chat
    from assistant.prompts import render, system_prompt

    blocks = []
    for t in summary.themes:
        for f in t.papers:
            c = next(c for c in summary.citations if c.paper_id == f.paper_id)
            blocks.append(f'<source n="{c.n}" theme="{escape_attribute(t.label)}">\nTitle: {_escape(f.title)}\n'
                          f"{_escape(f.evidence)}\n</source>")
    question = (f"Write a short synthesis of the research on {summary.area}, organised by the themes given, "
                "citing every claim.")
    n_sources = max(c.n for c in summary.citations)
    marked = MarkedStream(on_token, n_sources) if on_token else None
    completion = chat(settings, [{"role": "system", "content": system_prompt()},
                                 {"role": "user", "content": render("answer", sources="\n".join(blocks),
                                                                    question=question, caution="")}],
                      on_token=marked, stream=marked is not None)
    if marked:
        marked.flush()
    text, cited, invalid = parse_citations(completion.text.strip(), n_sources)
    valid = {c.n for c in summary.citations}
    if not set(cited) & valid:
        # a synthesis that cites nothing cannot be checked: keep the quoted overview, and say why
        summary.note = (f"The model's synthesis cited none of the {len(valid)} papers, so the overview below is "
                        "the extractive one: verbatim sentences from the abstracts.")
        return summary
    if completion.finish_reason == "length":
        text = f"{text}\n\n{LENGTH_MARK.format(n=settings.llm.max_tokens)}"
    elif not completion.complete:
        text = f"{text}\n\n{INCOMPLETE_MARK}"
    summary.answer, summary.complete = text, completion.complete
    summary.citations = [c for c in summary.citations if c.n in cited and c.n in valid]
    summary.invalid_citations = invalid
    summary.mode = "llm"
    return summary
