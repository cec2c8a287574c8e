"""BibTeX export of papers parsed from real files: titles of untitled abstracts, and headers as venues."""

import re

import pytest

from assistant.text.corpus import load_papers
from assistant.qa.export import to_bibtex, venue

from .conftest import FIXTURES


@pytest.mark.parametrize("header,expected", [
    ("ICLR 2026 Papers", "ICLR 2026 Papers"),
    ("NeurIPS 2025 accepted papers", "NeurIPS 2025 accepted papers"),
    ("Proceedings of the 41st International Conference on Machine Learning",
     "Proceedings of the 41st International Conference on Machine Learning"),
    ("ICLR 2026 论文列表", "ICLR 2026"),  # another script: only the Latin-script venue and year it starts with
    ("论文列表", None),
    ("This file lists the abstracts I collected for my survey on federated learning.", None),
    ("Abstracts", None),
    ("my reading list", None),
    ("", None),
])
def test_a_header_is_a_venue_only_when_it_reads_as_one(header, expected):
    assert venue(header) == expected


def test_bibtex_of_untitled_abstracts_has_whole_phrase_titles_and_no_foreign_header_as_venue(tmp_path):
    papers, _ = load_papers([FIXTURES / "mini_zh.txt", FIXTURES / "mini.txt"])
    bib = to_bibtex(papers)
    assert "论文" not in bib and "howpublished = {ICLR 2026}" in bib
    assert "howpublished = {ICLR 2026 Papers}" in bib
    titles = re.findall(r"title = \{\{(.*)\}\}", bib)
    assert len(titles) == len(papers)
    for title in titles:
        assert not title.endswith(("…", " by", " of", " the", " and", " to")), title
    # the cut first sentence the issue quotes no longer appears as a title
    odd = tmp_path / "merge.txt"
    odd.write_text("notes for my survey, to read later\n\nCombining diverse foundation models is promising, but "
                   "weight-merging is limited by mismatched architectures and closed APIs. Our method routes "
                   "queries instead.\n")
    entry = to_bibtex(load_papers([odd])[0])
    assert "title = {{Combining diverse foundation models}}" in entry and "howpublished" not in entry
