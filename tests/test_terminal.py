"""A scripted terminal session: pexpect drives the real REPL in a pseudo-terminal."""

import sys

import pytest

pexpect = pytest.importorskip("pexpect")


def _chat(index_dir, tmp_path):
    """The real chat REPL in a pseudo-terminal, 100 x 40."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "xterm", "COLUMNS": "100", "LINES": "40",
           "ASSISTANT_HISTORY_FILE": str(tmp_path / "history"), "ORT_DISABLE_TELEMETRY": "1",
           "PROMPT_TOOLKIT_NO_CPR": "1"}
    return pexpect.spawn(sys.executable, ["-m", "assistant", "chat", "--index-dir", str(index_dir)],
                         env=env, encoding="utf-8", timeout=90, dimensions=(40, 100))


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
        child.expect("assistant>")
        child.sendline("What does Mixture-of-Thought reason with?")
        child.expect("mini#2")
        child.expect("assistant>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "nothi" not in (tmp_path / "history").read_text()
