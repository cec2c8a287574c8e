"""What ML writing in general says (assistant/search/background.py): counts shipped as package data."""

from types import SimpleNamespace

from assistant.search.background import DATA_FILE, pair_count, provenance, term_count
from assistant.search.decide import QUESTION_SIGNALS, field_signals, framing_terms, models
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


def test_a_written_pair_the_top_papers_lack_reads_as_a_topic_and_one_they_write_does_not():
    question = "Is there work on speculative decoding for faster LLM inference?"
    near = SimpleNamespace(title="Faster LLM inference", abstract="We cut LLM inference latency with quantized kernels.")
    has_it = SimpleNamespace(title="Drafts", abstract="We study speculative decoding with a small draft model.")
    lacked = field_signals(question, [near], framing_terms())
    held = field_signals(question, [near, has_it], framing_terms())
    assert lacked["field_pair"] > held["field_pair"]


def test_the_answerable_model_reads_the_field_signals():
    m = models()["answerable"]
    assert {"field_pair", "field_pair_parts", "field_term"} <= set(m.names) and m.names == QUESTION_SIGNALS
