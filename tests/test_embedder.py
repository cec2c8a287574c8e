import shutil
from pathlib import Path

import numpy as np
import pytest

from assistant.embed.embedder import MINILM_DIM, LocalMiniLM, _verified, count_tokens, load_tokenizer
from assistant.embed.llama import MiniLMEmbedding
from assistant.errors import ConfigError


def test_embeddings_are_normalised_384d_and_batch_independent():
    emb = MiniLMEmbedding(embed_batch_size=2)
    texts = ["graph neural networks for molecules", "a", "federated learning with heterogeneous clients " * 20]
    batch = emb.embed_array(texts)
    assert batch.shape == (3, MINILM_DIM)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    for i, t in enumerate(texts):
        single = emb.embed_array([t])[0]
        assert float(single @ batch[i]) > 0.999  # padding inside a batch must not change a vector


def test_related_texts_are_closer_than_unrelated_ones():
    emb = MiniLMEmbedding()
    q, near, far = emb.embed_array(["privacy in federated learning",
                                    "differential privacy guarantees for federated training clients",
                                    "robot morphology co-design with reinforcement learning"])
    assert q @ near > q @ far + 0.2


def test_tokenizer_does_not_pad_short_queries_and_truncates_long_text():
    tok = load_tokenizer()
    assert len(tok.encode("short query").ids) == 4  # [CLS] short query [SEP], not padded to 128
    assert len(tok.encode("word " * 1000).ids) == 256
    assert len(count_tokens("word " * 1000)) == 1000  # counting for chunking is not truncated


def test_model_checksum_is_verified(tmp_path):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(ConfigError, match="sha256"):
        _verified(str(fake))


def test_llama_index_face_matches_the_local_embedder():
    from llama_index.core.base.embeddings.base import BaseEmbedding

    li = MiniLMEmbedding()
    assert isinstance(li, BaseEmbedding)
    text = "sparse attention for long-context language models"
    via_llama = np.asarray(li.get_text_embedding(text))
    assert float(via_llama @ LocalMiniLM().embed_array([text])[0]) > 0.9999
    assert len(li.get_text_embedding_batch(["a", "b", "c"])) == 3


def test_query_path_does_not_import_llama_index():
    from .conftest import heavy_modules_after

    code = ("from assistant.embed.embedders import get_embedder; from assistant.config import Settings; "
            "get_embedder(Settings()).embed_array(['x']); import assistant.search.retrieve, assistant.qa.answer")
    assert heavy_modules_after(code, ["llama_index.core"]) == []


def _texts_of_mixed_lengths():
    # mixed lengths in one batch: padded rows are where a wrong attention mask would show
    return ["a", "graph neural networks for molecules", "federated learning with heterogeneous clients " * 30,
            "Sparse attention. " * 5, "[CLS] [SEP]"]


def test_rewritten_graph_gives_the_pypi_models_vectors():
    from assistant.embed.embedder import OnnxMiniLM

    texts = _texts_of_mixed_lengths()
    fast, plain = OnnxMiniLM(graph="fast").embed(texts, 8), OnnxMiniLM(graph="plain").embed(texts, 8)
    assert np.min((fast * plain).sum(axis=1)) > 0.99999


def test_rewrite_removes_the_nan_guards_and_fuses_gelu_and_attention():
    import collections

    import onnx

    from assistant.embed.embedder import model_path
    from assistant.embed.onnxgraph import RewriteError, fuse_attention, rewrite

    before = collections.Counter(n.op_type for n in onnx.load(str(model_path())).graph.node)
    data = rewrite(model_path().read_bytes())
    after = collections.Counter(n.op_type for n in onnx.load_from_string(data).graph.node)
    assert before["IsNaN"] == 6 and before["Erf"] == 6 and before["Softmax"] == 6
    assert after["IsNaN"] == after["Erf"] == after["Softmax"] == after["Where"] == 0
    assert after["Gelu"] == 6 and after["Attention"] == 6
    # per layer, the q/k/v projections and the two attention products became one Attention node
    assert after["MatMul"] == before["MatMul"] - 5 * 6
    # the int8 weights stay int8 in the file (one packed float matrix is made at load)
    assert len(data) < 1.01 * model_path().stat().st_size
    with pytest.raises(RewriteError, match="expected 6 attention blocks, found 0"):
        fuse_attention(data)


def test_rewrite_refuses_a_graph_it_was_not_written_for():
    from onnx import TensorProto, helper

    from assistant.embed.onnxgraph import RewriteError, rewrite

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    with pytest.raises(RewriteError, match="expected 6"):
        rewrite(helper.make_model(graph).SerializeToString())


def test_rewritten_graph_is_cached_and_a_damaged_cache_falls_back(tmp_path, monkeypatch):
    import onnxruntime

    from assistant.embed.embedder import MINILM_SHA256, OnnxMiniLM, _fast_graph, model_path
    from assistant.embed.onnxgraph import VERSION

    older = tmp_path / f"minilm-int8-{MINILM_SHA256[:12]}-g{VERSION - 1}-ort{onnxruntime.__version__}.onnx"
    other_ort = tmp_path / f"minilm-int8-{MINILM_SHA256[:12]}-g{VERSION - 1}-ort0.1.onnx"
    older.write_bytes(b"an older rewrite")
    other_ort.write_bytes(b"another venv's onnxruntime")
    data = _fast_graph(str(model_path()), tmp_path, 2)
    other_ort.unlink()  # kept: another install may still use it
    cached = list(tmp_path.iterdir())  # the older rewrite is gone
    assert [p.name for p in cached] == [f"minilm-int8-{MINILM_SHA256[:12]}-g{VERSION}-ort{onnxruntime.__version__}.onnx"]
    assert cached[0].read_bytes() == data
    # an unwritable cache still gives the graph, built in memory
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert _fast_graph(str(model_path()), not_a_dir, 2) == data

    cached[0].write_bytes(b"damaged")  # e.g. a disk error: rebuilt, not used and not left behind
    monkeypatch.setenv("ASSISTANT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(OnnxMiniLM, "_sessions", {})
    texts = _texts_of_mixed_lengths()
    vecs = OnnxMiniLM(graph="fast").embed(texts, 8)
    assert cached[0].read_bytes() == data
    monkeypatch.setattr(OnnxMiniLM, "_sessions", {})
    assert np.min((vecs * OnnxMiniLM(graph="plain").embed(texts, 8)).sum(axis=1)) > 0.99999


def test_settings_cache_dir_is_where_the_graph_is_cached(tmp_path, monkeypatch):
    from assistant.config import Settings
    from assistant.embed.embedder import OnnxMiniLM
    from assistant.embed.embedders import get_embedder

    monkeypatch.setenv("ASSISTANT_CACHE_DIR", str(tmp_path / "from-env"))
    monkeypatch.setattr(OnnxMiniLM, "_sessions", {})
    get_embedder(Settings(cache_dir=tmp_path / "from-settings")).embed_array(["a short query"])
    assert sorted(p.suffix for p in (tmp_path / "from-settings").iterdir()) == [".npg", ".onnx"]  # npgraph.py
    assert not (tmp_path / "from-env").exists()


def test_the_bundled_corpus_is_indexed_from_the_shipped_vectors_which_are_the_model_s_own(tmp_path, monkeypatch):
    """A first run embeds none of the bundled corpus's texts: each is in the table the package ships (a change to
    chunking or sentence splitting that leaves one out fails here: rebuild with python -m training --only vectors),
    and the table's vectors are those the model gives, for a sample of them re-embedded here."""
    from assistant.config import Settings
    from assistant.embed import embedder
    from assistant.embed.embedder import MINILM_SHA256, OnnxMiniLM
    from assistant.embed.shipped import split_known
    from assistant.store.ingest import ingest
    from assistant.text.corpus import load_papers

    asked, modelled = [], []
    real_array, real_model = embedder.LocalMiniLM.embed_array, OnnxMiniLM.embed

    def through_table(self, texts, on_batch=None):
        asked.extend(texts)
        return real_array(self, texts, on_batch)

    def model(self, texts, *args, **kw):
        modelled.extend(texts)
        return real_model(self, texts, *args, **kw)

    monkeypatch.setattr(embedder.LocalMiniLM, "embed_array", through_table)
    monkeypatch.setattr(OnnxMiniLM, "embed", model)
    ingest(load_papers()[0], Settings(index_dir=tmp_path / "iclr"))
    assert len(asked) > 900 and modelled == []  # not one text through the model
    have, known, missing = split_known(asked, MINILM_SHA256)
    assert missing == [] and len(have) == len(asked)
    sample = np.random.default_rng(0).choice(len(asked), 24, replace=False)
    fresh = real_model(OnnxMiniLM(), [asked[i] for i in sample], 8)
    assert np.all(np.sum(fresh * known[sample], axis=1) > 0.99999)


def test_no_table_or_another_model_s_table_is_no_table(no_shipped_vectors, tmp_path):
    from assistant.embed import shipped
    from assistant.embed.embedder import MINILM_SHA256

    texts = ["federated learning with heterogeneous clients"]
    assert shipped.split_known(texts, MINILM_SHA256)[2] == [0]  # no file
    (tmp_path / "no-table.npz").write_bytes(b"not a zip")
    shipped.forget_table()
    assert shipped.split_known(texts, MINILM_SHA256)[2] == [0]  # an unreadable one
    shipped.forget_table()
    shutil.copy(Path(__file__).parent.parent / "assistant" / "data" / "iclr2026_vectors.npz", tmp_path / "no-table.npz")
    assert shipped.split_known(texts, "another model")[2] == [0]  # another model's
    whole = (tmp_path / "no-table.npz").read_bytes()
    for cut in (len(whole) // 2, len(whole) - 100):  # a truncated zip: the members, or the central directory, cut
        (tmp_path / "no-table.npz").write_bytes(whole[:cut])
        shipped.forget_table()
        assert shipped.split_known(texts, MINILM_SHA256)[2] == [0]
