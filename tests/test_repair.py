"""doctor and doctor --repair: every derived file is checked against the store it derives from and never served
damaged, a repair killed at any moment loses nothing, and a smaller index is never reported as repaired (issue 47,
rows 2, 6, 7, 22 and 24)."""

from __future__ import annotations

import json
import shutil

from .test_crash import _setup
from .test_integrity import crash, error_line, fresh, has, run, stored, top_hit


def test_a_repair_killed_while_it_re_embeds_loses_nothing_and_the_next_one_finishes(tmp_path, mini_index_template):
    """Row 2: kill -9 during doctor --repair's re-embedding: the next repair recorded the partial state (384 of
    2,000 papers) and said "repaired"."""
    for point in ("ingest-group@2", "ingest-written", "aside-built"):
        folder = tmp_path / point.replace("@", "-")
        folder.mkdir()
        idx, command = _setup("repair", folder, mini_index_template)
        crash(point, *command, "--index-dir", idx, group=2)
        fresh()
        assert stored(idx) == 6, point  # the old store stands beside the unfinished new one
        res = run("doctor", "--repair", "--index-dir", idx)
        assert res.exit_code == 0 and has(res.stdout, "re-embedded the 6 stored abstracts"), (point, res.output)
        assert stored(idx) == 6 and top_hit(idx)[0] == "mine#2"
        assert run("doctor", "--index-dir", idx).exit_code == 0


def test_a_store_that_lost_papers_is_never_reported_repaired(mini_index):
    """The repair restores what the last commit recorded from an intact papers.json, and otherwise says what it
    could not mend (exit 1), leaving the commit's record as it was."""
    from assistant.config import Settings
    from assistant.store.index import Index

    index = Index(Settings(index_dir=mini_index), check=False)
    index.papers.delete(ids=["mini#4", "mini#5"])
    index.chunks.delete(where={"paper_id": {"$in": ["mini#4", "mini#5"]}})
    fresh()
    res = run("doctor", "--repair", "--index-dir", mini_index)
    assert res.exit_code == 0 and has(res.stdout, "re-embedded 2 papers the store had lost, from papers.json")
    assert stored(mini_index) == 6 and run("doctor", "--index-dir", mini_index).exit_code == 0
    # the same loss without an intact papers.json: not repaired, and the manifest still says 6
    index = Index(Settings(index_dir=mini_index), check=False)
    index.papers.delete(ids=["mini#4"])
    index.chunks.delete(where={"paper_id": {"$in": ["mini#4"]}})
    (mini_index / "papers.json").unlink()
    fresh()
    res = run("doctor", "--repair", "--index-dir", mini_index)
    assert res.exit_code == 1 and has(res.output, "holds 5 of the 6 papers", "re-ingest")
    assert json.loads((mini_index / "manifest.json").read_text())["papers"] == 6
    assert run("search", "reasoning", "--index-dir", mini_index).exit_code == 4


def test_a_flipped_byte_in_papers_json_is_never_served(mini_index):
    """Row 6: one flipped byte inside an abstract in papers.json: show, ask and exports served the damaged text,
    doctor said ok and doctor --repair kept it."""
    true = json.loads(run("show", "mini#2", "--json", "--index-dir", mini_index).stdout)["abstract"]
    raw = (mini_index / "papers.json").read_bytes()
    at = raw.index(true[:30].encode()) + 10
    (mini_index / "papers.json").write_bytes(raw[:at] + bytes([raw[at] ^ 0x20]) + raw[at + 1:])
    res = run("doctor", "--index-dir", mini_index)
    assert res.exit_code == 1 and has(res.stdout, "papers.json damaged")
    shown = json.loads(run("show", "mini#2", "--json", "--index-dir", mini_index).stdout)["abstract"]
    assert shown == true
    res = run("ask", "What is Mixture-of-Thought?", "--json", "--index-dir", mini_index)
    assert all(c["snippet"] in true for c in json.loads(res.stdout)["citations"] if c["paper_id"] == "mini#2")
    assert run("doctor", "--repair", "--index-dir", mini_index).exit_code == 0
    assert true.encode() in (mini_index / "papers.json").read_bytes()
    assert run("doctor", "--index-dir", mini_index).exit_code == 0


def test_a_changed_id_in_a_derived_file_is_damage_not_a_silent_ranking(mini_index):
    """Row 7: one id changed in bm25/ids.json made the ranking silently wrong (top score 0.815 -> 0.33) while
    doctor said "bm25 ok". The same for the chunk-vector matrix's ids."""
    query = "Mixture-of-Thought truth-table modality"
    before = json.loads(run("search", query, "--json", "--index-dir", mini_index).stdout)["hits"]
    for name, key in (("bm25", "ids"), ("vectors", "chunk_ids")):
        meta = json.loads((mini_index / name / "ids.json").read_text())
        meta[key][0], meta[key][1] = meta[key][1], meta[key][0]
        (mini_index / name / "ids.json").write_text(json.dumps(meta))
        res = run("doctor", "--index-dir", mini_index)
        assert res.exit_code == 1 and has(res.stdout, f"{name} damaged"), res.stdout
        after = json.loads(run("search", query, "--json", "--index-dir", mini_index).stdout)["hits"]
        assert [(h["paper_id"], h["score"]) for h in after] == [(h["paper_id"], h["score"]) for h in before]
        assert run("doctor", "--index-dir", mini_index).exit_code == 0  # the read rebuilt it from the store


def test_a_derived_folder_made_a_symlink_is_replaced_or_named(mini_index):
    """Row 24: `vectors` made a symlink to itself: doctor --repair said "repaired", then doctor failed."""
    for name in ("vectors", "bm25"):
        shutil.rmtree(mini_index / name)
        (mini_index / name).symlink_to(mini_index / name)  # a loop
        res = run("doctor", "--repair", "--index-dir", mini_index)
        assert res.exit_code == 0, res.output
        assert not (mini_index / name).is_symlink() and (mini_index / name / "ids.json").exists()
        assert run("doctor", "--index-dir", mini_index).exit_code == 0
        assert top_hit(mini_index)[0] == "mini#2"


def test_a_derived_file_that_cannot_be_written_is_not_reported_repaired(mini_index, monkeypatch):
    """A repair whose BM25 could not be written says so (exit 1) instead of "repaired"."""
    import assistant.store.lexical as lexical

    def refuse(tmp, final, old):
        raise PermissionError(13, "Permission denied", str(final))

    shutil.rmtree(mini_index / "bm25")
    monkeypatch.setattr(lexical, "swap_in", refuse)
    res = run("doctor", "--repair", "--index-dir", mini_index)
    assert res.exit_code == 1 and has(res.output, "could not write", "bm25", "Permission denied")


def test_a_garbage_chat_store_is_named_and_repaired(mini_index):
    """Row 22: a garbage chats.sqlite gave a traceback, and doctor and doctor --repair said ok."""
    (mini_index / "chats.sqlite").write_bytes(b"this is not a database" * 100)
    res = run("chat", "--list", "--index-dir", mini_index)
    assert res.exit_code == 4 and has(error_line(res), "chats.sqlite", "damaged", "doctor --repair")
    res = run("chat", "--index-dir", mini_index, input="What is Mixture-of-Thought?\n")
    assert res.exit_code == 4 and has(error_line(res), "chats.sqlite", "damaged")
    res = run("doctor", "--index-dir", mini_index)
    assert res.exit_code == 4 and has(res.stdout, "chats.sqlite", "damaged")  # as chat says it (doctor said 1)
    res = run("doctor", "--repair", "--index-dir", mini_index)
    assert res.exit_code == 0 and has(res.stdout, "moved the damaged chats.sqlite aside")
    assert list(mini_index.glob("chats.sqlite.damaged-*"))  # kept, not deleted: it may be recoverable
    assert run("chat", "--list", "--index-dir", mini_index).exit_code == 0
    assert run("doctor", "--index-dir", mini_index).exit_code == 0
