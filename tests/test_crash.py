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
