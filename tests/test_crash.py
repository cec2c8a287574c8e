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

from . import killed


def test_kill_9_mid_ingest_then_resume_gives_exact_counts(tmp_path, bundled_index_dir):
    idx = tmp_path / "idx"
    # groups of 24 papers (the default 192 would make the 95 papers one group): the kill lands after the second
    # group's records are written, the other two groups not yet
    cmd = ["ingest", "--index-dir", idx, "--json"]
    ended = killed.cli(*cmd, crash="ingest-group@2", group=24)
    assert ended.returncode == -signal.SIGKILL, ended.stderr
    assert Index(Settings(index_dir=idx), check=False).count() == 48  # two groups stored, uncommitted
    # the interrupted index is never corrupt; the next run finishes it exactly
    res = killed.cli(*cmd, group=24)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["recovered"] and report["added"] + report["unchanged"] == 95
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
# Every writing command (a first ingest, an ingest into an index, the ingest of an edited file, ingest --rebuild,
# remove, doctor --repair re-embedding lost vectors) is run as a real CLI subprocess that dies (SIGKILL) at a point
# hypothesis picks: a named step of the write (integrity.crash_point) on its first, second or third occurrence, or a
# timer armed when the write journals itself that kills it a random time later, wherever it then is (a Chroma write,
# the embedder, the commit, the swap of a rebuilt index). After the next command (`papers --json`), the index is
# exactly the state before the write or the state after it (what the same command leaves when it is not killed):
# never fewer papers, never a mixture. Re-running the interrupted command then leaves the state after.

import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

from .conftest import FIXTURES  # noqa: E402
from .test_integrity import fresh, run  # noqa: E402

MINI = [f"mini#{n}" for n in range(1, 7)]
OPS = ["first ingest", "ingest", "edit", "rebuild", "remove", "repair"]
STEPS = {"ingest": ["ingest-journaled", "ingest-group", "ingest-written", "commit-meta"],
         "rebuild": ["ingest-journaled", "ingest-group", "ingest-written", "commit-meta", "aside-built",
                     "aside-swapping"],
         "remove": ["remove-journaled", "remove-records", "remove-chunks", "commit-meta"]}


@st.composite
def writes(draw):
    op = draw(st.sampled_from(OPS))
    kind = "remove" if op == "remove" else "rebuild" if op in ("rebuild", "repair") else "ingest"
    group = draw(st.integers(1, 4)) if kind != "remove" else 1
    if draw(st.booleans()):  # a timer armed as the write journals itself (a remove takes ~0.2 s from there)
        delays = [0.0, 0.01, 0.03, 0.06, 0.1, 0.2] if kind == "remove" else [0.0, 0.05, 0.15, 0.3, 0.6, 1.0, 1.5]
        kill = f"{'remove' if kind == 'remove' else 'ingest'}-journaled+{draw(st.sampled_from(delays))}"
    else:  # only an ingest's groups happen more than once per command: on which of them
        step = draw(st.sampled_from(STEPS[kind]))
        kill = f"{step}@{draw(st.integers(1, 3)) if step == 'ingest-group' else 1}"
    gone = tuple(draw(st.lists(st.sampled_from(MINI), min_size=1, max_size=3, unique=True))) if op == "remove" else ()
    return op, kill, group, gone


def _spawn(kill: str | None, group: int, *args) -> int:
    """The real CLI in a process that dies at ``kill``; its exit code (-9 killed, 0 when it finished first)."""
    ended = killed.cli(*args, crash=kill, group=group)
    assert ended.returncode in (0, -9), ended.stderr
    return ended.returncode


def _edit(mine: Path) -> None:
    """A user's edit: the second abstract deleted, the fourth rewritten, a new one added at the end."""
    header, body = mine.read_text(encoding="utf-8").split("\n", 1)
    paras = [p for p in body.split("\n\n") if p.strip()]
    paras[3] = "Zorblaxian quasi-widgets are studied here. We propose Zorblax, a tiny method for widgets."
    del paras[1]
    paras.append("Quuxian hyper-gadgets fold proteins. We introduce Quux, a gadget folding model.")
    mine.write_text(header + "\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")


def _lose_vectors(idx: Path) -> None:
    """Chroma's vector segment folders deleted (as tests/test_integrity.py's lost-segment test), so that
    doctor --repair re-embeds every stored abstract beside the index."""
    for segment in (idx / "chroma").iterdir():
        if segment.is_dir():
            shutil.rmtree(segment)


def _setup(op: str, tmp: Path, template: Path) -> tuple[Path, list]:
    """(the index directory, the command to run) for ``op``, in ``tmp``."""
    idx, mine = tmp / "idx", tmp / "mine.txt"
    if op == "first ingest":
        shutil.copy(FIXTURES / "mini.txt", mine)
        return idx, ["ingest", mine]
    if op in ("ingest", "remove"):
        shutil.copytree(template, idx)
        return idx, ["ingest", FIXTURES / "mini_zh.txt"] if op == "ingest" else ["remove"]
    shutil.copy(FIXTURES / "mini.txt", mine)
    import assistant.store.index as index_mod
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    if op == "repair":  # small HNSW batches, so that 20 chunks reach the segment files on disk (see above)
        real = index_mod.Index.open_collections

        def small_segments(self):
            meta = {"hnsw:space": "cosine", "hnsw:batch_size": 10, "hnsw:sync_threshold": 10}
            self.chunks = self.client.get_or_create_collection(index_mod.CHUNKS, metadata=meta, embedding_function=None)
            self.papers = self.client.get_or_create_collection(index_mod.PAPERS, metadata=meta, embedding_function=None)

        index_mod.Index.open_collections = small_segments
        try:
            ingest(load_papers([mine])[0], Settings(index_dir=idx), sources=[str(mine.resolve())])
        finally:
            index_mod.Index.open_collections = real
        fresh()
        _lose_vectors(idx)
        return idx, ["doctor", "--repair"]
    ingest(load_papers([mine])[0], Settings(index_dir=idx), sources=[str(mine.resolve())])
    _edit(mine)
    return idx, ["ingest", mine] if op == "edit" else ["ingest", "--rebuild"]


def _listing(idx: Path) -> tuple[int, list | str]:
    """`papers --json` (the next command after a kill): its exit code and the papers, or its error line."""
    fresh()
    res = run("papers", "--json", "--index-dir", idx)
    fresh()
    return res.exit_code, json.loads(res.stdout) if res.exit_code == 0 else res.output


_AFTER: dict = {}


@hsettings(max_examples=12, deadline=None, derandomize=True, database=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(write=writes())
def test_a_kill_at_a_random_point_of_any_write_leaves_the_state_before_or_after(mini_index_template, write):
    op, kill, group, gone = write
    if (op, gone) not in _AFTER:  # what the command leaves when it is not killed (the same set-up elsewhere)
        with tempfile.TemporaryDirectory() as tmp:
            idx, command = _setup(op, Path(tmp), mini_index_template)
            assert _spawn(None, group, *command, *gone, "--index-dir", idx) == 0
            _AFTER[(op, gone)] = _listing(idx)
            assert _AFTER[(op, gone)][0] == 0, _AFTER[(op, gone)]
    after = _AFTER[(op, gone)][1]
    with tempfile.TemporaryDirectory() as tmp:
        idx, command = _setup(op, Path(tmp), mini_index_template)
        command = [*command, *gone, "--index-dir", idx]
        before = _listing(idx)[1] if idx.exists() else []
        _spawn(kill, group, *command)

        code, now = _listing(idx)
        assert code == 0, (write, now)  # the next command answers: it finished or undid the write
        assert now in (before, after), (write, [p["paper_id"] for p in now])
        # the interrupted command again: the state after, and doctor passes
        if op != "remove" or now != after:
            res = run(*command)
            assert res.exit_code == 0, (write, res.output)
        assert _listing(idx) == (0, after), write
        assert run("doctor", "--index-dir", idx).exit_code == 0, write
