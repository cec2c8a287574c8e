import pytest

from assistant.qa.answer import split_sentences
from assistant.text.corpus import load_papers
from assistant.store.index import Index
from assistant.search.retrieve import Retriever, fuse, _one_slip


@pytest.fixture(scope="module")
def retriever(bundled_index_dir):
    from assistant.config import Settings

    return Retriever(Index(Settings(index_dir=bundled_index_dir)))


def test_each_abstracts_first_sentence_retrieves_it_at_rank_1(retriever):
    misses = []
    for paper in load_papers()[0]:
        first = split_sentences(paper.abstract)[0]
        hits = retriever.search(first, k=3).hits
        if hits[0].paper_id != paper.id:
            misses.append((paper.id, [h.paper_id for h in hits]))
    assert misses == []


def test_hits_are_grouped_per_paper_with_best_chunk_snippet(retriever):
    result = retriever.search("federated learning privacy", k=10)
    ids = [h.paper_id for h in result.hits]
    assert len(ids) == len(set(ids)) == 10
    assert [h.rank for h in result.hits] == list(range(1, 11))
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    papers = retriever.index.all_papers()
    for h in result.hits:
        assert h.snippet in papers[h.paper_id].abstract or h.snippet[:50] in papers[h.paper_id].abstract


def test_fusion_prefers_a_paper_strong_in_both_rankings():
    dense = {"a": 0.6, "b": 0.7, "c": 0.3}
    bm25 = {"a": 10.0, "c": 12.0}
    fused = fuse(dense, bm25, 0.5, bm25_ceiling=20.0)
    assert sorted(fused, key=fused.get, reverse=True) == ["a", "c", "b"]
    assert fused["a"] == 0.5 * 0.6 + 0.5 * 10.0 / 20.0
    assert fuse(dense, bm25, 1.0, 20.0)["b"] == 0.7  # dense alone: the cosine itself
    assert max(fuse(dense, {}, 0.5, 20.0), key=fuse(dense, {}, 0.5, 20.0).get) == "b"  # no BM25 match: dense decides
    assert fuse(dense, bm25, 0.0)["c"] == 1.0  # no ceiling: BM25 divided by its best score


def test_a_weak_lexical_match_does_not_outvote_the_cosine():
    """A paraphrase: the best BM25 paper matches a sliver of the query's vocabulary. Measured against
    the query's ceiling its lexical vote is small, so the paper that means the same thing wins."""
    dense = {"gold": 0.62, "wordy": 0.50}
    bm25 = {"gold": 1.0, "wordy": 3.0}
    assert max(fuse(dense, bm25, 0.5, bm25_ceiling=30.0).items(), key=lambda kv: kv[1])[0] == "gold"
    assert max(fuse(dense, bm25, 0.5).items(), key=lambda kv: kv[1])[0] == "wordy"  # BM25 over its best: it would not


def test_bm25_ceiling_bounds_every_papers_score(retriever):
    for query in ("federated clients privacy", "diffusion model sampling steps", "clients"):
        scores = retriever.bm25_all(query)
        ceiling = retriever.bm25_ceiling(query)
        assert scores is not None and 0 < float(scores.max()) <= ceiling + 1e-5
    # one term: the ceiling is that term's best score
    assert abs(retriever.bm25_ceiling("clients") - float(retriever.bm25_all("clients").max())) < 1e-5
    assert retriever.bm25_ceiling("the of and") == 0.0


def test_bm25_follows_every_stemmed_query_term(retriever):
    scores = retriever.bm25("federated clients", 5)
    assert scores and all(v > 0 for v in scores.values())
    assert retriever.bm25("the of and", 5) == {}  # stop words only


def test_lexical_match_on_a_coined_name_ranks_its_paper_first(retriever):
    # BM25 catches a rare coined name the dense model barely knows
    assert retriever.search("WaterDrum", k=3).hits[0].paper_id == "003_22ceaf1a0eb8de0c#12"
    assert retriever.search("JailbreakDNABench", k=3).hits[0].paper_id == "002_20c6bded0bdf1017#11"


def test_gate_rejects_off_topic_questions_and_accepts_on_topic_ones(retriever):
    assert not retriever.search("best sourdough bread recipe with rye flour", k=5).answerable
    assert not retriever.search("history of the Roman empire's tax collection", k=5).answerable
    assert retriever.search("Which papers study federated learning?", k=5).answerable


def test_a_question_naming_a_paper_passes_the_gate_though_its_cosine_is_low(retriever):
    """"What GPU does LongFilter use?" is about LongFilter even if nothing in its abstract is near it."""
    from assistant.search.names import named_papers

    named = retriever.search("What GPU does LongFilter use?", k=5)
    assert named.hits[0].paper_id == "002_20c6bded0bdf1017#8"
    assert named.confidence < retriever.threshold() and named.answerable
    # a coined name in one abstract only
    assert named_papers(retriever.index, "Describe the three components of GeneBreaker") == ["002_20c6bded0bdf1017#11"]
    # not names: one no paper has, a field's word in most papers (LLM)
    for question in ("What GPU does AlphaFold use?", "Which GPU does an LLM bakery use?"):
        assert named_papers(retriever.index, question) == [], question
        result = retriever.search(question, k=5)
        assert result.confidence < retriever.threshold() and not result.answerable, question


def test_a_name_typed_in_lower_case_still_names_its_paper(retriever):
    """Terminal users type "what gpu does longfilter use?": the paper spells the word as a name, so it is
    one. Not an acronym that is also an English word other papers use: "clash" is a word, "CLASH" a dataset."""
    from assistant.search.names import named_papers

    typed = retriever.search("what gpu does longfilter use?", k=5)
    assert typed.hits[0].paper_id == "002_20c6bded0bdf1017#8"
    assert typed.confidence < retriever.threshold() and typed.answerable
    assert named_papers(retriever.index, "What does CLASH measure?") == ["004_b9c85a56bb10ecbe#8"]
    assert named_papers(retriever.index, "when do two values clash?") == []
    assert named_papers(retriever.index, "which clip variant does the part localization module of pscl use?") \
        == ["002_20c6bded0bdf1017#19"]


def test_an_acronym_that_is_an_english_word_names_its_paper_when_it_is_all_the_question_asks(retriever):
    """"how does spiral work?": SPIRAL is the only paper with the word, and the question asks about nothing else.
    "how do spiral galaxies form?" asks about galaxies too: no name, the answerable model decides. The same for a
    two-letter acronym ("How does CL work?"), which otherwise never names a paper."""
    from assistant.qa.answer import answer_question
    from assistant.search.names import named_papers

    spiral = "001_920fbba894271a85#11"
    assert named_papers(retriever.index, "how does spiral work?") == [spiral]
    assert named_papers(retriever.index, "how do spiral galaxies form?") == []
    # two letters name a paper only so: the only paper holding "CL", and the question asks nothing else
    assert named_papers(retriever.index, "How does CL work?") == ["001_920fbba894271a85#17"]
    assert named_papers(retriever.index, "what is RL?") == []  # many papers' word
    answer = answer_question(retriever, "how does spiral work?")
    assert answer.answerable and answer.citations[0].paper_id == spiral
    assert "self-play" in answer.text


def test_typos_are_mended_from_the_words_of_the_papers_found(retriever):
    """Typos pulled cosines under the gate ("TpooFormer ... sequnece": 0.37 against 0.54 as spelt)."""
    found = retriever.search("How does TpooFormer turn a graph into a sequnece?", k=5)
    assert found.query == "How does TopoFormer turn a graph into a sequence?"
    assert found.typed == "How does TpooFormer turn a graph into a sequnece?"
    assert found.answerable and found.hits[0].paper_id == "000_c647aebf503422f2#6"
    # the words questions are built of are mended too, though no abstract need have them
    assert retriever.mend("whcih papres study federated leanring?") == "which papers study federated learning?"
    # a word of the question's own, in no paper, is left alone: it may be what the corpus lacks
    for question in ("Are there deep learning methods for tabular data?", "Which papers explain grokking?",
                     "Is there work on 3D Gaussian splatting?", "Which papers estimate optical flow between frames?",
                     "How does TopoFormer turn a graph into a sequence?"):
        assert retriever.mend(question) == question
        assert retriever.search(question, k=5).typed is None


def test_a_typing_slip_is_a_swap_a_missing_or_an_extra_letter_not_a_changed_one():
    assert {"the", "te", "tehh"} <= _one_slip("teh")
    assert "tubular" not in _one_slip("tabular")  # "tabular data" is not "tubular data"


def test_a_quoted_phrase_puts_the_papers_that_hold_it_first(retriever):
    """As a search engine reads quotes: "can any VLM actually 'think with images'?" is DeepEyes's phrase
    (written ``think with images'' in its abstract); unquoted, a self-rewarding VLM paper ranked first."""
    assert retriever.search("can any VLM actually 'think with images'?", k=3).hits[0].paper_id == \
        "000_c647aebf503422f2#14"
    assert retriever.search("can any VLM actually 'reason in hyperbolic space'?", k=3).hits  # no paper has it


def test_an_acronym_reaches_the_paper_that_writes_it_with_a_modifier(retriever):
    """The bundled iEEG foundation model writes "iEEG" and never "EEG": "EEG foundation models?" was refused as a
    topic no paper holds (answerable probability 0.01). A modified acronym (iEEG, fMRI, sEMG, dLLMs) now also reads
    as the acronym."""
    from assistant.qa.answer import answer_question
    from assistant.text.terms import stem_sequence

    assert stem_sequence("iEEG and fMRI signals") == ("ieeg", "eeg", "fmri", "mri", "signal")
    assert stem_sequence("the EEG of a map") == ("eeg", "map")  # plain words untouched
    answer = answer_question(retriever, "EEG foundation models?")
    assert answer.answerable and answer.citations[0].paper_id == "003_22ceaf1a0eb8de0c#5"


def test_a_search_that_found_nothing_is_read_as_nothing_found_not_a_crash(retriever):
    """A chat whose Chroma server was wiped under it searched a stale cache, found no paper, and died reading the
    empty search (KeyError: 'sentence_coverage', a traceback)."""
    from assistant.search import decide
    from assistant.search.retrieve import Retrieval

    empty = Retrieval(query="federated learning", hits=[], answerable=False)
    s = decide.signals(retriever, "federated learning", empty)
    assert s.question["sentence_coverage"] == 0.0 and s.question["top_cos"] == 0.0
    assert decide.answerable_probability(s) < decide.models()["answerable"].threshold


def test_a_question_holding_one_huge_word_costs_what_any_question_does(mini_index):
    """A pasted blob (one 30,000-letter word) in a question: looking for its typos built every one-slip variant,
    memory growing as its length squared (2.8 GB at 10,000 letters; an MCP server was killed at 200,000). Under a
    6 GB address-space limit it was a MemoryError traceback."""
    import os
    import resource
    import subprocess
    import sys

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))

    res = subprocess.run([sys.executable, "-m", "assistant", "search", "federated " + "x" * 30_000, "--json",
                          "--index-dir", str(mini_index)], capture_output=True, text=True, preexec_fn=limited,
                         env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"}, timeout=600)
    assert res.returncode == 0 and "MemoryError" not in res.stderr, res.stderr[-1500:]
