"""CLI commands in real processes that tests kill (``integrity.crash_point``: SIGKILL at a named step of a write).

Each command runs in its own process, forked from a server process that has already imported the package, Chroma,
onnxruntime and numpy (multiprocessing's ``forkserver``, started once per test session): a kill then costs the
command's work, not the ~2.5 s CPU of a fresh interpreter's imports. Nothing else is shared: the server only
imports (no index opened, no model session, no thread started), and the child gets the environment it is given,
its own stdout and stderr, and dies by a real SIGKILL. ``python -m assistant`` itself, a fresh interpreter, is
run by the other subprocess tests (test_cli, test_mcp, test_terminal).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
from dataclasses import dataclass

PRELOAD = ["assistant.cli.app", "assistant.config", "assistant.service.api", "assistant.store.index",
           "assistant.store.ingest", "assistant.store.repair", "assistant.embed.embedder", "chromadb", "onnxruntime",
           "numpy", "tokenizers"]
_context = None


@dataclass(frozen=True)
class Ended:
    returncode: int  # -9: killed by SIGKILL
    stdout: str
    stderr: str


def _context_started():
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _command(args: list[str], env: dict, group: int | None, out: str, err: str) -> None:
    """In the forked process: the CLI's ``main()`` on ``args``, as ``python -m assistant`` would run it."""
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    if group:
        import assistant.store.ingest as ingest

        ingest.GROUP_SIZE = group
    from assistant.cli.app import main

    sys.argv = ["assistant", *args]
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def cli(*args, crash: str | None = None, group: int | None = None, timeout: float = 300) -> Ended:
    """Run ``assistant *args`` in a killable process: ``crash``, the crash point it dies at (ASSISTANT_TEST_CRASH);
    ``group``, the ingest's group size (small, so that a corpus of a few papers is written in several groups)."""
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    env.pop("ASSISTANT_TEST_CRASH", None)
    if crash:
        env["ASSISTANT_TEST_CRASH"] = crash
    with tempfile.TemporaryDirectory() as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        for path in (out, err):
            open(path, "w").close()
        process = _context_started().Process(target=_command, args=([str(a) for a in args], env, group, out, err))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise AssertionError(f"assistant {' '.join(map(str, args))} still running after {timeout} s")
        with open(out, encoding="utf-8", errors="replace") as o, open(err, encoding="utf-8", errors="replace") as e:
            return Ended(process.exitcode, o.read(), e.read())
