"""Conversation: follow-ups that name earlier sources ("the second one", "[3]") are answered from them."""

import json
import re

import pytest

from assistant.text.english import CONTRIBUTION_RE
from assistant.chat.conversation import CHAT_ONLY, Conversation, references, without_references
from assistant.config import Settings
from assistant.errors import InputError
from assistant.store.index import Index
from assistant.search.retrieve import Retriever

from .conftest import sse_response


@pytest.mark.parametrize("question, numbers, positions", [
    ("how does the second one handle privacy?", [], [2]),
    ("What does the second say about privacy?", [], [2]),
    ("compare [1] and [3]", [1, 3], []),
    ("what does [2, 4] report?", [2, 4], []),
    ("what does paper 2 propose?", [2], []),
    ("papers 1 and 4: which is faster?", [1, 4], []),
    ("what about source #3", [3], []),
    ("tell me more about #2", [2], []),
    ("#1 vs #3?", [1, 3], []),
    ("compare the first and third papers", [], [1, 3]),
    ("Is the 2nd work better than the 1st?", [], [2, 1]),
    ("and the last one?", [], [-1]),
    # not references: an ordinal inside an ordinary noun phrase, a year, no number at all
    ("what is the first step of the method?", [], []),
    ("what was the second experiment?", [], []),
    ("how many papers from 2025 study this?", [], []),
    ("what does it propose?", [], []),
    ("show 001_920fbba894271a85#8", [], []),
    ("is it written in C#?", [], []),
])
def test_references_are_parsed_from_the_question(question, numbers, positions):
    assert references(question) == (numbers, positions)


def test_reference_words_are_removed_from_what_the_papers_are_asked():
    assert without_references("how does the second one handle privacy?") == "how does handle privacy?"
    assert without_references("compare [1] and [3]") == "compare and"


@pytest.fixture
def conversation(bundled_index_dir):
    settings = Settings.from_env(index_dir=bundled_index_dir)
    return Conversation(Retriever(Index(settings), settings), settings)


def test_the_second_one_is_the_second_source_of_the_previous_answer(conversation):
    first = conversation.ask("what work exists on federated learning?")
    shown = sorted(first.citations, key=lambda c: c.n)
    assert len(shown) >= 3
    ans = conversation.ask("how does the second one handle privacy?")
    assert ans.answerable and [c.paper_id for c in ans.citations] == [shown[1].paper_id]
    assert [h.paper_id for h in ans.sources] == [shown[1].paper_id]
    assert "privacy" in ans.text.lower()
    assert ans.question == "how does the second one handle privacy?"  # stored as asked
    # the next turn counts from this answer's own Sources list
    again = conversation.ask("and the last one?")
    assert [c.paper_id for c in again.citations] == [shown[1].paper_id]


def test_an_offline_followup_about_it_quotes_only_that_paper(conversation):
    first = conversation.ask("What work exists on continual instruction tuning of multimodal models?")
    top = min(first.citations, key=lambda c: c.n).paper_id
    ans = conversation.ask("what datasets did it use?")
    # the combined query also finds a dataset-distillation paper; "it" is the paper talked about
    assert {c.paper_id for c in ans.citations} == {top}


def test_an_offline_followup_asking_two_things_quotes_both_answers(conversation):
    """"How many tasks ..., and what overall F1 ...?": the sentence with the number of tasks, not the ones that
    restate what the first turn asked ("Information tasks such as writing surveys ...")."""
    conversation.ask("I'm looking for a paper that formally characterizes the 'deep research' task and builds a "
                     "benchmark for it.")
    ans = conversation.ask("How many tasks does that benchmark have, and what overall F1 did the best system get?")
    assert ans.citations[0].paper_id == ans.retrieved[0].paper_id and "0.55" in ans.text


def test_an_offline_followup_on_one_paper_answers_its_own_question_not_the_first_turns_framing(conversation):
    """"Has anyone made X work ...?" reads as an area question; the follow-up on the one paper found asks a detail,
    and gets the sentences that answer it, not the abstract's opening background as a summary."""
    conversation.ask("Has anyone made grammar-constrained decoding work for diffusion language models?")
    ans = conversation.ask("What more general problem do they reduce it to, and on which applications did they "
                           "evaluate it?")
    assert [c.paper_id for c in ans.citations] == ["001_920fbba894271a85#18"]
    assert "additive infilling" in ans.text and "C++ code infilling" in ans.text


def test_a_question_that_names_its_own_paper_or_says_it_is_new_starts_afresh(conversation):
    """"Different question: is there a paper on X? What does it find?": "it" is the new paper, not the one talked
    about (combined with the previous question and paper, every such switch cited the old paper first)."""
    conversation.ask("Is there a paper comparing SGD with Polyak momentum to online SGD through a high-dimensional "
                     "scaling limit?")
    # (a literal placeholder "X" reads as a follow-up: "for X" embeds like "for it"; a topic is what users type)
    assert conversation.starts_afresh("Different question: is there a benchmark for web agents, and what gap do "
                                      "they find?")
    assert conversation.starts_afresh("Switching gears: which paper does federated clustering, and what does it do?")
    assert conversation.starts_afresh("OK, a different one: there's a paper proposing ICA post-processing. Where?")
    for followup in ["Which two algorithms does it analyze?", "Which benchmark did they use?",
                     "What lightweight remedy does it propose, and which RL algorithms was it evaluated with?",
                     "what datasets did it use?", "and the second one?"]:
        assert not conversation.starts_afresh(followup), followup
    ans = conversation.ask("Different question: is there a theoretical paper on in-context learning of Hölder "
                           "functions on manifolds with transformers? What does their regression rate depend on?")
    assert ans.citations[0].paper_id == "004_b9c85a56bb10ecbe#11"


def test_a_short_detail_question_stays_with_the_paper_talked_about(conversation):
    """"Which datasets?" asks the paper just discussed, though its abstract names them ("FACET and CARLA")
    without the word: it was asked on its own and answered from a dataset-distillation paper."""
    conversation.ask("Which paper tackles the privacy-fairness trade-off in federated object detection for "
                     "autonomous vehicles?")
    ans = conversation.ask("Which datasets?")
    assert ans.citations[0].paper_id == "004_b9c85a56bb10ecbe#5" and "FACET and CARLA" in ans.text


def test_a_question_only_the_paper_talked_about_answers_is_about_it(conversation):
    """No "it", but the corpus cannot answer it alone and the previous paper has its words ("oracle upper
    bound"): asked on its own, it was refused."""
    conversation.ask("Which paper pretrains language models on a synthesized corpus produced by first learning "
                     "relations between documents in the pretraining data?")
    ans = conversation.ask("How does the gain compare to the oracle upper bound?")
    assert ans.answerable and ans.citations[0].paper_id == "003_22ceaf1a0eb8de0c#17"
    assert "20x more unique data" in ans.text
    # a new question the corpus cannot answer stays refused
    assert not conversation.ask("Is there work on global weather forecasting with deep learning?").answerable


def test_tell_me_more_quotes_what_the_paper_talked_about_says_besides(conversation):
    """"Tell me more" after an answer about one paper: that paper only, sentences not quoted yet (it was asked
    as a follow-up, quoted two other papers and repeated what was shown)."""
    first = conversation.ask("which paper handles fairness in federated object detection?")
    top = min(first.citations, key=lambda c: c.n).paper_id
    shown = {line for line in first.text.splitlines()}
    more = conversation.ask("tell me more")
    assert {c.paper_id for c in more.citations} == {top}
    assert more.text and not shown & set(more.text.splitlines())
    # after an area question's list it is not clear which paper is meant: asked as a follow-up
    conversation.ask("what work exists on federated learning?")
    assert len({c.paper_id for c in conversation.ask("tell me more").citations}) > 1


def test_tell_me_more_says_so_when_the_abstract_is_all_quoted(conversation):
    """Asked again and again, "tell me more" repeated the first sentences word for word once the abstract was all
    quoted; now it says there is nothing more, and where the whole abstract is, still citing the paper."""
    first = conversation.ask("What is Qronos?")
    pid = first.citations[0].paper_id
    quoted = set(first.text.splitlines())
    for _ in range(4):
        more = conversation.ask("tell me more")
        assert [c.paper_id for c in more.citations] == [pid]
        if more.text.startswith("Nothing more"):
            break
        assert not quoted & set(more.text.splitlines())  # each time something not quoted yet
        quoted |= set(more.text.splitlines())
    assert more.text == f"Nothing more: every sentence of its abstract is quoted above (/show {pid} prints it whole)."


def test_tell_me_more_reads_a_titled_paper_s_first_line_as_quoted(tmp_path):
    """A paper with a title of its own is quoted "<title> — <sentence> [1]" first; read as a different sentence,
    its first sentence was quoted again and the background before it left out, then "Nothing more" said falsely."""
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    from .conftest import FIXTURES

    settings = Settings(index_dir=tmp_path / "index")
    ingest(load_papers([FIXTURES / "titled.jsonl"])[0], settings)
    conv = Conversation(Retriever(Index(settings), settings), settings)
    first = conv.ask("What is AsyncPatch Diffusion?")
    pid = first.citations[0].paper_id
    abstract = conv.retriever.papers()[pid].abstract
    seen = []
    for _ in range(6):
        more = conv.ask("tell me more")
        if more.text.startswith("Nothing more"):
            break
        seen += re.findall(r"^- (?:.* — )?(.*?) \[1\]$", more.text, re.M)
    quoted = re.findall(r"^- (?:.* — )?(.*?) \[1\]$", first.text, re.M) + seen
    assert more.text.startswith("Nothing more") and len(seen) == len(set(seen))
    assert set(conv._sentences(pid)) <= set(quoted) and all(q in abstract for q in quoted)


def test_a_cleared_conversation_s_questions_are_of_the_scope_in_force(conversation):
    """After a /filter change and /clear, the questions asked since are the current scope's, not stale ones."""
    conversation.ask("What is Qronos?")
    conversation.set_filter("off")
    conversation.clear()
    conversation.ask("what is there on flow matching?")
    assert not conversation._asked_before_scope(conversation.turns[0])


def test_pleasantries_are_not_asked_of_the_papers(conversation):
    """"hmm ok, and how did GPT-5 do ...?" after "cool, how big is the dataset?": the interjections kept the
    last question off the paper talked about, and it was refused. The turns keep what was typed."""
    without_chitchat = conversation.without_chitchat
    assert without_chitchat("haha nice name. so what's the core idea?") in ("what's the core idea?",
                                                                           "so what's the core idea?")
    assert without_chitchat("hi :) any papers on dilemmas?") == "any papers on dilemmas?"
    for kept in ["Graph transformers. Which papers use them?", "Great Barrier Reef coral models?",
                 "Right-to-left decoding. Which paper?", "Well-calibrated models?", "In LoRA fine-tuning, which "
                 "paper merges adapters?"]:
        assert without_chitchat(kept) == kept
    conversation.ask("hi :) any papers on how LLMs handle high-stakes dilemmas with conflicting values?")
    conversation.ask("cool, how big is the dataset?")
    ans = conversation.ask("hmm ok, and how did GPT-5 do on the ambivalent decisions?")
    assert ans.answerable and ans.citations[0].paper_id == "004_b9c85a56bb10ecbe#8"
    assert ans.question == "hmm ok, and how did GPT-5 do on the ambivalent decisions?"
    assert conversation.turns[-1].question == ans.question
    # a line with nothing to search for gets a hint, not "no paper addresses this question"
    thanks = conversation.ask("thanks!")
    assert not thanks.answerable and thanks.text == CHAT_ONLY and thanks.citations == []


def test_is_there_one_too_stays_on_the_topic(conversation):
    """"Is there a benchmark too?" asks for more on the topic talked about, though "is there a ..." names a
    paper of its own elsewhere."""
    conversation.ask("anything on auto-generating scientific illustrations?")
    conversation.ask("is there a benchmark too?")
    ans = conversation.ask("how many text-figure pairs does it have?")
    assert ans.citations[0].paper_id == "003_22ceaf1a0eb8de0c#3" and "3,300" in ans.text


def test_the_one_described_is_chosen_among_the_papers_cited(conversation):
    """"Tell me about the multimodal one": one of the papers just listed, by what it is; "the one on vision token
    pruning" when none of them is: the corpus's paper on it."""
    conversation.ask("What work exists on dataset distillation?")
    ans = conversation.ask("Tell me about the multimodal one.")
    assert ans.citations[0].paper_id == "001_920fbba894271a85#19"


def test_an_offline_followup_comparing_it_with_a_named_paper_quotes_both(conversation):
    conversation.ask("What is LongFilter about?")
    ans = conversation.ask("compare it with DeepEyes")
    assert {c.paper_id for c in ans.citations} == {"002_20c6bded0bdf1017#8", "000_c647aebf503422f2#14"}


def test_a_paper_named_by_an_acronym_spelled_out_with_inner_capitals_is_that_paper_mid_conversation(conversation):
    """PRISM's abstract writes it once, as "PRISM (Progressive Robust dIscovery under StreaMing data)": after a
    federated-learning answer, "what about PRISM? how does it ...?" was read as a follow-up on RESFL."""
    from assistant.search.names import defined_acronyms

    assert defined_acronyms("PRISM (Progressive Robust dIscovery under StreaMing data), a framework") == {"PRISM"}
    assert defined_acronyms("Multi-Agent Systems (MAS) offer a paradigm") == {"MAS"}
    assert defined_acronyms("the PRISM of Robust Information Sets") == set()  # capitals that do not spell it
    conversation.ask("papers on federated learning?")
    ans = conversation.ask("what about PRISM? how does it separate seen from unseen categories?")
    assert [c.paper_id for c in ans.citations] == ["003_22ceaf1a0eb8de0c#8"]


def test_two_named_papers_set_side_by_side_are_the_comparison_without_the_one_talked_about(conversation):
    """"LumiTex vs Part-X-MLLM" after an answer on another paper compares those two; "compare it with DeepEyes"
    (one name) still brings "it" along (the test above)."""
    conversation.ask("What is LongFilter about?")
    ans = conversation.ask("LumiTex vs Part-X-MLLM: how do their inputs and outputs differ?")
    assert {c.paper_id for c in ans.citations} == {"002_20c6bded0bdf1017#3", "004_b9c85a56bb10ecbe#6"}


def test_bracketed_numbers_name_several_sources_and_each_is_quoted(conversation):
    first = conversation.ask("what work exists on federated learning?")
    by_n = {h.rank: h.paper_id for h in first.sources}
    ans = conversation.ask("compare [3] and [1]")
    # the named papers are the sources, renumbered in the order they were named
    assert [h.paper_id for h in ans.sources] == [by_n[3], by_n[1]]
    assert [(c.n, c.paper_id) for c in ans.citations] == [(1, by_n[3]), (2, by_n[1])]
    assert conversation.retriever.allowed is None  # the pin lasts one turn


def test_a_hashtag_number_is_the_source_with_that_number(conversation):
    first = conversation.ask("what work exists on federated learning?")
    by_n = {h.rank: h.paper_id for h in first.sources}
    ans = conversation.ask("tell me more about #2")
    assert [c.paper_id for c in ans.citations] == [by_n[2]]


def test_a_named_paper_is_answered_even_when_the_gate_would_refuse(bundled_index_dir):
    """The user chose the paper: it is quoted even if its match would not clear the relevance gate."""
    settings = Settings.from_env(index_dir=bundled_index_dir, min_relevance=0.99)  # the gate refuses all
    conv = Conversation(Retriever(Index(settings), settings), settings)
    conv.ask("what work exists on federated learning?")
    assert not conv.last.answer.answerable
    target = conv.last.answer.related[0].paper_id  # the nearest papers a refusal lists
    ans = conv.ask("what does paper 1 say about privacy?")
    assert ans.answerable and [c.paper_id for c in ans.citations] == [target]


def test_a_source_the_previous_answer_does_not_have_is_a_clear_error(conversation):
    conversation.ask("what work exists on federated learning?")
    with pytest.raises(InputError, match=r"no source \[12\].*/sources"):
        conversation.ask("what does paper 12 propose?")
    with pytest.raises(InputError, match="no ninth one"):
        conversation.ask("what does the ninth one propose?")
    assert len(conversation.turns) == 1  # a failed turn is not recorded


def test_without_a_previous_answer_numbers_are_just_words(conversation):
    ans = conversation.ask("what does paper 2 of the federated learning literature propose?")
    assert len(conversation.turns) == 1  # no "the last answer has no source" error: there is no last answer
    assert {c.paper_id for c in ans.citations} <= FL and {h.paper_id for h in ans.retrieved[:3]} & FL


def _llm_conversation(index_dir, mocked_openai_chat, replies: list[str]) -> Conversation:
    """A conversation whose LLM streams ``replies`` in turn."""
    settings = Settings.from_env(index_dir=index_dir)
    mocked_openai_chat.side_effect = [sse_response(r) for r in replies]
    return Conversation(Retriever(Index(settings), settings), settings)


def _llm_conversation_on_federated_learning(index_dir, mocked_openai_chat, next_reply: str):
    """An LLM conversation whose first answer cited four federated-learning papers; the LLM's next reply
    is ``next_reply``. Returns the conversation and that first answer."""
    conv = _llm_conversation(index_dir, mocked_openai_chat, ["FL work includes [1], [2], [3] and [4].", next_reply])
    return conv, conv.ask("what work exists on federated learning?")


def test_with_an_llm_the_named_papers_are_the_only_sources_sent(bundled_index_dir, mocked_openai_chat):
    conv, first = _llm_conversation_on_federated_learning(bundled_index_dir, mocked_openai_chat,
                                                          "It adds calibrated noise [1].")
    second_source = first.sources[1]
    ans = conv.ask("how does the second one handle privacy?")
    assert mocked_openai_chat.call_count == 2  # no condense call: the reference was resolved directly
    user = json.loads(mocked_openai_chat.calls[1].request.content)["messages"][-1]["content"]
    assert user.count("<source ") == 1 and f'id="{second_source.paper_id}"' in user
    assert "how does the second one handle privacy? (The user means the source below, [1].)" in user
    assert [c.paper_id for c in ans.citations] == [second_source.paper_id]



def test_with_an_llm_a_number_it_did_not_cite_points_at_nothing_as_offline(bundled_index_dir, mocked_openai_chat):
    """The LLM cited [1] and [2] of five sources: /sources listed two, but "what does [3] say?" and /show 3 reached
    the third, which the user was never shown. Offline, an uncited number is refused; now with an LLM too."""
    conv = _llm_conversation(bundled_index_dir, mocked_openai_chat, ["FL work includes [1] and [2]."])
    first = conv.ask("what work exists on federated learning?")
    assert [c.n for c in first.citations] == [1, 2] and len(first.sources) > 2
    with pytest.raises(InputError, match=r"no source \[3\] \(it cited \[1\], \[2\]\)"):
        conv.ask("what does [3] say about privacy?")
    assert conv.numbered(2)[0] == first.sources[1].paper_id


def test_with_an_llm_a_question_the_corpus_answers_as_asked_is_not_rewritten(bundled_index_dir, mocked_openai_chat):
    """No "it" and answerable on its own: nothing for the condense prompt to resolve (a small model's rewrite
    of "How does MergOPT work?" lost the name and was refused), and one LLM call fewer."""
    conv, _ = _llm_conversation_on_federated_learning(bundled_index_dir, mocked_openai_chat,
                                                      "MergOPT injects merge-induced parameter shifts [1].")
    ans = conv.ask("How does MergOPT work?")
    assert mocked_openai_chat.call_count == 2  # the first answer and this one: no condense call
    user = json.loads(mocked_openai_chat.calls[1].request.content)["messages"][-1]["content"]
    assert 'id="002_20c6bded0bdf1017#15"' in user and ans.citations[0].paper_id == "002_20c6bded0bdf1017#15"


def test_with_an_llm_that_cited_nothing_tell_me_more_is_about_its_first_source(bundled_index_dir, mocked_openai_chat):
    conv = _llm_conversation(bundled_index_dir, mocked_openai_chat, ["RESFL balances privacy and fairness.",
                                                                     "It also uses evidential aggregation [1]."])
    first = conv.ask("which paper handles fairness in federated object detection?")
    assert not first.citations
    more = conv.ask("tell me more")
    user = json.loads(mocked_openai_chat.calls[1].request.content)["messages"][-1]["content"]
    assert user.count("<source ") == 1 and f'id="{first.sources[0].paper_id}"' in user
    assert [c.paper_id for c in more.citations] == [first.sources[0].paper_id]


RESFL = "004_b9c85a56bb10ecbe#5"  # federated learning with fairness-aware aggregation
FL_DP = "001_920fbba894271a85#10"  # the convergent privacy of FL with differential privacy
FL = {RESFL, FL_DP, "000_c647aebf503422f2#1", "002_20c6bded0bdf1017#1"}  # the four federated-learning papers


def test_which_of_them_chooses_among_the_papers_the_answer_cited(conversation):
    """"Which of them handles fairness?" asks which of the papers just listed; offline, combining it with
    the previous question and its top paper quoted that paper's privacy sentences (and none on fairness)."""
    first = conversation.ask("Has anyone studied federated learning?")
    listed = {c.paper_id for c in first.citations}
    assert {RESFL, FL_DP} <= listed
    fair = conversation.ask("which of them handles fairness?")
    assert fair.answerable and fair.citations[0].paper_id == RESFL
    assert {c.paper_id for c in fair.citations} <= listed and "fairness" in fair.text
    # "it" is now the paper just chosen
    data = conversation.ask("what dataset does it use?")
    assert {c.paper_id for c in data.citations} == {RESFL}
    # "them" is still the list, and none of those papers is on reinforcement learning
    rl = conversation.ask("do any of them use reinforcement learning?")
    assert not rl.answerable and rl.citations == []
    assert rl.text == f"None of the {len(listed)} papers cited earlier addresses this."
    bound = conversation.ask("which one proves a convergence bound?")
    assert bound.answerable and bound.citations[0].paper_id == FL_DP


SEQUENCE_MODELS = "New sequence-model architectures beyond standard transformers?"
IEEG = "003_22ceaf1a0eb8de0c#5"  # a foundation model for long-term iEEG recordings, ranked fifth for SEQUENCE_MODELS


def test_which_of_them_after_an_area_answer_citing_one_paper_chooses_among_that_questions_papers(conversation):
    """An area question answered with one paper leaves no list; "any built for brain recordings?" was read as a
    follow-up on that one paper. "Them" is the papers the area question found: those it cited, then those its
    search ranked next (tuning.among_area_list), and the answer says where they come from."""
    first = conversation.ask(SEQUENCE_MODELS)
    assert first.intent == "area" and first.answerable and len(first.citations) == 1
    assert IEEG in [h.paper_id for h in first.retrieved[:conversation.settings.tuning.among_area_list]]
    brain = conversation.ask("Any built for brain recordings?")
    assert [c.paper_id for c in brain.citations] == [IEEG]
    assert brain.text.startswith(f"From the {conversation.settings.tuning.among_area_list} papers found for the "
                                 "earlier question:")


def test_none_of_an_area_questions_papers_says_they_were_found_not_cited(conversation):
    first = conversation.ask("What do you have about repurposing pretrained diffusion models without retraining?")
    assert first.intent == "area" and len(first.citations) == 1
    audio = conversation.ask("any of those applied to audio?")
    assert not audio.answerable and audio.citations == []
    assert audio.text == (f"None of the {conversation.settings.tuning.among_area_list} papers found for the earlier "
                          "question addresses this.")


def test_after_a_question_asking_for_one_paper_there_is_no_them_to_choose_among(conversation):
    first = conversation.ask("How does MergOPT work?")
    assert first.intent == "paper"
    assert conversation.kind("which of them use reinforcement learning?") != "among"


def test_an_area_answer_whose_search_found_one_paper_leaves_no_choice(conversation):
    """A choice is among several: an area answer whose search found only the paper it cited has no "them"."""
    from assistant.qa.answer import Answer, Citation
    from assistant.search.retrieve import Hit

    hit = Hit(paper_id=RESFL, title="RESFL", score=0.5, snippet="s")
    conversation.resume([Answer(question="fairness in federated learning?", text="- s [1]", mode="extractive",
                                answerable=True, intent="area", sources=[hit], retrieved=[hit],
                                citations=[Citation(n=1, paper_id=RESFL, title="RESFL", snippet="s", score=0.5)])])
    assert conversation.kind("which of them use reinforcement learning?") != "among"


def test_with_an_llm_an_area_answer_citing_one_paper_sends_that_questions_papers(bundled_index_dir,
                                                                                  mocked_openai_chat):
    conv = _llm_conversation(bundled_index_dir, mocked_openai_chat,
                             ["One such architecture is [1].", "The iEEG model [5] is."])
    first = conv.ask(SEQUENCE_MODELS)
    assert first.intent == "area" and len(first.citations) == 1
    conv.ask("Any built for brain recordings?")
    assert mocked_openai_chat.call_count == 2  # no condense call: "them" is the area question's papers
    user = json.loads(mocked_openai_chat.calls[1].request.content)["messages"][-1]["content"]
    sent = re.findall(r'<source [^>]*id="([^"]+)"', user)
    assert len(sent) == conv.settings.tuning.among_area_list and IEEG in sent
    assert "(The user means the papers below, found for the previous question.)" in user


def test_which_of_them_answers_from_every_one_that_holds_it_when_none_stands_out(conversation):
    """"Which of them are benchmarks?" when both are: both, not only the one ranked first (nor "none of them")."""
    benchmarks = {"000_c647aebf503422f2#3", "001_920fbba894271a85#3"}
    listed = {c.paper_id for c in conversation.ask("Which papers study LLM agents?").citations}
    assert benchmarks <= listed
    chosen = {c.paper_id for c in conversation.ask("which of them are benchmarks?").citations}
    assert chosen & benchmarks and chosen <= listed


def test_with_an_llm_which_of_them_sends_the_papers_cited_before_for_it_to_choose(bundled_index_dir,
                                                                                    mocked_openai_chat):
    """The LLM reads every paper the last answer cited and chooses by meaning (the cosine can prefer an attack
    paper that mentions defenses to the defence); nothing else is sent."""
    conv, first = _llm_conversation_on_federated_learning(bundled_index_dir, mocked_openai_chat, "RESFL does [1].")
    cited = {c.paper_id for c in first.citations}
    ans = conv.ask("which of them handles fairness?")
    assert mocked_openai_chat.call_count == 2  # no condense call: "them" is the list just cited
    user = json.loads(mocked_openai_chat.calls[1].request.content)["messages"][-1]["content"]
    sent = re.findall(r'<source [^>]*id="([^"]+)"', user)
    assert set(sent) == cited and sent[0] == RESFL  # all of them, the closest first
    assert "(The user means the papers below, from the previous answer.)" in user
    assert ans.citations[0].paper_id in cited


def test_with_an_llm_the_defence_reaches_the_model_when_asked_which_of_them_proposes_one(bundled_index_dir,
                                                                                          mocked_openai_chat):
    """Issue 28's example: offline the cosine picks ChatInject (an attack that mentions defenses); with an LLM,
    ASIDE (the defence) is among the sources sent, and the answer cites what the model cites."""
    aside = "002_20c6bded0bdf1017#9"
    conv = _llm_conversation(bundled_index_dir, mocked_openai_chat,
                             ["ChatInject [1] attacks; ASIDE [2] separates instructions from data.", "ASIDE does [2]."])
    first = conv.ask("what work exists on prompt injection?")
    assert aside in {c.paper_id for c in first.citations}
    ans = conv.ask("which of them proposes a defense?")
    user = json.loads(mocked_openai_chat.calls[-1].request.content)["messages"][-1]["content"]
    sent = re.findall(r'<source [^>]*id="([^"]+)"', user)
    assert aside in sent and set(sent) <= {c.paper_id for c in first.citations}
    assert [c.paper_id for c in ans.citations] == [sent[1]] and sent[1] == aside


def test_compare_the_first_and_second_quotes_what_each_contributes(conversation):
    """Nothing asked but "compare": each paper's gist (what it proposes), not the sentences that best match
    the previous question ("Federated Learning (FL) is a privacy-preserving ... framework")."""
    first = conversation.ask("what work exists on federated learning?")
    shown = [c.paper_id for c in sorted(first.citations, key=lambda c: c.n)][:2]
    ans = conversation.ask("compare the first and second")
    assert [c.paper_id for c in ans.citations] == shown
    lines = [line for line in ans.text.splitlines() if line.startswith("- ")]
    for n in (1, 2):
        own = [line for line in lines if line.endswith(f"[{n}]")]
        assert len(own) >= 2 and any(CONTRIBUTION_RE.search(line) for line in own), own
    assert not any(re.match(r"- Federated Learning \(FL\) (?:is|has)", line) for line in lines)


DIFFUSION = {"000_c647aebf503422f2#9", "001_920fbba894271a85#5", "001_920fbba894271a85#16", "001_920fbba894271a85#18",
             "002_20c6bded0bdf1017#16", "003_22ceaf1a0eb8de0c#13", "004_b9c85a56bb10ecbe#7"}  # which_labels.jsonl


def test_a_short_followup_on_a_new_topic_is_asked_on_its_own(conversation):
    """"What about diffusion models?" after a question on FigureBench: combined with that question and
    paper, it was answered with FigureBench sentences that never mention diffusion."""
    first = conversation.ask("What is FigureBench?")
    figurebench = first.citations[0].paper_id
    ans = conversation.ask("what about diffusion models?")
    cited = {c.paper_id for c in ans.citations}
    assert figurebench not in cited and len(cited & DIFFUSION) >= max(1, len(cited) - 1)
    assert "diffusion" in ans.text.lower()
    # a word the previous top paper has keeps the conversation's context
    conversation.ask("what work exists on federated learning?")
    privacy = conversation.ask("what about privacy?")
    assert privacy.citations[0].paper_id in FL and "privacy" in privacy.text.lower()


def test_which_of_them_is_not_decided_by_a_word_most_papers_have(conversation):
    """Of three diffusion papers only one has the word "use": that says nothing about "guidance"."""
    conversation.ask("What is FigureBench?")
    listed = {c.paper_id for c in conversation.ask("what about diffusion models?").citations}
    assert len(listed) >= 2
    ans = conversation.ask("which ones use guidance?")
    assert not ans.answerable and ans.text.startswith("None of the")


def test_with_an_llm_that_cited_nothing_them_are_the_sources_it_listed(bundled_index_dir, mocked_openai_chat):
    """An uncited LLM answer lists the sources it was given; "which of them ..." chooses among those."""
    conv = _llm_conversation(bundled_index_dir, mocked_openai_chat,
                             ["Federated learning trains models across clients.", "RESFL does [1]."])
    uncited = conv.ask("Has anyone studied federated learning?")
    assert uncited.answerable and uncited.citations == []
    conv.ask("which of them handles fairness?")
    user = json.loads(mocked_openai_chat.calls[-1].request.content)["messages"][-1]["content"]
    sent = set(re.findall(r'<source [^>]*id="([^"]+)"', user))
    assert sent and sent <= {h.paper_id for h in uncited.sources} and RESFL in sent


def test_which_of_them_with_a_typo_reads_the_mended_word(conversation):
    """BM25 reads the mended word too: typed "fairnes", it still singles out RESFL's "fairness"."""
    conversation.ask("Has anyone studied federated learning?")
    ans = conversation.ask("which of them handles fairnes?")
    assert ans.answerable and ans.citations[0].paper_id == RESFL


def test_a_few_words_on_a_topic_are_searched_and_a_pleasantry_gets_the_hint(conversation):
    """Short first turns: a keyword query ("federated?") or a paper's name is asked of the papers; a pleasantry
    is not searched."""
    for query in ["federated?", "UML?", "graph transformers"]:
        conversation.clear()
        assert conversation.ask(query).text != CHAT_ONLY, query
    conversation.clear()
    bye = conversation.ask("see ya later!")
    assert bye.text == CHAT_ONLY and not bye.answerable and bye.citations == []


def test_a_paper_removed_in_another_terminal_is_no_longer_cited_by_an_open_chat(mini_index):
    """Issue 47 row 9: a paper removed by `remove` while a chat was open in another terminal was still cited and
    shown by that chat."""
    import os
    import subprocess
    import sys

    settings = Settings(index_dir=mini_index)
    conv = Conversation(Retriever(Index(settings), settings), settings)
    first = conv.ask("What is Mixture-of-Thought?")
    assert first.citations and first.citations[0].paper_id == "mini#2"
    done = subprocess.run([sys.executable, "-m", "assistant", "remove", "mini#2", "--index-dir", str(mini_index)],
                          capture_output=True, text=True, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    assert done.returncode == 0, done.stderr
    for question in ("how does it work?", "What is Mixture-of-Thought?", "compare [1] with the others"):
        try:
            answer = conv.ask(question)
        except InputError as exc:  # a reference to what is gone is said in one line
            assert "mini#2" in str(exc) or "no longer" in str(exc), question
            continue
        cited = {c.paper_id for c in answer.citations} | {h.paper_id for h in answer.sources}
        assert "mini#2" not in cited, (question, cited)
    with pytest.raises(InputError):
        conv.paper("mini#2")
    assert conv.paper_count() == 5


# --- what a follow-up refers to (issue 49): the last answer that cited papers -----------------------------------


def test_compare_the_first_two_is_the_first_two_sources_of_the_answer(conversation):
    first = conversation.ask("what work exists on federated learning?")
    shown = [c.paper_id for c in sorted(first.citations, key=lambda c: c.n)]
    assert len(shown) >= 3
    ans = conversation.ask("compare the first two")
    assert [c.paper_id for c in ans.citations] == shown[:2]
    assert conversation.referenced("what do the last two propose?") == \
        [(c.paper_id, c.title) for c in sorted(ans.citations, key=lambda c: c.n)][-2:]


def test_a_refused_turn_leaves_the_references_where_they_were(conversation):
    """After a refusal, "[1] and [2]" and "the second one" still mean the last answer that cited papers, and /sources
    (Conversation.referent) shows that answer."""
    first = conversation.ask("what work exists on federated learning?")
    shown = [c.paper_id for c in sorted(first.citations, key=lambda c: c.n)]
    refused = conversation.ask("is there anything on protein folding with cryo-EM maps?")
    assert not refused.answerable and not refused.citations
    assert conversation.referent() is first
    ans = conversation.ask("compare [1] and [2]")
    assert [c.paper_id for c in ans.citations] == shown[:2]


def test_a_new_topic_ends_them(conversation):
    """A list, then an answer on another topic citing a paper not on it: "which of them ...?" is no longer a choice
    among the list (it answered from a list two turns back)."""
    listed = conversation.ask("which papers use reinforcement learning?")
    assert len(listed.citations) >= 2
    assert conversation.among("which of them use self-play?")  # still the list
    switched = conversation.ask("Different question: is there anything on ECG signals?")
    assert switched.citations and not {c.paper_id for c in switched.citations} & {c.paper_id for c in listed.citations}
    assert conversation.among("which of them use a state-space model?") == []


def test_a_followup_after_a_refused_turn_is_about_the_paper_talked_about_before(conversation):
    """A refusal in between does not become what "it" is: the follow-up is read against the last answer that
    cited papers (it was asked as "is there any work on sentiment analysis ...? how long are the inputs ...?")."""
    conversation.ask("What is LongFilter about?")
    refused = conversation.ask("is there any work on sentiment analysis of tweets?")
    assert not refused.citations
    ans = conversation.ask("how long are the inputs it handles?")
    assert [c.paper_id for c in ans.citations] == ["002_20c6bded0bdf1017#8"]


def test_a_followup_naming_another_paper_is_about_that_paper_unless_it_compares(conversation):
    """"And in DeepEyes, ...?" asks DeepEyes what was asked of LongFilter: DeepEyes alone; "compare it with
    DeepEyes" is about both (test above)."""
    conversation.ask("What is LongFilter about?")
    ans = conversation.ask("and in DeepEyes, which reward does it use?")
    assert [c.paper_id for c in ans.citations] == ["000_c647aebf503422f2#14"]



def test_which_of_them_about_a_name_is_the_papers_that_write_it(conversation):
    """A choice about a dataset's name reads the name, as `which` does: of the two dataset-distillation papers,
    the multimodal one reports on COCO; neither writes CIFAR-10 (the closest sentence chose the multimodal one)."""
    conversation.ask("What work exists on dataset distillation?")
    coco = conversation.ask("which of them report results on COCO?")
    assert [c.paper_id for c in coco.citations] == ["001_920fbba894271a85#19"]
    cifar = conversation.ask("which of them use CIFAR-10?")
    assert not cifar.citations and cifar.text == "None of the 2 papers cited earlier writes CIFAR-10."


def test_which_of_them_about_a_name_one_outside_paper_writes_is_none_of_them(conversation):
    """ImageNet is written by one abstract only (DLIF, spiking networks), so it read as DLIF's name, and "which of
    them use ImageNet?" after the federated-learning papers answered DLIF; the next choice then had no list. A paper
    is asked of the corpus only when called by the name it contributes ("the one with MergOPT")."""
    first = conversation.ask("Which papers study federated learning?")
    listed = {c.paper_id for c in first.citations}
    imagenet = conversation.ask("which of them use ImageNet?")
    assert not imagenet.citations and imagenet.text.endswith("cited earlier writes ImageNet.")
    fairness = conversation.ask("which of them handles fairness?")
    assert fairness.citations and {c.paper_id for c in fairness.citations} <= listed
