"""The turn model: how a chat turn is read (a new question, a follow-up, "tell me more", a choice, chit-chat)."""

import json

import pytest

from assistant.chat import turns
from assistant.embed.embedder import LocalMiniLM, embed_query


@pytest.fixture(scope="module")
def embed():
    embedder = LocalMiniLM()
    return lambda text: embed_query(embedder, text)


def test_the_model_file_says_what_it_was_fitted_on_and_how_well_it_did():
    data = json.loads(turns.MODEL_FILE.read_text())
    assert tuple(data["labels"]) == turns.LABELS
    assert "conversations" in data["fitted_on"]["files"] and data["fitted_on"]["exemplars"].endswith(".jsonl")
    assert not any("heldout" in f for f in data["fitted_on"]["files"])  # never fitted on the held-out sets
    cv = data["cv"]["conversation_turns"]
    assert cv["n"] >= 200 and cv["accuracy"] >= 0.9
    assert len(data["weights"]) == len(turns.LABELS) == len(data["bias"])
    assert len(data["weights"][0]) == len(data["features"]) == len(data["mean"])


@pytest.mark.parametrize("turn, kind", [
    ("many thanks, that was useful!", "chat"),
    ("morning all!", "chat"),
    ("how long does training take with their method?", "followup"),
    ("what hardware did they run it on?", "followup"),
    ("could you keep going about that paper?", "more"),
    ("which of those looks at robustness?", "among"),
    ("is there any work on time-series forecasting with transformers?", "new"),
    ("Switching topics: who studies reward hacking in RLHF, and how do they measure it?", "new"),
])
def test_turns_not_among_the_exemplars_are_read_as_their_kind(embed, turn, kind):
    exemplars = {json.loads(line).get("turn", "").lower()
                 for line in (turns.MODEL_FILE.parent / "turn_exemplars.jsonl").read_text().splitlines()}
    assert turn.lower() not in exemplars
    assert turns.read(turn, embed(turn)) == kind


def test_a_kind_the_conversation_does_not_allow_falls_back(embed):
    """"Tell me more" after a list of papers is a follow-up on them; before any answer, a question."""
    qvec = embed("tell me more about it")
    assert turns.read("tell me more about it", qvec) == "more"
    assert turns.read("tell me more about it", qvec, frozenset({"new", "followup", "chat"})) == "followup"
    assert turns.read("tell me more about it", qvec, frozenset({"new", "chat"})) == "new"


def test_leading_pleasantries_are_dropped_and_a_named_paper_is_kept(embed):
    assert turns.without_chitchat("oh nice, what does it cost to train?", embed) == "what does it cost to train?"
    assert turns.without_chitchat("hey there :) anything on optimal transport?", embed) == \
        "anything on optimal transport?"
    kept = "In federated learning, which paper handles fairness?"
    assert turns.without_chitchat(kept, embed) == kept
    # a leading piece the caller keeps (it names a paper, the corpus answers it) stays
    assert turns.without_chitchat("cool, what is it?", embed, keep=lambda piece: True) == "cool, what is it?"


@pytest.mark.parametrize("previous, turn, kind", [
    ("any work on backdoor attacks in reinforcement learning?", "how about protein design?", "new"),
    ("which papers study graph neural networks?", "what about music generation?", "new"),
    ("What is Mamba?", "what about its memory use?", "followup"),
    ("which papers study graph neural networks?", "and what about the training cost?", "followup"),
])
def test_a_turn_is_read_with_the_one_before_it(embed, previous, turn, kind):
    """"what about X?" switches topic when X is a topic of its own, and follows up when X is something asked of
    the paper talked about; the model reads the turn with the previous turn's vector (its cosine, and that there
    is one)."""
    assert {"previous_cosine", "has_previous"} <= set(json.loads(turns.MODEL_FILE.read_text())["features"])
    assert turns.read(turn, embed(turn), previous=embed(previous)) == kind
