import numpy as np
import pytest

from assistant.embedder import MINILM_DIM, LocalMiniLM, _verified, count_tokens, load_tokenizer
from assistant.llama import MiniLMEmbedding
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

    code = ("from assistant.embedder import get_embedder; from assistant.config import Settings; "
            "get_embedder(Settings()).embed_array(['x']); import assistant.retrieve, assistant.answer")
    assert heavy_modules_after(code, ["llama_index.core"]) == []
