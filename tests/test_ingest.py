"""Ingest keeps a user's papers whatever happens: ids of two files never collide, an edited file leaves the index equal
to it, a rebuild killed at any moment leaves the old index or the new one, and only the default index directory is
ever filled with the bundled corpus (issue 47, rows 1, 3, 4, 5 and 14)."""

from __future__ import annotations

import json
import shutil

from .conftest import FIXTURES
from .test_integrity import crash, error_line, has, run, stored


def _ids(idx) -> list[str]:
    res = run("papers", "--json", "--index-dir", idx)
    assert res.exit_code == 0, res.output
    return [p["paper_id"] for p in json.loads(res.stdout)]


def _abstracts(path) -> list[str]:
    return [p for p in path.read_text(encoding="utf-8").split("\n", 1)[1].split("\n\n") if p.strip()]


def test_two_files_of_the_same_name_in_two_folders_keep_all_their_papers(tmp_path):
    """Row 3: a/x.txt then b/x.txt (records without ids) said "0 new, 2 updated": the second replaced the first."""
    idx = tmp_path / "idx"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(FIXTURES / "mini.txt", tmp_path / "a" / "x.txt")
    shutil.copy(FIXTURES / "mini_zh.txt", tmp_path / "b" / "x.txt")
    first = run("ingest", tmp_path / "a" / "x.txt", "--index-dir", idx, "--json")
    second = run("ingest", tmp_path / "b" / "x.txt", "--index-dir", idx, "--json")
    assert json.loads(first.stdout)["added"] == 6
    assert json.loads(second.stdout)["added"] == 3 and json.loads(second.stdout)["updated"] == 0
    ids = _ids(idx)
    assert len(ids) == len(set(ids)) == 9
    assert {f"x#{n}" for n in range(1, 7)} <= set(ids) and {"b/x#1", "b/x#2", "b/x#3"} <= set(ids)
    # each file again: nothing changes, and the ids stay
    assert json.loads(run("ingest", tmp_path / "b" / "x.txt", "--index-dir", idx, "--json").stdout)["unchanged"] == 3
    assert json.loads(run("ingest", tmp_path / "a" / "x.txt", "--index-dir", idx, "--json").stdout)["unchanged"] == 6
    assert _ids(idx) == ids
    # both files in one ingest, into a new index: still nine papers
    both = run("ingest", tmp_path / "a", tmp_path / "b", "--index-dir", tmp_path / "idx2", "--json")
    assert json.loads(both.stdout)["added"] == 9 and len(set(_ids(tmp_path / "idx2"))) == 9


def test_an_edited_file_ingested_again_leaves_the_index_equal_to_the_file(tmp_path):
    """Row 4: a paragraph deleted from a .txt shifted the positions, and the same abstract was stored twice."""
    idx, mine = tmp_path / "idx", tmp_path / "mine.txt"
    shutil.copy(FIXTURES / "mini.txt", mine)
    assert run("ingest", mine, "--index-dir", idx).exit_code == 0
    header = mine.read_text(encoding="utf-8").split("\n", 1)[0]
    paras = _abstracts(mine)
    gone = paras.pop(1)  # the second abstract deleted
    paras[2] = paras[2].replace("We ", "Here we ", 1)  # what was the fourth, edited
    paras.append("Quuxian hyper-gadgets fold proteins. We introduce Quux, a gadget folding model.")
    mine.write_text(header + "\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    res = run("ingest", mine, "--index-dir", idx, "--json")
    report = json.loads(res.stdout)
    assert res.exit_code == 0 and report["removed_ids"] == ["mine#2"]
    assert (report["added"], report["updated"], report["unchanged"], report["removed"]) == (1, 1, 4, 1)
    ids = _ids(idx)
    assert sorted(ids) == ["mine#1", "mine#3", "mine#4", "mine#5", "mine#6", "mine#7"]  # each abstract once
    hits = json.loads(run("search", gone[:120], "--json", "--index-dir", idx).stdout)["hits"]
    assert "mine#2" not in {h["paper_id"] for h in hits}
    shown = json.loads(run("show", "mine#4", "--json", "--index-dir", idx).stdout)
    assert shown["abstract"].startswith(" ".join(paras[2].split())[:40])
    # said in the terminal too
    paras.pop()
    mine.write_text(header + "\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    res = run("ingest", mine, "--index-dir", idx)
    assert res.exit_code == 0 and has(res.stderr, "removed:", "1 paper", "mine#7") and has(res.stdout, "1 removed")
    assert run("doctor", "--index-dir", idx).exit_code == 0


def test_a_rebuild_killed_at_any_step_leaves_the_user_s_index_and_the_same_command_rebuilds_it(tmp_path):
    """Row 1: kill -9 during `ingest --rebuild` forgot the sources: the same command then loaded the 95 bundled
    papers into the user's index, and `doctor --repair` after that kill left 0 papers and exited 0."""
    for point in ("ingest-group@1", "commit-meta", "aside-built", "aside-swapping"):
        idx, mine = tmp_path / point / "idx", tmp_path / point / "mine.txt"
        mine.parent.mkdir()
        shutil.copy(FIXTURES / "mini.txt", mine)
        assert run("ingest", mine, "--index-dir", idx).exit_code == 0
        crash(point, "ingest", "--rebuild", "--index-dir", idx, group=2)
        res = run("doctor", "--repair", "--index-dir", idx)
        assert res.exit_code == 0, (point, res.output)
        assert sorted(_ids(idx)) == [f"mine#{n}" for n in range(1, 7)], point  # never 0, never the bundled 95
        res = run("ingest", "--rebuild", "--index-dir", idx, "--json")
        assert res.exit_code == 0 and json.loads(res.stdout)["added"] == 6, (point, res.output)
        assert sorted(_ids(idx)) == [f"mine#{n}" for n in range(1, 7)] and stored(idx) == 6


def test_a_damaged_manifest_never_decides_what_a_rebuild_replaces(tmp_path):
    """Row 5: manifest.json whose `sources` was damaged: `ingest --rebuild` replaced the user's papers with the 95
    bundled ones without a word, and doctor said ok."""
    idx, mine = tmp_path / "idx", tmp_path / "mine.txt"
    shutil.copy(FIXTURES / "mini.txt", mine)
    assert run("ingest", mine, "--index-dir", idx).exit_code == 0
    manifest = json.loads((idx / "manifest.json").read_text())
    for damaged in (["bundled"], [], "garbage"):
        (idx / "manifest.json").write_text(json.dumps({**manifest, "sources": damaged}))
        res = run("ingest", "--rebuild", "--index-dir", idx)
        assert res.exit_code == 4 and has(error_line(res), "manifest.json differs", "sources", "doctor --repair")
        assert stored(idx) == 6
        res = run("doctor", "--index-dir", idx)
        assert res.exit_code == 1 and has(res.stdout, "differs from the copy")
        res = run("search", "reasoning", "--index-dir", idx)
        assert res.exit_code == 4 and has(error_line(res), "manifest.json differs")
    res = run("doctor", "--repair", "--index-dir", idx)
    assert res.exit_code == 0 and has(res.stdout, "restored manifest.json from its copy")
    assert json.loads((idx / "manifest.json").read_text())["sources"] == [str(mine.resolve())]
    res = run("ingest", "--rebuild", "--index-dir", idx, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["added"] == 6 and stored(idx) == 6


def test_a_mistyped_index_dir_is_named_never_filled_with_the_bundled_corpus(tmp_path, monkeypatch):
    """Row 14: a --index-dir that does not exist was silently built from the bundled corpus and answered from."""
    typo = tmp_path / "my_indx"
    for cmd in (["ask", "what is federated learning?"], ["search", "federated"], ["papers"], ["show", "x#1"],
                ["which", "use reinforcement learning"], ["chat"]):
        res = run(*cmd, "--index-dir", typo, input="")
        said = error_line(res)
        assert res.exit_code == 4 and has(said, f"no index at {typo}", "assistant ingest"), (cmd, said)
        assert not typo.exists(), cmd
    # the default index directory (index_store/, or ASSISTANT_INDEX_DIR) is still built on first use
    monkeypatch.setenv("ASSISTANT_INDEX_DIR", str(tmp_path / "default"))
    res = run("papers", "--json")
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 95


def _records(path, rows: list[tuple[str, str]]) -> None:
    path.write_text("".join(json.dumps({"id": i, "title": f"Paper {i}", "abstract": a}) + "\n" for i, a in rows),
                    encoding="utf-8")


TOPICS = ["Graph neural networks for molecule property prediction with message passing.",
          "Federated learning lets clients train a shared model without pooling their data.",
          "Diffusion models generate images by reversing a gradual noising process.",
          "Sparse attention lowers the cost of transformers on long documents."]


def test_a_second_file_giving_ids_another_file_s_papers_have_is_refused_and_nothing_is_lost(tmp_path):
    """Two exports that both number their rows 1, 2, 3: the second replaced the first file's papers ("0 new, 3
    updated", exit 0). Now it is refused in one line naming both files, and the index is as it was."""
    idx = tmp_path / "idx"
    _records(tmp_path / "lab_a.jsonl", [("1", TOPICS[0]), ("2", TOPICS[1])])
    _records(tmp_path / "lab_b.jsonl", [("1", TOPICS[2]), ("2", TOPICS[3])])
    assert run("ingest", tmp_path / "lab_a.jsonl", "--index-dir", idx).exit_code == 0
    res = run("ingest", tmp_path / "lab_b.jsonl", "--index-dir", idx)
    assert res.exit_code == 3 and has(error_line(res), "lab_b.jsonl gives ids that papers from", "lab_a.jsonl",
                                      "(1, 2)", "nothing was changed", "assistant remove 1 2")
    shown = json.loads(run("show", "1", "--json", "--index-dir", idx).stdout)
    assert shown["abstract"] == TOPICS[0] and shown["source"] == "lab_a.jsonl"
    # the file itself, edited, still updates its own papers; a file moved away hands its ids on
    _records(tmp_path / "lab_a.jsonl", [("1", TOPICS[0]), ("2", TOPICS[3])])
    assert json.loads(run("ingest", tmp_path / "lab_a.jsonl", "--index-dir", idx, "--json").stdout)["updated"] == 1
    (tmp_path / "lab_a.jsonl").rename(tmp_path / "moved.jsonl")
    assert run("ingest", tmp_path / "lab_b.jsonl", "--index-dir", idx).exit_code == 0
    assert json.loads(run("show", "1", "--json", "--index-dir", idx).stdout)["abstract"] == TOPICS[2]


def test_records_that_cannot_be_read_never_remove_the_papers_stored_from_them(tmp_path):
    """A file ingested whole, then again with one line broken and one record's abstract field misspelt: the two
    papers were removed as "no longer in the files read" (exit 0). Now they are kept and said to be kept."""
    idx, lib = tmp_path / "idx", tmp_path / "lib.jsonl"
    _records(lib, [(str(n), t) for n, t in enumerate(TOPICS, 1)])
    assert run("ingest", lib, "--index-dir", idx).exit_code == 0
    lines = lib.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:-1]  # malformed JSON
    lines[2] = lines[2].replace('"abstract"', '"abstrct"')  # no abstract
    lib.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = run("ingest", lib, "--index-dir", idx)
    assert res.exit_code == 0 and "removed" not in res.stderr
    assert "kept: 2 stored papers this read did not find (2, 3)" in " ".join(res.stderr.split())
    assert sorted(_ids(idx)) == ["1", "2", "3", "4"]
    assert json.loads(run("ingest", lib, "--index-dir", idx, "--json").stdout)["kept_unread"] == ["2", "3"]
    # a rebuild holds only what it reads: refused while the records are broken, nothing changed
    res = run("ingest", "--rebuild", "--index-dir", idx)
    assert res.exit_code == 3 and has(error_line(res), "could not be read", "fix them first")
    assert sorted(_ids(idx)) == ["1", "2", "3", "4"]
    # fixed, the file is the index again: a record taken out of it is removed
    _records(lib, [("1", TOPICS[0]), ("2", TOPICS[1]), ("4", TOPICS[3])])
    res = run("ingest", lib, "--index-dir", idx, "--json")
    assert json.loads(res.stdout)["removed_ids"] == ["3"] and sorted(_ids(idx)) == ["1", "2", "4"]


def test_an_abstract_another_file_already_holds_is_stored_once_across_runs_as_in_one(tmp_path):
    """a.txt then b.txt, sharing an abstract: stored twice (cited as two sources), where one command stores it once;
    a rebuild then "removed" b#1 as "no longer in the files read", though b.txt still holds it."""
    idx = tmp_path / "idx"
    shared = "Shared abstract about contrastive pretraining of tabular encoders with masked cells."
    (tmp_path / "a.txt").write_text(f"h\n\n{shared}\n\nOnly in a, about protein folding.\n")
    (tmp_path / "b.txt").write_text(f"h\n\n{shared}\n\nOnly in b, about weather forecasting.\n")
    assert run("ingest", tmp_path / "a.txt", "--index-dir", idx).exit_code == 0
    res = run("ingest", tmp_path / "b.txt", "--index-dir", idx, "--json")
    assert json.loads(res.stdout)["duplicates"] == [{"dropped": "b#1", "kept": "a#1"}]
    assert sorted(_ids(idx)) == ["a#1", "a#2", "b#2"]
    res = run("ingest", "--rebuild", "--index-dir", idx)
    assert res.exit_code == 0 and "removed" not in res.stderr and sorted(_ids(idx)) == ["a#1", "a#2", "b#2"]


def test_a_folder_read_again_after_a_file_was_deleted_says_its_papers_are_kept(tmp_path):
    """A folder ingested again after one of its files was deleted: "0 new, 0 updated, 25 unchanged" and that file's
    papers kept without a word."""
    import shutil

    folder, idx = tmp_path / "papers", tmp_path / "idx"
    folder.mkdir()
    shutil.copy(FIXTURES / "mini.txt", folder / "a.txt")
    shutil.copy(FIXTURES / "mini_zh.txt", folder / "b.txt")
    assert run("ingest", str(folder), "--index-dir", str(idx)).exit_code == 0
    (folder / "b.txt").unlink()
    res = run("ingest", str(folder), "--json", "--index-dir", str(idx))
    assert res.exit_code == 0 and json.loads(res.stdout)["gone_files"] == ["b#1", "b#2", "b#3"]
    res = run("ingest", str(folder), "--index-dir", str(idx))
    assert "3 stored papers came from files no longer in the folder read; kept (remove them with: assistant remove " \
           "b#1 b#2 b#3)" in " ".join(res.stderr.split())
