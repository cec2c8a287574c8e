"""assistant: answer questions about a corpus of paper abstracts, with cited snippets.

The public API is the service layer the CLI uses (``assistant.ask``, ``assistant.search``, ...) and the types it
returns; everything else is internal and may change. Heavy modules (llama-index, chromadb, onnxruntime, openai)
load on first use, so ``import assistant`` and ``assistant --help`` stay fast.
"""

from __future__ import annotations

from importlib import import_module

from assistant.errors import AssistantError, ConfigError, IndexStoreError, InputError, LLMError

__version__ = "0.1.0"

_LAZY = {
    "Settings": "config", "Paper": "text.corpus", "load_papers": "text.corpus", "bundled_corpus": "text.corpus",
    "Index": "store.index", "ingest": "store.ingest", "remove": "store.ingest", "open_index": "store.opening",
    "Chunk": "store.chunks",
    "Hit": "search.retrieve", "Retrieval": "search.retrieve", "Retriever": "search.retrieve",
    "Answer": "qa.answer", "Citation": "qa.answer", "answer_question": "qa.answer",
    "Conversation": "chat.conversation",
    "ingest_paths": "service.api", "search": "service.api", "ask": "service.api", "conversation": "service.api", "list_papers": "service.api",
    "get_paper": "service.api", "retriever": "service.api", "which": "service.api", "summarize": "service.api", "doctor": "service.api",
}

__all__ = ["AssistantError", "ConfigError", "IndexStoreError", "InputError", "LLMError", *_LAZY]

# The subpackage ``assistant.search`` (retrieval) shares its name with the function ``assistant.search``. Loading a
# subpackage binds it on its parent, so the first search (which loads it) replaced the function with the module, and
# the next ``assistant.search(...)`` raised "'module' object is not callable". Loaded now (its __init__ is a
# docstring) and unbound, so that the name resolves to the function below and no later load rebinds it.
import_module(".search", __name__)
del globals()["search"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'assistant' has no attribute {name!r}")
