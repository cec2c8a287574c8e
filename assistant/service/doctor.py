"""``assistant doctor``: every check runs and reports, none stops the others; ``--repair`` mends the index first."""

from __future__ import annotations

import time

from assistant.config import Settings


def doctor(settings: Settings, repair: bool = False) -> dict:
    """{"config": settings (key masked), "checks": [{check, ok, detail, ms}], "ok": all passed}; with ``repair``
    also "repairs" and "unrepaired" (repair.repair)."""
    report: dict = {"config": settings.public(), "checks": []}
    if repair:
        from assistant.errors import AssistantError
        from assistant.store.repair import repair as repair_fn

        try:
            report["repairs"], report["unrepaired"] = repair_fn(settings)
        except AssistantError as exc:
            report["repairs"], report["unrepaired"] = [], [str(exc)]
        from assistant.chat.history import set_aside

        moved = set_aside(settings.index.dir) if settings.index.dir.is_dir() else None
        if moved is not None:
            report["repairs"].append(f"moved the damaged chats.sqlite aside to {moved.name}; chat starts new "
                                     "conversations")
    for name, fn in (("settings", settings_check), ("index", index_check), ("chats", chats_check),
                     ("embedder", embedder_check),
                     ("llm", llm_check), ("rerank", rerank_check)):
        report["checks"].append(_run(name, fn, settings))
    report["ok"] = all(c["ok"] for c in report["checks"]) and not report.get("unrepaired")
    # the exit code of the first check that failed, as the README's table gives them (4: the index, 5: the LLM)
    report["exit_code"] = next((c["exit_code"] for c in report["checks"] if not c["ok"]), 0 if report["ok"] else 1)
    return report


def _run(name: str, fn, settings: Settings) -> dict:
    started = time.perf_counter()
    code = 0
    try:
        detail, ok = fn(settings), True
    except Exception as exc:  # doctor reports every failure instead of stopping at the first
        from assistant.endpoint import scrub

        # whole: its fix ends it ("...; fix with: assistant doctor --repair" was cut at 300 characters)
        detail, ok, code = scrub(str(exc), settings, limit=4000), False, getattr(exc, "exit_code", 1)
    return {"check": name, "ok": ok, "detail": detail, "ms": round((time.perf_counter() - started) * 1000)} | (
        {} if ok else {"exit_code": code})


def index_check(settings: Settings) -> str:
    from assistant.store.faults import translate
    from assistant.store.repair import inspect

    try:
        found = inspect(settings)
    except Exception as exc:  # a full disk, a lost server: the line the other commands print
        raise (translate(exc, settings) or exc) from None
    m = found["manifest"] or {}
    if found["problems"]:
        raise RuntimeError("; ".join(found["problems"]) + f"; fix with: {found['fix']}")
    derived = ", ".join(f"{k} {v}" for k, v in found["derived"].items())
    return f"{found['papers']} papers, {found['chunks']} chunks, embedder {m.get('embedder')} ({m.get('dim')}d) " \
           f"in {found['dir']}; consistent (commit {found['generation']}; {derived})"


#: Variables read outside the settings groups: by the chat prompt, the model cache, tracebacks (and the test suite's
#: ASSISTANT_TEST_* hooks).
OTHER_VARIABLES = ("ASSISTANT_DEBUG", "ASSISTANT_HISTORY_FILE", "ASSISTANT_CACHE_DIR")


def settings_check(settings: Settings) -> str:
    """Every ASSISTANT_* variable set is one the assistant reads: a misspelt one ("ASSISTANT_TOPK") was ignored
    without a word."""
    import difflib
    import os

    from assistant.config import ENV
    from assistant.errors import ConfigError

    known = [*ENV, *OTHER_VARIABLES]
    unknown = sorted(v for v in os.environ if v.startswith("ASSISTANT_") and v not in known
                     and not v.startswith("ASSISTANT_TEST_"))
    if unknown:
        said = "; ".join(f"{v}" + (f" (did you mean {close[0]}?)" if (close := difflib.get_close_matches(v, known, 1))
                                   else "") for v in unknown)
        raise ConfigError(f"not a setting of the assistant, so it has no effect: {said}")
    return f"{sum(v in os.environ for v in known)} ASSISTANT_* variables set, each one the assistant reads"


def chats_check(settings: Settings) -> str:
    from assistant.chat.history import check

    if not settings.index.dir.is_dir():
        return "no saved conversations"
    return check(settings.index.dir)


def embedder_check(settings: Settings) -> str:
    from assistant.embed.embedder import embed_query
    from assistant.embed.embedders import get_embedder

    vec = embed_query(get_embedder(settings), "doctor check")
    return f"{settings.embed.embedder}: {vec.shape[0]} dimensions, model checksum verified"


def llm_check(settings: Settings) -> str:
    if not settings.llm_enabled:
        return "no LLM configured: answers are extractive (set OPENAI_API_KEY or OPENAI_BASE_URL)"
    from assistant.endpoint import endpoint_name, make_client, map_error

    client = make_client(settings).with_options(max_retries=0, timeout=min(settings.llm.timeout, 10))
    try:
        models = [m.id for m in client.models.list()]
    except Exception as exc:
        raise map_error(exc, settings) from exc
    note = "" if not models or settings.llm.model in models else f"; model {settings.llm.model!r} is not listed there"
    return f"{endpoint_name(settings)} reachable, {len(models)} models{note}"


def rerank_check(settings: Settings) -> str:
    from assistant.search.rerank import INSTALL, model_path, reranker, smollm2_path

    if settings.search.rerank == "off":
        if smollm2_path() is None:
            return f"off: SmolLM2's weights are not installed ({INSTALL} re-ranks close calls; see the " \
                   "README's Re-ranking)"
        return "off (ASSISTANT_RERANK=off)"
    value = reranker(settings.search.rerank).score("doctor check?", "A passage.")
    return f"{model_path(settings.search.rerank)} loaded (depth {settings.search.rerank_depth}, margin " \
           f"{settings.search.rerank_margin}; check score {value:.2f})"
