import pytest

from assistant.answer import split_sentences
from assistant.corpus import load_papers
from assistant.index import Index
from assistant.retrieve import Retriever, _minmax


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
    dense = _minmax({"a": 0.9, "b": 0.5, "c": 0.1})
    bm25 = _minmax({"a": 10.0, "c": 12.0})
    fused = {p: 0.5 * dense.get(p, 0) + 0.5 * bm25.get(p, 0) for p in dense}
    assert max(fused, key=fused.get) == "a"
    assert _minmax({"x": 3.0}) == {"x": 1.0}


def test_lexical_match_on_a_coined_name_ranks_its_paper_first(retriever):
    # BM25 catches a rare coined name the dense model barely knows
    assert retriever.search("WaterDrum", k=3).hits[0].paper_id == "003_22ceaf1a0eb8de0c#12"
    assert retriever.search("JailbreakDNABench", k=3).hits[0].paper_id == "002_20c6bded0bdf1017#11"


def test_gate_rejects_off_topic_questions_and_accepts_on_topic_ones(retriever):
    assert not retriever.search("best sourdough bread recipe with rye flour", k=5).answerable
    assert not retriever.search("history of the Roman empire's tax collection", k=5).answerable
    assert retriever.search("Which papers study federated learning?", k=5).answerable
