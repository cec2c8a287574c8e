"""The llama-index faces (assistant/service/llama_index.py), exercised through llama-index's own calls on the real
bundled index: retriever.retrieve(QueryBundle), query_engine.query(), ChromaVectorStore.query(); the LLM
endpoint is mocked at the wire with respx."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from .conftest import LLM_BASE, completion_json, heavy_modules_after

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _lookups(n: int = 4) -> list[tuple[str, str]]:
    """The first held-out lookups of the blind question set (one gold paper each)."""
    out = []
    for line in (DATA / "blind_questions_1.jsonl").read_text().splitlines():
        q = json.loads(line)
        if q.get("type") == "lookup" and len(q.get("gold") or []) == 1:
            out.append((q["question"], q["gold"][0]))
    return out[:n]


@pytest.fixture
def settings(bundled_index_dir):
    from assistant.config import Settings

    return Settings.from_env(index_dir=bundled_index_dir)


def test_retriever_is_a_llama_index_retriever_finding_held_out_lookups_first(settings):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle

    from assistant.store.opening import open_index
    from assistant.service.llama_index import AssistantRetriever

    retriever = AssistantRetriever(top_k=5, settings=settings)
    assert isinstance(retriever, BaseRetriever)
    papers = open_index(settings).all_papers()
    for question, gold in _lookups():
        nodes = retriever.retrieve(QueryBundle(question))
        assert nodes and all(isinstance(n, NodeWithScore) for n in nodes) and len(nodes) <= 5
        top = nodes[0].node
        assert top.metadata["paper_id"] == gold, question
        assert top.metadata["title"] == papers[gold].display_title and top.metadata["source"] == papers[gold].source
        start, end = top.metadata["start"], top.metadata["end"]
        assert top.text and papers[gold].abstract[start:end] == top.text
        assert (top.start_char_idx, top.end_char_idx) == (start, end)
        assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_retriever_gate_refuses_and_typos_are_mended(settings):
    from llama_index.core.schema import QueryBundle

    from assistant.service.llama_index import AssistantRetriever

    retriever = AssistantRetriever(settings=settings)
    assert retriever.retrieve(QueryBundle("What is a good recipe for sourdough bread?")) == []
    assert retriever.last is not None and not retriever.last.answerable and retriever.last.hits
    question, gold = _lookups(1)[0]
    typo = question.replace("difference", "diffrence", 1)
    assert typo != question
    nodes = retriever.retrieve(typo)  # a plain string is a QueryBundle to llama-index
    assert nodes[0].node.metadata["paper_id"] == gold
    assert retriever.last.typed == typo and "difference" in retriever.last.query


def test_query_engine_answers_with_numbered_citations_through_the_endpoint(settings, mocked_openai_chat):
    from assistant.config import Settings
    from assistant.service.llama_index import AssistantLLM, assistant_query_engine
    from assistant.prompts import system_prompt

    settings = Settings.from_env(index_dir=settings.index.dir)  # with llm_env's endpoint
    mocked_openai_chat.return_value = httpx.Response(
        200, json=completion_json("It reads the top singular vectors of the weight difference [1]. See also [9]."))
    engine = assistant_query_engine(top_k=3, settings=settings)
    assert isinstance(engine.llm, AssistantLLM)
    question, gold = _lookups(1)[0]
    response = engine.query(question)
    assert str(response) == "It reads the top singular vectors of the weight difference [1]. See also [9?]."
    assert response.metadata["citations"][0]["n"] == 1 and response.metadata["citations"][0]["paper_id"] == gold
    assert response.metadata["invalid_citations"] == [9]
    assert response.source_nodes[0].node.metadata["paper_id"] == gold and len(response.source_nodes) == 3
    sent = json.loads(mocked_openai_chat.calls.last.request.content)
    assert sent["messages"][0] == {"role": "system", "content": system_prompt()}
    assert f'<source n="1" id="{gold}">' in sent["messages"][1]["content"]
    assert str(mocked_openai_chat.calls.last.request.url) == f"{LLM_BASE}/chat/completions"
    # refused by the gate: the no-answer sentence, and no LLM call
    calls = mocked_openai_chat.call_count
    refused = engine.query("What is a good recipe for sourdough bread?")
    assert str(refused) == "No paper in the corpus addresses this question." and refused.source_nodes == []
    assert mocked_openai_chat.call_count == calls


def test_query_engine_takes_any_llama_index_llm(settings):
    from llama_index.core.llms import MockLLM

    from assistant.service.llama_index import assistant_query_engine

    question, gold = _lookups(1)[0]
    # MockLLM echoes its prompt: the project's system prompt and numbered sources reached the LLM
    response = assistant_query_engine(MockLLM(), top_k=2, settings=settings).query(question)
    assert "Answer ONLY from the numbered sources" in str(response)
    assert f'<source n="1" id="{gold}">' in str(response)


def test_chroma_vector_store_reads_chunks_with_their_text(settings):
    from llama_index.core.vector_stores import (ExactMatchFilter, MetadataFilters, VectorStoreQuery)
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from assistant.store.opening import open_index
    from assistant.service.llama_index import chroma_collection, embed_query, vector_store

    store = ChromaVectorStore(chroma_collection=chroma_collection(settings))
    assert isinstance(vector_store(settings), ChromaVectorStore)
    papers = open_index(settings).all_papers()
    found_gold = 0
    for question, gold in _lookups():
        result = store.query(VectorStoreQuery(query_embedding=embed_query(question, settings), similarity_top_k=5))
        assert len(result.nodes) == 5
        for node in result.nodes:
            abstract = papers[node.metadata["paper_id"]].abstract
            assert node.text and abstract[node.start_char_idx:node.end_char_idx] == node.text
            assert node.ref_doc_id == node.metadata["paper_id"] and node.metadata["title"]
        found_gold += gold in {n.metadata["paper_id"] for n in result.nodes}
    assert found_gold == len(_lookups())
    question, gold = _lookups(1)[0]
    only = store.query(VectorStoreQuery(query_embedding=embed_query(question, settings), similarity_top_k=3,
                                        filters=MetadataFilters(filters=[ExactMatchFilter(key="paper_id", value=gold)])))
    assert only.nodes and {n.metadata["paper_id"] for n in only.nodes} == {gold}


def test_openai_embedder_is_llama_index_openai_embedding(monkeypatch):
    import respx
    from llama_index.embeddings.openai import OpenAIEmbedding

    from assistant.config import Settings
    from assistant.embed.embedder import embed_array
    from assistant.embed.embedders import get_embedder
    from assistant.errors import LLMError

    monkeypatch.setenv("OPENAI_BASE_URL", LLM_BASE)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789abcdef")
    monkeypatch.setenv("ASSISTANT_EMBEDDER", "openai:nomic-embed-text")
    embedder = get_embedder(Settings.from_env())
    assert isinstance(embedder, OpenAIEmbedding)
    with respx.mock() as router:
        route = router.post(f"{LLM_BASE}/embeddings").mock(return_value=httpx.Response(200, json={
            "object": "list", "model": "nomic-embed-text",
            "data": [{"object": "embedding", "index": i, "embedding": [3.0 * (i + 1), 4.0 * (i + 1)]} for i in range(2)],
            "usage": {"prompt_tokens": 2, "total_tokens": 2}}))
        vecs = embed_array(embedder, ["a", "b"])
        assert json.loads(route.calls.last.request.content)["model"] == "nomic-embed-text"
        assert vecs.shape == (2, 2) and abs(float(vecs[1] @ vecs[1]) - 1) < 1e-6
        route.mock(return_value=httpx.Response(401, json={"error": {"message": "bad key"}}))
        with pytest.raises(LLMError, match="rejected the API key") as err:
            embed_array(embedder, ["a"])
        assert "SECRET" not in str(err.value) and route.call_count == 2  # 401: not retried


def test_ask_and_search_do_not_import_llama_index(bundled_index_dir):
    code = (f"from pathlib import Path; from assistant.config import Settings; from assistant.service import api; "
            f"s = Settings.from_env(index_dir=Path({str(bundled_index_dir)!r})); "
            "api.search('graph neural networks', s); api.ask('What do graph neural networks do?', s)")
    assert heavy_modules_after(code, ["llama_index.core", "llama_index"]) == []


def test_the_query_engine_with_no_llm_configured_says_so(settings, monkeypatch):
    """With neither OPENAI_API_KEY nor OPENAI_BASE_URL, the engine called api.openai.com with no key and advised
    unsetting variables that were not set."""
    from assistant.config import Settings
    from assistant.errors import ConfigError
    from assistant.service.llama_index import assistant_query_engine

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="none is configured: set OPENAI_API_KEY or OPENAI_BASE_URL, or pass llm="):
        assistant_query_engine(top_k=2, settings=Settings.from_env(index_dir=settings.index.dir))
