"""llama-index faces of our embedders (``BaseEmbedding``), for llama-index components.

Kept apart from embedder.py because importing llama-index takes ~2 s; only ingest-time code and
users who plug these into llama-index pipelines pay for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.embeddings.openai import OpenAIEmbedding
from pydantic import PrivateAttr

from assistant.config import Settings
from assistant.embed.embedder import MINILM_ID, OnnxMiniLM
from assistant.endpoint import DEFAULT_BASE, bounded_http_client, embedding_bound, map_error


class MiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 int8 on onnxruntime as a llama-index embedding (mean pooling, L2 norm, batches)."""

    _model: OnnxMiniLM = PrivateAttr()

    def __init__(self, embed_batch_size: int = 32, **kwargs: Any):
        super().__init__(model_name=MINILM_ID, embed_batch_size=embed_batch_size, **kwargs)
        self._model = OnnxMiniLM()

    @classmethod
    def class_name(cls) -> str:
        return "MiniLMEmbedding"

    def embed_array(self, texts: list[str]) -> np.ndarray:
        return self._model.embed(texts, self.embed_batch_size)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.embed_array([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class OpenAIEmbedder(OpenAIEmbedding):
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint: llama-index-embeddings-openai's
    ``OpenAIEmbedding`` on the settings' endpoint, key, timeout and retries, with the project's error lines.

    Any model name goes through (``model_name``: the endpoint decides, as Ollama's or llama.cpp's do),
    and the openai SDK's retries are the only ones: OpenAIEmbedding's own tenacity retries would repeat
    each of the SDK's, up to 60 s more per failing request."""

    _settings: Settings = PrivateAttr()

    def __init__(self, settings: Settings, model: str, **kwargs: Any):
        super().__init__(model_name=model, embed_batch_size=min(settings.embed.batch * 4, 256),
                         api_key=settings.llm.api_key or "not-needed",  # local servers accept any key
                         api_base=settings.llm.base_url or DEFAULT_BASE, timeout=settings.llm.timeout,
                         max_retries=settings.llm.max_retries,
                         http_client=bounded_http_client(embedding_bound(settings)), **kwargs)
        self._settings = settings

    @classmethod
    def class_name(cls) -> str:
        return "OpenAIEmbedder"

    def _create_retry_decorator(self):
        return lambda fn: fn  # see the class docstring

    def _mapped(self, call, *args):
        try:
            return call(*args)
        except Exception as exc:
            raise map_error(exc, self._settings, self.model_name) from exc

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._mapped(super()._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._mapped(super()._get_text_embedding, text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._mapped(super()._get_text_embeddings, texts)
