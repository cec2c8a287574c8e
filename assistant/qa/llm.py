"""The LLM client: streaming chat with bounds on time and length, and token-cost estimates.

Retries (429 with or without Retry-After, 5xx, timeouts, dropped connections) use the openai
SDK's capped exponential backoff; 401/403/404 are not retried. Every failure becomes an
:class:`LLMError` whose message says how to fix it and never contains the API key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from assistant.config import Settings
from assistant.endpoint import Bound, endpoint_name, make_client, map_error, without_secrets
from assistant.errors import LLMError



@dataclass
class Completion:
    """What the model returned: text, whether the stream ended properly, and token usage."""

    text: str
    complete: bool = True
    usage: dict = field(default_factory=dict)
    model: str = ""
    finish_reason: str | None = None


#: USD per million (prompt, completion) tokens, for cost estimates; override with
#: ASSISTANT_PRICE_IN / ASSISTANT_PRICE_OUT (a local server costs nothing: set both to 0).
PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1-mini": (0.40, 1.60),
          "gpt-4.1-nano": (0.10, 0.40), "gpt-4.1": (2.00, 8.00)}


def estimate_cost(settings: Settings, model: str | None, usage: dict) -> float | None:
    """Estimated USD cost of one call from its token usage, or None when the price is unknown."""
    if not usage:
        return None
    price = (settings.llm.price_in, settings.llm.price_out) if settings.llm.price_in is not None and settings.llm.price_out is not None \
        else next((PRICES[m] for m in sorted(PRICES, key=len, reverse=True) if (model or "").startswith(m)), None)
    if price is None:
        return None
    return round((usage.get("prompt_tokens", 0) * price[0] + usage.get("completion_tokens", 0) * price[1]) / 1e6, 6)


#: What an answer shows where a server echoed the key ("***" would read as Markdown emphasis).
HIDDEN = "(key hidden)"


class Scrubbed:
    """Streamed text passed on without the API key or a run of it a server echoes
    (:func:`~assistant.endpoint.without_secrets`): the longest tail of what arrived that could begin such a run is
    held back until the next piece shows it does not (a key split across two chunks is still found)."""

    def __init__(self, on_token: Callable[[str], None], settings: Settings):
        self.on_token, self.settings, self.held = on_token, settings, ""
        self.key = settings.llm.api_key or ""

    def __call__(self, piece: str) -> None:
        self.held += piece
        keep = next((n for n in range(min(len(self.held), len(self.key)), 0, -1) if self.held[-n:] in self.key), 0)
        ready, self.held = self.held[:len(self.held) - keep], self.held[len(self.held) - keep:]
        if ready:
            self.on_token(without_secrets(ready, self.settings, HIDDEN))

    def flush(self) -> None:
        if self.held:
            self.on_token(without_secrets(self.held, self.settings, HIDDEN))
            self.held = ""


def chat(settings: Settings, messages: list[dict], on_token: Callable[[str], None] | None = None,
         stream: bool = True, max_tokens: int | None = None, temperature: float = 0.1) -> Completion:
    """One chat completion. Streams tokens to ``on_token``; a stream that breaks off keeps the partial text. Every
    wait is bounded (:class:`~assistant.endpoint.Bound`): the headers, each gap between chunks, the whole call. No
    secret a server echoes (the API key, a run of it) is passed on, streamed or returned."""
    guard = Scrubbed(on_token, settings) if on_token else None
    completion = _chat(settings, messages, guard, stream, max_tokens, temperature)
    if guard:
        guard.flush()
    return replace(completion, text=without_secrets(completion.text, settings, HIDDEN))


def _chat(settings: Settings, messages: list[dict], on_token: Callable[[str], None] | None,
          stream: bool, max_tokens: int | None, temperature: float) -> Completion:
    kwargs: dict[str, Any] = {"model": settings.llm.model, "messages": messages, "temperature": temperature}
    max_tokens = max_tokens or settings.llm.max_tokens
    if max_tokens:
        kwargs["max_tokens"] = max_tokens
    tokens = max_tokens or 4096
    bound = Bound(settings.llm.timeout, settings.llm.timeout + tokens / MIN_TOKENS_PER_SECOND,
                  REPLY_BYTES + tokens * BYTES_PER_TOKEN)
    client = make_client(settings, bound)
    try:
        if not stream:
            resp = client.chat.completions.create(**kwargs)
            if not getattr(resp, "choices", None):
                raise LLMError(f"the LLM endpoint {endpoint_name(settings)} sent a response with no choices")
            text = resp.choices[0].message.content or ""
            cut = len(text) > tokens * CHARS_PER_TOKEN  # a server that ignores max_tokens: kept as long as allowed
            text = text[:tokens * CHARS_PER_TOKEN]
            if on_token and text:
                on_token(text)
            usage = resp.usage.model_dump() if getattr(resp, "usage", None) else {}
            return Completion(text=text, complete=not cut, usage=usage, model=getattr(resp, "model", "") or
                              settings.llm.model, finish_reason="length" if cut else None)
        response = client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
    except LLMError:
        raise
    except Exception as exc:
        raise map_error(exc, settings) from exc
    return _consume(response, settings, on_token, max_tokens, bound)


#: A streamed answer's bounds. Connecting, the first chunk and every gap between chunks: ASSISTANT_LLM_TIMEOUT each
#: (the client's timeout). The whole stream: ASSISTANT_LLM_TIMEOUT + max_tokens / MIN_TOKENS_PER_SECOND seconds (a
#: server dripping a token a second is cut). Its text: max_tokens x CHARS_PER_TOKEN characters (a server that ignores
#: max_tokens is not read past that). Past either bound the stream is closed and the answer marked cut.
MIN_TOKENS_PER_SECOND = 4
CHARS_PER_TOKEN = 8
#: The bytes a reply may take, streamed or not: a floor, plus this per token allowed (an SSE chunk of one token is
#: ~250 bytes of JSON framing). A 30 MB reply to a 1,024-token request is cut at ~3 MB.
REPLY_BYTES = 2 * 1024 * 1024
BYTES_PER_TOKEN = 1024


def _consume(response, settings: Settings, on_token: Callable[[str], None] | None,
             max_tokens: int | None = None, bound: Bound | None = None) -> Completion:
    import time

    parts: list[str] = []
    usage: dict = {}
    model = settings.llm.model
    finished = None
    chunks = size = 0
    tokens = max_tokens or settings.llm.max_tokens or 4096
    deadline = time.monotonic() + settings.llm.timeout + tokens / MIN_TOKENS_PER_SECOND
    cap = tokens * CHARS_PER_TOKEN
    try:
        for chunk in response:
            chunks += 1
            if bound is not None:  # data arrived: the next gap starts now (comment lines alone do not count)
                bound.chunk_read()
            if getattr(chunk, "usage", None):
                usage = chunk.usage.model_dump()
            model = getattr(chunk, "model", None) or model
            for choice in chunk.choices or []:
                delta = getattr(choice.delta, "content", None) if choice.delta else None
                if delta:
                    delta = delta[:max(cap - size, 0)]
                    size += len(delta)
                    parts.append(delta)
                    if on_token and delta:
                        on_token(delta)
                if choice.finish_reason:
                    finished = choice.finish_reason
            if size >= cap:  # a server that ignores max_tokens: read no further
                finished = "length"
                break
            if time.monotonic() > deadline:  # too slow overall: keep what arrived, marked incomplete
                finished = None
                break
        else:
            if not chunks:  # a JSON body (or nothing) where a stream was asked for
                raise LLMError(f"the LLM endpoint {endpoint_name(settings)} sent a malformed response (no stream to a "
                               "stream request); check that it is OpenAI-compatible")
        getattr(response, "close", lambda: None)()
        if size >= cap or finished is None and chunks and parts:
            text = "".join(parts)
            return Completion(text=text, complete=False, usage=usage, model=model, finish_reason=finished)
    except LLMError:
        raise
    except Exception as exc:
        if not parts:
            raise map_error(exc, settings) from exc
        # A stream that breaks off mid-answer: keep what arrived and say it is incomplete.
        return Completion(text="".join(parts), complete=False, usage=usage, model=model)
    text = "".join(parts)
    # "length": cut at max_tokens, so the answer is incomplete too
    return Completion(text=text, complete=finished not in (None, "length"), usage=usage, model=model,
                      finish_reason=finished)
