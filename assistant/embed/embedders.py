"""Which embedder the settings ask for: the local MiniLM (embedder.py, no llama-index import) or an
OpenAI-compatible endpoint through llama-index (llama.py). Apart from both so neither imports the other."""

from __future__ import annotations

from assistant.embed.embedder import LocalMiniLM, embedder_id
from assistant.errors import ConfigError


def get_embedder(settings):
    """The embedder the settings ask for."""
    spec = settings.embed.embedder
    embedder_id(spec)
    if spec == "minilm":
        return LocalMiniLM(embed_batch_size=settings.embed.batch, cache_dir=settings.index.cache_dir)
    if not (settings.llm.api_key or settings.llm.base_url):
        raise ConfigError(f"ASSISTANT_EMBEDDER={spec} needs OPENAI_API_KEY (or OPENAI_BASE_URL); "
                          "set one, or use ASSISTANT_EMBEDDER=minilm")
    from assistant.embed.llama import OpenAIEmbedder

    return OpenAIEmbedder(settings, spec.split(":", 1)[1])
