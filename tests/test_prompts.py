import pytest

from assistant import prompts
from assistant.errors import ConfigError


def test_templates_load_with_exactly_their_placeholders():
    for name in prompts.PLACEHOLDERS:
        assert prompts.load_template(name)
    system = prompts.system_prompt()
    assert prompts.NO_ANSWER_PHRASE in system and "[1]" in system
    assert "{" not in system


def test_render_does_not_reinterpret_braces_in_values():
    text = prompts.render("answer", sources="text with {question} and {0}", question="Q?", caution="")
    assert "text with {question} and {0}" in text and "Question: Q?" in text


def test_a_template_with_wrong_placeholders_is_rejected(tmp_path, monkeypatch):
    (tmp_path / "answer.txt").write_text("only {sources}")
    monkeypatch.setattr(prompts, "_locations", lambda: [tmp_path])
    prompts.load_template.cache_clear()
    try:
        with pytest.raises(ConfigError, match="placeholders"):
            prompts.load_template("answer")
    finally:
        prompts.load_template.cache_clear()
