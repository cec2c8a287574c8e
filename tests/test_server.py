"""Server mode against a real `chroma run` on 127.0.0.1 (started here, or by .ci/run via ASSISTANT_TEST_CHROMA_URL)."""

import os
import shutil
import sys
from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.corpus import load_papers
from assistant.errors import IndexStoreError
from assistant.index import Index, ingest
from assistant.retrieve import Retriever

from .conftest import FIXTURES, free_port, serve


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    given = os.environ.get("ASSISTANT_TEST_CHROMA_URL")
    if given:
        yield given
        return
    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(exe).exists():
        pytest.skip("the chroma CLI (from the chromadb package) is not installed")
    port = free_port()
    work = tmp_path_factory.mktemp("chroma-server")
    url = f"http://127.0.0.1:{port}"
    with serve([exe, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(work / "data")],
               f"{url}/api/v2/heartbeat", work / "server.log", "chroma server", timeout=30):
        yield url


def test_two_clients_of_one_server_share_index_manifest_and_bm25(chroma_url, tmp_path):
    a = Settings(index_dir=tmp_path / "machine-a", chroma_url=chroma_url)
    b = Settings(index_dir=tmp_path / "machine-b", chroma_url=chroma_url)
    papers, _ = load_papers([FIXTURES / "mini_zh.txt"])
    report = ingest(papers, a, rebuild=True)
    assert len(report.added) == 3
    # "machine b" has no local files at all, yet sees the same index, manifest and (rebuilt) BM25
    idx_b = Index(b)
    assert idx_b.count() == 3 and idx_b.manifest["embedder"] == "all-MiniLM-L6-v2-onnx-int8"
    assert not (tmp_path / "machine-a" / "manifest.json").exists()
    hits = Retriever(idx_b).search("federated learning differential privacy", k=3).hits
    assert hits[0].paper_id == "mini_zh#1" and hits[0].bm25 > 0
    # re-ingest from b adds nothing; a change from b is visible to a
    assert ingest(papers, b).added == []
    papers2, _ = load_papers([FIXTURES / "mini.txt"])
    ingest(papers2[:2], b)
    assert Index(a).count() == 5


def test_cli_against_the_server(chroma_url, tmp_path):
    from typer.testing import CliRunner

    from assistant.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["--chroma-url", chroma_url, "ingest", str(FIXTURES / "mini.txt"), "--rebuild",
                              "--index-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert chroma_url in res.stdout.replace("\n", "")  # where the papers went: the server, not the local cache
    res = runner.invoke(app, ["--chroma-url", chroma_url, "search", "Mixture-of-Thought", "--json",
                              "--index-dir", str(tmp_path)])
    assert res.exit_code == 0 and '"mini#2"' in res.stdout


def test_unreachable_server_is_a_clear_error(tmp_path):
    with pytest.raises(IndexStoreError, match="cannot reach the Chroma server"):
        Index(Settings(index_dir=tmp_path, chroma_url=f"http://127.0.0.1:{free_port()}"))


def test_a_server_client_holds_no_vector_matrix_nor_corpus(chroma_url, tmp_path):
    """Dense candidates come from the server's HNSW index and BM25 is memory-mapped: a client of a large
    server holds neither every chunk vector nor every paper."""
    import numpy as np

    from assistant.dense import PaperShelf
    from assistant.index import local_dir

    settings = Settings(index_dir=tmp_path / "a", chroma_url=chroma_url)
    papers, _ = load_papers([FIXTURES / "mini.txt"])
    ingest(papers, settings, rebuild=True)
    client = Settings(index_dir=tmp_path / "b", chroma_url=chroma_url)
    idx = Index(client)
    found = Retriever(idx).search("Mixture-of-Thought", k=3)
    assert found.hits[0].paper_id == "mini#2" and found.hits[0].snippet and found.hits[0].dense > 0
    assert idx._vectors is None and not (local_dir(client) / "vectors").exists()
    assert isinstance(idx.all_papers(), PaperShelf) and "mini#2" in idx.all_papers()
    assert isinstance(idx.bm25()[0].scores["data"], np.memmap)
    retriever = Retriever(idx)
    assert retriever.set_filter("heterogeneity") < idx.count()  # a where filter on the HNSW query
    hits = retriever.search("reasoning modalities", k=5).hits
    assert hits and {h.paper_id for h in hits} <= retriever.allowed
