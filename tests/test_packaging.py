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


def test_the_public_search_stays_a_function_after_the_first_search(bundled_index_dir):
    """`assistant.search(...)` loaded the subpackage `assistant.search`, which Python binds on its parent: the
    second `assistant.search(...)` (or one after `assistant.ask`) raised "'module' object is not callable"."""
    script = (
        "import assistant\n"
        f"s = assistant.Settings.from_env(index_dir={str(bundled_index_dir)!r})\n"
        "assert len(assistant.search('federated learning', s, k=2).hits) == 2\n"
        "assistant.ask('What is Qronos?', s)\n"
        "assert len(assistant.search('federated learning', s, k=3).hits) == 3\n"
        "from assistant.search.retrieve import Retriever\n"
        "assert callable(assistant.search) and Retriever\n"
        "print('ok')\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
