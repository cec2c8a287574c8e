"""The store as a user's commands meet it, in the fast tier: a real Chroma index of six abstracts embedded by the
stand-in (tests/conftest.py's EmbedDemo), so no model is loaded. What the model's vectors decide (answers, refusals)
is tested with the real embedder elsewhere; what is checked here holds whatever the embedder."""

from __future__ import annotations

import json

from .test_integrity import error_line, has, run

MINI = [f"mini#{n}" for n in range(1, 7)]


def _ids(index) -> list[str]:
    res = run("papers", "--json", "--index-dir", index)
    assert res.exit_code == 0, res.output
    return sorted(p["paper_id"] for p in json.loads(res.stdout))


def test_an_ingest_lists_its_papers_and_shows_each_by_id_or_name(demo_index):
    assert _ids(demo_index) == MINI
    res = run("show", "mini#2", "--json", "--index-dir", demo_index)
    assert res.exit_code == 0 and "Mixture-of-Thought" in json.loads(res.stdout)["abstract"]
    res = run("show", "Mixture-of-Thought", "--json", "--index-dir", demo_index)
    assert res.exit_code == 0 and json.loads(res.stdout)["paper_id"] == "mini#2"


def test_the_same_file_again_changes_nothing_and_an_edited_one_only_what_changed(demo_index, tmp_path):
    mine = tmp_path / "mini.txt"  # the file the index was built from
    res = run("ingest", mine, "--index-dir", demo_index, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["added"] == 0 and report["unchanged"] == 6
    header, body = mine.read_text(encoding="utf-8").split("\n", 1)
    paras = [p for p in body.split("\n\n") if p.strip()]
    paras[3] = "Zorblaxian quasi-widgets are studied here. We propose Zorblax, a tiny method for widgets."
    mine.write_text(header + "\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    res = run("ingest", mine, "--index-dir", demo_index, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert (report["added"], report["updated"], report["unchanged"]) == (0, 1, 5), report
    assert _ids(demo_index) == MINI
    res = run("show", "mini#4", "--json", "--index-dir", demo_index)
    assert "Zorblax" in json.loads(res.stdout)["abstract"]


def test_remove_takes_a_paper_out_of_the_listing_and_the_search(demo_index):
    assert run("remove", "Mixture-of-Thought", "--index-dir", demo_index).exit_code == 0  # by its name
    assert _ids(demo_index) == [p for p in MINI if p != "mini#2"]
    res = run("search", "Mixture-of-Thought truth-table", "--json", "--index-dir", demo_index)
    assert res.exit_code == 0 and "mini#2" not in {h["paper_id"] for h in json.loads(res.stdout)["hits"]}


def test_search_finds_a_paper_by_its_words(demo_index):
    res = run("search", "Mixture-of-Thought truth-table modality", "--json", "--index-dir", demo_index)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["hits"][0]["paper_id"] == "mini#2"


def test_an_index_opens_only_with_the_embedder_that_built_it(demo_index, monkeypatch):
    monkeypatch.setenv("ASSISTANT_EMBEDDER", "minilm")
    res = run("search", "federated", "--index-dir", demo_index)
    assert res.exit_code != 0 and has(error_line(res), "built with embedder 'demo'")


def test_doctor_passes_on_a_fresh_index(demo_index):
    res = run("doctor", "--index-dir", demo_index)
    assert res.exit_code == 0, res.output
