"""The OpenAI-compatible endpoint: its address, its client, and its failures translated into our error tree.

Below every stage because both the remote embedder (embed/) and the LLM client (qa/) talk to it.
Every failure becomes an :class:`LLMError` whose message says how to fix it and never contains the API key.
"""

from __future__ import annotations

from assistant.config import Settings, redact_urls
from assistant.errors import LLMError

DEFAULT_BASE = "https://api.openai.com/v1"


#: An echoed run of the API key at least this long is a secret too (a server's "Incorrect API key provided:
#: sk-proj-abc12345****" echoes a prefix).
ECHO_MIN = 6


def scrub(text: str, settings: Settings, limit: int | None = 300) -> str:
    """Text safe to show: no API key, no run of ECHO_MIN or more of its characters, no credentials of a URL;
    cut at ``limit`` characters."""
    return redact_urls(without_secrets(text, settings))[:limit]


def without_secrets(text: str, settings: Settings, mark: str = "***") -> str:
    """``text`` with ``mark`` for the API key, a run of ECHO_MIN or more of its characters, or the endpoint URL's
    credentials (what a model's answer may echo; other URLs in it are left as written)."""
    key = settings.llm.api_key
    if key:
        text = text.replace(key, mark)
        text = _without_key_runs(text, key, mark)
    for secret in url_secrets(settings.llm.base_url):
        text = text.replace(secret, mark)
    return text


def _without_key_runs(text: str, key: str, mark: str = "***") -> str:
    """Every run of ``text`` of ECHO_MIN or more characters that also occurs in ``key``, as ``***``."""
    if len(key) < ECHO_MIN:
        return text
    out, i = [], 0
    while i < len(text):
        n = 0
        while i + n < len(text) and text[i:i + n + 1] in key:
            n += 1
        if n >= ECHO_MIN:
            out.append(mark)
            i += n
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _retries(settings: Settings) -> str:
    n = settings.llm.max_retries
    return f"{n} retr{'y' if n == 1 else 'ies'}"


def url_secrets(url: str | None) -> list[str]:
    """The parts of a URL that are secrets: its user name and password, the values of its query."""
    if not url:
        return []
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url)
        found = [parts.username, parts.password] + [v for _, v in parse_qsl(parts.query, keep_blank_values=False)]
    except ValueError:
        return []
    return sorted({s for s in found if s} | {unquote(s) for s in found if s}, key=len, reverse=True)


def endpoint_name(settings: Settings) -> str:
    """The endpoint as it may be shown or saved: never its credentials."""
    return redact_urls(settings.llm.base_url or DEFAULT_BASE)


def bounded_http_client(bound: Bound):
    """An httpx client for the openai SDK whose every read has a deadline and whose replies a size cap."""
    import openai

    return openai.DefaultHttpxClient(transport=_bounded_transport(bound),
                                     event_hooks={"request": [bound.request_sent], "response": [bound.headers_read]})


#: The embedder's replies: 256 texts of 3,072 dimensions are ~16 MB of JSON.
EMBED_REPLY_BYTES = 64 * 1024 * 1024


def embedding_bound(settings: Settings) -> Bound:
    """Bounds for the embedder's requests: headers and every gap within the timeout, each request within twice it."""
    return Bound(settings.llm.timeout, 2 * settings.llm.timeout, EMBED_REPLY_BYTES, per_request=True)


def make_client(settings: Settings, bound: Bound | None = None):
    """The OpenAI client; with ``bound``, its every read has a deadline and its replies a size cap (:class:`Bound`)."""
    import openai

    http_client = bounded_http_client(bound) if bound is not None else None
    return openai.OpenAI(
        api_key=settings.llm.api_key or "not-needed",  # local servers (Ollama, llama.cpp) accept any key
        base_url=settings.llm.base_url or None,
        timeout=settings.llm.timeout,
        max_retries=settings.llm.max_retries,
        http_client=http_client,
    )


class ReplyTooLarge(Exception):
    """The endpoint sent more bytes than :attr:`Bound.cap` allows."""


class Bound:
    """Deadlines and a size cap for every byte read from the endpoint, enforced below HTTP (a server sending headers
    a byte a second, or SSE comment lines ``: ping`` and nothing else, keeps every single read under the client's
    timeout, so only a deadline on the reads themselves bounds it).

    Each attempt's headers must arrive within ``timeout`` of sending it; the body then runs to ``total`` seconds
    after the call began at most, and a stream's reader calls :meth:`chunk_read` after every data chunk, so that a
    gap with no data (comment lines or nothing) is at most ``timeout`` too. Past a deadline a read raises a timeout;
    past ``cap`` bytes, :class:`ReplyTooLarge`."""

    def __init__(self, timeout: float, total: float, cap: int, per_request: bool = False):
        """``per_request``: the total and the cap are each request's (a long-lived client, such as the
        embedder's), not the whole call's."""
        import time

        self.timeout, self.cap, self.total, self.per_request = timeout, cap, total, per_request
        self.end = time.monotonic() + total
        self.at: float | None = None
        self.read = 0
        self.too_large: ReplyTooLarge | None = None

    def request_sent(self, request) -> None:
        import time

        if self.too_large is not None and not self.per_request:  # the SDK retries what it does not know: the same
            raise self.too_large  # reply again costs nothing
        if self.per_request:
            self.end, self.too_large = time.monotonic() + self.total, None
        self.at, self.read = min(self.end, time.monotonic() + self.timeout), 0

    def headers_read(self, response) -> None:
        self.chunk_read()

    def chunk_read(self) -> None:
        import time

        self.at = min(self.end, time.monotonic() + self.timeout)

    def left(self) -> float | None:
        import time

        return None if self.at is None else self.at - time.monotonic()


def _bounded_transport(bound: Bound):
    import httpcore
    import httpx

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner):
            self.inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            left = bound.left()
            if left is not None:
                if left <= 0:
                    raise httpcore.ReadTimeout("the endpoint's time is up")
                timeout = left if timeout is None else min(timeout, left)
            data = self.inner.read(max_bytes, timeout)
            bound.read += len(data)
            if bound.read > bound.cap:
                bound.too_large = ReplyTooLarge(f"over {bound.cap / 1e6:.1f} MB")
                raise bound.too_large
            return data

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.inner.write(buffer, timeout)

        def close(self) -> None:
            self.inner.close()

        def start_tls(self, ssl_context, server_hostname=None, timeout=None):
            return Stream(self.inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str):
            return self.inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self, inner):
            self.inner = inner

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            return Stream(self.inner.connect_tcp(host, port, timeout, local_address, socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):
            return Stream(self.inner.connect_unix_socket(path, timeout, socket_options))

        def sleep(self, seconds: float) -> None:
            self.inner.sleep(seconds)

    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):  # httpcore's pools; a proxy pool too
        pool._network_backend = Backend(pool._network_backend)
    return transport


def map_error(exc: Exception, settings: Settings, model: str | None = None) -> LLMError:
    """Translate an openai/httpx exception into one actionable line."""
    import openai

    where = endpoint_name(settings)
    model = model or settings.llm.model
    cause: BaseException | None = exc
    while cause is not None:  # the cap, raised below the SDK, comes back wrapped as a connection error
        if isinstance(cause, ReplyTooLarge):
            return LLMError(f"the LLM endpoint {where} sent a reply {cause} long, more than ASSISTANT_MAX_TOKENS "
                            f"({settings.llm.max_tokens}) allows; check that it honours max_tokens")
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, openai.AuthenticationError):
        return LLMError(f"the LLM endpoint {where} rejected the API key (401); check OPENAI_API_KEY")
    if isinstance(exc, openai.PermissionDeniedError):
        return LLMError(f"the LLM endpoint {where} refused access (403); check the key's permissions for model {model!r}")
    if isinstance(exc, openai.NotFoundError):
        return LLMError(f"model {model!r} was not found at {where} (404); set ASSISTANT_MODEL to a model the server serves")
    if isinstance(exc, openai.RateLimitError):
        return LLMError(f"the LLM endpoint {where} is rate-limiting requests (429) after {_retries(settings)};"
                        " wait and try again, or raise ASSISTANT_LLM_MAX_RETRIES")
    if isinstance(exc, openai.APITimeoutError):
        return LLMError(f"the LLM endpoint {where} timed out after {settings.llm.timeout:g}s "
                        f"({_retries(settings)}); raise ASSISTANT_LLM_TIMEOUT or try later")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(f"cannot connect to the LLM endpoint {where}; check OPENAI_BASE_URL and that the server is "
                        "running, or unset OPENAI_API_KEY/OPENAI_BASE_URL for extractive answers")
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"the LLM endpoint {where} failed with HTTP {exc.status_code} after "
                        f"{_retries(settings)}: {scrub(str(exc.message), settings)}")
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        return LLMError(f"the LLM endpoint {where} sent a malformed response; check that it is OpenAI-compatible")
    return LLMError(f"LLM request to {where} failed: {scrub(type(exc).__name__ + ': ' + str(exc), settings)}")
