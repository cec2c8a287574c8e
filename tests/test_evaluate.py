import json
import math

import pytest
from typer.testing import CliRunner

from assistant.cli.app import app
from assistant.errors import InputError
from assistant.config import Settings
from assistant.service.evaluate import (evaluate_beir, evaluate_questions, load_beir, load_questions, ndcg_at, recall_at,
                                reciprocal_rank)


def test_metric_arithmetic_on_hand_made_rankings():
    assert reciprocal_rank(["a", "b", "c"], {"c"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a", "b", "c"], {"z"}) == 0.0
    assert reciprocal_rank(["a", "b", "c"], {"c"}, cutoff=2) == 0.0
    assert recall_at(["a", "b", "c"], {"b", "z"}, 2) == 0.5
    assert ndcg_at(["g1", "g2", "x"], {"g1", "g2"}) == pytest.approx(1.0)
    expected = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert ndcg_at(["x", "g1", "y"], {"g1", "g2"}, 10) == pytest.approx(expected / 1 * 1)
    assert ndcg_at(["x", "g"], {"g": 2.0, "h": 1.0}, 10) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_question_file_errors_name_the_line(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "a", "type": "lookup", "question": "q", "gold": ["x"]}\n{"id": "b", "type": "weird"}\n')
    with pytest.raises(InputError, match="q.jsonl:2.*unknown type"):
        load_questions(f)
    # a question with no gold would score 0 and pull the averages down without a word
    f.write_text('{"id": "a", "type": "none", "question": "q"}\n{"id": "b", "type": "lookup", "question": "q"}\n')
    with pytest.raises(InputError, match="q.jsonl:2.*needs its gold"):
        load_questions(f)
    f.write_text('{"type": "area", "question": "q", "gold": "x#1"}\n')
    with pytest.raises(InputError, match="q.jsonl:1.*list of paper ids"):
        load_questions(f)
    f.write_text('{"type": "none", "question": "q"}\n')
    assert load_questions(f)[0]["id"] == "q:1"
    f.write_text("\n")  # an empty file printed a table of "-" with exit 0
    with pytest.raises(InputError, match="holds no questions"):
        load_questions(f)
    # a re-test found tracebacks (an array, a number as the question, bytes not UTF-8) and a string of facts read
    # letter by letter (coverage 1.0)
    for text, said in (('[{"type": "none", "question": "q"}]', "not a JSON object"),
                       ('{"type": "lookup", "question": 123, "gold": ["x"]}', "'question' must be text"),
                       ('{"type": "lookup", "question": "q", "gold": ["x"], "answer_facts": "xq"}', "'answer_facts'"),
                       ('{"type": "followup", "turns": "What is Qronos?", "gold": ["x"]}', "'turns' must be a list")):
        f.write_text(text + "\n")
        with pytest.raises(InputError, match=said):
            load_questions(f)
    f.write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        load_questions(f)


def test_a_gold_id_the_index_lacks_is_named_not_scored_as_a_miss(tmp_path, mini_index):
    """A typo in a gold id was scored as a retrieval miss (R@1 1.0 -> 0.667, exit 0, no word of it)."""
    f = tmp_path / "q.jsonl"
    f.write_text('{"type": "lookup", "question": "What is Mixture-of-Thought?", "gold": ["mini#2"]}\n'
                 '{"type": "lookup", "question": "What is Mixture-of-Thought?", "gold": ["nonexistent#1"]}\n')
    res = CliRunner().invoke(app, ["eval", str(f), "--index-dir", str(mini_index)])
    assert res.exit_code == 3 and "q.jsonl:2: gold paper 'nonexistent#1' is not in the index" in res.stderr


def test_eval_json_prints_a_row_per_question_and_a_summary(tmp_path, bundled_index_dir):
    qs = [
        {"id": "q1", "type": "lookup", "question": "Which data-centric metric for LLM unlearning uses watermarking?",
         "gold": ["003_22ceaf1a0eb8de0c#12"], "answer_facts": ["WaterDrum"]},
        {"id": "q2", "type": "none", "question": "What is the best sourdough bread recipe?", "gold": []},
        {"id": "q3", "type": "area", "question": "Which papers study federated learning?",
         "gold": ["000_c647aebf503422f2#1", "001_920fbba894271a85#10", "002_20c6bded0bdf1017#1",
                  "004_b9c85a56bb10ecbe#5"]},
        {"id": "q4", "type": "followup", "gold": ["003_22ceaf1a0eb8de0c#16"],
         "turns": ["Is there a theoretical analysis of plasticity loss in deep RL?", "What remedy does it propose?"]},
    ]
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(json.dumps(q) for q in qs))
    res = CliRunner().invoke(app, ["eval", str(f), "--json", "--index-dir", str(bundled_index_dir)])
    assert res.exit_code == 0, res.output
    lines = [json.loads(l) for l in res.stdout.splitlines()]
    rows, summary = lines[:-1], lines[-1]["summary"]
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"]
    for r in rows:
        assert {"id", "type", "hits", "answerable", "answer", "citations"} <= set(r)
        assert len(r["hits"]) >= 10
    assert rows[0]["hits"][0] == "003_22ceaf1a0eb8de0c#12" and rows[0]["citations"][0] == "003_22ceaf1a0eb8de0c#12"
    assert rows[1]["answerable"] is False and rows[1]["citations"] == []
    assert rows[3]["hits"][0] == "003_22ceaf1a0eb8de0c#16"
    assert summary["R@1"] == 1.0 and summary["none_accuracy"] == 1.0 and summary["false_refusal_rate"] == 0.0
    assert summary["answer_fact_coverage"] == 1.0 and summary["area_nDCG@10"] > 0.9


def test_beir_eval_on_a_tiny_dataset(tmp_path):
    d = tmp_path / "tiny"
    d.mkdir()
    docs = [("d1", "Graph networks", "Message passing neural networks for molecules and graphs."),
            ("d2", "Federated learning", "Clients train models collaboratively without sharing their data."),
            ("d3", "Protein folding", "Predicting protein structures from amino acid sequences.")]
    (d / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in docs))
    (d / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "privacy-preserving collaborative training"}) + "\n"
                                     + json.dumps({"_id": "q2", "text": "molecule graph message passing"}))
    (d / "qrels_test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td1\t1\n")
    corpus, queries, qrels = load_beir(d)
    assert len(corpus) == 3 and queries["q1"].startswith("privacy") and qrels == {"q1": {"d2": 1.0}, "q2": {"d1": 1.0}}
    res = CliRunner().invoke(app, ["eval", "--beir", str(d), "--json", "--index-dir", str(tmp_path / "idx")])
    assert res.exit_code == 0, res.output
    lines = [json.loads(l) for l in res.stdout.splitlines()]
    assert lines[0] == {"id": "q1", "hits": ["d2", "d1", "d3"]} or lines[0]["hits"][0] == "d2"
    assert lines[-1]["summary"]["nDCG@10"] == 1.0 and lines[-1]["summary"]["MRR@10"] == 1.0
    # the library reports each query done, for the CLI's progress bar (re-ranked queries take seconds each)
    calls = []
    summary = evaluate_beir(d, Settings(index_dir=tmp_path / "idx"), on_question=lambda *a: calls.append(a))
    assert calls == [(1, 2), (2, 2)] and summary["queries"] == 2


def test_beir_eval_never_writes_its_corpus_into_a_users_index(tmp_path, mini_index, monkeypatch):
    from assistant.service.api import list_papers

    d = tmp_path / "tiny"
    d.mkdir()
    mine = sorted(p.id for p in list_papers(Settings(index_dir=mini_index)))
    # a document sharing an id with the user's paper would replace it
    (d / "corpus.jsonl").write_text(json.dumps({"_id": mine[0], "title": "Cooking", "text": "We boil pasta."}))
    (d / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "how to cook pasta"}))
    (d / "qrels_test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\t{mine[0]}\t1\n")
    res = CliRunner().invoke(app, ["eval", "--beir", str(d), "--index-dir", str(mini_index)])
    assert res.exit_code == 3 and "holds another corpus" in res.stderr and "Traceback" not in res.output
    assert "leave --index-dir out" in res.stderr
    # ASSISTANT_INDEX_DIR names the user's index: the BEIR corpus goes to an index of its own instead
    monkeypatch.setenv("ASSISTANT_INDEX_DIR", str(mini_index))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["eval", "--beir", str(d), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.splitlines()[-1])["summary"]["nDCG@10"] == 1.0
    assert (tmp_path / "index_store" / "beir" / "tiny").is_dir()
    kept = {p.id: p for p in list_papers(Settings(index_dir=mini_index))}
    assert sorted(kept) == mine and kept[mine[0]].abstract != "We boil pasta."


def test_question_eval_reports_each_question_done(bundled_index_dir):
    items = [{"id": "a", "type": "none", "question": "What is the best sourdough bread recipe?", "gold": []},
             {"id": "b", "type": "lookup", "question": "Which paper studies plasticity loss in deep RL?",
              "gold": ["003_22ceaf1a0eb8de0c#16"]}]
    calls = []
    report = evaluate_questions(items, Settings(index_dir=bundled_index_dir),
                                on_question=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 2), (2, 2)] and len(report.rows) == 2


def test_eval_needs_exactly_one_input():
    res = CliRunner().invoke(app, ["eval"])
    assert res.exit_code == 2


def test_eval_s_table_in_a_narrow_terminal_wraps_ids_never_cuts_them(tmp_path, mini_index):
    f = tmp_path / "q.jsonl"
    f.write_text('{"type": "lookup", "question": "What is Mixture-of-Thought?", "gold": ["mini#2"]}\n')
    res = CliRunner().invoke(app, ["eval", str(f), "--index-dir", str(mini_index)], env={"COLUMNS": "40"})
    assert res.exit_code == 0 and "…" not in res.stdout  # "2606…" could not be read back
