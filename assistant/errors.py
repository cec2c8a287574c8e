"""The error tree. Everything a user can cause is an ``AssistantError``.

    AssistantError           exit 1   anything the user can fix
    ├── ConfigError          exit 2   a setting is missing or invalid
    ├── InputError           exit 3   a path, file, record or id is bad
    ├── IndexStoreError      exit 4   the index is missing, locked or built differently
    └── LLMError             exit 5   the LLM endpoint failed (auth, model, network)

The CLI translates these at its edge into one line plus the exit code; tracebacks
only with ``ASSISTANT_DEBUG=1``.
"""

from __future__ import annotations


class AssistantError(Exception):
    """Base class: ``str(err)`` is a one-line message that says how to fix it."""

    exit_code = 1


class ConfigError(AssistantError):
    exit_code = 2


class InputError(AssistantError):
    exit_code = 3


class IndexStoreError(AssistantError):
    exit_code = 4


class LLMError(AssistantError):
    exit_code = 5


__all__ = ["AssistantError", "ConfigError", "InputError", "IndexStoreError", "LLMError"]
