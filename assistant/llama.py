"""llama-index faces of our embedders (``BaseEmbedding``), for llama-index components.

Kept apart from embedder.py because importing llama-index takes ~2 s; only ingest-time code and
users who plug these into llama-index pipelines pay for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from .config import Settings
from .embedder import MINILM_ID, OnnxMiniLM
from .llm import make_client, map_error


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


class OpenAIEmbedder(BaseEmbedding):
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint."""

    _settings: Settings = PrivateAttr()
    _client: Any = PrivateAttr()

    def __init__(self, settings: Settings, model: str, **kwargs: Any):
        super().__init__(model_name=model, embed_batch_size=min(settings.embed_batch * 4, 256), **kwargs)
        self._settings = settings
        self._client = make_client(settings)

    @classmethod
    def class_name(cls) -> str:
        return "OpenAIEmbedder"

    def _embed(self, texts: list[str]) -> list[list[float]]:
        try:
            resp = self._client.embeddings.create(model=self.model_name, input=texts)
        except Exception as exc:
            raise map_error(exc, self._settings, self.model_name) from exc
        return [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)
