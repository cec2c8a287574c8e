"""Bad input gets one clear line and loses nothing: wrong JSON types per field, files that are not a format
ingest reads, HTML or code saved as .txt, UTF-16, a CSV field over csv's 128 KB limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st
from typer.testing import CliRunner

from assistant.cli.app import app
from assistant.text.corpus import ParseReport, load_papers, parse_jsonl

from .conftest import FIXTURES

runner = CliRunner()
ABSTRACT = "We propose a sparse attention kernel that halves the memory of long-context transformers."

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                           | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                        max_size=3),
                           max_leaves=6)
FIELDS = ("id", "title", "authors", "keywords", "url", "date", "venue")


@given(st.lists(st.fixed_dictionaries({}, optional={f: json_values for f in FIELDS}), min_size=1, max_size=6))
@hsettings(max_examples=300, deadline=None)
def test_any_json_type_in_any_field_is_coerced_or_reported_never_a_crash(records):
    lines = [json.dumps({**r, "abstract": f"{ABSTRACT} Record {i}."}) for i, r in enumerate(records)]
    report = ParseReport()
    papers = parse_jsonl(Path("r.jsonl"), "\n".join(lines), report)
    assert len(papers) == len(records)  # no record is lost for a bad field, and no file either
    for rec, p in zip(records, papers):
        assert isinstance(p.title, str) and p.title and isinstance(p.id, str) and p.id
        assert all(isinstance(a, str) for a in p.authors) and all(isinstance(k, str) for k in p.keywords)
        assert p.url is None or isinstance(p.url, str)
        for field in ("title", "authors", "keywords", "url"):
            value = rec.get(field)
            wrong = value is not None and not isinstance(value, (str, list)) and not (
                field in ("title", "url") and isinstance(value, (int, float)) and not isinstance(value, bool))
            if wrong or (field in ("title", "url") and isinstance(value, (list, dict))):
                assert any(f"'{field}'" in line for line in report.notes), (field, value, report.notes)


def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_ingest_reports_bad_fields_and_keeps_every_record(tmp_path):
    f = tmp_path / "odd.jsonl"
    rows = [{"id": "n1", "title": 1984, "abstract": ABSTRACT},
            {"id": "n2", "title": True, "authors": 7, "abstract": ABSTRACT + " Two."},
            {"id": "n3", "title": ["a", "list"], "keywords": 3.5, "abstract": ABSTRACT + " Three."},
            {"id": "n4", "title": {"a": 1}, "authors": ["Ada", {"x": 1}], "abstract": ABSTRACT + " Four \ud800."},
            {"id": "n5", "title": "Fine", "abstract": ["not", "text"]}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    res = run("ingest", str(f), "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 0, res.output
    assert "Indexed 4 new" in res.stdout and "Traceback" not in res.output
    assert "'title' is a number" in res.stderr and "'authors' is a number" in res.stderr
    assert "'title' is a list" in res.stderr and "'keywords' is a number" in res.stderr
    assert "'abstract' is a list, not text" in res.stderr
    shown = json.loads(run("show", "n1", "--json", "--index-dir", str(tmp_path / "idx")).stdout)
    assert shown["title"] == "1984"
    assert json.loads(run("show", "n4", "--json", "--index-dir", str(tmp_path / "idx")).stdout)["authors"] == ["Ada"]


def test_strict_ingest_fails_on_a_bad_field(tmp_path):
    f = tmp_path / "odd.jsonl"
    f.write_text(json.dumps({"id": "n1", "title": [1], "abstract": ABSTRACT}) + "\n", encoding="utf-8")
    res = run("ingest", str(f), "--strict", "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 3 and "'title' is a list" in res.stderr


@pytest.mark.parametrize("name", ["page.html", "paper.pdf", "notes.docx"])
def test_a_named_file_of_another_format_is_refused_in_one_line(mini_index, tmp_path, name):
    f = tmp_path / name
    f.write_text("<html><body><script>var x = 1;</script></body></html>\n")
    res = run("ingest", str(f), "--index-dir", str(mini_index))
    assert res.exit_code == 3
    assert res.stderr.count("\n") == 1 and ".txt" in res.stderr and ".jsonl" in res.stderr and ".csv" in res.stderr
    assert json.loads(run("papers", "--json", "--index-dir", str(mini_index)).stdout).__len__() == 6


def test_a_directory_walk_skips_other_formats_and_says_so(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "good.txt").write_text(f"Header\n\n{ABSTRACT}\n")
    (d / "page.html").write_text("<html><body>x</body></html>\n")
    (d / "style.css").write_text("body { color: red; }\n")
    res = run("ingest", str(d), "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 0, res.output
    assert "Indexed 1 new" in res.stdout
    assert "page.html" in res.stderr and "style.css" in res.stderr and "skipped" in res.stderr


HTML_PAGE = """<!DOCTYPE html>
<html><head><title>Papers</title><style>body { margin: 0; }</style></head>
<body><div class="paper"><p>We propose a thing.</p></div>
<script>window.onload = function () { document.title = "x"; };</script></body></html>
"""
JS_FILE = "\n".join(["import x from 'y';", "const a = 1;", "function f(b) {", "  return b + a;", "}",
                     "export default f;", "let c = f(2);", "console.log(c);"]) + "\n"
CSS_FILE = "\n".join(["body {", "  margin: 0;", "}", ".paper, .title {", "  color: #333;", "  font-size: 12px;",
                      "}", "@media print {", "  body { color: black; }", "}"]) + "\n"


@pytest.mark.parametrize("content,kind", [(HTML_PAGE, "HTML"), (JS_FILE, "code"), (CSS_FILE, "code")])
def test_html_or_code_saved_as_txt_is_refused(tmp_path, content, kind):
    f = tmp_path / "papers.txt"
    f.write_text(content)
    res = run("ingest", str(f), "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 3 and f"looks like {kind}" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "idx").exists() or "Indexed" not in res.stdout


def test_abstracts_that_mention_tags_and_braces_are_still_abstracts(tmp_path):
    f = tmp_path / "papers.txt"
    f.write_text("ICLR\n\nWe detect injected <script> tags and <iframe> payloads in web pages; the <think> "
                 "token of reasoning models is also studied.\n\nA bound of $O(\\log n)$ holds for all "
                 "\\emph{sparse} graphs {with} cycles;\nthe proof uses {induction}.\n")
    papers, _ = load_papers([f])
    assert len(papers) == 2


def test_utf16_files_are_decoded(tmp_path):
    for encoding, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")):
        f = tmp_path / f"{encoding}.txt"
        f.write_bytes(bom + f"Header\n\nNüwa: {ABSTRACT}\n".encode(encoding))
        papers, report = load_papers([f])
        assert [p.abstract for p in papers] == [f"Nüwa: {ABSTRACT}"] and not report.skipped
    f = tmp_path / "nobom.txt"
    f.write_bytes(f"Header\n\n{ABSTRACT}\n".encode("utf-16-le"))
    res = run("ingest", str(f), "--index-dir", str(tmp_path / "idx"))
    assert res.exit_code == 3 and "UTF-16" in res.stderr and "UTF-8" in res.stderr


def test_a_csv_field_over_128_kb_is_cut_and_reported_not_the_file_rejected(tmp_path):
    f = tmp_path / "big.csv"
    huge = " ".join(["word"] * 40_000)  # 200 KB: over csv's default 131,072-character field limit
    f.write_text(f"id,title,abstract\nb1,Big,{huge}\nb2,Small,{ABSTRACT}\n")
    papers, report = load_papers([f])
    assert [p.id for p in papers] == ["b1", "b2"]
    assert len(papers[0].abstract) <= 20_000 and any("b1" in s and "kept the first" in s for s in report.notes)
    import csv

    assert csv.field_size_limit() == 131072  # the process-wide limit is as it was


def test_default_corpus_still_loads():
    papers, report = load_papers([FIXTURES / "mini.txt"])
    assert len(papers) == 6 and not report.skipped
