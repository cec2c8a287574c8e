"""The MiniLM graph run in numpy (assistant/embed/npgraph.py): onnxruntime's vectors without its session."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from assistant.embed import npgraph

TEXTS = ["[CLS] only", "diffusion", "How do recent papers make LLM inference faster?",
         "graph neural networks for molecules " * 30, "Qronos: post-training quantization, 2x faster"]


@pytest.fixture(scope="module")
def graph_bytes(tmp_path_factory) -> bytes:
    from assistant.embed.embedder import _fast_graph, model_path

    return _fast_graph(str(model_path()), tmp_path_factory.mktemp("graph"), 2)


def test_numpy_program_gives_onnxruntimes_vectors_padded_or_not(graph_bytes):
    from assistant.embed.embedder import OnnxMiniLM, new_session

    program = npgraph.compile_graph(graph_bytes)
    session = new_session(graph_bytes, 2)
    one_by_one = np.vstack([OnnxMiniLM._embed_with(program, [t], 1) for t in TEXTS])
    batched = OnnxMiniLM._embed_with(program, TEXTS, 8)  # one batch: padding and the attention mask used
    reference = OnnxMiniLM._embed_with(session, TEXTS, 8)
    assert np.abs(batched - reference).max() < 1e-5
    assert np.abs(one_by_one - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_saved_program_reads_back_and_a_damaged_file_is_refused(graph_bytes, tmp_path):
    from assistant.embed.embedder import OnnxMiniLM

    program = npgraph.compile_graph(graph_bytes)
    path = tmp_path / "p.npg"
    npgraph.save(program, path)
    assert [p.name for p in tmp_path.iterdir()] == ["p.npg"]  # no temporary file left
    loaded = npgraph.load(path)
    assert not any(a.flags.writeable for a in loaded.arrays.values())  # views of the mapped file
    assert np.array_equal(OnnxMiniLM._embed_with(loaded, TEXTS, 8), OnnxMiniLM._embed_with(program, TEXTS, 8))

    data = path.read_bytes()
    (tmp_path / "short.npg").write_bytes(data[: len(data) // 2])
    (tmp_path / "other.npg").write_bytes(b"something else" + data[14:])
    (tmp_path / "empty.npg").write_bytes(b"")
    for name, message in (("short.npg", "cut short"), ("other.npg", "not a numpy graph"), ("empty.npg", "empty")):
        with pytest.raises(npgraph.GraphError, match=message):
            npgraph.load(tmp_path / name)


def test_an_operator_it_does_not_know_is_refused():
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    with pytest.raises(npgraph.GraphError, match="Relu is not implemented"):
        npgraph.compile_graph(helper.make_model(graph).SerializeToString())


_EMBED = """
import json, sys
from pathlib import Path
from assistant.embed.embedder import OnnxMiniLM
texts = json.loads(sys.argv[2])
vecs = OnnxMiniLM(cache_dir=Path(sys.argv[1])).embed(texts)
print(json.dumps({"onnxruntime": "onnxruntime" in sys.modules, "vecs": vecs.tolist()}))
"""


def _embed_in_new_process(cache, texts):
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    out = subprocess.run([sys.executable, "-c", _EMBED, str(cache), json.dumps(texts)], capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout)


def test_a_question_after_the_first_session_needs_no_onnxruntime(tmp_path):
    first = _embed_in_new_process(tmp_path, ["warm up: the first session compiles and checks the program"])
    assert first["onnxruntime"]
    assert any(p.suffix == ".npg" for p in tmp_path.iterdir())
    question = ["Which benchmark evaluates LLM-as-a-judge reliability for web development?"]
    fast = _embed_in_new_process(tmp_path, question)
    assert not fast["onnxruntime"]  # the question went through numpy: no session, no onnxruntime import
    many = _embed_in_new_process(tmp_path, question + ["a sentence of a paper"] * 8)  # bulk work: a session
    assert many["onnxruntime"]
    assert np.abs(np.array(fast["vecs"][0]) - np.array(many["vecs"][0])).max() < 1e-5


def test_a_refused_or_damaged_program_falls_back_to_onnxruntime(tmp_path):
    _embed_in_new_process(tmp_path, ["warm up"])
    (program,) = [p for p in tmp_path.iterdir() if p.suffix == ".npg"]
    program.write_bytes(program.read_bytes()[:1000])  # e.g. a disk error
    out = _embed_in_new_process(tmp_path, ["diffusion"])
    assert out["onnxruntime"]  # used onnxruntime, and rebuilt the program with its session
    assert npgraph.load(program).arrays
    program.unlink()
    program.with_name(program.name + ".refused").write_text("refused\n")
    assert _embed_in_new_process(tmp_path, ["diffusion"])["onnxruntime"]
    assert not program.exists()  # refused once: never compiled again


_ASK = """
import json, sys
from pathlib import Path
from assistant.config import Settings
from assistant.service.api import ask
answer = ask(sys.argv[2], Settings(index_dir=Path(sys.argv[1]), rerank="off"))
print(json.dumps({"onnxruntime": "onnxruntime" in sys.modules, "text": answer.text,
                  "citations": [c.paper_id for c in answer.citations]}))
"""


def test_a_question_asked_again_answers_alike_without_onnxruntime(bundled_index_dir):
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    question = "Which benchmark evaluates LLM-as-a-judge reliability for web development?"
    runs = [json.loads(subprocess.run([sys.executable, "-c", _ASK, str(bundled_index_dir), question], env=env,
                                      capture_output=True, text=True, check=True).stdout) for _ in range(2)]
    # the first ask may embed its papers' sentences (the sentence cache: a session); asked again, the question is
    # the only text embedded, in numpy, and the answer is the same
    assert not runs[1]["onnxruntime"]
    assert runs[1]["citations"] and (runs[1]["text"], runs[1]["citations"]) == (runs[0]["text"], runs[0]["citations"])
