"""Server mode against a real `chroma run` on 127.0.0.1 (started here, or by .ci/run via ASSISTANT_TEST_CHROMA_URL)."""

import contextlib
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.text.corpus import load_papers
from assistant.errors import IndexStoreError
from assistant.store.index import Index
from assistant.store.ingest import ingest
from assistant.search.retrieve import Retriever

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

    from assistant.cli.app import app

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


def test_the_ingest_lock_is_held_in_the_server_across_clients(chroma_url, tmp_path):
    """Clients with different local directories share the server's lock (docs/index-integrity.md)."""
    import time

    from assistant.store.server_lock import SERVER_LOCK, server_lock

    a = Settings(index_dir=tmp_path / "a", chroma_url=chroma_url)
    b = Settings(index_dir=tmp_path / "b", chroma_url=chroma_url)
    zh, _ = load_papers([FIXTURES / "mini_zh.txt"])
    mini, _ = load_papers([FIXTURES / "mini.txt"])
    ingest(zh, a, rebuild=True)
    client = Index(a).client
    with server_lock(client, chroma_url):
        with pytest.raises(IndexStoreError, match="another client"):
            ingest(mini, b)
        assert Index(b).count() == 3  # reading goes on while a client writes
    # a lock whose owner died without releasing it expires
    client.create_collection(SERVER_LOCK, metadata={"owner": "dead-host:1", "expires": time.time() - 1})
    assert len(ingest(mini, b).added) == 6
    idx = Index(a)
    assert idx.manifest["papers"] == idx.count() == 9 and idx.manifest["chunks"] == idx.chunks.count()


def test_two_clients_ingesting_at_once_never_corrupt_the_counts(chroma_url, tmp_path):
    import threading

    settings = [Settings(index_dir=tmp_path / name, chroma_url=chroma_url) for name in ("a", "b")]
    ingest(load_papers([FIXTURES / "mini_zh.txt"])[0], settings[0], rebuild=True)
    files = [FIXTURES / "mini.txt", FIXTURES / "mini_zh.txt"]
    start, outcome = threading.Barrier(2), {}

    def client(i: int) -> None:
        papers = load_papers([files[i]])[0]
        if i == 1:  # the same abstracts under new ids: new papers for the server
            papers = [replace(p, id=f"b-{p.id}") for p in papers]
        start.wait()
        try:
            outcome[i] = len(ingest(papers, settings[i]).added)
        except IndexStoreError as exc:  # the other client held the lock: one clear refusal
            outcome[i] = str(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = sum(n for n in outcome.values() if isinstance(n, int))
    assert all(isinstance(n, int) or "another client" in n for n in outcome.values()), outcome
    for s in settings:  # every client sees the same committed state, and it matches the store
        idx = Index(s)
        assert idx.manifest["papers"] == idx.count() == 3 + added
        assert idx.manifest["fingerprint"] == idx.fingerprint() and idx.manifest["chunks"] == idx.chunks.count()


def test_a_chroma_server_lost_mid_command_is_one_line_with_exit_4(tmp_path):
    import typer

    from assistant.cli.app import handle_errors

    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(exe).exists():
        pytest.skip("the chroma CLI (from the chromadb package) is not installed")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = Settings(index_dir=tmp_path / "local", chroma_url=url)
    with serve([exe, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(tmp_path / "data")],
               f"{url}/api/v2/heartbeat", tmp_path / "server.log", "chroma server", timeout=30):
        ingest(load_papers([FIXTURES / "mini_zh.txt"])[0], settings)
        retriever = Retriever(Index(settings))
    # the server is gone between opening the index and answering (as when it stops mid-ask)

    @handle_errors
    def search(index_dir=None):
        retriever.index.reopen = lambda: None  # no reconnecting: the first failure is the answer
        retriever.search("federated learning", k=3)

    with pytest.raises(typer.Exit) as stopped:
        search(index_dir=tmp_path / "local")
    assert stopped.value.exit_code == 4


def test_a_server_client_holds_no_vector_matrix_nor_corpus(chroma_url, tmp_path):
    """Dense candidates come from the server's HNSW index and BM25 is memory-mapped: a client of a large
    server holds neither every chunk vector nor every paper."""
    import numpy as np

    from assistant.store.dense import PaperShelf
    from assistant.config import local_dir

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


def test_clients_taking_over_an_expired_lock_at_once_never_both_hold_it(chroma_url, tmp_path):
    """A lock whose owner died is taken over by exactly one of the clients that find it expired at the same
    moment; the others get the one line of a held lock. (Chroma has no compare-and-swap: before, each
    deleted the expired lock and created its own, and a late delete removed the winner's.)"""
    import threading
    import time

    from assistant.store.server_lock import SERVER_LOCK, server_lock, server_lock_holder

    client = Index(Settings(index_dir=tmp_path / "a", chroma_url=chroma_url), create=True, check=False).client
    racers = 3
    for round_ in range(4):
        with contextlib.suppress(Exception):
            client.delete_collection(SERVER_LOCK)
        client.create_collection(SERVER_LOCK, metadata={"owner": "dead-host:1", "expires": time.time() - 1})
        start, held, refused = threading.Barrier(racers), [], []
        others_done = threading.Condition()

        def race(i: int) -> None:
            start.wait()
            try:
                with server_lock(client, chroma_url):
                    held.append(i)
                    with others_done:  # writing: the lock is held until every other racer has tried and given up
                        others_done.wait_for(lambda: len(held) + len(refused) == racers, timeout=300)
            except IndexStoreError as exc:
                with others_done:
                    refused.append(str(exc))
                    others_done.notify_all()

        threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(held) == 1 and len(refused) == racers - 1, (round_, held, refused)
        assert all("another client" in r and "wait for it to finish" in r for r in refused)
        assert server_lock_holder(client) is None  # the winner released it


def test_a_writer_whose_lock_was_taken_over_stops_at_its_next_group(chroma_url, tmp_path):
    from assistant.store.server_lock import SERVER_LOCK, server_lock, server_lock_holder

    client = Index(Settings(index_dir=tmp_path / "a", chroma_url=chroma_url), create=True, check=False).client
    try:
        with server_lock(client, chroma_url) as refresh:
            refresh()  # still ours: the expiry moves on
            # it stalled past its expiry and another client took the lock over
            client.get_collection(SERVER_LOCK).modify(metadata={"owner": "other-host:7", "token": "other-host:7:x",
                                                                "expires": 4e9})
            with pytest.raises(IndexStoreError, match=r"another client \(other-host:7\) took over the ingest lock"):
                refresh()
        assert server_lock_holder(client) == "other-host:7"  # leaving did not release the other client's lock
    finally:
        with contextlib.suppress(Exception):
            client.delete_collection(SERVER_LOCK)


def test_a_reader_sees_another_clients_commit_on_its_next_search(chroma_url, tmp_path):
    """A reader that lives across commands (a chat) follows another client's ingest and remove on its next
    search: before, its BM25, papers and query caches stayed those of the commit it had opened."""
    from assistant.store.ingest import remove

    a = Settings(index_dir=tmp_path / "a", chroma_url=chroma_url)
    b = Settings(index_dir=tmp_path / "b", chroma_url=chroma_url)
    ingest(load_papers([FIXTURES / "mini_zh.txt"])[0], a, rebuild=True)
    reader = Retriever(Index(b))
    assert reader.search("federated learning differential privacy", k=3).hits[0].paper_id == "mini_zh#1"
    assert reader.count() == 3
    mini = load_papers([FIXTURES / "mini.txt"])[0]
    ingest(mini[:3], a)  # client a commits three papers
    title = mini[2].display_title  # "OpenAgentSafety: a comprehensive and modular framework ..."
    hits = reader.search(title, k=3).hits
    assert hits[0].paper_id == "mini#3" and hits[0].bm25 > 0  # found by its exact title, BM25 included
    assert reader.index.manifest["papers"] == reader.count() == 6 and "mini#3" in reader.papers()
    remove(["mini#3"], a)
    assert "mini#3" not in {h.paper_id for h in reader.search(title, k=3).hits}
    assert reader.index.manifest["papers"] == 5


def test_doctor_right_after_an_ingest_says_ok(chroma_url, tmp_path):
    """Issue 47 row 23: in server mode, doctor right after a successful ingest said "FAIL vectors stale" until the
    next search."""
    from typer.testing import CliRunner

    from assistant.cli.app import app

    runner = CliRunner()
    base = ["--chroma-url", chroma_url]
    res = runner.invoke(app, [*base, "ingest", str(FIXTURES / "mini.txt"), "--rebuild", "--index-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for where in (tmp_path, tmp_path / "another-client"):
        res = runner.invoke(app, [*base, "doctor", "--index-dir", str(where)])
        assert res.exit_code == 0 and "stale" not in res.stdout and "FAIL" not in res.stdout, res.stdout


def test_a_lock_left_by_a_dead_process_of_this_machine_is_taken_over_at_once(chroma_url, tmp_path):
    """Issue 47 row 26: a Chroma server killed during an ingest and restarted refused the advised retry for ~150 s
    ("another client (<own dead pid>) is writing")."""
    import socket
    import subprocess
    import time

    import chromadb
    from urllib.parse import urlparse

    from assistant.store.server_lock import SERVER_LOCK

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer runs
    url = urlparse(chroma_url)
    client = chromadb.HttpClient(host=url.hostname, port=url.port)
    with contextlib.suppress(Exception):
        client.delete_collection(SERVER_LOCK)
    client.create_collection(SERVER_LOCK, metadata={"owner": f"{socket.gethostname()}:{gone.pid}", "token": "old",
                                                    "expires": time.time() + 3600})
    settings = Settings(index_dir=tmp_path, chroma_url=chroma_url)
    report = ingest(load_papers([FIXTURES / "mini_zh.txt"])[0], settings, rebuild=True)
    assert len(report.added) == 3
    # a live process's lock still holds
    client.create_collection(SERVER_LOCK, metadata={"owner": f"{socket.gethostname()}:{os.getpid()}", "token": "x",
                                                    "expires": time.time() + 3600})
    try:
        with pytest.raises(IndexStoreError, match="is writing"):
            ingest(load_papers([FIXTURES / "mini.txt"])[0], Settings(index_dir=tmp_path / "b", chroma_url=chroma_url))
    finally:
        client.delete_collection(SERVER_LOCK)


def test_a_server_that_accepts_and_never_answers_is_an_error_in_bounded_time(tmp_path):
    """A Chroma server stopped (SIGSTOP) or a port that accepts and never answers hung every command forever:
    chromadb's client waits with no bound. Now the wait is tuning.chroma_timeout (here 1 s), then one line."""
    import socket
    import threading

    from assistant.config import Settings
    from assistant.errors import IndexStoreError
    from assistant.store.index import Index

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    held = []
    threading.Thread(target=lambda: held.extend(listener.accept() for _ in range(5)), daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    settings = Settings(index_dir=tmp_path / "cache", chroma_url=url)
    settings = settings.replace(tuning={**settings.tuning.model_dump(), "chroma_timeout": 1.0})
    with pytest.raises(IndexStoreError) as err:  # it returns at all (it waited forever), saying why
        Index(settings)
    assert "no answer within 1 s" in str(err.value) and f"--port {listener.getsockname()[1]}" in str(err.value)
    listener.close()
