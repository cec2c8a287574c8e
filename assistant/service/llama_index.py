"""llama-index faces of the assistant, for people who build on llama-index (docs/llama-index.md).

- :class:`AssistantRetriever`: a llama-index ``BaseRetriever`` over the project's hybrid search, the one
  ``assistant search`` runs (typo mending, area questions' second look, the relevance gate).
- :func:`assistant_query_engine`: a query engine over it answering with the project's numbered citations
  through any llama-index LLM (:class:`AssistantLLM`, the configured OpenAI-compatible endpoint, by default).
- :func:`chroma_collection` and :func:`embed_query`: the chunk collection and query vectors for
  llama-index's ``ChromaVectorStore``, which reads each chunk's node (text included) from its metadata.

Importing this module imports llama-index (~2 s), so nothing on the CLI's ``ask``/``search`` path imports it.
"""

from __future__ import annotations

from typing import Any, Sequence

from llama_index.core.base.llms.types import (ChatMessage, ChatResponse, CompletionResponse,
                                              CompletionResponseGen, LLMMetadata, MessageRole)
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
from pydantic import Field

from assistant.config import Settings
from assistant.errors import IndexStoreError
from assistant.prompts import CITATION_EXAMPLE, NO_ANSWER_PHRASE
from assistant.search.retrieve import Hit, Retrieval, Retriever

__all__ = ["AssistantLLM", "AssistantQueryEngine", "AssistantRetriever", "assistant_query_engine",
           "chroma_collection", "embed_query", "vector_store"]


def _settings(settings: Settings | None) -> Settings:
    return settings if settings is not None else Settings.from_env()


class AssistantRetriever(BaseRetriever):
    """The project's hybrid search as a llama-index retriever.

    ``retrieve(QueryBundle)`` returns one ``NodeWithScore`` per paper, best first, scored by the fused
    score: the node's text is the paper's best snippet (the chunk the dense search matched), its
    metadata ``paper_id``, ``title``, ``source``, ``rank`` and ``start``/``end`` (the snippet's character
    offsets in the abstract, also the node's ``start_char_idx``/``end_char_idx``). A question the
    relevance gate refuses returns no nodes (``last`` holds its retrieval, hits and confidence included).
    """

    def __init__(self, top_k: int | None = None, settings: Settings | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.settings = _settings(settings)
        self.top_k = top_k or self.settings.search.top_k  # ASSISTANT_TOP_K unless given
        self._searcher: Retriever | None = None
        #: The last query's retrieval (its gate verdict and every hit, refused or not).
        self.last: Retrieval | None = None

    @property
    def searcher(self) -> Retriever:
        """The project's retriever, opened on first use (the bundled corpus is ingested if there is no index)."""
        if self._searcher is None:
            from assistant.service.api import retriever

            self._searcher = retriever(self.settings)
        return self._searcher

    def search(self, query: str) -> Retrieval:
        """What ``assistant search`` finds: the same library function, ``top_k`` deep."""
        from assistant.qa.answer import retrieve

        self.last = retrieve(self.searcher, query, self.top_k)
        return self.last

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.search(query_bundle.query_str)
        if not found.answerable:
            return []
        hits = found.hits[: self.top_k]
        offsets = snippet_offsets(self.searcher, hits)
        return [NodeWithScore(node=_node(hit, *offsets[hit.chunk_id]), score=hit.score) for hit in hits]


def _node(hit: Hit, start: int | None, end: int | None) -> TextNode:
    meta = {"paper_id": hit.paper_id, "title": hit.title, "source": hit.source, "rank": hit.rank,
            "start": start, "end": end}
    return TextNode(id_=hit.chunk_id or hit.paper_id, text=hit.snippet, metadata=meta,
                    start_char_idx=start, end_char_idx=end,
                    # an LLM reading the node sees its title; the rest is bookkeeping
                    excluded_llm_metadata_keys=["paper_id", "source", "rank", "start", "end"],
                    excluded_embed_metadata_keys=["paper_id", "source", "rank", "start", "end"],
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.paper_id)})


def snippet_offsets(searcher: Retriever, hits: list[Hit]) -> dict[str, tuple[int | None, int | None]]:
    """chunk id -> (start, end) of its text in its paper's abstract, from the chunk records (a
    primary-key lookup); (None, None) for a chunk that is not a slice of the abstract."""
    ids = [h.chunk_id for h in hits if h.chunk_id]
    got = searcher.index.chunks.get(ids=ids, include=["metadatas"]) if ids else {"ids": [], "metadatas": []}
    stored = {cid: (m.get("start"), m.get("end")) for cid, m in zip(got["ids"], got["metadatas"])}
    out = {}
    for h in hits:
        start, end = stored.get(h.chunk_id, (None, None))
        if start is None:  # an older record: find the snippet in the abstract
            paper = searcher.index.all_papers().get(h.paper_id)
            at = paper.abstract.find(h.snippet) if paper and h.snippet else -1
            start, end = (at, at + len(h.snippet)) if at >= 0 else (None, None)
        out[h.chunk_id] = (start, end)
    return out


class AssistantLLM(CustomLLM):
    """The OpenAI-compatible endpoint the settings configure (OPENAI_BASE_URL, ASSISTANT_MODEL, the
    project's retries, timeout and error messages) as a llama-index LLM."""

    settings: Any = Field(default=None, exclude=True)

    def __init__(self, settings: Settings | None = None, **kwargs: Any):
        super().__init__(settings=_settings(settings), **kwargs)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.settings.llm.model, is_chat_model=True,
                           num_output=self.settings.llm.max_tokens or -1)

    def _call(self, messages: list[dict]):
        from assistant.qa.llm import chat

        return chat(self.settings, messages, stream=False)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        done = self._call([{"role": m.role.value, "content": m.content or ""} for m in messages])
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=done.text),
                            raw={"model": done.model, "usage": done.usage, "complete": done.complete})

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        done = self._call([{"role": "user", "content": prompt}])
        return CompletionResponse(text=done.text, raw={"model": done.model, "usage": done.usage})

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        response = self.complete(prompt, formatted=formatted)
        yield CompletionResponse(text=response.text, delta=response.text, raw=response.raw)


class AssistantQueryEngine(CustomQueryEngine):
    """Answers from :class:`AssistantRetriever`'s sources with the project's prompts (prompts/system.txt,
    prompts/answer.txt: numbered ``<source>`` elements) and citation checks: ``[n]`` is source node n
    (``response.source_nodes[n - 1]``), a number no source has comes back marked ``[n?]``. A question
    the gate refuses is answered with the project's no-answer sentence, without calling the LLM.

    ``response.metadata``: ``citations`` (n, paper_id, title of each cited source, in citing order),
    ``invalid_citations``, ``confidence`` (the gate's), ``read_as`` (the query with its typos mended)."""

    retriever: AssistantRetriever
    llm: LLM

    def custom_query(self, query_str: str) -> Response:
        from assistant.qa.answer import format_sources, parse_citations
        from assistant.prompts import render, system_prompt

        nodes = self.retriever.retrieve(QueryBundle(query_str))
        found = self.retriever.last
        meta: dict[str, Any] = {"confidence": found.confidence if found else 0.0,
                                "read_as": found.query if found and found.typed else None}
        if not nodes:
            return Response(NO_ANSWER_PHRASE, source_nodes=[], metadata=meta | {"citations": [],
                                                                                  "invalid_citations": []})
        hits = found.hits[: len(nodes)]
        papers = self.retriever.searcher.index.all_papers()
        abstracts = {h.paper_id: papers[h.paper_id].abstract for h in hits if h.paper_id in papers}
        messages = [ChatMessage(role=MessageRole.SYSTEM, content=system_prompt()),
                    ChatMessage(role=MessageRole.USER,
                                content=render("answer", sources=format_sources(hits, abstracts), question=query_str,
                                               caution=""))]
        reply = self.llm.chat(messages).message.content or ""
        text, cited, invalid = parse_citations(reply.strip(), len(hits))
        meta["citations"] = [{"n": n, "paper_id": hits[n - 1].paper_id, "title": hits[n - 1].title} for n in cited]
        meta["invalid_citations"] = invalid
        return Response(text, source_nodes=nodes, metadata=meta)


def assistant_query_engine(llm: LLM | None = None, top_k: int | None = None,
                           settings: Settings | None = None) -> AssistantQueryEngine:
    """A query engine over :class:`AssistantRetriever` (``top_k`` sources, default ASSISTANT_TOP_K) answering through ``llm``
    (any llama-index LLM; default :class:`AssistantLLM` on the configured endpoint). Citations look
    like ``CITATION_EXAMPLE`` ({example})."""
    settings = _settings(settings)
    if llm is None and not settings.llm_enabled:  # it tried api.openai.com with no key, and advised unsetting it
        from assistant.errors import ConfigError

        raise ConfigError("the query engine writes answers with an LLM and none is configured: set OPENAI_API_KEY "
                          "or OPENAI_BASE_URL, or pass llm=...; for extractive answers use assistant.ask")
    return AssistantQueryEngine(retriever=AssistantRetriever(top_k=top_k, settings=settings),
                                llm=llm if llm is not None else AssistantLLM(settings))


assistant_query_engine.__doc__ = (assistant_query_engine.__doc__ or "").replace("{example}", CITATION_EXAMPLE)


def chroma_collection(settings: Settings | None = None):
    """The index's Chroma collection of chunks, for ``ChromaVectorStore(chroma_collection=...)``: each
    record's metadata holds its llama-index node (``_node_content``: text, paper id, title, source,
    offsets), so a query returns nodes with their text. Opens (or, with no index, builds) the index the
    settings name, embedded or on a Chroma server (ASSISTANT_CHROMA_URL)."""
    from assistant.store.chunks import NODE_CONTENT
    from assistant.store.opening import open_index

    index = open_index(_settings(settings))
    sample = index.chunks.get(limit=1, include=["metadatas"])
    if sample["ids"] and NODE_CONTENT not in (sample["metadatas"][0] or {}):
        raise IndexStoreError(f"the index at {index.remote or index.dir} predates chunk text for llama-index; "
                              "rebuild it with: assistant ingest --rebuild")
    return index.chunks


def vector_store(settings: Settings | None = None):
    """llama-index's ``ChromaVectorStore`` over :func:`chroma_collection`: query it with :func:`embed_query`'s
    vectors, or build a ``VectorStoreIndex.from_vector_store`` on it with the same embedder."""
    from llama_index.vector_stores.chroma import ChromaVectorStore

    return ChromaVectorStore(chroma_collection=chroma_collection(settings))


def embed_query(text: str, settings: Settings | None = None) -> list[float]:
    """A query's vector from the embedder the index was built with (unit length), for
    ``VectorStoreQuery(query_embedding=...)`` against :func:`chroma_collection`."""
    from assistant.embed.embedder import embed_query as embed
    from assistant.embed.embedders import get_embedder

    return embed(get_embedder(_settings(settings)), text).tolist()
