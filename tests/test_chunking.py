"""Chunking: whole sentences packed to a token budget, the same chunks llama-index's SentenceSplitter makes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assistant.text.chunking import SentencePacker, split_sentences
from assistant.text.corpus import load_papers
from assistant.embed.embedder import count_tokens

# Sentence ends an abbreviation-free Punkt gets right and wrong; the packer must decide as it does.
TRICKY = [
    "We propose X. It works well! Does it scale? Yes, to 10B tokens.",
    "As shown by J. Smith and A. B. Jones, the method holds. Results follow.",
    "Accuracy rises in Table 3. Results on 2. larger models and v2.1 agree. See Sec. 4 for details.",
    "Methods (e.g. LoRA, i.e. adapters) help. They are cheap (about 1%.) Finally, we conclude.",
    "It is called a “baby machine.” The term stuck. Others said ‘no.’ Then... nothing happened.",
    "Short.\n\n\nA new paragraph starts here. And ends here.",
    "We ask: what is learned?! A lot, it seems.",
]


def _count(text: str) -> int:
    return len(count_tokens(text))


def test_sentences_join_back_to_the_text():
    for text in TRICKY:
        assert "".join(split_sentences(text)) == text


def test_sentence_ends_follow_punkt_heuristics():
    assert split_sentences("We propose LoRA. It works well! Does it scale? Yes.") == [
        "We propose LoRA. ", "It works well! ", "Does it scale? ", "Yes."]
    # an initial before a capital, and a number before a lowercase word, do not end a sentence
    assert len(split_sentences("As shown by J. Smith, it holds.")) == 1
    assert len(split_sentences("It is 2. larger than before.")) == 1
    # a closing quote stays with the sentence it closes
    assert split_sentences("Called a “baby machine.” The term stuck.") == ["Called a “baby machine.” ",
                                                                         "The term stuck."]


@pytest.mark.parametrize("size,overlap", [(128, 32), (64, 16), (40, 0)])
def test_chunks_match_llama_index_sentence_splitter(size, overlap):
    """Every retrieval figure was measured with SentenceSplitter's chunks: ours must be identical."""
    from llama_index.core.node_parser import SentenceSplitter

    papers, _ = load_papers()
    texts = TRICKY + [p.abstract for p in papers]
    ref = SentenceSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=count_tokens)
    ours = SentencePacker(size, overlap, _count)
    for text in texts:
        assert ours.split_text(text) == ref.split_text(text)


def test_chunks_fit_the_budget_and_overlap_whole_sentences():
    papers, _ = load_papers()
    packer = SentencePacker(64, 16, _count)
    overlapped = 0
    for paper in papers[:30]:
        chunks = packer.split_text(paper.abstract)
        assert all(_count(c) <= 64 for c in chunks)
        for a, b in zip(chunks, chunks[1:]):
            tail = split_sentences(a)[-1].strip()
            overlapped += b.startswith(tail) and _count(tail) <= 16
    assert overlapped > 0
    # one over-long sentence is cut at phrase and word boundaries, every word kept
    long = "word, " * 100 + "end."
    chunks = SentencePacker(32, 0, _count).split_text(long)
    assert len(chunks) > 1 and all(_count(c) <= 32 for c in chunks)
    assert " ".join(chunks).split() == long.split()


def test_chunking_does_not_import_llama_index_or_nltk():
    """Together they cost ~7 s of every ingest, however small."""
    code = ("import sys; from assistant.config import Settings; from assistant.text.corpus import load_papers; "
            "from assistant.store.chunks import chunk_papers; papers, _ = load_papers(); "
            "assert chunk_papers(papers[:5], Settings()); "
            "print(sorted(m for m in ('nltk', 'llama_index', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
