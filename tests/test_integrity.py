"""Index integrity (docs/index-integrity.md): a read never adds papers to a non-empty index, every injected
damage is detected by the next command or by doctor, remove and ingest survive a kill at every step, and
storage faults (read-only directory, full disk) are one line with exit 4 - never a traceback."""

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
from typer.testing import CliRunner

from assistant.cli.app import app
from assistant.config import Settings
from assistant.store.index import Index

from . import killed
from .conftest import FIXTURES

runner = CliRunner()


def run(*args, input=None):
    """A CLI command in-process; an exception the CLI does not turn into one line fails the test."""
    return runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


def error_line(res) -> str:
    """The command's one error line, without white space: rich wraps it at the test's 80 columns, even
    inside a path, so phrases are compared with ``has``."""
    assert "Traceback" not in res.output
    said = res.stderr.strip()
    assert said.count("Error:") == 1, res.output
    return "".join(said[said.index("Error:"):].split())  # a progress bar may come before it


def has(text: str, *phrases) -> bool:
    flat = "".join(text.split())
    return all("".join(str(p).split()) in flat for p in phrases)


def fresh():
    """Forget this process's Chroma handles: damage below is done to files behind Chroma's back."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def stored(path) -> int:
    """Papers in the store, read without the integrity checks."""
    fresh()
    return Index(Settings(index_dir=path), check=False).count()


def top_hit(path, query="Mixture-of-Thought truth-table modality") -> list[str]:
    res = run("search", query, "--json", "--index-dir", path)
    assert res.exit_code == 0, res.output
    return [h["paper_id"] for h in json.loads(res.stdout)["hits"]]


def crash(point: str, *args, group: int | None = None) -> None:
    """Run a CLI command in a process that SIGKILLs itself at ``point`` (integrity.crash_point)."""
    ended = killed.cli(*args, crash=point, group=group, timeout=120)
    assert ended.returncode == -9, ended.stderr  # it died at the crash point, not before or after


# --- 1. the bundled corpus goes only into a directory that holds nothing ---------------------

MANIFEST_DAMAGE = {
    "deleted": lambda d: (d / "manifest.json").unlink(),
    "garbled": lambda d: (d / "manifest.json").write_text("{garbled"),
    "not a manifest": lambda d: (d / "manifest.json").write_text("[1, 2]"),
}


@pytest.mark.parametrize("damage", MANIFEST_DAMAGE)
def test_a_lost_manifest_is_named_never_replaced_by_the_bundled_corpus(mini_index, damage):
    MANIFEST_DAMAGE[damage](mini_index)
    fresh()
    for cmd in (["search", "reasoning"], ["ask", "what is reasoning?"], ["papers"], ["ingest", FIXTURES / "mini.txt"]):
        res = run(*cmd, "--index-dir", mini_index)
        said = error_line(res)
        assert res.exit_code == 4 and has(said, "manifest.json", "doctor --repair")
        assert not has(said, "--rebuild")  # the advice must not replace the user's papers
        # run as printed, the advice acted on the default index: it names this one
        assert has(said, f"(add --index-dir {mini_index} to that command)")
    assert stored(mini_index) == 6
    res = run("doctor", "--repair", "--index-dir", mini_index)
    assert res.exit_code == 0 and has(res.stdout, "restored manifest.json from its copy")
    assert top_hit(mini_index)[0] == "mini#2"


def test_an_interrupted_first_ingest_is_finished_by_the_next_command_never_by_the_bundled_corpus(tmp_path):
    idx, source = tmp_path / "idx", tmp_path / "mine.txt"
    shutil.copy(FIXTURES / "mini.txt", source)
    crash("ingest-group", "ingest", source, "--index-dir", idx, group=2)  # killed after its first 2 papers
    assert stored(idx) == 2
    res = run("doctor", "--index-dir", idx)  # doctor reads, changes nothing, and names both ways to finish it
    assert res.exit_code == 1 and has(res.output, f"assistant ingest {source}", "doctor --repair")
    assert stored(idx) == 2
    res = run("papers", "--json", "--index-dir", idx)  # the next command finishes it from its journal, and says so
    assert res.exit_code == 0 and has(res.stderr, "finished the interrupted ingest", str(source.resolve()))
    # its bar names that work: the user's index is no first run of the bundled corpus
    assert "Finishing an interrupted write" in res.stderr and "first run only" not in res.stderr
    assert sorted(p["paper_id"] for p in json.loads(res.stdout)) == [f"mine#{n}" for n in range(1, 7)]
    res = run("ingest", source, "--index-dir", idx, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["unchanged"] == 6
    assert top_hit(idx)[0] == "mine#2" and run("doctor", "--index-dir", idx).exit_code == 0


def test_a_first_ingest_killed_between_its_commit_and_manifest_json_is_finished_by_the_next_read(tmp_path):
    # found by tests/test_crash.py's random kill points: the read said "no manifest.json (deleted?)", and a re-run
    # of the ingest refused to run until doctor --repair
    idx, source = tmp_path / "idx", tmp_path / "mine.txt"
    shutil.copy(FIXTURES / "mini.txt", source)
    crash("commit-meta", "ingest", source, "--index-dir", idx)
    assert not (idx / "manifest.json").exists() and stored(idx) == 6
    assert top_hit(idx)[0] == "mine#2"  # the read wrote manifest.json from its copy in Chroma
    assert json.loads((idx / "manifest.json").read_text())["sources"] == [str(source.resolve())]
    assert run("doctor", "--index-dir", idx).exit_code == 0


def test_a_fresh_clone_s_index_store_is_built_from_the_bundled_corpus_by_the_first_read(bundled_index_dir):
    """The repository ships index_store/ holding only its placeholder; the README's run command must build the
    bundled corpus there (the session fixture made that first read, as a fresh clone does)."""
    assert (bundled_index_dir / ".gitkeep").exists()
    manifest = json.loads((bundled_index_dir / "manifest.json").read_text())
    assert manifest["sources"] == ["bundled"] and manifest["papers"] == 95


def test_a_directory_holding_something_else_is_refused_and_left_as_it_was(tmp_path):
    from assistant.store.integrity import NoIndex

    idx = tmp_path / "idx"
    idx.mkdir()
    (idx / "notes.txt").write_text("mine")
    res = run("ask", "what is reasoning?", "--index-dir", idx)
    assert res.exit_code == 4 and has(error_line(res), "not empty but holds no index", "assistant ingest")
    assert sorted(p.name for p in idx.iterdir()) == ["notes.txt"]  # no store created by the failed read
    (idx / "notes.txt").unlink()
    with pytest.raises(NoIndex):  # emptied, it holds nothing again: the next read builds the bundled corpus
        Index(Settings(index_dir=idx))


def test_only_an_interrupted_build_of_the_bundled_corpus_is_resumed_by_a_read(tmp_path):
    from assistant.store.integrity import NoIndex, holds_nothing

    idx = tmp_path / "idx"
    assert holds_nothing(idx)
    (idx / "server-0123456789").mkdir(parents=True)  # a server-mode cache and a lock file: still nothing
    (idx / ".lock").touch()
    assert holds_nothing(idx)
    crash("ingest-journaled", "ingest", "--index-dir", idx)  # the bundled corpus, killed before any paper
    fresh()
    with pytest.raises(NoIndex) as caught:
        Index(Settings(index_dir=idx))
    assert caught.value.resume_bundled
    (idx / "notes.txt").write_text("mine")  # a directory holding anything else is not built into
    assert not holds_nothing(idx)


# --- 2. rebuild advice never drops what the user ingested ------------------------------------


def test_rebuild_rereads_the_recorded_sources_and_refuses_when_they_are_gone(tmp_path):
    idx, source = tmp_path / "idx", tmp_path / "mine.txt"
    shutil.copy(FIXTURES / "mini_zh.txt", source)
    assert run("ingest", source, "--index-dir", idx).exit_code == 0
    assert json.loads((idx / "manifest.json").read_text())["sources"] == [str(source.resolve())]
    res = run("ingest", "--rebuild", "--index-dir", idx, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["added"] == 3  # mine.txt again, not the bundled 95
    assert stored(idx) == 3
    source.unlink()
    res = run("ingest", "--rebuild", "--index-dir", idx)
    said = error_line(res)
    assert res.exit_code == 3 and has(said, source.resolve(), "no longer exist")
    assert stored(idx) == 3


def test_rebuild_without_recorded_sources_asks_for_the_files(mini_index):
    # the session's mini index was ingested through the library, which records no source paths
    res = run("ingest", "--rebuild", "--index-dir", mini_index)
    assert res.exit_code == 3 and has(error_line(res), "does not record")
    assert stored(mini_index) == 6


# --- 3. damage is detected: by the next command or by doctor --------------------------------


@pytest.mark.parametrize("damage", ["chroma/ deleted", "chroma.sqlite3 emptied"])
def test_a_lost_store_is_an_error_with_the_rebuild_that_rereads_the_sources(tmp_path, damage):
    idx, source = tmp_path / "idx", tmp_path / "mine.txt"
    shutil.copy(FIXTURES / "mini_zh.txt", source)
    assert run("ingest", source, "--index-dir", idx).exit_code == 0
    if damage == "chroma/ deleted":
        shutil.rmtree(idx / "chroma")
    else:
        (idx / "chroma" / "chroma.sqlite3").write_bytes(b"")
    fresh()
    for cmd in (["search", "federated learning"], ["ask", "what is federated learning?"]):
        res = run(*cmd, "--index-dir", idx)
        said = error_line(res)
        assert res.exit_code == 4 and has(said, "is empty but its manifest lists 3 papers",
                                          f"assistant ingest --rebuild (re-reads {source.resolve()})")
    res = run("doctor", "--index-dir", idx)
    assert res.exit_code == 1 and has(res.stdout, "FAIL index", "store is empty")
    assert run("ingest", "--rebuild", "--index-dir", idx).exit_code == 0 and stored(idx) == 3


def test_shuffled_or_damaged_derived_files_are_detected_and_rebuilt(mini_index):
    reference = Index(Settings(index_dir=mini_index)).chunk_vectors().matrix.copy()
    expected = top_hit(mini_index)
    path = mini_index / "vectors" / "matrix.npy"
    np.save(path, np.load(path)[np.random.default_rng(0).permutation(len(reference))])
    bm25_file = next(p for p in sorted((mini_index / "bm25").iterdir()) if p.suffix == ".npy")
    raw = bytearray(bm25_file.read_bytes())
    raw[-4:] = b"\x00\x00\x80\x7f"  # the last score overwritten
    bm25_file.write_bytes(bytes(raw))
    res = run("doctor", "--index-dir", mini_index)
    assert res.exit_code == 1 and has(res.stdout, "vectors damaged (checksum mismatch)", "bm25 damaged")
    assert top_hit(mini_index) == expected  # the read rebuilt both from Chroma
    assert np.allclose(Index(Settings(index_dir=mini_index)).chunk_vectors().matrix, reference, atol=1e-6)
    assert run("doctor", "--index-dir", mini_index).exit_code == 0


def test_orphan_chunks_and_papers_without_chunks_are_found_and_repaired(mini_index):
    idx = Index(Settings(index_dir=mini_index))
    idx.chunks.upsert(ids=["ghost#1::1"], embeddings=[[0.0] * 383 + [1.0]],
                      metadatas=[{"paper_id": "ghost#1", "chunk": 1, "text": "ghost"}])
    idx.chunks.delete(where={"paper_id": "mini#3"})
    res = run("search", "reasoning", "--index-dir", mini_index)
    assert res.exit_code == 4 and has(error_line(res), "inconsistent", "doctor --repair")
    assert has(run("doctor", "--index-dir", mini_index).stdout, "1 orphan chunks", "1 papers without chunks")
    res = run("doctor", "--repair", "--index-dir", mini_index)
    assert res.exit_code == 0 and has(res.stdout, "dropped 1 orphan chunks", "re-embedded 1 papers")
    assert top_hit(mini_index)[0] == "mini#2"


def test_lost_vector_segments_are_damage_not_an_ingest_and_repair_re_embeds(tmp_path, monkeypatch):
    import assistant.store.index as index_mod

    def small_segments(self):
        # HNSW flushes to its segment files every 10 vectors here (every 1,000 by default), so that 20
        # chunks reach the files on disk as a large index's vectors do
        meta = {"hnsw:space": "cosine", "hnsw:batch_size": 10, "hnsw:sync_threshold": 10}
        self.chunks = self.client.get_or_create_collection(index_mod.CHUNKS, metadata=meta, embedding_function=None)
        self.papers = self.client.get_or_create_collection(index_mod.PAPERS, metadata=meta, embedding_function=None)

    idx = tmp_path / "idx"
    with monkeypatch.context() as m:
        m.setattr(index_mod.Index, "open_collections", small_segments)
        assert run("ingest", FIXTURES / "mini.txt", "--index-dir", idx).exit_code == 0
    for segment in (idx / "chroma").iterdir():
        if segment.is_dir():
            shutil.rmtree(segment)
    shutil.rmtree(idx / "vectors")
    fresh()
    res = run("search", "reasoning", "--index-dir", idx)
    said = error_line(res)
    assert res.exit_code == 4 and has(said, "is damaged", "doctor --repair") and not has(said, "under an ingest")
    res = run("ingest", FIXTURES / "mini.txt", "--index-dir", idx)  # not "6 unchanged"
    assert res.exit_code == 4 and has(error_line(res), "lost vectors")
    res = run("doctor", "--repair", "--index-dir", idx)
    assert res.exit_code == 0 and has(res.stdout, "re-embedded the 6 stored abstracts")
    assert top_hit(idx)[0] == "mini#2"


# a healthy local index is checked by reading chroma.sqlite3 with sqlite3 (integrity.verified_directly): `papers` and
# `show` import no chromadb, and damage still fails the next command with its one-line fix

#: Runs the CLI, then says on its last stderr line which heavy modules the process imported.
PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('imported:', *[m for m in ('chromadb', 'onnxruntime', 'numpy')"
         " if m in sys.modules], file=sys.stderr))\n"
         "from assistant.cli.app import main\n"
         "main()")


def test_papers_and_show_on_a_healthy_index_import_no_chromadb(mini_index):
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    outputs = []
    for cmd in (["papers", "--json"], ["show", "mini#2", "--json"], ["show", "mini#2"]):
        proc = subprocess.run([sys.executable, "-c", PROBE, *cmd, "--index-dir", str(mini_index)], capture_output=True,
                              text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == "imported:", (cmd, proc.stderr)  # chromadb ~1.7 s CPU, numpy ~0.2
        outputs.append(proc.stdout)
    assert len(json.loads(outputs[0])) == 6 and json.loads(outputs[1])["paper_id"] == "mini#2"
    assert "Mixture-of-Thought" in outputs[2]


def _delete_row(index_dir, paper_id: str) -> None:
    """A paper's record deleted from chroma.sqlite3 itself, behind Chroma's back."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(index_dir / "chroma" / "chroma.sqlite3")) as db, db:
        (segment,) = db.execute("SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id "
                                "WHERE c.name = 'papers' AND s.scope = 'METADATA'").fetchone()
        (row,) = db.execute("SELECT id FROM embeddings WHERE segment_id = ? AND embedding_id = ?",
                            (segment, paper_id)).fetchone()
        db.execute("DELETE FROM embedding_metadata WHERE id = ?", (row,))
        db.execute("DELETE FROM embeddings WHERE id = ?", (row,))


DIRECT_DAMAGE = {
    "an embeddings row deleted from chroma.sqlite3": (lambda d: _delete_row(d, "mini#3"),
                                                      ("inconsistent", "6 papers", "store: 5 papers", "doctor --repair")),
    "a paper record deleted through Chroma": (
        lambda d: Index(Settings(index_dir=d), check=False).papers.delete(ids=["mini#3"]),
        ("inconsistent", "store: 5 papers", "doctor --repair")),
    "chroma.sqlite3 emptied": (lambda d: (d / "chroma" / "chroma.sqlite3").write_bytes(b""),
                               ("is empty but its manifest lists 6 papers", "assistant ingest --rebuild")),
}


@pytest.mark.parametrize("damage", DIRECT_DAMAGE)
def test_damage_behind_the_manifest_s_back_fails_papers_show_and_search(mini_index, damage):
    do, phrases = DIRECT_DAMAGE[damage]
    do(mini_index)
    fresh()
    for cmd in (["papers"], ["show", "mini#2"], ["search", "reasoning"]):
        res = run(*cmd, "--index-dir", mini_index)
        assert res.exit_code == 4 and has(error_line(res), *phrases), (cmd, res.output)


def test_a_record_rewritten_at_the_same_counts_is_read_from_the_store(mini_index):
    """The counts still match, so a read goes on as before; but the store's log moved past the position its commit
    recorded (the manifest's seq), so papers come from Chroma, not from that commit's papers.json."""
    idx = Index(Settings(index_dir=mini_index), check=False)
    got = idx.papers.get(ids=["mini#2"], include=["metadatas", "embeddings"])
    meta = dict(got["metadatas"][0])
    meta["paper_json"] = json.dumps({**json.loads(meta["paper_json"]), "title": "Rewritten behind the manifest"})
    idx.papers.upsert(ids=["mini#2"], embeddings=[got["embeddings"][0]], metadatas=[meta])
    res = run("show", "mini#2", "--json", "--index-dir", mini_index)
    assert res.exit_code == 0 and json.loads(res.stdout)["indexed_title"] == "Rewritten behind the manifest"
    assert len(json.loads(run("papers", "--json", "--index-dir", mini_index).stdout)) == 6


def test_what_the_direct_read_cannot_decide_is_left_to_chromadb(mini_index, monkeypatch):
    import sqlite3

    from assistant.store import chroma_file, integrity

    path = mini_index / "chroma" / "chroma.sqlite3"
    found = chroma_file.read_store(path, integrity.COUNTED, integrity.META)
    manifest = json.loads((mini_index / "manifest.json").read_text())
    assert (found["papers"], found["chunks"]) == (6, manifest["chunks"]) and found["seq"] == manifest["seq"]
    assert json.loads(found["meta"]["state"]) == integrity.state_of(manifest) and "journal" not in found["meta"]
    assert Index(Settings(index_dir=mini_index)).verified_counts == {"papers": 6, "chunks": manifest["chunks"]}
    with monkeypatch.context() as m:  # another Chroma's schema: checked through chromadb, with the same verdict
        m.setattr(chroma_file, "SCHEMA", {**chroma_file.SCHEMA, "sysdb": 11})
        assert chroma_file.read_store(path, integrity.COUNTED, integrity.META) is None
        idx = Index(Settings(index_dir=mini_index))
        assert idx.verified_counts is None and len(idx.all_papers()) == 6
    # a log entry Chroma has not applied yet (a crash between its two writes): only chromadb can count
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        (collection,) = db.execute("SELECT id FROM collections WHERE name = 'papers'").fetchone()
        db.execute("INSERT INTO embeddings_queue (topic, id, operation, vector, encoding, metadata) "
                   "VALUES (?, 'ghost', 2, NULL, NULL, '{}')", (f"persistent://default/default/{collection}",))
    assert chroma_file.read_store(path, integrity.COUNTED, integrity.META) is None
    assert chroma_file.read_store(mini_index / "missing.sqlite3", integrity.COUNTED, integrity.META) is None


# --- 5. remove is crash-safe ------------------------------------------------------------------


@pytest.mark.parametrize("point", ["remove-journaled", "remove-records", "remove-chunks", "commit-meta"])
def test_kill_9_at_every_step_of_remove_leaves_it_finished_by_the_next_command(mini_index, point):
    crash(point, "remove", "mini#2", "--index-dir", mini_index)
    fresh()
    assert "mini#2" not in top_hit(mini_index)  # the next command finished the remove
    idx = Index(Settings(index_dir=mini_index))
    assert idx.count() == 5 and idx.chunks.get(where={"paper_id": "mini#2"})["ids"] == []
    assert "mini#2" not in idx.chunk_vectors().paper_ids
    assert run("doctor", "--index-dir", mini_index).exit_code == 0
    res = run("remove", "mini#2", "--index-dir", mini_index)
    assert res.exit_code == 3 and has(error_line(res), "not in the index")


# --- 6. storage faults: one line, exit 4, index intact ------------------------------------------


@pytest.fixture
def mount_point(tmp_path):
    """A directory to mount on (root only: mount needs CAP_SYS_ADMIN); unmounted afterwards."""
    point = tmp_path / "mnt"
    point.mkdir()
    yield point
    subprocess.run(["umount", "-l", str(point)], capture_output=True)  # lazy: this process may hold files there


def _mount(*args) -> None:
    res = subprocess.run(["mount", *map(str, args)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount here (needs root): {res.stderr.strip()}")


def test_a_read_only_index_directory_is_one_line_for_every_command(mini_index, mount_point):
    _mount("--bind", mini_index, mount_point)
    _mount("-o", "remount,ro,bind", mount_point)
    for cmd in (["search", "reasoning"], ["papers"], ["chat"], ["ingest", FIXTURES / "mini_zh.txt"],
                ["remove", "mini#2"]):
        res = run(*cmd, "--index-dir", mount_point, input="what is reasoning?\n")
        said = error_line(res)
        assert res.exit_code == 4 and has(said, "is read-only") and not has(said, "--rebuild"), cmd
    res = run("doctor", "--index-dir", mount_point)
    assert res.exit_code == 4 and has(res.stdout, "read-only")  # as every command says it (doctor said 1)


def test_a_nearly_full_disk_refuses_an_ingest_before_it_writes(tmp_path, mount_point):
    _mount("-t", "tmpfs", "-o", "size=24m", "tmpfs", mount_point)
    idx = mount_point / "idx"
    assert run("ingest", FIXTURES / "mini.txt", "--index-dir", idx).exit_code == 0
    filler = mount_point / "filler"
    filler.write_bytes(b"\0" * max(shutil.disk_usage(mount_point).free - 2_000_000, 0))
    for cmd in (["ingest", FIXTURES / "mini_zh.txt"], ["remove", "mini#2"]):
        res = run(*cmd, "--index-dir", idx)
        assert res.exit_code == 4 and has(error_line(res), "is full", "MB free")
    assert top_hit(idx)[0] == "mini#2"  # intact, and readable on the full disk
    filler.unlink()
    assert run("ingest", FIXTURES / "mini_zh.txt", "--index-dir", idx).exit_code == 0
    assert stored(idx) == 9 and run("doctor", "--index-dir", idx).exit_code == 0


def test_enospc_at_the_commit_is_one_line_and_a_rerun_completes(mini_index, monkeypatch):
    import assistant.store.index as index_mod

    real = index_mod.Index.write_manifest

    def full(self, manifest):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.manifest_path))

    monkeypatch.setattr(index_mod.Index, "write_manifest", full)
    res = run("ingest", FIXTURES / "mini_zh.txt", "--index-dir", mini_index)
    assert res.exit_code == 4 and has(error_line(res), "is full")
    monkeypatch.setattr(index_mod.Index, "write_manifest", real)
    # the next command finishes the ingest from its journal, says so, then answers
    res = run("search", "reasoning", "--index-dir", mini_index)
    assert res.exit_code == 0 and has(res.stderr, "finished the interrupted ingest", "mini_zh.txt")
    assert stored(mini_index) == 9 and top_hit(mini_index)[0] == "mini#2"
    assert run("doctor", "--index-dir", mini_index).exit_code == 0


def test_concurrent_readers_rebuilding_bm25_do_not_collide(mini_index):
    shutil.rmtree(mini_index / "bm25")
    indexes = [Index(Settings(index_dir=mini_index)) for _ in range(6)]
    start, errors = threading.Barrier(len(indexes)), []

    def rebuild(index):
        start.wait()
        try:
            for _ in range(3):
                index.rebuild_bm25()
        except Exception as exc:  # noqa: BLE001 - any failure is the collision this test is about
            errors.append(exc)

    threads = [threading.Thread(target=rebuild, args=(i,)) for i in indexes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not [p.name for p in mini_index.iterdir() if ".tmp" in p.name or ".old" in p.name]
    assert top_hit(mini_index)[0] == "mini#2" and run("doctor", "--index-dir", mini_index).exit_code == 0


def test_a_damaged_sentence_cache_row_is_recomputed(mini_index):
    import sqlite3

    from assistant.store.sentence_cache import SENTENCE_CACHE

    idx = Index(Settings(index_dir=mini_index))
    paper = next(iter(idx.all_papers().values()))
    sentences, vecs = idx.sentence_vectors(paper.id, paper.abstract)
    with sqlite3.connect(mini_index / SENTENCE_CACHE) as db:
        db.execute("UPDATE sentences SET vecs = substr(vecs, 1, 10)")  # a truncated row
    again = Index(Settings(index_dir=mini_index)).sentence_vectors(paper.id, paper.abstract)
    assert again[0] == sentences and np.allclose(again[1], vecs, atol=1e-6)


def _as_a_plain_user():
    """preexec_fn: the process keeps its user but loses what lets root read and write any file (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH leave its bounding set), so file permissions apply to it as to any user."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_an_unreadable_store_is_a_permission_to_fix_not_a_re_ingest(mini_index):
    """Issue 47 row 25: with chroma/ unreadable, the advice was to move the index aside and re-ingest."""
    (mini_index / "chroma").chmod(0)
    try:
        for cmd in (["search", "reasoning"], ["papers"], ["ingest", FIXTURES / "mini_zh.txt"], ["doctor"]):
            res = subprocess.run([sys.executable, "-m", "assistant", *map(str, cmd), "--index-dir", str(mini_index)],
                                 capture_output=True, text=True, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"},
                                 preexec_fn=_as_a_plain_user if os.geteuid() == 0 else None, timeout=120)
            said = "".join((res.stderr + res.stdout).split())
            assert res.returncode in (1, 4) and "Traceback" not in res.stderr, (cmd, res.stderr)
            assert has(said, "permission denied", "chmod") and not has(said, "re-ingest with"), (cmd, said)
            assert "moveit" not in said.lower() and "aside" not in said, (cmd, said)
    finally:
        (mini_index / "chroma").chmod(0o755)
    assert top_hit(mini_index)[0] == "mini#2"  # nothing was lost


def test_an_interrupted_ingest_names_only_the_files_it_was_reading(tmp_path):
    """A kill during `ingest b.txt` into an index holding a.txt, whose paper mine#2 the user had removed: the advice
    named every file the index ever read ("finish it with: assistant ingest a.txt b.txt"), and following it brought
    the removed paper back."""
    idx, a, b = tmp_path / "idx", tmp_path / "a.txt", tmp_path / "b.txt"
    shutil.copy(FIXTURES / "mini.txt", a)
    shutil.copy(FIXTURES / "mini_zh.txt", b)
    assert run("ingest", a, "--index-dir", idx).exit_code == 0
    assert run("remove", "a#2", "--index-dir", idx).exit_code == 0
    crash("ingest-journaled", "ingest", b, "--index-dir", idx)
    res = run("doctor", "--index-dir", idx)
    assert res.exit_code == 1 and has(res.output, f"assistant ingest {b}") and not has(res.output, str(a))
    res = run("papers", "--json", "--index-dir", idx)  # the next command finishes it, and names what it read
    assert has(res.stderr, "finished the interrupted ingest", str(b)) and not has(res.stderr, str(a))
    ids = [p["paper_id"] for p in json.loads(res.stdout)]
    assert "a#2" not in ids and sum(i.startswith("b#") for i in ids) == 3


def test_advice_for_a_chroma_server_names_the_server(tmp_path):
    """Run as printed, "finish it with: assistant ingest y.jsonl" acted on the default local index, not the server
    the user named; the URL's credentials stay hidden."""
    from assistant.service.api import pointed

    said = pointed("finish it with: assistant ingest y.jsonl (or: assistant doctor --repair)",
                   Settings(index_dir=tmp_path / "cache", chroma_url="http://admin:hunter2@127.0.0.1:8765"))
    assert said.endswith(f"(add --chroma-url 'http://***@127.0.0.1:8765' --index-dir {tmp_path / 'cache'} to each "
                         "command)") and "hunter2" not in said


def test_a_first_build_cut_before_its_first_commit_is_no_index_and_the_default_one_is_built(tmp_path, monkeypatch):
    """Ctrl-C during the first `ask` (building the bundled corpus) left a lock and an empty Chroma store: every
    command then said "not empty but holds no index", and doctor --repair wrote a manifest of 0 papers, after which
    the index was "ok" and answered nothing."""
    import chromadb

    def cut(where):
        (where / "chroma").mkdir(parents=True)
        chromadb.PersistentClient(path=str(where / "chroma"))  # what the build had made when Ctrl-C came
        (where / ".lock").touch()

    named = tmp_path / "named"
    cut(named)
    res = run("papers", "--index-dir", named)  # a directory named on the command line: no bundled build
    assert res.exit_code == 4 and has(error_line(res), "no index at", "assistant ingest")
    res = run("doctor", "--repair", "--index-dir", named)
    assert res.exit_code == 4 and has(res.stdout, "not repaired", "first build was cut off")
    assert not (named / "manifest.json").exists()
    default = tmp_path / "default"
    cut(default)
    monkeypatch.setenv("ASSISTANT_INDEX_DIR", str(default))  # the default directory: built on first use
    res = run("papers", "--json")
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 95


def test_a_write_over_a_file_size_limit_is_one_line_and_the_next_command_finishes_it(mini_index, tmp_path):
    """`ulimit -f` (or a quota) under an ingest: Chroma's "disk I/O error" came out as a 110-line traceback."""
    import resource

    idx = tmp_path / "idx"
    shutil.copytree(mini_index, idx)
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps({"id": f"m{i}", "abstract": f"Study {i} of graph sampling: we propose method {i} "
                                        f"for node {i} classification and report {i} percent gains on benchmarks. " * 6})
                            + "\n" for i in range(60)))
    limit = max(p.stat().st_size for p in idx.rglob("*") if p.is_file()) + 4096

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "ASSISTANT_RERANK": "off"}
    res = subprocess.run([sys.executable, "-m", "assistant", "ingest", str(more), "--index-dir", str(idx)],
                         capture_output=True, text=True, env=env, preexec_fn=small_files, timeout=600)
    assert res.returncode != 0 and "Traceback" not in res.stderr and "\u2502" not in res.stderr, res.stderr[-1500:]
    assert res.stderr.strip().splitlines()[-1].startswith("Error: ")
    res = run("papers", "--json", "--index-dir", idx)
    assert res.exit_code == 0 and len(json.loads(res.stdout)) in (6, 66)  # before it, or finished by this read
    assert run("ingest", more, "--index-dir", idx).exit_code == 0
    assert len(json.loads(run("papers", "--json", "--index-dir", idx).stdout)) == 66


def test_a_damaged_store_with_its_papers_json_is_repaired_not_re_ingested(mini_index, tmp_path):
    """chroma.sqlite3 truncated: the advice was to move the index aside and re-ingest from files that may be gone,
    though papers.json holds every paper and doctor --repair re-embeds them once the store is out of the way."""
    idx = tmp_path / "idx"
    shutil.copytree(mini_index, idx)
    store = idx / "chroma" / "chroma.sqlite3"
    with open(store, "r+b") as f:
        f.truncate(store.stat().st_size // 3)
    res = run("papers", "--index-dir", idx)
    said = error_line(res)
    assert res.exit_code == 4 and has(said, "mv", "chroma.damaged", "doctor --repair", "papers.json")
    assert not has(said, "re-ingest")
    shutil.move(str(idx / "chroma"), str(idx / "chroma.damaged"))
    assert run("doctor", "--repair", "--index-dir", idx).exit_code == 0
    assert top_hit(idx)[0] == "mini#2" and len(json.loads(run("papers", "--json", "--index-dir", idx).stdout)) == 6


def test_an_index_directory_linking_to_nothing_says_so(tmp_path):
    """An index on a drive not mounted (a link to nothing): "no index at dang; build one with: assistant ingest",
    then that ingest failed with "File exists: dang" (exit 1)."""
    link = tmp_path / "dang"
    link.symlink_to(tmp_path / "unmounted" / "index")
    for cmd in (["papers"], ["ingest", FIXTURES / "mini.txt"], ["search", "reasoning"]):
        res = run(*cmd, "--index-dir", link)
        assert res.exit_code == 4 and has(error_line(res), "a link to", "does not exist", "mounted"), cmd
    assert not (tmp_path / "unmounted").exists()
