"""The shipped models and what made them: every file under assistant/data that a fit or a training wrote is in the
manifest with the hash it had when it was made, its inputs are in the repository, and the training library keeps
the held-out sets out of every fit."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "assistant" / "data" / "MANIFEST.json"
SHIPPED = ("assistant/data/background.npz", "assistant/data/turns.json", "assistant/data/decisions.json",
           "assistant/data/sentences.json")


@pytest.fixture(scope="module")
def training_lib():
    """training/ on sys.path, as its scripts and the benchmarks see it."""
    path = str(ROOT / "training")
    sys.path.insert(0, path)
    yield
    sys.path.remove(path)


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def test_every_shipped_model_matches_the_manifest_that_says_how_it_was_made(manifest):
    outputs = {out: (name, digest) for name, step in manifest["steps"].items() for out, digest in step["outputs"].items()}
    for path in SHIPPED:
        assert path in outputs, f"{path} is shipped but no step of the manifest made it"
    for out, (name, digest) in outputs.items():
        assert hashlib.sha256((ROOT / out).read_bytes()).hexdigest() == digest, \
            f"{out} differs from the manifest (step {name}): rebuild with python -m training"
    for name, step in manifest["steps"].items():
        assert step["commands"] and step["commit"] and step["inputs"], name
        assert all(not Path(p).is_absolute() and not p.startswith("..") for p in step["inputs"]), name  # in the repo
        assert not any("heldout" in p for p in step["inputs"] if name not in ("background", "reader")), name


@pytest.mark.subprocess
def test_verify_fails_when_a_shipped_file_changes_behind_the_manifest(tmp_path, manifest):
    """python -m training --verify (run in CI) says which file differs and exits 1."""
    step, out = next((n, o) for n, s in manifest["steps"].items() for o in s["outputs"])
    broken = dict(manifest)
    broken["steps"] = {**manifest["steps"], step: {**manifest["steps"][step],
                                                   "outputs": {**manifest["steps"][step]["outputs"], out: "0" * 64}}}
    command = [sys.executable, "-m", "training", "--verify", "--manifest", str(tmp_path / "MANIFEST.json")]
    (tmp_path / "MANIFEST.json").write_text(json.dumps(broken))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and f"FAIL {out} (differs; step {step})" in done.stdout
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout


def test_field_counts_are_written_the_same_bytes_every_time(tmp_path, training_lib):
    from _inputs import save_npz

    arrays = {"term_keys": np.arange(5, dtype=np.uint64), "provenance": np.array(json.dumps({"a": 1}))}
    save_npz(tmp_path / "a.npz", arrays)
    save_npz(tmp_path / "b.npz", arrays)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz") as npz:
        assert list(npz["term_keys"]) == [0, 1, 2, 3, 4] and json.loads(str(npz["provenance"])) == {"a": 1}


def test_the_fits_read_the_dev_set_from_the_repository_and_never_a_held_out_set(training_lib):
    import fit_decisions

    files = fit_decisions.question_files()
    assert files[0] == ROOT / "training" / "inputs" / "dev.jsonl" and files[0].exists()
    assert not any("heldout" in f.parts for f in files)


def test_the_field_counts_leave_out_every_paper_of_a_held_out_slice(training_lib):
    from _inputs import PAPERS, read_jsonl
    from build_background import slice_ids

    held = slice_ids()
    heldout_slice = ROOT / "benchmarks" / "data" / "heldout" / "arxiv300.jsonl"
    assert {r["id"] for r in read_jsonl(heldout_slice)} <= held
    assert PAPERS.exists() and PAPERS.stat().st_size > 5_000_000  # the arXiv abstracts travel with the repository


def test_the_criteria_slices_hold_no_held_out_or_benchmark_paper_and_no_fit_reads_a_held_out_criterion(training_lib):
    """The reader's second stage and fit_which train on criteria labelled over slices drawn outside every slice
    a benchmark scores; the held-out which sets (which_blind*.jsonl) are never among their sources."""
    import fit_which
    import reader_data
    from _inputs import INPUTS, read_jsonl

    names = [n for _, n in reader_data.DRAWS for n in n]
    assert sorted(p.name for p in INPUTS.glob("slice_*_ids.txt")) == sorted(f"slice_{n}_ids.txt" for n in names)
    slices = {name: set((INPUTS / f"slice_{name}_ids.txt").read_text().split()) for name in names}
    assert all(len(ids) == 250 for ids in slices.values())
    assert len(set().union(*slices.values())) == 250 * len(slices)  # no paper in two slices
    scored = reader_data.held_out_ids()
    for path in (ROOT / "benchmarks" / "data" / "corpora").glob("arxiv_?.jsonl"):
        scored |= {str(r["id"]) for r in read_jsonl(path)}
    assert not set().union(*slices.values()) & scored
    for name in names:
        for item in read_jsonl(INPUTS / f"slice_{name}_criteria.jsonl"):
            assert set(item["papers"]) | set(item["borderline"]) <= slices[name]
            assert not set(item["papers"]) & set(item["borderline"])
    assert not any("heldout" in path.parts for _, path in fit_which.sources())


def test_a_criterion_group_pairs_papers_that_meet_it_with_ones_that_do_not_never_a_borderline_one(training_lib):
    import random

    import reader_data
    from _inputs import INPUTS, PAPERS, read_jsonl

    papers = {str(p["id"]): dict(p, id=str(p["id"])) for p in read_jsonl(PAPERS)}
    groups = [g for g in reader_data.criterion_groups(papers, random.Random(0)) if g["kind"].startswith("criterion")]
    # keyed by file too: one wording ("autonomous driving papers") was labelled over two slices
    labelled = {("slice:" + path.stem, item["criterion"]): item
                for path in INPUTS.glob("*_criteria.jsonl") for item in read_jsonl(path)}
    assert {(g["papers"], g["query"]) for g in groups} == set(labelled)
    for g in groups:
        item = labelled[g["papers"], g["query"]]
        assert len(g["ids"]) == 4 and g["labels"] == [int(str(p) in item["papers"]) for p in g["ids"]]
        assert not set(g["ids"]) & {str(p) for p in item["borderline"]}
    split = {}
    for g in groups:  # a criterion's groups are all trained on or all kept for validation
        assert split.setdefault(g["query"], g["split"]) == g["split"]
    assert 0.1 < sum(s == "val" for s in split.values()) / len(split) < 0.3


def test_the_criterion_encoder_is_validated_on_the_readers_fifth_and_each_fold_leaves_out_its_own(training_lib):
    """criteria_train.py --fold 0 keeps out exactly reader_data.validation_query's criteria (the figures it reports
    are on criteria it never saw), and fit_which.py --encoder --folds reads every other criterion by the fold that
    left it out: five disjoint fifths of every labelled criterion, none from a held-out set."""
    import criteria_train
    import reader_data
    from _inputs import read_jsonl

    texts = [item["criterion"] for _, path in criteria_train.criteria_files() for item in read_jsonl(path)]
    assert len(texts) > 700 and not any("heldout" in path.parts for _, path in criteria_train.criteria_files())
    folds = [criteria_train.fold_of(t) for t in texts]
    assert all((f == 0) == reader_data.validation_query(t) for f, t in zip(folds, texts))
    assert all(0.1 < folds.count(k) / len(folds) < 0.3 for k in range(criteria_train.FOLDS))
