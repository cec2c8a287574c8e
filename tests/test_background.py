"""What ML writing in general says (assistant/search/background.py): counts shipped as package data."""

from types import SimpleNamespace

from assistant.search.background import DATA_FILE, collocation, pair_count, provenance, term_count, triple_count
from assistant.search.decide import FIELD_SIGNALS, QUESTION_SIGNALS, field_signals, framing_terms, models
from assistant.text.terms import stem_sequence


def test_the_field_counts_are_package_data_that_say_where_they_come_from():
    about = provenance()
    assert about["abstracts"] > 10_000 and "benchmark slices" in about["left_out"] and about["min_count"] >= 2
    assert DATA_FILE.stat().st_size < 3_000_000  # hashed keys and counts, no text


def test_a_topic_the_field_writes_is_known_and_a_users_own_wording_is_not():
    a, b = stem_sequence("speculative decoding")
    assert pair_count(a, b) > 10 and pair_count(a, b) == pair_count(b, a) and term_count(a) >= pair_count(a, b)
    assert pair_count(*stem_sequence("heartbeat gadgets")) == 0
    assert pair_count(*stem_sequence("zqxv wvutr")) == 0 and term_count("zqxv") == 0


def test_a_named_technique_is_a_written_triple_and_a_bound_pair():
    assert triple_count(*stem_sequence("neural architecture search")) > 3
    assert triple_count(*stem_sequence("architecture neural search")) == 0  # in the order written
    decoding = stem_sequence("speculative decoding")
    vision = stem_sequence("efficient vision")
    assert collocation(*decoding, pair_count(*decoding)) > 1 > 0 > collocation(*vision, pair_count(*vision))
    assert collocation(*stem_sequence("heartbeat gadgets"), 0) == 0.0


def test_a_written_pair_the_top_papers_lack_reads_as_a_topic_and_one_they_write_does_not():
    question = "Is there work on speculative decoding for faster LLM inference?"
    near = SimpleNamespace(title="Faster LLM inference", abstract="We cut LLM inference latency with quantized kernels.")
    has_it = SimpleNamespace(title="Drafts", abstract="We study speculative decoding with a small draft model.")
    lacked = field_signals(question, [near], framing_terms())
    held = field_signals(question, [near, has_it], framing_terms())
    assert lacked["field_pair"] > held["field_pair"]
    assert lacked["field_collocation"] > held["field_collocation"] == 0.0


def test_a_written_triple_the_top_papers_lack_reads_as_a_topic():
    question = "Which paper uses neural architecture search to find vision transformers?"
    near = SimpleNamespace(title="ViT", abstract="A neural network architecture; we search over vision transformers.")
    has_it = SimpleNamespace(title="NAS", abstract="We speed up neural architecture search with weight sharing.")
    assert field_signals(question, [near], framing_terms())["field_triple"] > 1.0
    assert field_signals(question, [near, has_it], framing_terms())["field_triple"] == 0.0


def test_the_answerable_model_reads_the_field_signals():
    m = models()["answerable"]
    assert set(FIELD_SIGNALS) <= set(m.names) and m.names == QUESTION_SIGNALS


def test_the_relevance_model_reads_the_questions_intent():
    """A third-ranked paper is more likely relevant to an area question than to a lookup, on the same signals."""
    import numpy as np

    from assistant.search.decide import PAPER_SIGNALS, Signals, relevant_probabilities

    m = models()["relevant"]
    assert m.names == PAPER_SIGNALS and "area" in PAPER_SIGNALS
    paper = {"cos": 0.45, "cos_drop": 0.08, "fused_ratio": 0.7, "inv_rank": 1 / 3, "standout": 3.0, "coverage": 0.5,
             "sentence_cos": 0.5, "named": 0.0}
    lookup, area = (relevant_probabilities(Signals(question={}, papers=[paper | {"area": a}])) for a in (0.05, 0.95))
    assert area[0] > lookup[0] + 0.05 and np.all((0 <= lookup) & (area <= 1))
