"""The LLM path, mocked at the wire with respx: requests, streaming, citations, errors, retries."""

import json

import httpx
import pytest

from assistant.qa.answer import answer_question
from assistant.config import Settings
from assistant.errors import LLMError
from assistant.store.index import Index
from assistant.prompts import NO_ANSWER_PHRASE
from assistant.search.retrieve import Retriever

from .conftest import FAKE_KEY, completion_json, sse_response


@pytest.fixture
def retriever(bundled_index_dir, llm_env):
    settings = Settings.from_env(index_dir=bundled_index_dir)
    return Retriever(Index(settings), settings)


QUESTION = "Which papers study federated learning?"


def test_request_carries_numbered_sources_in_the_user_message_only(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("FL is studied [1].")
    answer_question(retriever, QUESTION)
    body = json.loads(mocked_openai_chat.calls.last.request.content)
    assert body["model"] == "test-model" and body["stream"] is True
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert NO_ANSWER_PHRASE in system["content"]
    # the relevant papers only, numbered from 1
    assert "<source n=\"1\"" in user["content"] and "<source n=\"2\"" in user["content"]
    assert QUESTION in user["content"]
    # abstracts never reach the system message
    assert "Federated" not in system["content"]
    assert mocked_openai_chat.calls.last.request.headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_a_question_the_answerable_model_is_unsure_of_reaches_the_model_with_that_caution(retriever,
                                                                                          mocked_openai_chat):
    from assistant.prompts import UNSURE_CAUTION

    def user_message() -> str:
        return json.loads(mocked_openai_chat.calls.last.request.content)["messages"][1]["content"]

    # federated learning and LLM unlearning are in the corpus, federated unlearning is not: the model reads the
    # sources and refuses, so nothing is cited and the papers it read are the nearest ones
    mocked_openai_chat.return_value = sse_response(NO_ANSWER_PHRASE)
    refused = answer_question(retriever, "federated unlearning")
    assert UNSURE_CAUTION.strip() in user_message() and NO_ANSWER_PHRASE in UNSURE_CAUTION
    assert not refused.answerable and not refused.citations and not refused.unsure
    assert {h.paper_id for h in refused.related} >= {h.paper_id for h in refused.sources[:1]}
    # when it answers, the answer is marked unsure as offline
    mocked_openai_chat.return_value = sse_response("Clients share statistics, not parameters [1].")
    answered = answer_question(retriever, "federated unlearning")
    assert answered.answerable and answered.unsure and answered.citations
    # a question the corpus clearly answers carries no caution
    mocked_openai_chat.return_value = sse_response("FL is studied [1].")
    sure = answer_question(retriever, QUESTION)
    assert "unsure" not in user_message() and sure.answerable and not sure.unsure


def test_streamed_tokens_arrive_in_order_and_citations_map_to_papers(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("Two papers ", "study FL [1]", " and DP [2][9].")
    tokens = []
    ans = answer_question(retriever, QUESTION, on_token=tokens.append)
    assert tokens == ["Two papers ", "study FL [1]", " and DP [2][9?]."]  # streamed as the answer marks it
    assert ans.mode == "llm" and ans.complete
    assert [c.n for c in ans.citations] == [1, 2]
    assert ans.citations[0].paper_id == ans.sources[0].paper_id
    assert ans.invalid_citations == [9] and "[9?]" in ans.text
    assert ans.usage["total_tokens"] == 120


def test_stream_without_done_keeps_partial_answer_marked_incomplete(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response("Partial answer [1]", done=False, finish=False, usage=False)
    ans = answer_question(retriever, QUESTION)
    assert not ans.complete
    assert ans.text.startswith("Partial answer [1]") and "incomplete" in ans.text
    assert [c.n for c in ans.citations] == [1]


def test_answers_are_capped_and_a_cut_answer_says_so(retriever, mocked_openai_chat):

    mocked_openai_chat.return_value = sse_response("FL is studied [1] and", finish="length")
    ans = answer_question(retriever, QUESTION)
    assert json.loads(mocked_openai_chat.calls.last.request.content)["max_tokens"] == 1024
    assert not ans.complete
    assert "answer cut at 1024 tokens" in ans.text and "ASSISTANT_MAX_TOKENS" in ans.text
    assert [c.n for c in ans.citations] == [1]

    retriever.settings = retriever.settings.replace(max_tokens=0)  # no cap: the field is not sent
    mocked_openai_chat.return_value = sse_response("FL is studied [1].")
    assert answer_question(retriever, QUESTION, retriever.settings).complete
    assert "max_tokens" not in json.loads(mocked_openai_chat.calls.last.request.content)


def test_model_saying_no_answer_cites_nothing(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response(NO_ANSWER_PHRASE)
    ans = answer_question(retriever, QUESTION)
    assert not ans.answerable and ans.citations == []


def test_401_is_a_clean_error_without_retry_or_key(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = httpx.Response(
        401, json={"error": {"message": f"Incorrect API key provided: {FAKE_KEY}", "type": "invalid_request_error"}})
    with pytest.raises(LLMError) as info:
        answer_question(retriever, QUESTION)
    assert "OPENAI_API_KEY" in str(info.value) and FAKE_KEY not in str(info.value)
    assert mocked_openai_chat.call_count == 1


def test_404_names_the_model_and_the_setting(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = httpx.Response(404, json={"error": {"message": "model not found"}})
    with pytest.raises(LLMError, match="'test-model'.*ASSISTANT_MODEL"):
        answer_question(retriever, QUESTION)
    assert mocked_openai_chat.call_count == 1


def test_500_then_200_succeeds_after_a_retry(retriever, mocked_openai_chat):
    mocked_openai_chat.side_effect = [httpx.Response(500, json={"error": {"message": "boom"}}),
                                      sse_response("Recovered [1].")]
    ans = answer_question(retriever, QUESTION)
    assert ans.text == "Recovered [1]." and mocked_openai_chat.call_count == 2


def test_429_with_retry_after_is_retried(retriever, mocked_openai_chat):
    mocked_openai_chat.side_effect = [httpx.Response(429, headers={"retry-after": "0"}, json={"error": {}}),
                                      sse_response("Fine [1].")]
    assert answer_question(retriever, QUESTION).text == "Fine [1]."
    assert mocked_openai_chat.call_count == 2


def test_persistent_503_gives_up_with_a_clear_error(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = httpx.Response(503, json={"error": {"message": "overloaded"}})
    with pytest.raises(LLMError, match="HTTP 503"):
        answer_question(retriever, QUESTION)
    assert mocked_openai_chat.call_count == 3  # first try + ASSISTANT_LLM_MAX_RETRIES=2


def test_connection_refused_says_how_to_fix(retriever, mocked_openai_chat):
    mocked_openai_chat.side_effect = httpx.ConnectError("Connection refused")
    with pytest.raises(LLMError, match="cannot connect.*OPENAI_BASE_URL"):
        answer_question(retriever, QUESTION)


def test_malformed_json_response_is_an_llm_error(retriever, mocked_openai_chat, monkeypatch):
    from assistant.qa.llm import chat

    mocked_openai_chat.return_value = httpx.Response(200, content=b"{not json", headers={"content-type": "application/json"})
    with pytest.raises(LLMError):
        chat(retriever.settings, [{"role": "user", "content": "hi"}], stream=False)


def test_support_marks_flag_a_claim_its_source_does_not_back(retriever, mocked_openai_chat):
    mocked_openai_chat.return_value = sse_response(
        "Federated learning trains models across clients [1]. "
        "The Eiffel Tower was painted bright green in 1850 by medieval monks [1].")
    ans = answer_question(retriever, QUESTION)
    marks = {m["sentence"].split()[1]: m for m in ans.support}
    assert marks["learning"]["supported"] is True
    assert marks["Eiffel"]["supported"] is False
    assert all(m["citations"] == [1] for m in ans.support)
    assert ans.as_dict()["support"] == ans.support


def test_429_without_retry_after_backs_off_and_retries(retriever, mocked_openai_chat):
    mocked_openai_chat.side_effect = [httpx.Response(429, json={"error": {"message": "slow down"}}),
                                      sse_response("Later [1].")]
    assert answer_question(retriever, QUESTION).text == "Later [1]."
    assert mocked_openai_chat.call_count == 2


def test_timeouts_are_retried_then_reported(retriever, mocked_openai_chat):
    mocked_openai_chat.side_effect = httpx.ReadTimeout("timed out")
    with pytest.raises(LLMError, match="timed out.*ASSISTANT_LLM_TIMEOUT"):
        answer_question(retriever, QUESTION)
    assert mocked_openai_chat.call_count == 3


def _conversation_with_condense(index_dir, mocked_openai_chat, first: str, rewrite: str, second: str):
    """A conversation whose LLM answers ``first``, condenses the follow-up to ``rewrite``, answers ``second``."""
    from assistant.chat.conversation import Conversation

    settings = Settings.from_env(index_dir=index_dir)
    mocked_openai_chat.side_effect = [sse_response(first), httpx.Response(200, json=completion_json(rewrite)),
                                      sse_response(second)]
    return Conversation(Retriever(Index(settings), settings), settings)


def test_non_streaming_condense_request_for_followups(bundled_index_dir, mocked_openai_chat):
    """With an LLM, a follow-up is rewritten by the condense prompt before retrieval."""
    conv = _conversation_with_condense(bundled_index_dir, mocked_openai_chat, "SWD restores plasticity [1].",
                                       "What lightweight remedy does Sample Weight Decay propose?",
                                       "It decays sample weights [1].")
    first = conv.ask("Is there a theoretical analysis of plasticity loss in deep reinforcement learning?")
    ans = conv.ask("What remedy does it propose?")
    condense = json.loads(mocked_openai_chat.calls[1].request.content)
    assert condense.get("stream") in (None, False)
    prompt = condense["messages"][0]["content"]
    assert "plasticity loss" in prompt and "Last question: What remedy does it propose?" in prompt
    assert f"Sources: [1] {first.citations[0].title}" in prompt  # so "the second paper" can be resolved
    assert ans.retrieval_query == "What lightweight remedy does Sample Weight Decay propose?"
    assert ans.sources[0].paper_id == "003_22ceaf1a0eb8de0c#16"


def test_a_condense_that_leaves_the_reference_unresolved_falls_back_to_the_offline_combination(
        bundled_index_dir, mocked_openai_chat):
    """A small local model may hand "it" back unresolved: retrieve with the previous question and paper."""
    conv = _conversation_with_condense(bundled_index_dir, mocked_openai_chat,
                                       "LongFilter curates long-context data [1].",
                                       "How much does it improve results?", "It improves HELMET [1].")
    conv.ask("What is LongFilter about?")
    ans = conv.ask("how much does it improve results?")
    assert "LongFilter" in ans.retrieval_query and ans.sources[0].paper_id == "002_20c6bded0bdf1017#8"


def test_a_rewrite_the_corpus_cannot_answer_keeps_the_paper_talked_about(bundled_index_dir, mocked_openai_chat):
    """The condense prompt lost "it" ("does it use speculative decoding?" became a question on speculative decoding,
    which no paper here covers): the answerable model, as `ask` decides, reads the rewrite as unanswerable, so the
    follow-up is asked with the paper talked about. The hand-set cosine gate let the rewrite through, and the turn
    was refused."""
    conv = _conversation_with_condense(bundled_index_dir, mocked_openai_chat, "Qronos corrects rounding error [1].",
                                       "speculative decoding to speed up LLM inference, do we cover that",
                                       "The abstract does not mention speculative decoding [1].")
    conv.ask("What is Qronos?")
    ans = conv.ask("does it use speculative decoding?")
    assert ans.answerable and "Qronos" in ans.retrieval_query
    assert [c.paper_id for c in ans.citations] == ["001_920fbba894271a85#8"]


def test_token_usage_and_cost_are_accounted(retriever, mocked_openai_chat, monkeypatch):
    from assistant.cli.app import app
    from typer.testing import CliRunner

    monkeypatch.setenv("ASSISTANT_PRICE_IN", "1.0")
    monkeypatch.setenv("ASSISTANT_PRICE_OUT", "2.0")
    mocked_openai_chat.return_value = sse_response("Studied [1].")
    res = CliRunner().invoke(app, ["ask", QUESTION, "--verbose", "--index-dir", str(retriever.index.dir)])
    assert res.exit_code == 0
    assert "prompt 100, completion 20, total 120" in res.stderr and "$0.0001" in res.stderr
    res = CliRunner().invoke(app, ["ask", QUESTION, "--json", "--index-dir", str(retriever.index.dir)])
    usage = json.loads(res.stdout)["usage"]
    assert usage["total_tokens"] == 120 and usage["cost_usd"] == pytest.approx((100 * 1 + 20 * 2) / 1e6)


@pytest.mark.parametrize("status,pattern,calls", [
    (401, "rejected the API key", 1),
    (403, "refused access \\(403\\)", 1),
    (404, "'test-model' was not found", 1),
    (500, "HTTP 500", 3),
])
def test_non_streaming_errors_map_to_clear_messages(llm_env, mocked_openai_chat, status, pattern, calls):
    from assistant.qa.llm import chat

    mocked_openai_chat.return_value = httpx.Response(status, json={"error": {"message": f"boom {FAKE_KEY}"}})
    with pytest.raises(LLMError, match=pattern) as info:
        chat(Settings.from_env(), [{"role": "user", "content": "hi"}], stream=False)
    assert FAKE_KEY not in str(info.value)
    assert mocked_openai_chat.call_count == calls


def test_non_streaming_retries_then_succeeds_and_refused_connection(llm_env, mocked_openai_chat):
    from assistant.qa.llm import chat

    mocked_openai_chat.side_effect = [httpx.Response(429, json={"error": {}}),
                                      httpx.Response(502, json={"error": {}}),
                                      httpx.Response(200, json=completion_json("ok"))]
    assert chat(Settings.from_env(), [{"role": "user", "content": "hi"}], stream=False).text == "ok"
    mocked_openai_chat.side_effect = httpx.ConnectError("Connection refused")
    with pytest.raises(LLMError, match="cannot connect"):
        chat(Settings.from_env(), [{"role": "user", "content": "hi"}], stream=False)
