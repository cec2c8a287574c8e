"""The OpenAI-compatible endpoint: its address, its client, and its failures translated into our error tree.

Below every stage because both the remote embedder (embed/) and the LLM client (qa/) talk to it.
Every failure becomes an :class:`LLMError` whose message says how to fix it and never contains the API key.
"""

from __future__ import annotations

from assistant.config import Settings
from assistant.errors import LLMError

DEFAULT_BASE = "https://api.openai.com/v1"


def scrub(text: str, settings: Settings) -> str:
    if settings.llm.api_key:
        text = text.replace(settings.llm.api_key, "***")
    return text[:300]


def endpoint_name(settings: Settings) -> str:
    return settings.llm.base_url or DEFAULT_BASE


def make_client(settings: Settings):
    import openai

    return openai.OpenAI(
        api_key=settings.llm.api_key or "not-needed",  # local servers (Ollama, llama.cpp) accept any key
        base_url=settings.llm.base_url or None,
        timeout=settings.llm.timeout,
        max_retries=settings.llm.max_retries,
    )


def map_error(exc: Exception, settings: Settings, model: str | None = None) -> LLMError:
    """Translate an openai/httpx exception into one actionable line."""
    import openai

    where = endpoint_name(settings)
    model = model or settings.llm.model
    if isinstance(exc, openai.AuthenticationError):
        return LLMError(f"the LLM endpoint {where} rejected the API key (401); check OPENAI_API_KEY")
    if isinstance(exc, openai.PermissionDeniedError):
        return LLMError(f"the LLM endpoint {where} refused access (403); check the key's permissions for model {model!r}")
    if isinstance(exc, openai.NotFoundError):
        return LLMError(f"model {model!r} was not found at {where} (404); set ASSISTANT_MODEL to a model the server serves")
    if isinstance(exc, openai.RateLimitError):
        return LLMError(f"the LLM endpoint {where} is rate-limiting requests (429) after {settings.llm.max_retries} "
                        "retries; wait and try again, or raise ASSISTANT_LLM_MAX_RETRIES")
    if isinstance(exc, openai.APITimeoutError):
        return LLMError(f"the LLM endpoint {where} timed out after {settings.llm.timeout:g}s "
                        f"({settings.llm.max_retries} retries); raise ASSISTANT_LLM_TIMEOUT or try later")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(f"cannot connect to the LLM endpoint {where}; check OPENAI_BASE_URL and that the server is "
                        "running, or unset OPENAI_API_KEY/OPENAI_BASE_URL for extractive answers")
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"the LLM endpoint {where} failed with HTTP {exc.status_code} after "
                        f"{settings.llm.max_retries} retries: {scrub(str(exc.message), settings)}")
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        return LLMError(f"the LLM endpoint {where} sent a malformed response; check that it is OpenAI-compatible")
    return LLMError(f"LLM request to {where} failed: {scrub(type(exc).__name__ + ': ' + str(exc), settings)}")
