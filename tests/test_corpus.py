import json
from pathlib import Path

import pytest

from assistant.text.corpus import load_papers, parse_file
from assistant.text.latex import readable
from assistant.text.titles import derive_title, readable_title
from assistant.errors import InputError

from .conftest import FIXTURES


def test_bundled_corpus_has_95_papers_with_positional_ids():
    papers, report = load_papers()
    assert len(papers) == 95
    assert report.duplicates == [] and report.skipped == []
    ids = [p.id for p in papers]
    assert len(set(ids)) == 95
    assert "000_c647aebf503422f2#1" in ids and "004_b9c85a56bb10ecbe#19" in ids
    # the file with the Chinese header parses like the others: header dropped, 19 abstracts
    zh = [p for p in papers if p.source == "001_920fbba894271a85.txt"]
    assert len(zh) == 19
    assert [p.position for p in zh] == list(range(1, 20))
    assert not any("论文" in p.abstract for p in papers)


def test_bundled_abstracts_are_kept_verbatim_with_latex_and_urls():
    papers = {p.id: p for p in load_papers()[0]}
    nextquill = papers["000_c647aebf503422f2#10"]
    assert "https://anonymous.4open.science/r/NextQuill-1E4E" in nextquill.urls
    assert nextquill.url == "https://anonymous.4open.science/r/NextQuill-1E4E"
    assert r"\emph{data manifold hypothesis}" in papers["000_c647aebf503422f2#9"].abstract
    assert papers["000_c647aebf503422f2#1"].abstract.startswith("Federated Learning (FL) is a privacy-preserving")


@pytest.mark.parametrize("pid,title", [
    ("000_c647aebf503422f2#2", "Mixture-of-Thought (MoT)"),
    ("000_c647aebf503422f2#4", "Latent Wasserstein Adversarial Imitation Learning (LWAIL)"),
    ("004_b9c85a56bb10ecbe#17", "Coarse-to-fine Language-Aligned manipulation Policy (CLAP)"),
    ("003_22ceaf1a0eb8de0c#12", "WaterDrum"),
])
def test_derived_titles_name_the_introduced_method(pid, title):
    papers = {p.id: p for p in load_papers()[0]}
    assert papers[pid].title == title
    assert papers[pid].title_derived


def test_derived_title_falls_back_to_first_sentence_cut_near_90_chars():
    abstract = ("Neural operators excel at learning mappings between function spaces, serving as efficient "
                "surrogates for numerical solvers of partial differential equations. More text follows here.")
    title = derive_title(abstract)
    assert title.startswith("Neural operators excel at learning mappings")
    assert len(title) <= 91 and title.endswith("…")
    assert derive_title("Short first sentence here. Then more.") == "Short first sentence here."


def test_readable_title_falls_back_to_a_noun_phrase_never_a_sentence_cut_mid_phrase():
    abstract = ("Neural operators excel at learning mappings between function spaces, serving as efficient "
                "surrogates for numerical solvers of partial differential equations. More text follows here.")
    assert readable_title(abstract) == "Neural operators"
    # the sentence of the issue: its subject, not its first 90 characters
    assert readable_title("Combining diverse foundation models is promising, but weight-merging is limited by "
                        "mismatched architectures and closed APIs. We do something else.") \
        == "Combining diverse foundation models"
    # what the abstract proposes, as a noun phrase cut where a clause starts
    assert readable_title("Open-weight AI systems offer unique benefits, including enhanced transparency. We introduce "
                        "a multi-stage pipeline for scalable data filtering and show that it works.") \
        == "A multi-stage pipeline for scalable data filtering"
    assert readable_title("We uncover the hidden lattice geometry of large language models: a symbolic backbone.") \
        == "The hidden lattice geometry of large language models"
    assert readable_title("While in-context learning (ICL) has achieved remarkable success, its theory lags.") \
        == "In-context learning (ICL)"


def test_a_derived_title_says_what_the_paper_does_not_the_field_it_opens_with():
    """Nothing introduced by name: the title is what the paper proposes or studies, read past a comma between
    modifiers and without a parenthetical citation, stopped where a verb starts; never "Sequence modeling" (the
    field its first sentence opens with), never a clause ("We show")."""
    mesa = ("Sequence modeling is currently dominated by causal transformers. Here, we join this line of work and "
            "introduce a numerically stable, chunkwise parallelizable version of the recently proposed Mesa layer "
            "(von Oswald et al., 2024), and study it in language modeling.")
    assert readable_title(mesa) == ("A numerically stable, chunkwise parallelizable version of the recently "
                                    "proposed Mesa layer")
    studied = ("Large language models are everywhere. This paper initiates a theoretical study of in-context "
               "learning for regression on manifolds. We derive bounds.")
    assert readable_title(studied) == "A theoretical study of in-context learning for regression on manifolds"
    assert readable_title("We show that robustness to quantization is a transferable direction in weight space. "
                          "It works.") == "Robustness to quantization"
    assert readable_title("Robots are hard to design. We show that a universal, morphology-agnostic controller can "
                          "be obtained by pretraining. It generalizes.") == "A universal, morphology-agnostic controller"


@pytest.mark.parametrize("abstract,title", [
    ("Quantization is hard. We introduce Qronos---a new post-training quantization algorithm that not only "
     "corrects errors but also diffuses them.", "Qronos: a new post-training quantization algorithm"),
    ("Pruning helps. To this end, we propose N\\\"uwa, a two-stage token pruning framework that enables "
     "efficient feature aggregation.", "Nüwa: a two-stage token pruning framework"),
    ("We present TopoFormer, a lightweight and scalable framework for graph representation learning that "
     "encodes topology.", "TopoFormer: a lightweight and scalable framework for graph representation learning"),
])
def test_readable_title_starts_with_the_name_the_abstract_introduces(abstract, title):
    assert readable_title(abstract) == title


def test_a_bare_framework_title_reads_on_to_what_it_does():
    """"X, a framework that ..." is not shown as "X: a framework": the clause says what it does, cut only before a
    whole modifier; a clause that points back to earlier sentences or stops at its verb is left out."""
    assert readable_title("Large models struggle. To address this, we introduce DeepEyes, a model that learns to "
                          "think with images, trained end-to-end.") \
        == "DeepEyes: a model that learns to think with images"
    assert readable_title("We present VeriTrip, a verifiable benchmark designed for travel planning agents. It has "
                          "500 tasks.") == "VeriTrip: a verifiable benchmark designed for travel planning agents"
    # too long whole: cut before "under", not before "for" (which left "a human-in-the-loop framework")
    assert readable_title("We introduce CLExEval, a human-in-the-loop framework for evaluating LLM clinical reasoning "
                          "under progressive information masking.") \
        == "CLExEval: a human-in-the-loop framework for evaluating LLM clinical reasoning"
    assert readable_title("We propose SkillFoundry, a self-evolving framework that converts such resources into "
                          "skills.") == "SkillFoundry: a self-evolving framework"
    assert readable_title("We propose CLarGen, a decoupled framework that separates, in two stages, layout and "
                          "content.") == "CLarGen: a decoupled framework"
    # too long whole: cut before its second clause, not before "on" (which left too little to keep)
    assert readable_title("We present MCP-SafetyBench, a comprehensive benchmark built on real MCP servers that "
                          "supports realistic multi-turn evaluation across five domains.") \
        == "MCP-SafetyBench: a comprehensive benchmark built on real MCP servers"


@pytest.mark.parametrize("abstract,title", [
    ("This paper presents ORPilot, an open-source agentic AI system for optimization modeling. It works.",
     "ORPilot: an open-source agentic AI system for optimization modeling"),
    ("We introduce iTRIALSPACE, a programmable evaluation framework for lung CT models. More.",
     "iTRIALSPACE: a programmable evaluation framework for lung CT models"),
    ("We present WBCBench 2026, an ISBI challenge for white blood cell classification. More.",
     "WBCBench 2026: an ISBI challenge for white blood cell classification"),
    ("We propose Flow Mismatching, an unsupervised anomaly detection method. Instead, we do more.",
     "Flow Mismatching: an unsupervised anomaly detection method"),
    ("We propose $\\mathtt{DeepInsightTheorem}$, a hierarchical dataset of informal proofs. More.",
     "DeepInsightTheorem: a hierarchical dataset of informal proofs"),
])
def test_the_shown_title_reads_names_written_every_common_way(abstract, title):
    """"This paper presents X", a name opening in lower case, one with a version number or of two plain
    capitalised words right after the verb: each is the name the title opens with; no LaTeX command is left."""
    assert readable_title(abstract) == title


def test_no_bundled_title_reads_as_a_sentence_cut_mid_phrase():
    """Every derived title of the bundled corpus is shown as a whole phrase: no ellipsis, no dangling last word;
    the stored one (what retrieval reads) is unchanged."""
    dangling = {"of", "for", "and", "in", "with", "to", "the", "via", "on", "a", "an", "by", "from", "that", "or"}
    papers = load_papers()[0]
    for p in papers:
        shown = p.display_title
        assert not shown.endswith("…") and shown.split()[-1].lower() not in dangling, (p.id, shown)
        assert p.title_derived or shown == p.title
    titles = {p.id: p.display_title for p in papers}
    assert titles["001_920fbba894271a85#8"] == "Qronos: a new post-training quantization algorithm"
    assert titles["003_22ceaf1a0eb8de0c#10"] == "Combining diverse foundation models"
    # the name the paper introduces, where "we propose a new architectural element, ASIDE, ..." or "this work ...
    # introduces RESFL, ..." says it (they were "A new architectural element" and "Federated Learning (FL)")
    assert titles["002_20c6bded0bdf1017#9"] == "ASIDE: a new architectural element"
    # "... introduces RESFL, an integrated solution optimizing both": not "optimizing" without what it optimizes
    assert titles["004_b9c85a56bb10ecbe#5"] == "RESFL: an integrated solution"
    assert titles["002_20c6bded0bdf1017#6"] == "RADAR: Reasoning–Ability and Difficulty-Aware Routing"
    assert titles["000_c647aebf503422f2#14"] == "DeepEyes: a model that learns to “think with images”"


def test_every_bundled_title_is_short_and_nonempty():
    for p in load_papers()[0]:
        assert 0 < len(p.title) <= 91, p.id


def test_jsonl_records_keep_fields_and_extra_metadata(tmp_path):
    f = tmp_path / "papers.jsonl"
    rows = [
        {"id": "2606.1", "title": "A Title", "abstract": "An abstract about graphs.", "authors": ["A. One", "B. Two"],
         "url": "https://arxiv.org/abs/2606.1", "date": "2026-06-01", "keywords": ["graphs"], "venue": "X"},
        {"id": "2606.2", "title": "Other", "abstract": "Different text about vision."},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["2606.1", "2606.2"]
    p = papers[0]
    assert p.title == "A Title" and not p.title_derived
    assert p.authors == ("A. One", "B. Two") and p.url == "https://arxiv.org/abs/2606.1"
    assert p.date == "2026-06-01" and p.keywords == ("graphs",)
    assert p.extra == {"venue": "X"}


def test_malformed_jsonl_line_is_reported_with_file_and_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"id": "a", "abstract": "fine text"}\n{not json\n{"id": "c", "abstract": "more text"}\n')
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["a", "c"]
    assert any("bad.jsonl:2" in s and "malformed JSON" in s for s in report.skipped)
    with pytest.raises(InputError, match="bad.jsonl:2"):
        load_papers([f], strict=True)


def test_csv_with_and_without_abstract_column(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text('id,title,abstract,authors\np1,Paper One,"Text, with a comma.",A. One; B. Two\n')
    papers, _ = load_papers([good])
    assert papers[0].abstract == "Text, with a comma." and papers[0].authors == ("A. One", "B. Two")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,title,body\np1,T,x\n")
    with pytest.raises(InputError, match="no 'abstract' column"):
        load_papers([bad])


def test_a_semicolon_csv_from_a_spreadsheet_is_read(tmp_path):
    """Spreadsheets in many locales export ';' (and a byte-order mark); a comma inside a field stays."""
    f = tmp_path / "export.csv"
    f.write_bytes("\ufeffid;title;abstract\np1;Paper One;Text, with a comma; and more.\n".encode()
                  .replace(b"Text, with a comma; and more.", b'"Text, with a comma; and more."'))
    papers, _ = load_papers([f])
    assert [(p.id, p.title, p.abstract) for p in papers] == [("p1", "Paper One", "Text, with a comma; and more.")]


def test_a_csv_quote_left_open_is_refused_not_read_into_the_next_row(tmp_path):
    """An unterminated quote made u2's abstract swallow u3's row ("...quote. u3,T3,Third ..."), u3 lost, with no
    report, even with --strict. A quote inside an unquoted field and a quoted line break stay valid."""
    bad = tmp_path / "midquote.csv"
    bad.write_text('id,title,abstract\nu1,T1,"First about graphs."\nu2,T2,"Second, unterminated.\n'
                   'u3,T3,"Third about segmentation."\nu4,T4,"Fourth about RAG."\n')
    with pytest.raises(InputError, match=r"not valid CSV after line \d+ .*a quote inside a field is written twice"):
        load_papers([bad])
    good = tmp_path / "good.csv"
    good.write_text('id,title,abstract\nu1,A "quoted" title,"First line,\nsecond ""quoted"" line."\nu2,T2,Plain.\n')
    papers, _ = load_papers([good])
    assert [p.title for p in papers] == ['A "quoted" title', "T2"]
    assert papers[0].abstract == 'First line, second "quoted" line.'


def test_identical_abstracts_are_stored_once_and_reported(tmp_path):
    f = tmp_path / "dups.txt"
    f.write_text("Header\n\nSame abstract text here.\n\nAnother one.\n\nSame abstract   text here.\n")
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["dups#1", "dups#2"]
    assert report.duplicates == [("dups#3", "dups#1")]


def test_missing_path_binary_file_and_empty_dir_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_papers([tmp_path / "nope.txt"])
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InputError, match="binary"):
        load_papers([binary])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="holds no"):
        load_papers([empty])


def test_a_windows_1252_file_is_read_as_such_and_said_and_strict_refuses_it(tmp_path):
    """A file Excel or a Windows editor saved (no UTF-8 character in it) was stored as mojibake ("Sch\ufffdtzung"),
    even with --strict, under a line saying "skipped:". It is read as Windows-1252 and said in a note; --strict
    refuses it with how to convert it."""
    f = tmp_path / "latin.csv"
    f.write_bytes("id,title,abstract\nl1,\u00dcber die Sch\u00e4tzung,Wir sch\u00e4tzen \u201cGr\u00f6\u00dfen\u201d "
                  "f\u00fcr M\u00fcllers caf\u00e9 Daten \u20ac.\n".encode("cp1252"))
    papers, report = load_papers([f])
    assert papers[0].title == "\u00dcber die Sch\u00e4tzung"
    assert papers[0].abstract == "Wir sch\u00e4tzen \u201cGr\u00f6\u00dfen\u201d f\u00fcr M\u00fcllers caf\u00e9 Daten \u20ac."
    assert not report.skipped and any("read as Windows-1252" in s and "iconv" in s for s in report.notes)
    with pytest.raises(InputError, match="not UTF-8.*iconv -f cp1252"):
        load_papers([f], strict=True)


def test_a_utf8_file_with_a_damaged_byte_keeps_its_utf8_and_marks_the_byte(tmp_path):
    f = tmp_path / "damaged.txt"
    f.write_bytes("Header\n\nCaf\u00e9 na\u00efve abstract \xff about things.\n".encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    papers, report = load_papers([f])
    assert papers[0].abstract == "Caf\u00e9 na\u00efve abstract \ufffd about things."
    assert any("invalid UTF-8" in s for s in report.notes) and not report.skipped


def test_directory_of_files_and_header_only_file(tmp_path):
    (tmp_path / "a.txt").write_text("Header only\n")
    papers, _ = load_papers([FIXTURES])
    assert {p.source for p in papers} == {"mini.txt", "mini_zh.txt", "titled.jsonl"}  # every file of the folder
    assert parse_file(tmp_path / "a.txt") == []


def test_duplicate_ids_with_different_text_keep_the_first(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text('{"id": "x", "abstract": "first text"}\n{"id": "x", "abstract": "second text"}\n')
    papers, report = load_papers([f])
    assert [p.abstract for p in papers] == ["first text"]
    assert any("duplicate id x" in s for s in report.skipped)
    with pytest.raises(InputError, match="duplicate id x"):
        load_papers([f], strict=True)


def test_huge_paragraph_is_cut_and_reported(tmp_path):
    from assistant.text.corpus import MAX_ABSTRACT_CHARS

    f = tmp_path / "big.txt"
    f.write_text("Header\n\n" + "word " * 1_000_000 + "\n\nA normal abstract.\n")  # a 5 MB paragraph
    papers, report = load_papers([f])
    assert len(papers) == 2 and len(papers[0].abstract) <= MAX_ABSTRACT_CHARS
    assert any("kept the first" in s for s in report.notes) and not report.skipped  # kept, cut: not skipped


def test_100k_tiny_paragraphs_parse(tmp_path):
    f = tmp_path / "many.txt"
    f.write_text("Header\n\n" + "\n\n".join(f"tiny abstract number {i}." for i in range(100_000)))
    papers, _ = load_papers([f])
    assert len(papers) == 100_000 and papers[-1].id == "many#100000"


def test_unreadable_file_is_a_clear_error(tmp_path, monkeypatch):
    f = tmp_path / "secret.txt"
    f.write_text("Header\n\nText.\n")

    def deny(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", deny)  # root ignores chmod, so deny at the syscall boundary
    with pytest.raises(InputError, match="permission denied"):
        load_papers([f])


def test_header_only_file_ingests_nothing_with_a_clear_message(tmp_path):
    from assistant.service.api import ingest_paths
    from assistant.config import Settings

    f = tmp_path / "empty.txt"
    f.write_text("ICLR 2026 Papers\n")
    with pytest.raises(InputError, match="no abstracts found"):
        ingest_paths([f], Settings(index_dir=tmp_path / "idx"))
    assert not (tmp_path / "idx" / "manifest.json").exists()
    bad = tmp_path / "bad.jsonl"  # every record rejected: the message gives the first reason
    bad.write_text('{"abstract": "unterminated\n{"title": "no abstract"}\n')
    with pytest.raises(InputError, match=r"no abstracts found in .*bad.jsonl: .*bad.jsonl:1: malformed JSON .*\(and 1 more\)"):
        ingest_paths([bad], Settings(index_dir=tmp_path / "idx"))
    assert not (tmp_path / "idx" / "manifest.json").exists()


def test_directory_of_mixed_files(tmp_path):
    (tmp_path / "a.txt").write_text("Header\n\nFirst text abstract.\n")
    (tmp_path / "b.jsonl").write_text('{"id": "j1", "title": "J", "abstract": "A JSONL abstract."}\n')
    (tmp_path / "c.csv").write_text("id,title,abstract\nc1,C,A CSV abstract.\n")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # not an abstract file: ignored
    (tmp_path / ".hidden.txt").write_text("Header\n\nHidden.\n")
    papers, report = load_papers([tmp_path])
    assert sorted(p.id for p in papers) == ["a#1", "c1", "j1"]
    assert report.files == 4


def test_records_without_an_id_are_numbered_like_text_lists(tmp_path):
    """Title/abstract-only exports are common: a record's id defaults to <file stem>#<record number>."""
    f = tmp_path / "export.jsonl"
    f.write_text('{"title": "One", "abstract": "First text."}\n\n{"title": "Two"}\n'
                 '{"id": "x9", "abstract": "Third text."}\n{"abstract": "Fourth text."}\n')
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["export#1", "x9", "export#4"]
    assert report.skipped == [f"{f}:3: record export#2 has no 'abstract'"]
    c = tmp_path / "list.csv"
    c.write_text('title,abstract\nA,"Alpha text."\nB,"Beta text."\n')
    assert [p.id for p in load_papers([c])[0]] == ["list#1", "list#2"]


def test_readable_shows_latex_markup_as_plain_unicode():
    """Abstracts carry LaTeX from their sources; a terminal shows what it means."""
    assert readable(r"a new record of $86.2\%$ on LiveCodeBench") == "a new record of 86.2% on LiveCodeBench"
    assert readable(r"Our key idea is a \emph{link function}, gains of 4.5\%") == \
        "Our key idea is a link function, gains of 4.5%"
    assert readable(r"proposes $\alpha$-mixture; SRe$^2$L; ($\approx 0.6$B); $(\epsilon,\delta)$-DP") == \
        "proposes α-mixture; SRe²L; (≈ 0.6B); (ε,δ)-DP"
    assert readable(r"learns to ``think with images'', 13.8\times faster") == "learns to “think with images”, 13.8× faster"
    assert readable(r"\textbf{gains of 4.5\%, and 10.9\%}") == "gains of 4.5%, and 10.9%"
    assert readable("**R**ectified **D**ecoupled (RD$^3$)") == "Rectified Decoupled (RD³)"
    assert readable("we develop two {efficient} inference-time algorithms") == \
        "we develop two efficient inference-time algorithms"
    for plain in ["costs $5 and $6 here", "no markup at all", r"C:\data\papers.csv", 'a dict {"a": 1}']:
        assert readable(plain) == plain
    # TeX's dashes (Qronos, SWD and ContextBench write them); a Markdown rule or table and an option stay
    assert readable("We introduce Qronos---a new algorithm; SWD) --- a lightweight; ContextBench -- a benchmark; "
                    "pp. 3--5") == "We introduce Qronos—a new algorithm; SWD) — a lightweight; ContextBench – a " \
                                   "benchmark; pp. 3–5"
    for kept in ["---", "| --- | --- |", "run it with --force", "a->b"]:
        assert readable(kept) == kept


def test_jsonl_strings_holding_line_separators_are_one_record_each(tmp_path):
    """Issue 47 row 10: valid JSONL whose strings hold raw U+2028, U+2029 or U+0085 was split inside records: 3 of
    4 records skipped as "malformed", with wrong line numbers."""
    records = [{"id": f"r{n}", "title": f"Title{sep}{n}", "abstract": f"An abstract{sep}with a separator, number {n}."}
               for n, sep in enumerate(["\u2028", "\u2029", "\u0085", "\u000b"], 1)]
    f = tmp_path / "seps.jsonl"
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n{broken\n", encoding="utf-8")
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["r1", "r2", "r3", "r4"]
    assert report.skipped == [f"{f}:5: malformed JSON (Expecting property name enclosed in double quotes at column 2)"]


def test_a_deeply_nested_line_or_a_huge_number_skips_that_record_only(tmp_path):
    """Issue 47 row 11: one deeply nested line, or a number of more than 4,300 digits, was a traceback and the
    whole file was rejected."""
    f = tmp_path / "odd.jsonl"
    lines = [json.dumps({"abstract": "A good first abstract about widgets."}),
             '{"abstract": "nested", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
             '{"abstract": "a number", "x": ' + "9" * 5000 + "}",
             json.dumps({"abstract": "A good last abstract about gadgets."})]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    papers, report = load_papers([f])
    assert [p.abstract for p in papers] == ["A good first abstract about widgets.", "A good last abstract about gadgets."]
    assert any(s.startswith(f"{f}:2: malformed JSON (nested too deeply)") for s in report.skipped)
    assert any(s.startswith(f"{f}:3: malformed JSON (a value it cannot read") for s in report.skipped)
    whole = tmp_path / "odd.json"
    whole.write_text("[" + ", ".join(lines) + "]", encoding="utf-8")
    with pytest.raises(InputError, match="malformed JSON"):  # one .json document: one clear line, no traceback
        load_papers([whole])


def test_a_text_list_without_a_header_line_keeps_its_first_abstract(tmp_path):
    """Abstracts pasted into a .txt with no title line first: the first abstract was read as the header and lost
    without a word ("Indexed 2 new" of 3)."""
    f = tmp_path / "pasted.txt"
    one = "Federated learning trains models across clients without sharing their data. " * 4
    f.write_text(f"{one}\n\nSecond abstract on diffusion models for images, with results.\n\nThird one.\n")
    papers, report = load_papers([f])
    assert [p.abstract for p in papers] == [one.strip(), "Second abstract on diffusion models for images, with results.",
                                            "Third one."]
    assert any("first line reads as an abstract" in s for s in report.notes)
    # wrapped: the first line runs on into the next
    f.write_text("Federated learning trains models across clients without\nsharing their data at all.\n\nSecond.\n")
    papers, _ = load_papers([f])
    assert papers[0].abstract == "Federated learning trains models across clients without sharing their data at all."
    # a title line stays a header, followed by a blank line or not
    for text in ("My reading list\n\nFirst abstract.\n", "My reading list\nFirst abstract.\n"):
        f.write_text(text)
        papers, report = load_papers([f])
        assert [p.abstract for p in papers] == ["First abstract."] and not report.notes


def test_a_text_list_of_one_abstract_a_line_is_one_paper_a_line(tmp_path):
    """Three abstracts on three lines with no blank line between them were stored as one paper of three papers'
    text, citing three papers' claims under one title."""
    f = tmp_path / "lines.txt"
    abstracts = [f"We propose Method{i}, a method for task {i} that improves accuracy on benchmarks. " * 5
                 for i in range(3)]
    f.write_text("My abstracts\n" + "\n".join(a.strip() for a in abstracts) + "\n")
    papers, report = load_papers([f])
    assert [p.abstract for p in papers] == [a.strip() for a in abstracts]
    assert [p.id for p in papers] == ["lines#1", "lines#2", "lines#3"]
    assert any("3 abstracts, one a line" in s for s in report.notes)
    # wrapped lines of one abstract stay one abstract
    f.write_text("My abstracts\n" + "\n".join(["word " * 15] * 6) + "\n")
    assert len(load_papers([f])[0]) == 1


def test_html_tags_and_entities_in_exports_are_read_as_text(tmp_path):
    """Crossref (<jats:p>) and PubMed (<i>, &amp;) exports were stored with their markup: titles and snippets
    showed "&lt;attention&gt;", the terminal's Markdown swallowed a "<p>" line, "amp" and "jats" were terms."""
    f = tmp_path / "html.jsonl"
    f.write_text(json.dumps({"id": "h1", "title": "GraphMixer: subgraph &lt;attention&gt; &amp; more",
                             "abstract": "<p>We propose <b>GraphMixer</b> &amp; use &lt;attention&gt; over &quot;subgraphs"
                                         "&quot;.</p><p>It gains 3&#8211;5%.</p>"}) + "\n"
                 + json.dumps({"id": "h2", "abstract": "<jats:p>We propose ProtGNN; the <think> token stays.</jats:p>"})
                 + "\n")
    papers, _ = load_papers([f])
    assert papers[0].title == "GraphMixer: subgraph <attention> & more"
    assert papers[0].abstract == 'We propose GraphMixer & use <attention> over "subgraphs". It gains 3\u20135%.'
    assert papers[1].abstract == "We propose ProtGNN; the <think> token stays."


def test_json_lines_saved_as_json_are_read(tmp_path):
    f = tmp_path / "arxiv.json"
    f.write_text('{"id": "a", "abstract": "First."}\n{"id": "b", "abstract": "Second."}\n')
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["a", "b"] and any("JSON Lines" in s for s in report.notes)


def test_zotero_columns_keys_in_other_case_and_author_strings(tmp_path):
    """Zotero's "Abstract Note" and "Author" columns were refused or ignored; "Smith, John and Doe, Jane" became
    four authors, in BibTeX too; JSONL "Abstract" was "no 'abstract'"; authors as objects were dropped."""
    f = tmp_path / "zotero.csv"
    f.write_text('"Key","Publication Year","Author","Title","Abstract Note"\n'
                 '"K1","2024","Smith, John; Doe, Jane","A title","An abstract about graphs."\n')
    papers, _ = load_papers([f])
    assert papers[0].abstract == "An abstract about graphs." and papers[0].authors == ("Smith, John", "Doe, Jane")
    g = tmp_path / "case.jsonl"
    g.write_text(json.dumps({"ID": "c1", "Title": "T", "Abstract": "Text one.", "authors": "Smith, John and Doe, Jane"})
                 + "\n" + json.dumps({"id": "c2", "abstract": "Text two.",
                                      "authors": [{"name": "Ada Lovelace"}, {"given": "Grace", "family": "Hopper"}]})
                 + "\n")
    papers, report = load_papers([g])
    assert [(p.id, p.title, p.abstract) for p in papers] == [("c1", "T", "Text one."), ("c2", papers[1].title, "Text two.")]
    assert papers[0].authors == ("Smith, John", "Doe, Jane")
    assert papers[1].authors == ("Ada Lovelace", "Grace Hopper") and not report.notes


def test_a_bad_file_met_in_a_folder_is_skipped_not_the_folder(tmp_path):
    """An empty CSV or a .txt with NUL bytes in a folder refused the whole folder (exit 3); named on the command
    line, or with --strict, it still is."""
    d = tmp_path / "exports"
    d.mkdir()
    (d / "good.jsonl").write_text('{"id": "g1", "abstract": "A good abstract."}\n')
    (d / "scratch.csv").write_text("")
    (d / "log.txt").write_bytes(b"abc\x00\x00def")
    papers, report = load_papers([d])
    assert [p.id for p in papers] == ["g1"]
    assert any("scratch.csv is empty" in s and s.endswith("skipped") for s in report.skipped)
    assert any("log.txt" in s and "binary" in s for s in report.skipped)
    with pytest.raises(InputError, match="is empty"):
        load_papers([d / "scratch.csv"])
    with pytest.raises(InputError):
        load_papers([d], strict=True)


def test_latex_a_reader_sees_is_read_whole():
    """`show` printed "\\hatθ_n", "\\tildeO(\\frac1n)", "Kurdyka--Ł{}ojasiewicz" and "\\textbf(i) compression-aware"."""
    from assistant.text.latex import readable

    text = (r"We prove that $\|\hat{\theta}_n - \theta^\star\| = \tilde{O}(\frac{1}{n})$ under the "
            r"Kurdyka--\L{}ojasiewicz condition, both $\textbf{\textit{(i)} compression-aware and \textit{(ii)} robust}$.")
    assert readable(text) == ("We prove that ‖θ_n - θ^⋆‖ = O(1/n) under the Kurdyka–Łojasiewicz condition, both "
                              "(i) compression-aware and (ii) robust.")


def test_a_markdown_reading_list_titles_each_abstract_with_its_heading(tmp_path):
    """Each "## Heading" of a reading list was a paper of its own ("## GraphMixer"), and the abstract under it had a
    derived title."""
    f = tmp_path / "reading.md"
    f.write_text("# Reading list\n\n## GraphMixer: Subgraph Attention\n\nWe propose GraphMixer, a graph network.\n\n"
                 "## Second\n\nAnother abstract here.\n\nA third abstract without a heading.\n")
    papers, _ = load_papers([f])
    assert [(p.title, p.abstract) for p in papers] == [
        ("GraphMixer: Subgraph Attention", "We propose GraphMixer, a graph network."),
        ("Second", "Another abstract here."), (papers[2].title, "A third abstract without a heading.")]
    assert papers[2].title_derived and not papers[0].title_derived


F = "We propose FooNet, a convolutional network for tabular data. FooNet outperforms gradient boosting on ten benchmarks."
B = ("Graph neural networks are studied for molecule property prediction. We introduce BarGNN, which uses message "
     "passing with attention.")
Q = "Diffusion models are slow at sampling. We present QuickDiff, a distillation method that samples in four steps."


@pytest.mark.parametrize("layout, titles", [
    (f"{F}\n\n{B}\n\n{Q}\n", [None, None, None]),  # no title line, short abstracts: the first was lost
    (f"Reading list\n{F}\n{B}\n{Q}\n", [None, None, None]),  # one a line, short lines: one paper of three
    (f"{F}\n{B}\n{Q}\n", [None, None, None]),
    (f"# Reading list\n## FooNet: Conv Nets\n{F}\n## BarGNN\n{B}\n## QuickDiff\n{Q}\n", ["FooNet: Conv Nets", "BarGNN",
                                                                                      "QuickDiff"]),
    (f"## FooNet: Conv Nets\n\n{F}\n\n## Nothing under me\n\n## BarGNN\n{B}\n\n{Q}\n", ["FooNet: Conv Nets", "BarGNN",
                                                                                      None]),
    (f"Reading list\nCompiled by Jane Doe, March 2024\n\n{F}\n\n{B}\n\n{Q}\n", [None, None, None]),  # no phantom paper
    (f"Reading list\n\n- {F}\n- {B[:B.index(' We ')]}\n  {B[B.index(' We ') + 1:]}\n* {Q}\n", [None, None, None]),
    (f"Reading list\n\n1. {F}\n2. {B}\n3) {Q}\n", [None, None, None]),
    (f"Reading list\n\nFooNet: Conv Nets\n\n{F}\n\nTitle: BarGNN\nAuthors: Smith, John; Doe, Jane\nAbstract: {B}\n\n{Q}\n",
     ["FooNet: Conv Nets", "BarGNN", None]),
])
def test_a_text_list_is_read_as_its_layout_says(tmp_path, layout, titles):
    """A re-test of the text lists found short abstracts lost or merged, headings glued into abstracts, a second
    header line made a paper, bullets and labelled blocks read as one abstract with their markers."""
    f = tmp_path / "list.md"
    f.write_text(layout)
    papers, _ = load_papers([f])
    assert [p.abstract for p in papers] == [F, B, Q]
    assert [None if p.title_derived else p.title for p in papers] == titles
    if "Authors:" in layout:
        assert papers[1].authors == ("Smith, John", "Doe, Jane")


def test_a_word_broken_at_a_line_end_and_an_abstract_about_html_are_read_as_written(tmp_path):
    f = tmp_path / "list.txt"
    f.write_text("Reading list\n\nWe study high-\nresolution images with a state-of-the-\nart network.\n")
    assert load_papers([f])[0][0].abstract == "We study high-resolution images with a state-of-the-art network."
    g = tmp_path / "html.jsonl"
    g.write_text(json.dumps({"id": "h", "abstract": 'We parse <div class="x"> and <br> tags &amp; more.'}) + "\n")
    assert load_papers([g])[0][0].abstract == 'We parse <div class="x"> and <br> tags & more.'


def test_authors_written_surname_first_with_particles_or_initials_stay_whole(tmp_path):
    from assistant.text.corpus import split_authors

    assert split_authors("van der Berg, Anna and de la Cruz, Maria") == ["van der Berg, Anna", "de la Cruz, Maria"]
    assert split_authors("Smith, J., Doe, J. and Lee, E.") == ["Smith, J.", "Doe, J.", "Lee, E."]
    assert split_authors("Alice Smith, Bob Jones and Carol White") == ["Alice Smith", "Bob Jones", "Carol White"]
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"id": "a", "abstract": "Text.", "authors": [{"literal": "The ATLAS Collaboration"},
                                                                         {"first": "John", "last": "Smith"}]}) + "\n")
    assert load_papers([f])[0][0].authors == ("The ATLAS Collaboration", "John Smith")


def test_strict_on_a_utf8_file_with_a_damaged_byte_does_not_advise_converting_it_from_windows_1252(tmp_path):
    f = tmp_path / "damaged.txt"
    f.write_bytes("Header\n\nCaf\u00e9 na\u00efve abstract \xff about things.\n".encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    with pytest.raises(InputError, match="UTF-8 but for a damaged byte") as err:
        load_papers([f], strict=True)
    assert "iconv" not in str(err.value)


def test_a_list_of_one_line_abstracts_without_full_stops_keeps_each(tmp_path):
    """A short line alone titles the abstract after it; lines that no abstract follows are abstracts themselves."""
    f = tmp_path / "short.txt"
    f.write_text("My list\n\nAbstract one about graphs\n\nAbstract two about images\n\nAbstract three about text\n")
    assert [p.abstract for p in load_papers([f])[0]] == ["Abstract one about graphs", "Abstract two about images",
                                                        "Abstract three about text"]
