"""The installed wheel carries the prompts, the bundled corpus, the tokenizer and the map template."""

import subprocess
import sys
import zipfile

import pytest


def test_wheel_contains_prompts_corpus_and_tokenizer(tmp_path):
    pytest.importorskip("hatchling")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path), "."], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    wheel = next(tmp_path.glob("assistant-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("system", "answer", "condense"):
        assert f"assistant/prompts/{name}.txt" in names
    assert "assistant/data/minilm/tokenizer.json" in names
    for fitted in ("decisions", "turns", "sentences"):  # the fitted models the question path reads
        assert f"assistant/data/{fitted}.json" in names
    assert "assistant/data/iclr2026_vectors.npz" in names  # a first run's index embeds nothing (embed/shipped.py)
    assert "assistant/templates/map.html" in names
    assert sum(1 for n in names if n.startswith("assistant/data/iclr2026/") and n.endswith(".txt")) == 5
