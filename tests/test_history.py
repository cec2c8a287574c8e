"""Saved chats come back as they were: a conversation saved after any turn and resumed answers every later turn
exactly as the live one does (issue 49, item 1), and chats saved before the whole record was kept still load."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from assistant.chat.conversation import Conversation
from assistant.chat.history import ChatStore
from assistant.errors import InputError
from assistant.qa.answer import Answer
from assistant.search.retrieve import Retriever
from assistant.store.index import Index

#: Turns a user chains in any order: topics, follow-ups on "it", references to sources, a choice among the cited
#: papers, a refused topic, a topic switch, a named paper, chit-chat.
TURNS = ["Which papers study federated learning?", "what does the first one do?", "which of them handles fairness?",
         "compare the first two", "Is there work on speculative decoding?", "tell me more about [2]",
         "how does it work?", "What is Qronos?", "Different question: is there anything on ECG or EEG signals?",
         "which of them use a state-space model?", "thanks!", "and the last one?"]


@pytest.fixture(scope="module")
def retriever(bundled_index_dir):
    from assistant.config import Settings

    chosen = Settings(index_dir=bundled_index_dir)  # offline, no re-ranking: what a saved chat replays
    return Retriever(Index(chosen), chosen)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(questions=st.lists(st.sampled_from(TURNS), min_size=2, max_size=4))
def test_a_chat_saved_after_any_turn_and_resumed_answers_every_later_turn_as_the_live_one(retriever, questions):
    live = Conversation(retriever, retriever.settings)
    outcomes = [_outcome(live, q) for q in questions]
    with tempfile.TemporaryDirectory() as where:
        store = ChatStore(Path(where))
        for cut in range(1, len(questions)):
            kept = [o for o in outcomes[:cut] if isinstance(o, Answer)]  # what the chat saved: the turns answered
            cid = store.new()
            for answer in kept:
                store.add_turn(cid, answer)
            saved = store.load(cid)
            assert saved == kept  # the whole record, not a view of it
            resumed = Conversation(retriever, retriever.settings)
            resumed.resume(saved)
            for question, expected in zip(questions[cut:], outcomes[cut:]):
                assert _outcome(resumed, question) == expected, (questions, cut, question)
        store.db.close()


def _outcome(conversation: Conversation, question: str) -> Answer | str:
    """The turn's answer, or the one line a chat shows when it cannot be answered ("no source [3]")."""
    try:
        return conversation.ask(question)
    except InputError as exc:
        return str(exc)


def test_an_answer_is_immutable_and_a_stage_changes_a_copy():
    answer = Answer(question="q", text="t", mode="extractive", answerable=True)
    with pytest.raises(Exception):
        answer.text = "changed"  # type: ignore[misc]
    changed = answer.model_copy(update={"question": "typed"})
    assert changed.question == "typed" and answer.question == "q"
    assert Answer.model_validate_json(changed.model_dump_json()) == changed


def test_a_chat_saved_in_the_old_view_still_resumes(tmp_path):
    """Before 2026-12-06 a turn was saved as its --json view: "answer" for the text, "quoted" as one object."""
    old = {"question": "Which papers study federated learning?", "answer": "- FL. [1]", "mode": "llm",
           "answerable": True, "complete": True, "quoted": {"text": "- Clients. [1]", "citations": [
               {"n": 1, "paper_id": "p#1", "title": "T", "snippet": "Clients.", "score": 0.5}]},
           "citations": [], "sources": [{"rank": 1, "paper_id": "p#1", "title": "T", "score": 0.5, "snippet": "s",
                                         "dense": 0.4, "bm25": 1.0}]}
    store = ChatStore(tmp_path)
    cid = store.new()
    store.db.close()
    with sqlite3.connect(tmp_path / "chats.sqlite") as db:
        db.execute("INSERT INTO turns VALUES (?, ?, ?, ?)", (cid, 1, old["question"], json.dumps(old)))
    (answer,) = ChatStore(tmp_path).load(cid)
    assert answer.text == "- FL. [1]" and answer.quoted == "- Clients. [1]" and answer.quoted_citations[0].n == 1
    assert answer.sources[0].paper_id == "p#1" and answer.retrieval_query == old["question"]
