"""assistant: answer questions about a corpus of paper abstracts, with cited snippets.

The public API is what the CLI uses. Heavy modules (llama-index, chromadb, onnxruntime, openai)
load on first use, so ``import assistant`` and ``assistant --help`` stay fast.
"""

from __future__ import annotations

from importlib import import_module

from .errors import AssistantError, ConfigError, IndexStoreError, InputError, LLMError

__version__ = "0.1.0"

_LAZY = {
    "Settings": "config", "Paper": "corpus", "load_papers": "corpus", "bundled_corpus": "corpus",
    "Index": "index", "ingest": "index", "open_index": "index", "Chunk": "index",
    "Hit": "retrieve", "Retrieval": "retrieve", "Retriever": "retrieve",
    "Answer": "answer", "Citation": "answer", "answer_question": "answer",
    "Conversation": "chat",
    "ingest_paths": "api", "search": "api", "ask": "api", "conversation": "api", "list_papers": "api",
    "get_paper": "api", "retriever": "api", "which": "api", "summarize": "api", "doctor": "api",
}

__all__ = ["AssistantError", "ConfigError", "IndexStoreError", "InputError", "LLMError", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'assistant' has no attribute {name!r}")
