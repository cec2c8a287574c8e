"""Conversation state and follow-up handling. No terminal I/O here: the CLI renders.

A follow-up ("how much does it reduce forgetting?") is retrieved with the conversation's help:
with an LLM, the condense prompt rewrites it as a standalone question; without one, it is
combined with the previous question and the title of the previous answer's top paper.
The same :meth:`Conversation.ask` serves ``chat`` and ``eval``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .answer import Answer, answer_question
from .config import Settings
from .retrieve import Retriever

_ANAPHORA = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|this|that|these|those|the (?:paper|method|approach|model|work|"
    r"authors?|framework|benchmark|dataset|algorithm)|same|above|former|latter)\b", re.I)


@dataclass
class Turn:
    question: str
    answer: Answer


@dataclass
class Conversation:
    retriever: Retriever
    settings: Settings
    turns: list[Turn] = field(default_factory=list)

    def clear(self) -> None:
        self.turns.clear()

    def replay(self, item: dict) -> str:
        """Start afresh, ask an eval item's earlier turns, and return its last question (its ``turns``, else
        its ``question``): how eval and the gate benchmarks put each question in its conversation."""
        self.clear()
        turns = item.get("turns") or [item["question"]]
        for turn in turns[:-1]:
            self.ask(turn)
        return turns[-1]

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def is_followup(self, question: str) -> bool:
        if not self.turns:
            return False
        return bool(_ANAPHORA.search(question)) or len(question.split()) <= 4

    def standalone(self, question: str) -> str:
        """The query used for retrieval: the question itself, or a rewrite that resolves references."""
        if not self.turns:
            return question
        if self.settings.llm_enabled:
            return self._condense(question)
        if not self.is_followup(question):
            return question
        prev = self.last
        # The previous top paper's title anchors "it"; the previous question carries the topic.
        anchor = ""
        if prev.answer.citations:
            anchor = prev.answer.citations[0].title
        elif prev.answer.sources and prev.answer.answerable:
            anchor = prev.answer.sources[0].title
        base = prev.answer.retrieval_query or prev.question
        return " ".join(x for x in (base, anchor, question) if x)

    def _condense(self, question: str) -> str:
        from .llm import chat
        from .prompts import render

        history = "\n".join(f"User: {t.question}\nAssistant: {t.answer.text[:600]}" for t in self.turns[-4:])
        prompt = render("condense", history=history, question=question)
        completion = chat(self.settings, [{"role": "user", "content": prompt}], stream=False, max_tokens=120,
                          temperature=0.0)
        rewritten = completion.text.strip().strip('"').splitlines()[0].strip() if completion.text.strip() else ""
        return rewritten or question

    def ask(self, question: str, on_token: Callable[[str], None] | None = None) -> Answer:
        query = self.standalone(question)
        answer = answer_question(self.retriever, question, self.settings, on_token=on_token, retrieval_query=query)
        self.turns.append(Turn(question=question, answer=answer))
        return answer
