"""Which embedder the settings ask for: the local MiniLM (embedder.py, no llama-index import), an OpenAI-compatible
endpoint through llama-index (llama.py), or one a program using the package registered (:func:`register`: the test
suite's stand-in). Apart from the first two so neither imports the other."""

from __future__ import annotations

from typing import Callable

from assistant.embed.embedder import MINILM_ID, LocalMiniLM
from assistant.errors import ConfigError

_registered: dict[str, Callable] = {}


def register(name: str, make: Callable) -> None:
    """Make ``ASSISTANT_EMBEDDER=<name>`` the embedder ``make(settings)`` returns: an object whose
    ``embed_array(texts)`` gives a float32 matrix of unit rows, one per text. An index records the name it was built
    with and opens only with it (as with any embedder)."""
    if not name.isidentifier() or name == "minilm":
        raise ValueError(f"an embedder's name is a word other than 'minilm', not {name!r}")
    _registered[name] = make


def embedder_id(spec: str) -> str:
    """Stable id recorded in the manifest: an index is only usable with the same embedder."""
    if spec == "minilm":
        return MINILM_ID
    if spec.startswith("openai:") and len(spec) > 7:
        return spec
    if spec in _registered:
        return spec
    raise ConfigError(f"ASSISTANT_EMBEDDER={spec!r} is not valid; use 'minilm' or 'openai:<model>'")


def get_embedder(settings):
    """The embedder the settings ask for."""
    spec = settings.embed.embedder
    embedder_id(spec)
    if spec == "minilm":
        return LocalMiniLM(embed_batch_size=settings.embed.batch, cache_dir=settings.index.cache_dir)
    if spec in _registered:
        return _registered[spec](settings)
    if not (settings.llm.api_key or settings.llm.base_url):
        raise ConfigError(f"ASSISTANT_EMBEDDER={spec} needs OPENAI_API_KEY (or OPENAI_BASE_URL); "
                          "set one, or use ASSISTANT_EMBEDDER=minilm")
    from assistant.embed.llama import OpenAIEmbedder

    return OpenAIEmbedder(settings, spec.split(":", 1)[1])
