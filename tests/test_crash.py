"""kill -9 during a real ingest subprocess never corrupts the index; re-running finishes it exactly."""

import json
import os
import signal
import subprocess
import sys
import time

from assistant.config import Settings
from assistant.store.index import Index
from assistant.search.retrieve import Retriever


def test_kill_9_mid_ingest_then_resume_gives_exact_counts(tmp_path, bundled_index_dir):
    idx = tmp_path / "idx"
    # groups of 24 papers (the default 192 would make the 95 papers one group): the kill lands after
    # some groups are committed and others are not
    cmd = [sys.executable, "-c", "import assistant.store.ingest as i; i.GROUP_SIZE = 24; from assistant.cli.app import main; main()",
           "ingest", "--index-dir", str(idx), "--json"]
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    # wait until the first group of papers is committed, then kill without warning
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (idx / "chroma").exists() and any((idx / "chroma").iterdir()):
            time.sleep(4)
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the interrupted index is usable or absent, never corrupt; the next run completes it
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["added"] + report["unchanged"] == 95
    index = Index(Settings(index_dir=idx))
    reference = Index(Settings(index_dir=bundled_index_dir))
    assert index.count() == 95
    assert index.chunks.count() == reference.chunks.count()  # no duplicate or orphan chunks
    assert index.fingerprint() == reference.fingerprint()
    assert index.chunk_vectors().chunk_ids == reference.chunk_vectors().chunk_ids  # dense search sees them all
    hit = Retriever(index).search("WaterDrum unlearning metric", k=1).hits[0]
    assert hit.paper_id == "003_22ceaf1a0eb8de0c#12"


def test_search_during_an_ingest_answers_from_a_consistent_state(mini_index):
    from .conftest import FIXTURES

    before = Index(Settings(index_dir=mini_index)).count()
    cmd = [sys.executable, "-m", "assistant", "ingest", str(FIXTURES / "mini_zh.txt"), "--index-dir", str(mini_index)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    counts = []
    while proc.poll() is None or not counts:
        result = Retriever(Index(Settings(index_dir=mini_index))).search("Mixture-of-Thought reasoning", k=3)
        assert result.hits and result.hits[0].paper_id == "mini#2"
        counts.append(Index(Settings(index_dir=mini_index)).count())
        time.sleep(0.3)
    assert proc.returncode == 0
    assert all(before <= c <= before + 3 for c in counts)
    assert Index(Settings(index_dir=mini_index)).count() == before + 3


# --- random kill points (hypothesis) ----------------------------------------------------------
#
# Hypothesis picks the write (a first ingest, an ingest into an index, a remove), the group size, and where
# the writer dies: a named step of the write (integrity.crash_point) on its first, second or third
# occurrence, or a timer armed when the write journals itself that SIGKILLs the process a random time later,
# wherever it then is (a Chroma write, the embedder, the commit's BM25 and matrix). The next read must add
# nothing and either answer or say in one line how to recover; after that recovery (or a plain re-run of the
# same command) the index holds exactly the intended papers and doctor passes.

import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

from assistant.store.integrity import holds_nothing  # noqa: E402

from .conftest import FIXTURES  # noqa: E402
from .test_integrity import error_line, fresh, has, run  # noqa: E402

MINI = [f"mini#{n}" for n in range(1, 7)]
STEPS = {"ingest": ["ingest-journaled", "ingest-group", "ingest-written", "commit-meta"],
         "remove": ["remove-journaled", "remove-records", "remove-chunks", "commit-meta"]}


@st.composite
def writes(draw):
    op = draw(st.sampled_from(["first ingest", "ingest", "remove"]))
    kind = "remove" if op == "remove" else "ingest"
    group = draw(st.integers(1, 4)) if kind == "ingest" else 1
    if draw(st.booleans()):  # a timer armed as the write journals itself (a remove takes ~0.2 s from there)
        delays = [0.0, 0.01, 0.03, 0.06, 0.1, 0.2] if kind == "remove" else [0.0, 0.05, 0.15, 0.3, 0.6, 1.0]
        kill = f"{kind}-journaled+{draw(st.sampled_from(delays))}"
    else:  # only an ingest's groups happen more than once per command: on which of them
        step = draw(st.sampled_from(STEPS[kind]))
        papers = 6 if op == "first ingest" else 3
        kill = f"{step}@{draw(st.integers(1, -(-papers // group))) if step == 'ingest-group' else 1}"
    gone = draw(st.lists(st.sampled_from(MINI), min_size=1, max_size=3, unique=True)) if op == "remove" else []
    return op, kill, group, gone


def _spawn(kill: str, group: int, *args) -> int:
    """The real CLI in a subprocess that dies at ``kill``; its exit code (-9 killed, 0 when it finished first)."""
    code = f"import assistant.store.ingest as i; i.GROUP_SIZE = {group}; from assistant.cli.app import main; main()"
    env = {**os.environ, "ASSISTANT_TEST_CRASH": kill, "ORT_DISABLE_TELEMETRY": "1"}
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode in (0, -9), proc.stderr
    return proc.returncode


def _ids(idx: Path) -> set[str]:
    """Paper ids in the store, read without the integrity checks."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    return set(Index(Settings(index_dir=idx), check=False).papers.get(include=[])["ids"])


@hsettings(max_examples=8, deadline=None, derandomize=True, database=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(write=writes())
def test_a_kill_at_a_random_point_of_ingest_or_remove_is_recovered_exactly(mini_index_template, write):
    op, kill, group, gone = write
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        idx = tmp / "idx"
        if op == "first ingest":
            source = tmp / "mine.txt"
            shutil.copy(FIXTURES / "mini.txt", source)
            before, intended = set(), {f"mine#{n}" for n in range(1, 7)}
        else:
            shutil.copytree(mini_index_template, idx)
            before = set(MINI)
            source = tmp / "zh.txt"
            shutil.copy(FIXTURES / "mini_zh.txt", source)
            intended = before - set(gone) if op == "remove" else before | {"zh#1", "zh#2", "zh#3"}
        command = ["remove", *gone] if op == "remove" else ["ingest", source]
        _spawn(kill, group, *command, "--index-dir", idx)
        fresh()

        # the next read: it adds nothing (a non-empty directory never gets the bundled corpus) and either
        # answers from a committed state or names the recovery in one line
        if not holds_nothing(idx):
            stored = _ids(idx)
            res = run("search", "reasoning", "--json", "--index-dir", idx)
            after = _ids(idx)
            assert after <= stored and after <= before | intended, (write, after - stored)
            if res.exit_code == 0:
                assert after in (before, intended), write  # a read sees only a whole commit
                hits = {h["paper_id"] for h in json.loads(res.stdout)["hits"]}
                assert hits <= after
            else:
                said = error_line(res)
                assert res.exit_code == 4 and (has(said, "assistant ingest") or has(said, "doctor --repair")), said
                if op != "remove":
                    assert has(said, "assistant ingest"), said  # the re-run of the interrupted ingest
                fresh()

        # recovery: the plain re-run of the interrupted command (a remove the read finished has nothing left)
        if op != "remove" or set(gone) & _ids(idx):
            res = run(*command, "--index-dir", idx)
            assert res.exit_code == 0, (write, res.output)
        fresh()
        assert _ids(idx) == intended, write
        res = run("doctor", "--index-dir", idx)
        assert res.exit_code == 0, (write, res.stdout)
        assert Index(Settings(index_dir=idx)).manifest["papers"] == len(intended)
