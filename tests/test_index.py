import json
import shutil
import zlib

import pytest

from assistant.config import Settings
from assistant.text.corpus import load_papers
from assistant.errors import IndexStoreError, InputError
from assistant.store.chunks import Chunk, chunk_papers, chunk_to_meta, paper_to_meta
from assistant.store.index import Index
from assistant.store.ingest import ingest
from assistant.search.retrieve import Retriever

from .conftest import FIXTURES


def test_manifest_records_embedder_dimension_and_chunking(mini_index):
    manifest = json.loads((mini_index / "manifest.json").read_text())
    assert manifest["embedder"] == "all-MiniLM-L6-v2-onnx-int8"
    assert manifest["dim"] == 384
    assert manifest["chunking"]["chunk_size"] == 128 and manifest["chunking"]["chunk_overlap"] == 32
    assert manifest["papers"] == 6


def test_chunks_point_into_their_abstract(mini_index):
    settings = Settings(index_dir=mini_index)
    idx = Index(settings)
    got = idx.chunks.get(include=["metadatas", "documents"])
    assert len(got["ids"]) > 6  # abstracts of ~250 tokens split into several 128-token chunks
    papers = idx.all_papers()
    expected = {c.id: c.text for c in chunk_papers(papers.values(), settings)}
    assert set(got["ids"]) == set(expected)
    for cid, m, doc in zip(got["ids"], got["metadatas"], got["documents"]):
        assert cid == f"{m['paper_id']}::{m['chunk']}"
        # no copy of the text (Chroma would full-text index it): offsets into the stored abstract
        assert doc is None and papers[m["paper_id"]].abstract[m["start"]:m["end"]] == expected[cid]
    assert idx.chunk_texts(list(expected)) == expected


def test_chunk_texts_read_chunks_stored_with_their_text(mini_index):
    """Indexes written before chunks became offsets kept the text as the document; a chunk that is
    not a verbatim slice keeps it in its metadata."""
    idx = Index(Settings(index_dir=mini_index))
    pid = next(iter(idx.all_papers()))
    idx.chunks.upsert(ids=[f"{pid}::9"], embeddings=[[0.3] * 384],
                      metadatas=[chunk_to_meta(Chunk(f"{pid}::9", pid, 9, "not in the abstract"))])
    idx.chunks.delete(ids=[f"{pid}::1"])  # an old-style record, not one merged into a new one
    idx.chunks.upsert(ids=[f"{pid}::1"], embeddings=[[0.1] * 384], documents=["old-style chunk text"],
                      metadatas=[{"paper_id": pid, "chunk": 1, "title": "T", "content_hash": "h"}])
    texts = idx.chunk_texts([f"{pid}::1", f"{pid}::9"])
    assert texts == {f"{pid}::1": "old-style chunk text", f"{pid}::9": "not in the abstract"}
    (mini_index / "papers.json").unlink()  # as an index from before papers.json: written from Chroma's records
    assert Index(Settings(index_dir=mini_index), check=False).chunk_texts([f"{pid}::1", f"{pid}::9"]) == texts
    assert (mini_index / "papers.json").exists()


def test_papers_stored_the_old_way_still_read(mini_index):
    """Before 2026-12-01 a paper's abstract was its Chroma document, not in its metadata."""

    idx = Index(Settings(index_dir=mini_index))
    paper = idx.all_papers()["mini#2"]
    old = {k: v for k, v in paper_to_meta(paper).items() if k != "abstract"}
    idx.papers.delete(ids=[paper.id])
    idx.papers.upsert(ids=[paper.id], embeddings=[[0.1] * 384], documents=[paper.abstract], metadatas=[old])
    (mini_index / "papers.json").unlink()  # read from Chroma, not from the snapshot of the ingest
    reopened = Index(Settings(index_dir=mini_index))
    assert reopened.get_paper("mini#2") == paper and reopened.all_papers()["mini#2"] == paper


def test_papers_show_and_search_read_the_snapshot_without_chromadb(mini_index):
    import subprocess
    import sys

    code = """
import json, sys
from pathlib import Path
from assistant.config import Settings
from assistant.store.index import Index
from assistant.search.retrieve import Retriever
idx = Index(Settings(index_dir=Path(sys.argv[1])))
papers, title = idx.all_papers(), idx.get_paper("mini#2").title
listed = sorted(m for m in ("chromadb", "onnxruntime") if m in sys.modules)  # what `papers` and `show` load
hits = Retriever(idx).search("federated learning", k=3).hits
print(json.dumps({"n": len(papers), "show": title, "listed": listed, "chromadb": "chromadb" in sys.modules,
                  "snippets": {h.chunk_id: h.snippet for h in hits}}))
"""
    out = subprocess.run([sys.executable, "-c", code, str(mini_index)], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    # a read checks the store against its last commit by reading chroma.sqlite3 directly (integrity.check_open), and
    # the papers and snippets come from the snapshot: Chroma is never opened
    assert got["n"] == 6 and got["show"]
    assert got["listed"] == [] and not got["chromadb"]
    assert got["snippets"] and all(got["snippets"].values())
    (mini_index / "papers.json").rename(mini_index / "kept.json")
    chroma = Index(Settings(index_dir=mini_index))
    chroma._snapshot_tried = True  # read Chroma's records, write no new snapshot
    assert chroma.chunk_texts(list(got["snippets"])) == got["snippets"]
    (mini_index / "kept.json").rename(mini_index / "papers.json")
    # a snapshot of another paper set (an ingest changed the index) is not read
    head, _, payload = (mini_index / "papers.json").read_bytes().partition(b"\n")
    data, header = json.loads(payload), json.loads(head)
    data["papers"] = data["papers"][:1]
    payload = json.dumps(data).encode()
    header.update(fingerprint="0" * 16, crc=f"{zlib.crc32(payload):08x}")
    (mini_index / "papers.json").write_bytes(json.dumps(header).encode() + b"\n" + payload)
    assert len(Index(Settings(index_dir=mini_index)).all_papers()) == 6


def test_reingesting_the_same_file_adds_nothing(mini_index):
    settings = Settings(index_dir=mini_index)
    before = Index(settings).chunks.count()
    papers, _ = load_papers([FIXTURES / "mini.txt"])
    report = ingest(papers, settings)
    assert report.added == [] and report.updated == [] and len(report.unchanged) == 6
    idx = Index(settings)
    assert idx.count() == 6 and idx.chunks.count() == before


def _ingested_copy(tmp_path, index_dir):
    """A copy of mini.txt ingested into a new index at ``index_dir`` (the user's own file, to edit)."""
    mine = tmp_path / "mini.txt"
    shutil.copy(FIXTURES / "mini.txt", mine)
    ingest(load_papers([mine])[0], Settings(index_dir=index_dir))
    return mine


def _mini_with_new_third_abstract(mine):
    """The file ``mine`` (a copy of mini.txt) with its third abstract replaced, as a user edits it."""
    text = mine.read_text(encoding="utf-8")
    header, body = text.split("\n", 1)
    paras = [p for p in body.split("\n\n") if p.strip()]
    paras[2] = "Zorblaxian quasi-widgets are studied here. We propose Zorblax, a tiny method."
    mine.write_text(header + "\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    return mine


def test_changed_abstract_replaces_old_chunks_and_bm25_follows(tmp_path):
    settings = Settings(index_dir=tmp_path / "idx")
    changed = _mini_with_new_third_abstract(_ingested_copy(tmp_path, tmp_path / "idx"))
    papers, _ = load_papers([changed])
    report = ingest(papers, settings)
    assert report.updated == ["mini#3"] and len(report.unchanged) == 5
    idx = Index(settings)
    chunks = idx.chunks.get(where={"paper_id": "mini#3"})
    assert idx.chunk_texts(chunks["ids"]) == {
        "mini#3::1": "Zorblaxian quasi-widgets are studied here. We propose Zorblax, a tiny method."}
    assert idx.get_paper("mini#3").title.startswith("Zorblax")
    hits = Retriever(idx).search("zorblaxian quasi-widgets", k=3).hits
    assert hits[0].paper_id == "mini#3" and hits[0].bm25 > 0


def test_index_built_with_another_embedder_is_a_clear_error(mini_index):
    manifest_path = mini_index / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["embedder"] = "openai:text-embedding-3-small"
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(IndexStoreError, match="ingest --rebuild"):
        Index(Settings(index_dir=mini_index))


def test_failed_ingest_changes_nothing(mini_index, tmp_path):
    from assistant.service.api import ingest_paths

    settings = Settings(index_dir=mini_index)
    before = Index(settings).fingerprint()
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00\x00binary")
    with pytest.raises(InputError):
        ingest_paths([FIXTURES / "mini_zh.txt", bad], settings)
    with pytest.raises(InputError):
        ingest_paths([tmp_path / "missing.txt"], settings)
    idx = Index(settings)
    assert idx.count() == 6 and idx.fingerprint() == before


def test_interrupted_ingest_leaves_no_orphan_chunks(mini_index):
    settings = Settings(index_dir=mini_index)
    idx = Index(settings)
    # simulate a crash after chunks were written but before the paper record
    idx.chunks.upsert(ids=["ghost#1::1"], embeddings=[[0.0] * 383 + [1.0]],
                      metadatas=[chunk_to_meta(Chunk("ghost#1::1", "ghost#1", 1, "ghost", 0))])
    papers, _ = load_papers([FIXTURES / "mini_zh.txt"])
    ingest(papers, settings)
    idx = Index(settings)
    assert idx.chunks.get(where={"paper_id": "ghost#1"})["ids"] == []
    assert idx.count() == 9


def test_concurrent_ingest_is_refused_with_a_clear_message(mini_index):
    import fcntl

    settings = Settings(index_dir=mini_index)
    with open(mini_index / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        papers, _ = load_papers([FIXTURES / "mini_zh.txt"])
        with pytest.raises(IndexStoreError, match="another ingest"):
            ingest(papers, settings)


def test_missing_index_is_a_clear_error(tmp_path):
    with pytest.raises(IndexStoreError, match="assistant ingest"):
        Index(Settings(index_dir=tmp_path / "none"))


def test_sentence_vectors_are_reused_by_a_new_process_and_a_broken_cache_is_recomputed(mini_index, monkeypatch):
    """The next `assistant ask` (a new Index) reads the abstracts' sentence vectors from disk; a damaged cache is
    embedded again."""
    import numpy as np

    import assistant.embed.embedder as embedder_mod
    from assistant.config import Settings
    from assistant.store.index import Index
    from assistant.store.sentence_cache import SENTENCE_CACHE

    settings = Settings.from_env(index_dir=mini_index)
    first = Index(settings)
    paper = next(iter(first.all_papers().values()))
    sentences, vecs = first.sentence_vectors(paper.id, paper.abstract)
    assert len(sentences) > 1 and vecs.shape == (len(sentences), 384)

    def no_embedding(*a, **k):
        raise AssertionError("embedded again instead of reading the cache")

    monkeypatch.setattr(embedder_mod, "embed_array", no_embedding)
    again = Index(settings).sentence_vectors(paper.id, paper.abstract)
    assert again[0] == sentences and np.array_equal(again[1], vecs)

    monkeypatch.undo()
    (mini_index / SENTENCE_CACHE).write_bytes(b"not a database")
    rebuilt = Index(settings).sentence_vectors(paper.id, paper.abstract)
    assert rebuilt[0] == sentences and np.allclose(rebuilt[1], vecs, atol=1e-6)
    monkeypatch.setattr(embedder_mod, "embed_array", no_embedding)
    assert Index(settings).sentence_vectors(paper.id, paper.abstract)[0] == sentences  # the cache was rebuilt


def test_an_ingest_embeds_every_abstracts_sentences_so_that_no_question_does(tmp_path, monkeypatch):
    """ASSISTANT_SENTENCES=ingest, the default: the sentences answers quote and the decisions read are embedded with
    the chunks, so a question new to the index embeds only itself (issue 48, item 5: on the bundled corpus an `ask`
    process of a new question cost 2.0-3.3 s CPU and ~395 MB, now 0.8-1.1 s and ~125 MB); ``lazy`` leaves them to
    first sight; a rebuild swaps its cache in with the index, so it holds the sentences of every paper."""
    import assistant.embed.embedder as embedder_mod
    from assistant.store.ingest import ingest
    from assistant.store.sentence_cache import SENTENCE_CACHE

    papers, _ = load_papers([FIXTURES / "mini.txt"])
    lazy = Settings(index_dir=tmp_path / "lazy", embed={"sentences": "lazy"})
    ingest(papers, lazy)
    assert not (tmp_path / "lazy" / SENTENCE_CACHE).exists()

    def no_embedding(*a, **k):
        raise AssertionError("a sentence was embedded after the ingest")

    for settings, rebuild in ((Settings(index_dir=tmp_path / "idx"), False), (Settings(index_dir=tmp_path / "lazy"), True)):
        ingest(papers, settings, rebuild=rebuild)
        with monkeypatch.context() as patch:
            patch.setattr(embedder_mod, "embed_array", no_embedding)
            index = Index(settings)
            for paper in index.all_papers().values():
                sentences, vecs = index.sentence_vectors(paper.id, paper.abstract)
                assert len(sentences) >= 1 and vecs.shape == (len(sentences), 384)
        assert not list(tmp_path.glob("*/rebuild-*"))


def test_chunk_vector_cache_matches_chroma_and_follows_changes(tmp_path):
    import numpy as np

    from assistant.store.ingest import remove

    mine = _ingested_copy(tmp_path, tmp_path / "idx")
    settings = Settings(index_dir=tmp_path / "idx")

    def brute_force(idx, qvec):
        got = idx.chunks.get(include=["embeddings", "metadatas"])
        best = {}
        for emb, meta in zip(got["embeddings"], got["metadatas"]):
            best[meta["paper_id"]] = max(best.get(meta["paper_id"], -2.0), float(np.dot(emb, qvec)))
        return best

    def cached(idx, qvec):
        ids, best, _ = Retriever(idx).dense_all(qvec)
        return dict(zip(ids, best.tolist()))

    idx = Index(settings)
    qvec = Retriever(idx).embed_query("mixture of thought reasoning")
    assert cached(idx, qvec) == pytest.approx(brute_force(idx, qvec), abs=1e-5)

    changed = _mini_with_new_third_abstract(mine)
    ingest(load_papers([changed])[0], settings)
    remove(["mini#5"], settings)
    idx = Index(settings)
    vectors = idx.chunk_vectors()
    assert "mini#5" not in vectors.paper_ids and vectors.chunk_ids.count("mini#3::1") == 1
    assert "mini#3::2" not in vectors.chunk_ids  # the old abstract's chunks are gone
    assert cached(idx, qvec) == pytest.approx(brute_force(idx, qvec), abs=1e-5)

    (tmp_path / "idx" / "vectors" / "matrix.npy").write_bytes(b"not a matrix")  # damaged cache: rebuilt on open
    assert cached(Index(settings), qvec) == pytest.approx(brute_force(idx, qvec), abs=1e-5)

    # a paper stored by an ingest killed before its commit is not in the saved matrix: the next
    # ingest must read it back rather than build the matrix from what it holds
    from assistant.text.corpus import Paper

    ghost = Paper(id="ghost#1", title="Ghost", abstract="A ghost abstract.", source="g.txt", position=1)
    idx.chunks.upsert(ids=["ghost#1::1"], embeddings=[qvec.tolist()],
                      metadatas=[chunk_to_meta(Chunk("ghost#1::1", ghost.id, 1, ghost.abstract, 0))])
    idx.papers.upsert(ids=[ghost.id], embeddings=[qvec.tolist()], metadatas=[paper_to_meta(ghost)])
    ingest(load_papers([FIXTURES / "mini_zh.txt"])[0], settings)
    idx = Index(settings)
    assert "ghost#1" in idx.chunk_vectors().paper_ids
    assert cached(idx, qvec) == pytest.approx(brute_force(idx, qvec), abs=1e-5)


def test_title_goes_before_every_chunk_or_only_the_first(monkeypatch):
    from assistant.errors import ConfigError
    from assistant.text.corpus import Paper
    from assistant.store.chunks import Chunk, embed_text

    paper = Paper(id="p#1", title="Sparse Widgets", abstract="One. Two.", source="s", position=1)
    first, second = Chunk("p#1::1", "p#1", 1, "One."), Chunk("p#1::2", "p#1", 2, "Two.")
    assert [embed_text(paper, c) for c in (first, second)] == ["Sparse Widgets. One.", "Sparse Widgets. Two."]
    assert [embed_text(paper, c, "first") for c in (first, second)] == ["Sparse Widgets. One.", "Two."]
    derived = Paper(id="p#2", title="One", abstract="One. Two.", source="s", position=2, title_derived=True)
    assert embed_text(derived, first) == "One."  # a title made from the abstract adds nothing
    monkeypatch.setenv("ASSISTANT_CHUNK_TITLE", "some")
    with pytest.raises(ConfigError, match="ASSISTANT_CHUNK_TITLE"):
        Settings.from_env()


def test_progress_moves_within_a_group_and_ends_at_the_paper_count(tmp_path, monkeypatch, no_shipped_vectors):
    import assistant.store.ingest as ingest_module

    monkeypatch.setattr(ingest_module, "GROUP_SIZE", 4)
    papers, _ = load_papers([FIXTURES / "mini.txt"])
    seen: list[tuple[int, int]] = []
    ingest(papers, Settings(index_dir=tmp_path / "idx", embed_batch=2), progress=lambda d, t: seen.append((d, t)))
    done = [d for d, _ in seen]
    assert {t for _, t in seen} == {6} and done[0] == 0 and done[-1] == 6
    assert done == sorted(done)  # never goes back
    assert set(done) - {0, 4, 6}  # steps inside a group, not only at its end


def test_a_bm25_load_never_mixes_two_saved_versions(mini_index, monkeypatch):
    """A writer swaps a new BM25 directory in (two renames) while a reader loads the old one file by file: a load
    across the swap read one version's parameters and the other's postings (an IndexError in a search during an
    ingest). Here, deterministically, another version is swapped in half-way through the load and the first one
    (a byte-identical copy) back in before it ends: a check that the record is unchanged across the load cannot
    see that. A reader gets one whole version."""
    import shutil

    import bm25s

    from assistant.store.files import scratch, swap_in
    from assistant.store.layout import BM25

    valid = mini_index / "bm25-valid"
    shutil.copytree(mini_index / BM25, valid)
    other = bm25s.BM25()  # another version: more papers, another state
    other.index(bm25s.tokenize([f"paper {i} on topic {i % 4}" for i in range(40)], show_progress=False),
                show_progress=False)

    def put(version) -> None:
        tmp, final, old = scratch(mini_index, BM25)
        if version is other:
            other.save(str(tmp), show_progress=False)
            (tmp / "ids.json").write_text(json.dumps({"state": "another", "ids": []}))
        else:
            shutil.copytree(valid, tmp)
        swap_in(tmp, final, old)  # the old directory is kept (a reader may be reading it), as a writer's
        # rmtree of it may come later

    real = bm25s.BM25.load_scores
    swaps = []

    def load_scores(self, *args, **kwargs):  # between the parameters and the postings
        if not swaps:
            swaps.append(1)
            put(other)
            try:
                return real(self, *args, **kwargs)
            finally:
                put(valid)  # the same version as before, as a new directory
        return real(self, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "load_scores", load_scores)
    idx = Index(Settings(index_dir=mini_index))
    retriever, ids = idx.bm25()
    postings = retriever.scores["indices"]
    assert swaps and retriever.scores["num_docs"] == len(ids) == 6 and (len(postings) == 0 or max(postings) < 6)
    hits = Retriever(idx).search("Mixture-of-Thought truth-table modality", k=1).hits
    assert hits[0].paper_id == "mini#2"
