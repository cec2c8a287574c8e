"""Prompt templates loaded from ``prompts/`` with checked placeholders.

The templates live at the repository root (``prompts/``) and are copied into the wheel as
``assistant/prompts``; both places are searched so an editable and an installed package work alike.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from assistant.errors import ConfigError

#: Exactly what the model must say when the sources do not answer; the parser looks for it too.
NO_ANSWER_PHRASE = "No paper in the corpus addresses this question."
#: The refusal of a question the corpus holds only in parts (answer.no_answer adds the parts).
PARTS_PHRASE = "No paper in the corpus covers all of this question."
#: The line above an answer the answerable model is unsure of (answered, as refusing every such question would
#: refuse too many answerable ones, but more likely than not on a topic the corpus lacks: decide.unsure_below).
UNSURE_NOTE = "The corpus may have no paper on exactly this; these are the closest it has."
#: The line above an LLM answer's sentences that their cited abstracts do not clearly back (answer.support_marks).
CHECK_CLAIMS = "Check these claims: their cited abstracts do not clearly support them"


def invalid_citations_note(invalid: list) -> str:
    """What the terminal and a saved transcript say under an LLM answer citing sources it was not given."""
    many = len(invalid) > 1
    marks = ", ".join(f"[{n}]" for n in invalid)
    return (f"Note: {marks} in the answer {'match' if many else 'matches'} no source it was given: "
            f"{'they are' if many else 'it is'} marked {', '.join(f'[{n}?]' for n in invalid)} and "
            f"{'cite' if many else 'cites'} nothing.")
#: What the model is told of such a question, between the question and the instruction (empty otherwise): it reads
#: the sources, which the answerable model cannot, so it is asked to refuse when none is on exactly that.
UNSURE_CAUTION = ("\nThe search that found these sources is unsure that any of them is on exactly this question. "
                  f"If none is, reply exactly: {NO_ANSWER_PHRASE}\n")
#: The line above an extractive answer (no LLM): what the reader is looking at.
EXTRACTIVE_LABEL = "Extractive answer (no LLM configured): verbatim sentences from the abstracts."
#: How a citation looks in answer text; ``CITATION_RE`` in answer.py parses the same form.
CITATION_EXAMPLE = "[1] or [2][3]"

PLACEHOLDERS = {
    "system": {"no_answer", "citation_example"},
    "answer": {"sources", "question", "caution"},
    "condense": {"history", "question"},
    "judge": {"criterion", "sources"},
    "rerank": {"passage", "question"},
}
_FIELD = re.compile(r"\{(\w+)\}")


def _locations() -> list[Path]:
    packaged = Path(str(resources.files("assistant") / "prompts"))
    repo = Path(__file__).resolve().parent.parent / "prompts"
    return [packaged, repo]


@lru_cache(maxsize=None)
def load_template(name: str) -> str:
    for base in _locations():
        path = base / f"{name}.txt"
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            found = set(_FIELD.findall(text))
            expected = PLACEHOLDERS[name]
            if found != expected:
                raise ConfigError(f"prompt {path} has placeholders {sorted(found)}, expected {sorted(expected)}")
            return text
    raise ConfigError(f"prompt template {name}.txt not found in {', '.join(map(str, _locations()))}; reinstall the package")


def render(name: str, **values: str) -> str:
    """Fill a template. Values are inserted once, never re-parsed, so braces in abstracts are safe."""
    template = load_template(name)
    missing = PLACEHOLDERS[name] - set(values)
    if missing:
        raise ConfigError(f"prompt {name} needs values for {sorted(missing)}")
    return _FIELD.sub(lambda m: str(values[m.group(1)]), template)


def system_prompt() -> str:
    return render("system", no_answer=NO_ANSWER_PHRASE, citation_example=CITATION_EXAMPLE)
