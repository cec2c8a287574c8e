"""A scripted terminal session: pexpect drives the real REPL in a pseudo-terminal."""

import signal
import sys

import pytest

pexpect = pytest.importorskip("pexpect")


def _chat(index_dir, tmp_path, history=None):
    """The real chat REPL in a pseudo-terminal, 100 x 40 (input history in ``history``, else tmp_path/history)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "xterm", "COLUMNS": "100", "LINES": "40",
           "ASSISTANT_HISTORY_FILE": str(history or tmp_path / "history"), "ORT_DISABLE_TELEMETRY": "1",
           "PROMPT_TOOLKIT_NO_CPR": "1"}
    return pexpect.spawn(sys.executable, ["-m", "assistant", "chat", "--index-dir", str(index_dir)],
                         env=env, encoding="utf-8", timeout=90, dimensions=(40, 100))


def _ask_and_leave(child) -> None:
    """At the prompt: ask what the mini corpus answers from mini#2, then leave with Ctrl-D."""
    child.expect("assistant>")
    child.sendline("What does Mixture-of-Thought reason with?")
    child.expect("mini#2")
    child.expect("assistant>")
    child.sendeof()
    child.expect(pexpect.EOF)


def test_interactive_chat_session(mini_index, tmp_path):
    child = _chat(mini_index, tmp_path)
    try:
        child.expect("assistant chat")
        child.expect("assistant>")
        child.sendline("What does Mixture-of-Thought reason with?")
        child.expect("Sources")
        child.expect("mini#2")
        child.expect("assistant>")
        child.sendline("/help")
        child.expect("/sources")
        child.expect("assistant>")
        child.sendline("/show 1")
        child.expect("truth-table")
        child.expect("assistant>")
        child.sendeof()  # Ctrl-D leaves cleanly
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "Mixture-of-Thought" in (tmp_path / "history").read_text()  # input history persisted


def test_ctrl_c_clears_the_line_and_ctrl_d_leaves(mini_index, tmp_path):
    child = _chat(mini_index, tmp_path)
    try:
        child.expect("assistant>")
        child.send("half a question about nothi")
        child.sendintr()  # Ctrl-C: the half-typed line is dropped, the chat goes on
        child.expect("Ctrl-D or /exit to leave")
        _ask_and_leave(child)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "nothi" not in (tmp_path / "history").read_text()


def test_ctrl_c_during_a_streamed_answer_stops_that_answer_and_the_chat_goes_on(mini_index, tmp_path):
    """Issue 49: Ctrl-C during a streamed answer ended the whole chat (exit 130). A real server on a loopback port
    streams a few words, then waits: Ctrl-C must cut that answer, mark it, and leave the chat at its prompt."""
    import json
    import threading
    import time

    from .conftest import loopback_llm

    waiting = threading.Event()

    def slow(handler, seen):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        for word in ("Mixture-of-Thought ", "reasons ", "with "):
            body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                    "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            handler.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
            handler.wfile.flush()
        waiting.set()
        end = time.monotonic() + 120  # then nothing until the client hangs up
        while time.monotonic() < end:
            handler.wfile.write(b": still thinking\n\n")
            handler.wfile.flush()
            time.sleep(0.2)

    with loopback_llm(slow) as (url, _):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "xterm", "COLUMNS": "100", "LINES": "40",
               "ASSISTANT_HISTORY_FILE": str(tmp_path / "history"), "ORT_DISABLE_TELEMETRY": "1",
               "PROMPT_TOOLKIT_NO_CPR": "1", "OPENAI_BASE_URL": url, "ASSISTANT_LLM_TIMEOUT": "300",
               "ASSISTANT_LLM_MAX_RETRIES": "0", "ASSISTANT_RERANK": "off"}
        # Ctrl-C as a user's terminal delivers it: a test runner started in the background (`cmd &` in a script)
        # ignores SIGINT, and a child inherits that, so the chat would never see the signal
        child = pexpect.spawn(sys.executable, ["-m", "assistant", "chat", "--index-dir", str(mini_index)],
                              env=env, encoding="utf-8", timeout=90, dimensions=(40, 100),
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        child.logfile_read = open(tmp_path / "screen.log", "w")  # what the terminal showed, for a failure
        try:
            child.expect("assistant>")
            child.sendline("What does Mixture-of-Thought reason with?")
            child.expect("reasons")
            assert waiting.wait(60)
            child.sendintr()  # Ctrl-C while the answer streams
            child.expect("answer cut")
            child.expect_exact("\x1b[?2004h")  # the prompt is reading keys again (bracketed paste on): the chat goes on
            child.expect("assistant>")
            child.sendintr()  # at an empty prompt, Ctrl-C does what it did: says how to leave
            child.expect("Ctrl-D or /exit to leave")
            child.expect_exact("\x1b[?2004h")  # reading keys again
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0


def test_a_history_file_that_cannot_be_written_turns_history_off_in_one_line(mini_index, tmp_path):
    """ASSISTANT_HISTORY_FILE naming a folder: prompt_toolkit printed a traceback and ate the question typed."""
    folder = tmp_path / "a folder"
    folder.mkdir()
    child = _chat(mini_index, tmp_path, history=folder)
    try:
        child.expect("Input history is off for this chat")
        _ask_and_leave(child)
    finally:
        child.close()
    assert child.exitstatus == 0 and "Traceback" not in (child.before or "")


def test_a_history_file_that_never_ends_turns_history_off(mini_index, tmp_path):
    """ASSISTANT_HISTORY_FILE=/dev/full: prompt_toolkit read it as history without end, growing to 20 GB."""
    child = _chat(mini_index, tmp_path, history="/dev/full")
    try:
        child.expect("Input history is off for this chat: ASSISTANT_HISTORY_FILE /dev/full is not a plain file")
        _ask_and_leave(child)
    finally:
        child.close()
    assert child.exitstatus == 0
