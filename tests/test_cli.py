"""The CLI through typer's CliRunner, against real indexes on temp dirs."""

import json
import re
import subprocess
import sys

import pytest

from typer.testing import CliRunner

from assistant.cli.app import app

from .conftest import FIXTURES

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def test_ask_json_cites_federated_learning_papers(bundled_index_dir):
    res = run("ask", "Which papers study federated learning?", "--json", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"question", "answer", "mode", "answerable", "citations"} <= set(data)
    assert data["mode"] == "extractive" and data["answerable"]
    fl = {"000_c647aebf503422f2#1", "001_920fbba894271a85#10", "002_20c6bded0bdf1017#1", "004_b9c85a56bb10ecbe#5"}
    assert len({c["paper_id"] for c in data["citations"]} & fl) >= 2
    for c in data["citations"]:
        assert {"n", "paper_id", "title", "snippet", "score"} <= set(c)
        assert f"[{c['n']}]" in data["answer"]


def test_ask_says_above_an_unsure_answer_that_the_corpus_may_lack_the_topic(bundled_index_dir):
    from assistant.prompts import UNSURE_NOTE

    near = run("ask", "federated unlearning", "--index-dir", str(bundled_index_dir))
    assert near.exit_code == 0 and UNSURE_NOTE in " ".join(near.stdout.split())
    assert json.loads(run("ask", "federated unlearning", "--json", "--index-dir", str(bundled_index_dir)).stdout)["unsure"]
    sure = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert sure.exit_code == 0 and UNSURE_NOTE not in " ".join(sure.stdout.split())


def test_ask_names_each_part_of_a_question_the_corpus_holds_only_apart_and_its_papers(bundled_index_dir):
    """Federated papers and LoRA papers, none on both: refused, saying so, each part with its papers."""
    res = run("ask", "federated LoRA fine-tuning?", "--index-dir", str(bundled_index_dir))
    text = " ".join(res.stdout.split())
    assert res.exit_code == 0 and "but none on both" in text and "Sources" not in text
    assert "On “federated”:" in text and "000_c647aebf503422f2#18" in text  # Stable-LoRA, under the LoRA part
    data = json.loads(run("ask", "federated LoRA fine-tuning?", "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert not data["answerable"] and data["citations"] == [] and len(data["parts"]) == 2
    assert any(p["paper_id"] == "001_920fbba894271a85#10" for p in data["parts"][0]["papers"])
    # `which` of the same lists no paper meeting it, and says which papers are on each part
    which = json.loads(run("which", "federated LoRA fine-tuning", "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert which["count"] == 0 and [p["part"] for p in which["parts"]] == [p["part"] for p in data["parts"]]
    shown = " ".join(run("which", "federated LoRA fine-tuning", "--index-dir", str(bundled_index_dir)).stdout.split())
    assert "0 papers match" in shown and "On “LoRA fine-tuning”:" in shown


def test_ask_text_shows_label_answer_and_sources(bundled_index_dir):
    res = run("ask", "How many text-figure pairs does FigureBench contain?", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0
    assert "Extractive answer" in res.stdout and "Sources" in res.stdout
    assert "003_22ceaf1a0eb8de0c#3" in res.stdout and "3,300" in res.stdout


def test_search_json_ranks_hits(bundled_index_dir):
    res = run("search", "topological flow matching", "-k", "5", "--json", "--index-dir", str(bundled_index_dir))
    data = json.loads(res.stdout)
    assert data["query"] == "topological flow matching"
    assert [h["rank"] for h in data["hits"]] == [1, 2, 3, 4, 5]
    assert data["hits"][0]["paper_id"] == "003_22ceaf1a0eb8de0c#18"
    assert {"rank", "paper_id", "title", "score", "snippet"} <= set(data["hits"][0])


def test_papers_and_show(bundled_index_dir):
    data = json.loads(run("papers", "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert len(data) == 95 and {"paper_id", "title", "source"} <= set(data[0])
    res = run("show", "000_c647aebf503422f2#2", "--index-dir", str(bundled_index_dir))
    assert "Mixture-of-Thought (MoT)" in res.stdout and "truth-table" in res.stdout


def test_one_title_per_paper_in_every_command(bundled_index_dir):
    """An untitled abstract is shown under one derived title everywhere: `papers`, `show`, an answer's citations and
    Sources, `search`, `which` and chat's /show (before, an answer's Sources, `search` and /show showed the stored
    title, the first sentence cut at ~90 characters: "Sequence modeling is currently dominated by causal
    transformer architectures that use…", where `papers` showed "Sequence modeling")."""
    d = str(bundled_index_dir)
    listing = {p["paper_id"]: p for p in json.loads(run("papers", "--json", "--index-dir", d).stdout)}
    shown = {pid: p["title"] for pid, p in listing.items()}
    assert all(p["display_title"] == p["title"] for p in listing.values())
    mesa = "000_c647aebf503422f2#8"
    stored = listing[mesa]["indexed_title"]  # what the index searches with, never shown
    assert json.loads(run("show", mesa, "--json", "--index-dir", d).stdout)["title"] == shown[mesa]
    assert stored != shown[mesa] and stored.endswith("…")
    flat = lambda text: " ".join(text.split())  # noqa: E731  (the terminal wraps long lines)
    question = "a chunkwise parallel Mesa layer optimised at test time"
    answer = json.loads(run("ask", question, "--json", "--index-dir", d).stdout)
    assert mesa in {c["paper_id"] for c in answer["citations"]}
    for item in answer["citations"] + answer["sources"]:
        assert item["title"] == shown[item["paper_id"]]
    text = flat(run("ask", question, "--index-dir", d).stdout)
    assert f"{mesa} — {shown[mesa]}" in text and stored not in text
    for h in json.loads(run("search", question, "--json", "--index-dir", d).stdout)["hits"]:
        assert h["title"] == shown[h["paper_id"]]
    listed = json.loads(run("which", "use a recurrent layer optimised at test time", "--json", "--index-dir", d).stdout)
    assert mesa in {p["paper_id"] for p in listed["papers"]}
    assert all(p["title"] == shown[p["paper_id"]] for p in listed["papers"])
    assert flat(run("show", mesa, "--index-dir", d).stdout).startswith(shown[mesa])
    chat = run("chat", "--index-dir", d, input=f"{question}\n/show {mesa}\n")
    assert chat.exit_code == 0 and stored not in flat(chat.stdout)
    assert f"{shown[mesa]} {mesa}" in flat(chat.stdout)  # /show's heading


def test_the_terminal_shows_latex_as_text_and_json_keeps_it_verbatim(bundled_index_dir):
    res = run("show", "001_920fbba894271a85#14", "--index-dir", str(bundled_index_dir))
    assert "α-mixture" in res.stdout and "\\alpha" not in res.stdout
    data = json.loads(run("show", "001_920fbba894271a85#14", "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert "$\\alpha$-mixture" in data["abstract"]


@pytest.mark.parametrize("typed,paper", [
    ("Jensen-Shannon", "ARC-JSD"),  # the title has an en dash
    ("Nuwa", "Nüwa"),
    ('DeepEyes: a model that learns to "think with images"', "DeepEyes"),  # the shown title, with keyboard quotes
    ("Large language models", "Large language models"),  # a title typed whole, though 9 papers hold the words
    ("ＡＳＩＤＥ", "ASIDE"),  # fullwidth, as a CJK input method types it
])
def test_a_paper_is_found_by_its_name_or_title_as_a_keyboard_types_it(bundled_index_dir, typed, paper):
    res = run("show", typed, "--json", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0, res.output
    shown = json.loads(res.stdout)
    assert paper in shown["title"] or paper in shown["abstract"]


def test_a_word_one_abstract_capitalises_but_other_titles_hold_is_no_name_to_show_or_remove(tmp_path):
    """"Federated", capitalised mid-sentence by one abstract, read as that paper's name: `show federated` showed it
    and `remove federated` deleted it, though two other titles hold the word."""
    recs = [("p1", "SplitNet: multi-task split learning for hospitals",
             "Federated Learning enables decentralized training, while Split Federated Learning further partitions "
             "the model between clients and a server. However, hospitals rarely share one task, making standard "
             "Federated and SplitFed collaborations poorly aligned with clinical workflows. We introduce SplitNet."),
            ("p2", "Federated averaging with momentum", "Averaging is analysed with server momentum for clients."),
            ("p3", "Personalised Federated learning via hypernetworks", "A hypernetwork produces client models.")]
    source, idx = tmp_path / "a.jsonl", str(tmp_path / "idx")
    source.write_text("".join(json.dumps({"id": i, "title": t, "abstract": a}) + "\n" for i, t, a in recs))
    assert run("ingest", str(source), "--index-dir", idx).exit_code == 0
    for cmd in ("show", "remove"):
        res = run(cmd, "federated", "--index-dir", idx)
        assert res.exit_code == 3 and "'federated' matches 3 papers" in " ".join(res.stderr.split())
    assert len(json.loads(run("papers", "--json", "--index-dir", idx).stdout)) == 3
    assert json.loads(run("show", "SplitNet", "--json", "--index-dir", idx).stdout)["paper_id"] == "p1"


def test_a_question_typed_in_fullwidth_is_read_as_ascii(bundled_index_dir):
    answer = json.loads(run("ask", "ｗｈａｔ ｉｓ ＡＳＩＤＥ？", "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert answer["question"] == "what is ASIDE?" and answer["citations"][0]["title"].startswith("ASIDE")


def test_piped_papers_and_search_are_lines_a_script_can_grep(bundled_index_dir):
    """Piped, `papers` was a box table wrapped at 80 columns (`papers | grep -i mesa` gave a title's second line
    with no id) and `search` ran title and snippet together in one cell; at 40 columns ids were cut with "…"."""
    listing = run("papers", "--index-dir", str(bundled_index_dir)).stdout
    shown = {p["paper_id"]: p["title"] for p in json.loads(run("papers", "--json", "--index-dir",
                                                               str(bundled_index_dir)).stdout)}
    lines = [line for line in listing.splitlines() if "#" in line]
    assert len(lines) == 95 and all(f"{pid}  {title}" in listing for pid, title in shown.items())
    assert "│" not in listing and "┃" not in listing
    found = run("search", "token pruning for vision-language models", "-k", "3", "--index-dir",
                str(bundled_index_dir)).stdout.splitlines()
    heads = [line for line in found if re.match(r"^ ?\d\. ", line)]
    assert [h.split()[0] for h in heads] == ["1.", "2.", "3."] and heads[0].split()[1] == "002_20c6bded0bdf1017#7"


def test_unknown_paper_id_is_one_line_and_nonzero(bundled_index_dir):
    res = run("show", "nope#1", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 3
    assert res.stderr.strip().count("\n") == 0 and "assistant papers" in res.stderr
    assert "Traceback" not in res.output


def test_which_of_what_papers_do_not_do_is_refused_not_answered_with_those_that_do(mini_index):
    """`which "papers that do not use neural networks"` listed five papers that use them (the "not" was read as
    framing); `which` finds papers by what they say they do. A criterion with "without" is a positive one."""
    res = run("which", "papers that do not use neural networks", "--index-dir", str(mini_index))
    said = " ".join(res.stderr.split())
    assert res.exit_code == 3 and "cannot leave out those that do something" in said and "Traceback" not in res.output
    assert run("which", "reason without code", "--index-dir", str(mini_index)).exit_code == 0


@pytest.mark.parametrize("criterion", ["reinforcement learning papers other than offline RL",
                                       "papers about LLMs except those on safety", "vision papers apart from diffusion",
                                       "LLM papers excluding agents", "papers not about diffusion models"])
def test_which_refuses_a_criterion_that_leaves_papers_out(mini_index, criterion):
    """"other than offline RL" listed the offline-RL papers first, "except those on safety" nine safety papers:
    what to leave out was read as what to find."""
    res = run("which", criterion, "--index-dir", str(mini_index))
    assert res.exit_code == 3 and "cannot leave out" in " ".join(res.stderr.split())


def test_a_question_with_nothing_to_look_for_is_one_line_and_nonzero(mini_index, tmp_path, monkeypatch):
    """"???", "  " or an emoji: not answered as a topic the corpus lacks, nor "0 papers match" with exit 0."""
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (("ask", "???"), ("search", "?!"), ("which", "  "), ("summarize", "\U0001F642"), ("map", " - ")):
        res = run(*args, "--index-dir", str(mini_index))
        said = "".join(res.stderr.split("\n"))
        assert res.exit_code == 3 and said.startswith("Error:") and "no words to look for" in said, (args, res.output)
        assert "Traceback" not in res.output and not res.stdout.strip(), args
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no map file written
    assert run("ask", "C++?", "--index-dir", str(mini_index)).exit_code in (0, 1)  # a word, however short


def test_ingest_reports_and_is_idempotent(tmp_path):
    idx = str(tmp_path / "idx")
    first = json.loads(run("ingest", str(FIXTURES / "mini_zh.txt"), "--index-dir", idx, "--json").stdout)
    assert first["added"] == 3
    second = json.loads(run("ingest", str(FIXTURES / "mini_zh.txt"), "--index-dir", idx, "--json").stdout)
    assert second["added"] == 0 and second["unchanged"] == 3


def test_ingest_shows_one_progress_bar(tmp_path):
    res = run("ingest", str(FIXTURES / "mini_zh.txt"), "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 0
    # the last group is reported twice (its last batch, then the group); the bar must not start over
    assert res.stderr.count("Embedding papers") == 1 and "3/3" in res.stderr


def test_an_index_dir_that_is_a_file_is_one_line_and_nonzero(tmp_path):
    """A file where the index should be, or under it: one line each, nothing written."""
    a_file = tmp_path / "notes.csv"
    a_file.write_text("a,b\n1,2\n")
    res = run("papers", "--index-dir", str(a_file))
    said = "".join(res.stderr.split("\n"))  # one message, wrapped by rich at the test's 80 columns
    assert res.exit_code == 2 and said.startswith("Error:") and "is a file" in said and "Traceback" not in res.output
    for cmd in (["ingest", str(FIXTURES / "mini_zh.txt")], ["papers"]):  # a read advised moving a folder aside
        res = run(*cmd, "--index-dir", str(a_file / "idx"))
        said = "".join(res.stderr.split("\n")).replace(" ", "")
        assert res.exit_code == 2 and said.startswith("Error:") and f"isinside{a_file},whichisafile" in said
        assert "Traceback" not in res.output and a_file.read_text() == "a,b\n1,2\n"


def test_index_dir_works_before_the_command_and_after_it(mini_index, tmp_path):
    """`assistant --index-dir DIR papers` as `assistant papers --index-dir DIR`; the command's own option wins."""
    before = json.loads(run("--index-dir", str(mini_index), "papers", "--json").stdout)
    after = json.loads(run("papers", "--json", "--index-dir", str(mini_index)).stdout)
    assert len(before) == 6 and before == after
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not an index")
    both = run("--index-dir", str(a_file), "papers", "--json", "--index-dir", str(mini_index))
    assert both.exit_code == 0 and json.loads(both.stdout) == before
    res = run("--index-dir", str(a_file), "papers")  # the global one alone is the one used
    assert res.exit_code == 2 and "is a file" in "".join(res.stderr.split("\n"))
    fresh = tmp_path / "fresh"
    res = run("--index-dir", str(fresh), "ingest", str(FIXTURES / "mini.txt"), "--json")
    assert res.exit_code == 0 and (fresh / "manifest.json").exists()


def test_ingest_missing_path_fails_cleanly(tmp_path):
    res = run("ingest", str(tmp_path / "missing.txt"), "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 3 and "no such file" in res.stderr and "Traceback" not in res.output


def test_chat_piped_answers_each_line_and_follows_up(bundled_index_dir):
    script = ("Is there a theoretical analysis of plasticity loss in deep reinforcement learning?\n"
              "What lightweight remedy does it propose?\n/sources\n/exit\n")
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 0, res.output
    second = res.stdout.split("> What lightweight remedy")[1]
    assert "003_22ceaf1a0eb8de0c#16" in second  # Sample Weight Decay, found through "it"
    assert second.count("Sources") == 2  # the answer's list, then /sources


def test_a_piped_chat_line_with_nothing_to_look_for_ends_the_script_as_ask_does(mini_index):
    res = run("chat", "--index-dir", str(mini_index), input="federated learning?\n???\n/sources\n")
    said = "".join(res.stderr.split("\n"))
    assert res.exit_code == 3 and said.startswith("Error: the question has no words to look for"), res.output
    assert "> federated learning?" in res.stdout and "Traceback" not in res.output


def test_a_chat_turn_the_llm_fails_is_answered_offline_and_the_chat_goes_on(bundled_index_dir, mocked_openai_chat):
    import httpx

    mocked_openai_chat.return_value = httpx.Response(401, json={"error": {"message": "bad key"}})
    script = "Which papers study federated learning?\nWhat is Qronos?\n"
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 0, res.output
    assert res.stderr.count("OPENAI_API_KEY") == 2 and "Traceback" not in res.output
    assert res.stdout.count("Answered without the LLM instead") == 2
    assert "Extractive answer" in res.stdout and "001_920fbba894271a85#8" in res.stdout  # Qronos, cited
    flat = " ".join(res.stdout.split())  # an LLM is configured: the label says it failed, not that there is none
    assert flat.count("Extractive answer (the LLM failed this turn)") == 2 and "no LLM configured" not in flat


def test_llm_error_in_ask_is_one_line(bundled_index_dir, mocked_openai_chat):
    import httpx

    mocked_openai_chat.return_value = httpx.Response(401, json={"error": {"message": "bad key"}})
    res = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 5 and "OPENAI_API_KEY" in res.stderr and "sk-test" not in res.output


def test_streamed_llm_answer_is_printed_with_sources(bundled_index_dir, mocked_openai_chat):
    from .conftest import sse_response

    mocked_openai_chat.return_value = sse_response("Federated ", "learning is studied [1].")
    res = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0
    assert "Federated learning is studied [1]." in res.stdout and "Sources" in res.stdout


def test_an_llm_answer_citing_nothing_says_so_and_lists_what_it_was_given(bundled_index_dir, mocked_openai_chat,
                                                                          tmp_path):
    from .conftest import sse_response

    mocked_openai_chat.return_value = sse_response("Federated learning trains models ", "across many devices.")
    res = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0
    assert re.search(r"cited none of the [2-5] sources it was given", res.stdout)  # the relevant ones were sent
    assert "001_920fbba894271a85#10" in res.stdout and "Sources" not in res.stdout
    # and it quotes, without the model, what those sources say: something checked beside the text
    assert "What they say, quoted without the model" in res.stdout
    # a script reading --json is told too
    res = run("ask", "Which papers study federated learning?", "--json", "--index-dir", str(bundled_index_dir))
    data = json.loads(res.stdout)
    assert data["uncited"] is True and data["citations"] == [] and len(data["sources"]) >= 2
    quoted = data["quoted"]
    assert quoted["citations"] and quoted["text"].count("[") >= len(quoted["citations"])
    # a saved transcript says so too, with the quoted sentences and their papers
    md = tmp_path / "uncited.md"
    run("ask", "Which papers study federated learning?", "--save", str(md), "--index-dir", str(bundled_index_dir))
    text = md.read_text()
    assert "The model cited none of its sources" in text and quoted["citations"][0]["snippet"] in text
    for c in quoted["citations"]:  # verbatim, and numbered as the sources the model was given
        shown = json.loads(run("show", c["paper_id"], "--json", "--index-dir", str(bundled_index_dir)).stdout)
        assert c["snippet"] in shown["abstract"] and data["sources"][c["n"] - 1]["paper_id"] == c["paper_id"]
    mocked_openai_chat.return_value = sse_response("Federated ", "learning is studied [1].")
    cited = json.loads(run("ask", "Which papers study federated learning?", "--json",
                           "--index-dir", str(bundled_index_dir)).stdout)
    assert "uncited" not in cited and cited["citations"]


def test_a_streamed_answer_cut_at_max_tokens_says_so_not_that_the_stream_broke(bundled_index_dir, mocked_openai_chat,
                                                                             monkeypatch):
    from .conftest import sse_response

    monkeypatch.setenv("ASSISTANT_MAX_TOKENS", "12")
    mocked_openai_chat.return_value = sse_response("Federated learning is studied [1] and", finish="length")
    res = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0
    assert "answer cut at 12 tokens" in res.stdout and "stopped early" not in res.stdout
    mocked_openai_chat.return_value = sse_response("Federated learning is studied [1] and", done=False, finish=False)
    res = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert "stream stopped early" in res.stdout


def test_search_and_ask_agree_on_an_area_question_answered_on_second_look(bundled_index_dir):
    q = "Are there papers about time series forecasting?"
    found = json.loads(run("search", q, "--json", "--index-dir", str(bundled_index_dir)).stdout)
    asked = json.loads(run("ask", q, "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert found["answerable"] and asked["answerable"]
    assert found["hits"][0]["paper_id"] == asked["citations"][0]["paper_id"] == "004_b9c85a56bb10ecbe#4"


def test_help_is_fast_and_does_not_import_heavy_modules():
    from .conftest import heavy_modules_after

    assert heavy_modules_after("from assistant.cli.app import app") == []
    res = subprocess.run([sys.executable, "-m", "assistant", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "ingest" in res.stdout and "ask" in res.stdout


def test_bad_setting_is_a_config_error(bundled_index_dir, monkeypatch):
    monkeypatch.setenv("ASSISTANT_TOP_K", "many")
    res = run("ask", "anything", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 2 and "ASSISTANT_TOP_K" in res.stderr
    # a bound says which way it goes ("ASSISTANT_LLM_TIMEOUT=0 is out of range (minimum 0.0)" read as allowed)
    monkeypatch.setenv("ASSISTANT_TOP_K", "3")
    monkeypatch.setenv("ASSISTANT_LLM_TIMEOUT", "0")
    res = run("ask", "anything", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 2 and "ASSISTANT_LLM_TIMEOUT=0 is out of range (it must be more than 0)" in res.stderr


def test_remove_deletes_paper_and_bm25_forgets_it(mini_index):
    res = run("remove", "mini#2", "--index-dir", str(mini_index), "--json")
    assert json.loads(res.stdout) == {"removed": ["mini#2"]}
    papers = json.loads(run("papers", "--json", "--index-dir", str(mini_index)).stdout)
    assert "mini#2" not in {p["paper_id"] for p in papers} and len(papers) == 5
    hits = json.loads(run("search", "Mixture-of-Thought truth-table modality", "--json", "--index-dir",
                          str(mini_index)).stdout)["hits"]
    assert "mini#2" not in {h["paper_id"] for h in hits}
    res = run("remove", "mini#2", "--index-dir", str(mini_index))
    assert res.exit_code == 3 and "not in the index" in res.stderr


def test_doctor_masks_the_key_and_reports_an_unreachable_llm(mini_index, monkeypatch):
    from .conftest import FAKE_KEY

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    res = run("doctor", "--json", "--index-dir", str(mini_index))
    assert res.exit_code == 5  # an LLM error, as the README's table gives it (it was 1 for any failed check)
    assert FAKE_KEY not in res.output
    report = json.loads(res.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["index"]["ok"] and "6 papers" in checks["index"]["detail"]
    assert checks["embedder"]["ok"]
    assert not checks["llm"]["ok"] and "cannot connect" in checks["llm"]["detail"]


def test_doctor_exits_with_the_code_of_what_failed(tmp_path):
    """Every failed check exited 1, so a script could not tell a missing index (4) from an unreachable LLM (5)."""
    res = run("doctor", "--json", "--index-dir", str(tmp_path / "no index here"))
    report = json.loads(res.stdout)
    assert res.exit_code == 4 == report["exit_code"] and not {c["check"]: c for c in report["checks"]}["index"]["ok"]


def test_doctor_names_a_misspelt_setting(mini_index, monkeypatch):
    """ASSISTANT_TOPK=3 (for ASSISTANT_TOP_K) was ignored without a word, by every command and by doctor."""
    monkeypatch.setenv("ASSISTANT_TOPK", "3")
    res = run("doctor", "--json", "--index-dir", str(mini_index))
    check = {c["check"]: c for c in json.loads(res.stdout)["checks"]}["settings"]
    assert res.exit_code == 2 and not check["ok"] and "ASSISTANT_TOPK (did you mean ASSISTANT_TOP_K?)" in check["detail"]
    monkeypatch.delenv("ASSISTANT_TOPK")
    assert run("doctor", "--index-dir", str(mini_index)).exit_code == 0


def test_doctor_table_says_what_unset_settings_mean(mini_index):
    res = run("doctor", "--index-dir", str(mini_index))
    assert res.exit_code == 0, res.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in res.stdout.splitlines()
            if line.count("│") >= 3}
    assert rows["search.min_relevance"] == "hand-set (tuning.relevance_gate 0.41)" and rows["llm.api_key"] == "unset"
    assert "TuningSettings" in rows["tuning"]  # where the hand-set numbers and their sources are, not each one
    config = json.loads(run("doctor", "--json", "--index-dir", str(mini_index)).stdout)["config"]
    assert config["search"]["min_relevance"] is None and config["tuning"]["relevance_gate"] == 0.41


def test_ask_save_writes_markdown_bibtex_and_json(bundled_index_dir, tmp_path):
    q = "Which papers study federated learning?"
    for name in ("a.md", "a.bib", "a.json"):
        res = run("ask", q, "--save", str(tmp_path / name), "--index-dir", str(bundled_index_dir))
        assert res.exit_code == 0, res.output
    md = (tmp_path / "a.md").read_text()
    assert md.startswith("# assistant transcript") and f"## {q}" in md and "`001_920fbba894271a85#10`" in md
    bib = (tmp_path / "a.bib").read_text()
    entries = bib.count("@misc{")
    assert entries >= 2 and bib.count("{") == bib.count("}")
    assert "year = {2026}" in bib and "title derived from the abstract" in bib
    record = json.loads((tmp_path / "a.json").read_text())
    turn = record["turns"][0]
    assert turn["question"] == q and turn["citations"] and len(turn["retrieved"]) >= 10
    assert "api_key" not in record["settings"]
    res = run("ask", q, "--save", str(tmp_path / "a.txt"), "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 3 and ".md, .bib or .json" in res.stderr


def test_chat_show_and_save_commands(bundled_index_dir, tmp_path):
    script = f"Which papers study federated learning?\n/show 1\n/show 99\n/save {tmp_path / 'c.md'}\n"
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 0, res.output
    assert "Usage: /show N" in res.stdout
    assert (tmp_path / "c.md").read_text().count("## ") == 1


def test_chat_commands_read_their_arguments_and_refuse_what_they_do_not_take(bundled_index_dir, tmp_path):
    """`/save "my notes.md"` kept the quotes and failed; `/clear filter` (a typo for /filter) wiped the chat."""
    script = (f"What is Qronos?\n/save \"{tmp_path / 'my notes.md'}\"\n/save {tmp_path / 't.md'} extra\n"
              "/clear filter\n/sources\n")
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    # "/save t.md extra" saved nothing: a piped chat ends with the usage code (it ended 0)
    assert res.exit_code == 2 and (tmp_path / "my notes.md").read_text().count("## ") == 1
    flat = " ".join(res.stdout.split())
    assert "Usage: /save FILE.md" in flat and not (tmp_path / "t.md").exists()
    assert "Usage: /clear (it takes nothing after it); nothing was done." in flat
    assert flat.rsplit("Usage: /clear", 1)[1].count("001_920fbba894271a85#8") >= 1  # /sources: still there


def test_chat_clear_starts_afresh_and_keeps_the_conversation_so_far(bundled_index_dir):
    """/clear deleted the saved turns (no --continue or --id could bring them back) and said only "Conversation
    cleared."; the next question was saved under the same id."""
    from assistant.chat.history import ChatStore
    from assistant.config import Settings

    res = run("chat", "--index-dir", str(bundled_index_dir), input="What is Qronos?\n/clear\nWhat is SPIRAL?\n")
    assert res.exit_code == 0, res.output
    store = ChatStore(Settings.from_env(index_dir=bundled_index_dir).index.dir)
    mine = {r["id"]: r for r in store.list()[:2]}
    assert sorted(r["title"] for r in mine.values()) == ["What is Qronos?", "What is SPIRAL?"]
    old = next(cid for cid, r in mine.items() if r["title"] == "What is Qronos?")
    assert f"the one before is saved (assistant chat --id {old})" in " ".join(res.stdout.split())
    assert [a.question for a in store.load(old)] == ["What is Qronos?"]


def test_a_piped_chat_says_a_bad_line_and_asks_the_lines_after_it(bundled_index_dir, tmp_path):
    """A wordless line ended a piped chat (exit 3): the questions and the /save after it were lost. It is said,
    the rest is asked and saved, and the chat still ends with exit code 3. A bare "exit" leaves."""
    script = f"What is Qronos?\n!!!\nWhat is SPIRAL?\n/save {tmp_path / 'c.json'}\nexit\nWhat is ASIDE?\n"
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 3 and res.stderr.count("no words to look for") == 1
    assert "> What is SPIRAL?" in res.stdout and "> What is ASIDE?" not in res.stdout
    assert [t["question"] for t in json.loads((tmp_path / "c.json").read_text())["turns"]] == [
        "What is Qronos?", "What is SPIRAL?"]


def test_chat_follow_up_naming_a_source_is_answered_from_it(bundled_index_dir):
    script = "Which papers study federated learning?\nhow does the second one handle privacy?\nwhat about paper 9?\n"
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    first, second = res.stdout.split("> how does the second one handle privacy?")
    sources = [l.split()[1] for l in first.split("Sources")[1].splitlines() if l.startswith("[")]
    assert [l.split()[1] for l in second.split("Sources")[1].splitlines() if l.startswith("[")] == [sources[1]]
    # a piped script stops at a bad reference: one line on stderr, exit code 3, no traceback
    assert res.exit_code == 3 and res.stderr.count("no source [9]") == 1 and "Traceback" not in res.stderr


def test_chat_is_saved_and_can_be_continued(mini_index):
    res = run("chat", "--index-dir", str(mini_index), input="What does Mixture-of-Thought reason with?\n")
    assert res.exit_code == 0
    listing = run("chat", "--list", "--index-dir", str(mini_index)).stdout
    assert "1 turns" in listing and "Mixture-of-Thought" in listing
    # the follow-up in a new process resolves "it" through the saved first turn
    res = run("chat", "--continue", "--index-dir", str(mini_index), input="How is it trained?\n/exit\n")
    assert res.exit_code == 0 and "mini#2" in res.stdout
    assert "2 turns" in run("chat", "--list", "--index-dir", str(mini_index)).stdout
    # a chat opened and left without a question is neither listed nor continued in place of this one
    assert run("chat", "--index-dir", str(mini_index), input="/help\n/exit\n").exit_code == 0
    listing = run("chat", "--list", "--index-dir", str(mini_index)).stdout
    assert "(empty)" not in listing and len(listing.strip().splitlines()) == 1
    res = run("chat", "--continue", "--index-dir", str(mini_index), input="How is it evaluated?\n")
    assert res.exit_code == 0 and "mini#2" in res.stdout and "3 turns" in run(
        "chat", "--list", "--index-dir", str(mini_index)).stdout
    res = run("chat", "--id", "nope", "--index-dir", str(mini_index), input="")
    assert res.exit_code == 3 and "chat --list" in res.stderr


def test_chat_filter_restricts_retrieval_for_the_rest_of_the_session(bundled_index_dir):
    script = ("/filter source:001_920fbba894271a85.txt\nWhich papers study federated learning?\n"
              "/filter nonexistent-zzz\n/filter off\nWhich papers study federated learning?\n")
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 0, res.output
    first, second = res.stdout.split("> Which papers study federated learning?")[1:3]
    ids_first = [l for l in first.splitlines() if "#" in l and "—" in l]
    assert ids_first and all("001_920fbba894271a85#" in l for l in ids_first)
    assert "000_c647aebf503422f2#1" in second  # the filter is gone
    assert "no paper matches the filter" in res.stderr


def test_a_filtered_chat_answers_from_its_papers_not_as_a_topic_held_in_parts(bundled_index_dir):
    """Under a /filter of 19 papers, "which papers study federated learning?" was refused as held only apart ("which
    papers study federated" and "learning"), though FedGEM is among them: the parts model reads whole indexes."""
    script = "/filter source:002_20c6bded0bdf1017.txt\nwhich papers study federated learning?\n"
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    assert res.exit_code == 0 and "FedGEM" in res.stdout and "none on both" not in " ".join(res.stdout.split())


def test_a_chat_continued_searches_what_its_filter_let_through(mini_index):
    res = run("chat", "--index-dir", str(mini_index),
              input="/filter source:nonexistent\n/filter Mixture-of-Thought\nsourdough bread recipes?\n")
    assert res.exit_code == 0 and "No paper in the corpus" in res.stdout
    # a refusal under a filter says what was searched, not only "the corpus"
    assert "Searched only the 1 papers the /filter lets through; /filter off searches all 6." in res.stdout
    res = run("chat", "--continue", "--index-dir", str(mini_index), input="/filter\n/filter off\n")
    assert res.exit_code == 0 and "Filter: 1 papers." in res.stdout and "Searching 6 papers." in res.stdout
    assert "No filter." in run("chat", "--continue", "--index-dir", str(mini_index), input="/filter\n").stdout


def test_streamed_answer_renders_as_live_markdown_in_a_terminal(bundled_index_dir, mocked_openai_chat, monkeypatch):
    """In a terminal the stream is re-rendered as Markdown (rich Live): no raw ** or # left on screen."""
    import io

    from rich.console import Console

    import assistant.cli.app as cli
    import assistant.cli.render as render

    from .conftest import sse_response

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100, color_system="standard")
    monkeypatch.setattr(cli, "out", terminal)
    monkeypatch.setattr(render, "out", terminal)  # the stream and the sources are drawn by cli/render.py
    mocked_openai_chat.return_value = sse_response("## Findings\n\n", "**Federated** learning ", "is studied [1].")
    res = run("ask", "Which papers study federated learning?", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0, res.output
    shown = screen.getvalue()
    assert "Federated" in shown and "**Federated**" not in shown and "## Findings" not in shown
    assert "\x1b[1m" in shown  # bold, as Markdown renders it
    assert "Sources" in shown


def test_sources_say_which_lower_numbered_sources_went_uncited():
    """Sources keep their retrieval numbers; a gap ([2], [3] without [1]) is explained, a tail is not."""
    import io

    from rich.console import Console

    from assistant.qa.answer import Answer, Citation
    from assistant.cli.render import render_sources
    from assistant.search.retrieve import Hit

    hits = [Hit(paper_id=f"p{i}", title=f"Paper {i}", score=1 - i / 10, snippet="s") for i in (1, 2, 3, 4)]

    def shown(numbers):
        answer = Answer(question="q", text="t", mode="extractive", answerable=True, sources=hits,
                        citations=[Citation(n=n, paper_id=f"p{n}", title=f"Paper {n}", snippet="s", score=0.5)
                                   for n in numbers])
        buf = io.StringIO()
        render_sources(answer, Console(file=buf, width=200))
        return buf.getvalue()

    gap = shown([2, 3])
    assert "Also retrieved, not cited: [1] p1\n" in gap  # [4] ranks below every cited source: not listed
    assert "not cited" not in shown([1, 2])


def test_search_and_ask_say_how_a_question_with_typos_was_read(bundled_index_dir):
    typed = "How does TpooFormer turn a graph into a sequnece?"
    res = run("search", typed, "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0 and "Searched for: How does TopoFormer turn a graph into a sequence?" in res.stdout
    data = json.loads(run("search", typed, "--json", "--index-dir", str(bundled_index_dir)).stdout)
    assert data["query"] == typed and data["searched_for"] == "How does TopoFormer turn a graph into a sequence?"
    assert data["answerable"] and data["hits"][0]["paper_id"] == "000_c647aebf503422f2#6"
    res = run("ask", typed, "--index-dir", str(bundled_index_dir))
    assert "Read as: How does TopoFormer turn a graph into a sequence?" in res.stdout and "TopoFormer" in res.stdout
    clean = json.loads(run("search", "How does TopoFormer turn a graph into a sequence?", "--json",
                           "--index-dir", str(bundled_index_dir)).stdout)
    assert "searched_for" not in clean


def test_which_and_summarize_read_a_criterion_with_typos_as_spelt(bundled_index_dir):
    data = json.loads(run("which", "papers on dataest distillaiton", "--json", "--index-dir",
                          str(bundled_index_dir)).stdout)
    assert data["criterion"] == "papers on dataest distillaiton" and data["read_as"] == "papers on dataset distillation"
    spelt = json.loads(run("which", "papers on dataset distillation", "--json", "--index-dir",
                           str(bundled_index_dir)).stdout)
    assert [p["paper_id"] for p in data["papers"]] == [p["paper_id"] for p in spelt["papers"]]
    assert {"004_b9c85a56bb10ecbe#10", "001_920fbba894271a85#19"} <= {p["paper_id"] for p in data["papers"]}
    res = run("summarize", "dataest distillaiton", "--index-dir", str(bundled_index_dir))
    assert res.exit_code == 0 and "Read as: dataset distillation" in res.stdout
    assert "No paper in the corpus" not in res.stdout


def test_chat_refuses_options_that_contradict_each_other(mini_index):
    """`chat --id X --continue` and `--list --continue` ran, exit 0, without saying which option won."""
    for args in (["--id", "abc", "--continue"], ["--list", "--continue"], ["--list", "--id", "abc"]):
        res = run("chat", *args, "--index-dir", str(mini_index))
        assert res.exit_code == 2 and "use one of --continue, --id and --list" in " ".join(res.output.split())


def test_a_streamed_answer_that_broke_off_ends_its_display_without_the_mark_printed_under_it():
    """In a terminal, "[answer incomplete: ...]" was shown twice: at the end of the live display and under it."""
    from assistant.cli.render import final_text
    from assistant.qa.answer import INCOMPLETE_MARK, Answer

    cut = Answer(question="q", text=f"FL is private [1].\n\n{INCOMPLETE_MARK}", mode="llm", answerable=True,
                 complete=False)
    assert final_text(cut) == "FL is private [1]."
    whole = Answer(question="q", text="A.\n\nB [1].", mode="llm", answerable=True)
    assert final_text(whole) == whole.text


@pytest.mark.parametrize("criterion", ["how many papers", "papers", "work"])
def test_which_refuses_a_criterion_that_is_only_framing(mini_index, criterion):
    """`which "how many papers"` printed "0 papers match how many papers"; `which papers` listed two papers."""
    res = run("which", criterion, "--index-dir", str(mini_index))
    assert res.exit_code == 3 and "names nothing papers do or are about" in " ".join(res.stderr.split())


def test_a_json_command_that_fails_says_why_on_stdout_too(mini_index):
    """With --json an error left stdout empty: a script had to parse the stderr line to learn why."""
    res = run("show", "nope#1", "--json", "--index-dir", str(mini_index))
    data = json.loads(res.stdout)
    assert res.exit_code == 3 == data["exit_code"] and "nope#1" in data["error"] and res.stderr.startswith("Error:")


def test_chat_details_a_re_test_found(bundled_index_dir, tmp_path):
    """A piped /save that failed ended the chat 0 (`| assistant chat && upload notes.md` went ahead); /clear kept the
    filter without a word; "/show [3]" looked for a paper named "[3]"; a criterion of listing words alone
    ("which papers", "list all papers") was searched."""
    blocker = tmp_path / "t1.md"
    blocker.write_text("x")
    script = f"/filter privacy\nWhat is Qronos?\n/show [1]\n/save {blocker}/x.md\n/clear\n"
    res = run("chat", "--index-dir", str(bundled_index_dir), input=script)
    flat = " ".join(res.stdout.split())
    assert res.exit_code == 1 and "the filter stays (privacy; /filter off lifts it)" in flat
    assert "not in the index" not in res.stderr and "cannot write" in res.stderr
    for criterion in ("which papers", "list all papers"):
        assert run("which", criterion, "--index-dir", str(bundled_index_dir)).exit_code == 3
