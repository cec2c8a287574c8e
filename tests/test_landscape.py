"""The corpus map: layout, themes, query marks, cache, PNG decoding and the HTML in a real headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from assistant.cli.app import app
from assistant.config import Settings
from assistant.qa.landscape import build_map, place_labels, write_html, write_png
from assistant.search.retrieve import Retriever

runner = CliRunner()
FL_PAPERS = {"000_c647aebf503422f2#1", "001_920fbba894271a85#10", "002_20c6bded0bdf1017#1", "004_b9c85a56bb10ecbe#5"}


def _retriever(index_dir: Path) -> Retriever:
    from assistant.store.opening import open_index

    settings = Settings.from_env(index_dir=index_dir)
    return Retriever(open_index(settings, build_default=False), settings)


@pytest.fixture(scope="module")
def fl_map(tmp_path_factory, bundled_index_dir):
    """The bundled corpus mapped with the query "federated learning" (its own copy: the map cache writes)."""
    index_dir = tmp_path_factory.mktemp("map") / "index"
    shutil.copytree(bundled_index_dir, index_dir)
    return build_map(_retriever(index_dir), "federated learning")


def _boxes_overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def test_place_labels_keeps_crowded_labels_apart_and_inside_the_frame():
    anchors = [(100.0, 100.0)] * 6 + [(395.0, 5.0)]
    sizes = [(80.0, 16.0)] * 7
    placed = place_labels(anchors, sizes, 400, 300)
    boxes = [(x - w / 2, y - h / 2, x + w / 2, y + h / 2) for (x, y), (w, h) in zip(placed, sizes)]
    for i, a in enumerate(boxes):
        assert 0 <= a[0] and a[2] <= 400 and 0 <= a[1] and a[3] <= 300
        for b in boxes[i + 1:]:
            assert not _boxes_overlap(a, b)
    # the first label needs no move; later ones stay near their anchor
    assert placed[0] == (100.0, 100.0)
    assert all(abs(x - 100) + abs(y - 100) < 150 for x, y in placed[1:6])


def test_place_labels_avoids_taken_boxes():
    (x, y), = place_labels([(50.0, 50.0)], [(40.0, 10.0)], 200, 200, taken=[(30, 40, 70, 60)])
    assert not _boxes_overlap((x - 20, y - 5, x + 20, y + 5), (30, 40, 70, 60))


def test_map_has_every_paper_in_themes_and_numbers_the_query_papers(fl_map):
    assert len(fl_map.points) == 95
    assert len({p.paper_id for p in fl_map.points}) == 95
    assert 2 <= len(fl_map.themes) <= 12
    assert sum(t.size for t in fl_map.themes) == 95
    assert len({t.label for t in fl_map.themes}) == len(fl_map.themes)  # labels are distinct
    assert all(np.isfinite([p.x, p.y]).all() for p in fl_map.points)
    assert {p.paper_id for p in fl_map.marked} == FL_PAPERS
    assert [p.mark for p in fl_map.marked] == [1, 2, 3, 4]
    assert fl_map.answerable is True


def test_unanswerable_query_highlights_nothing(bundled_index_dir, tmp_path):
    index_dir = tmp_path / "index"
    shutil.copytree(bundled_index_dir, index_dir)
    retriever = _retriever(index_dir)
    cmap = build_map(retriever, "sourdough bread fermentation temperature")
    assert cmap.answerable is False
    assert cmap.marked == []
    # close enough in cosine (papers on "experts", "mixture models"), but no paper has the area's words
    assert retriever.search("mixture of experts").answerable
    cmap = build_map(retriever, "mixture of experts")
    assert cmap.answerable is False and cmap.marked == []


def test_a_query_numbers_the_papers_an_area_answer_cites_not_every_paper_near_the_top(bundled_index_dir, tmp_path):
    """"dataset distillation": the two dataset-distillation papers, as the area answer cites them; not CompoDistill
    (knowledge distillation), whose fused score is over half the top one's and whose cosine passes the hand-set gate
    that numbered papers before."""
    from assistant.qa.answer import area_hits, retrieve

    index_dir = tmp_path / "index"
    shutil.copytree(bundled_index_dir, index_dir)
    retriever = _retriever(index_dir)
    cmap = build_map(retriever, "dataset distillation", method="pca")
    assert {p.paper_id for p in cmap.marked} == {"004_b9c85a56bb10ecbe#10", "001_920fbba894271a85#19"}
    found = retrieve(retriever, "dataset distillation", 10)
    assert [p.paper_id for p in sorted(cmap.marked, key=lambda p: p.mark)] == [h.paper_id for h in area_hits(found)]


def test_layout_is_cached_per_index_version(mini_index):
    from assistant.text.corpus import Paper
    from assistant.store.ingest import ingest

    first = build_map(_retriever(mini_index))
    assert not first.layout_cached
    again = build_map(_retriever(mini_index))
    assert again.layout_cached
    assert [(p.paper_id, p.x, p.y) for p in again.points] == [(p.paper_id, p.x, p.y) for p in first.points]
    # a new paper changes the index fingerprint: the layout is recomputed and includes it
    new = Paper(id="extra#1", title="Sparse autoencoders for protein folding",
                              abstract="We fold proteins with sparse autoencoders trained on structure data.",
                              source="extra", position=1)
    ingest([new], Settings.from_env(index_dir=mini_index))
    after = build_map(_retriever(mini_index))
    assert not after.layout_cached
    assert "extra#1" in {p.paper_id for p in after.points}
    assert len(list((mini_index / "map").glob("*.json"))) == 1  # the stale layout was replaced


def test_png_decodes_to_a_full_size_non_blank_picture(fl_map, tmp_path):
    import matplotlib.image as mpimg

    out = write_png(fl_map, tmp_path / "m.png")
    img = mpimg.imread(out)
    assert img.shape[:2] == (1200, 1920)
    rgb = img[..., :3]
    assert rgb.std() > 0.05  # not a blank canvas
    coloured = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.25
    assert coloured.sum() > 2000  # theme colours are drawn, not just black text


def test_html_is_self_contained(fl_map, tmp_path):
    out = write_html(fl_map, tmp_path / "m.html")
    page = out.read_text()
    for needle in ("http://", "https://"):  # nothing fetched at view time (the SVG namespace is not a fetch)
        for line in page.splitlines():
            if needle in line:
                assert "www.w3.org/2000/svg" in line
    assert "<script src" not in page and "<link" not in page


# --- the HTML in a real browser -------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromium-driver must be installed in CI (.ci/run installs them)")
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run installs them)")
    selenium = pytest.importorskip("selenium")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    assert selenium
    try:
        yield driver
    finally:
        driver.quit()


def _open(driver, path: Path):
    driver.get(path.resolve().as_uri())
    deadline = time.time() + 120  # a bound for a broken page only
    while time.time() < deadline:
        state = driver.execute_script("return [document.body.dataset.ready, document.body.dataset.error]")
        if state[0] or state[1]:
            break
        time.sleep(0.1)
    assert state[1] is None, f"the page failed: {state[1]}"
    assert state[0] == "1", "the page never finished drawing"


def _shown(driver, expected: int) -> None:
    """Wait until the page says it shows ``expected`` papers (it sets data-shown when a filter has been applied)."""
    deadline = time.time() + 120  # a bound for a broken page only: a working one says so in milliseconds
    while driver.execute_script("return document.body.dataset.shown") != str(expected) and time.time() < deadline:
        time.sleep(0.05)


def test_html_in_headless_chromium_draws_every_paper_and_filters(fl_map, tmp_path, browser):
    from selenium.webdriver.common.by import By

    out = write_html(fl_map, tmp_path / "m.html")
    _open(browser, out)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    assert browser.execute_script("return document.querySelectorAll('#points circle.paper').length") == 95
    assert browser.execute_script("return document.querySelectorAll('#labels text').length") == len(fl_map.themes)
    numbers = browser.execute_script("return [...document.querySelectorAll('#marks text')].map(t => t.textContent)")
    assert numbers == ["1", "2", "3", "4"]

    box = browser.find_element(By.ID, "search")
    box.send_keys("federated")
    expected = sum("federated" in f"{p.title} {p.abstract} {p.paper_id}".lower() for p in fl_map.points)
    assert 4 <= expected < 95
    _shown(browser, expected)
    assert browser.execute_script("return document.querySelectorAll('#points circle.paper:not(.dim)').length") == expected
    assert f"{expected} of 95" in browser.find_element(By.ID, "count").text
    box.clear()
    box.send_keys("zzzz-no-such-word")
    _shown(browser, 0)
    assert browser.execute_script("return document.querySelectorAll('#points circle.paper:not(.dim)').length") == 0

    # clicking a numbered mark shows that paper's abstract
    browser.execute_script("document.querySelector('#marks text').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    shown = browser.find_element(By.ID, "abstract").text
    first = fl_map.marked[0]
    assert shown.split()[:8] == first.abstract.split()[:8]


def test_html_escapes_hostile_titles(tmp_path, browser):
    from assistant.text.corpus import Paper
    from assistant.store.ingest import ingest

    index_dir = tmp_path / "index"
    hostile = [Paper(id=f"h#{i}", title=f'<img src=x onerror="document.body.dataset.pwned=1"> paper {i}',
                     abstract=f"<script>document.body.dataset.pwned=1</script> Abstract number {i} about graphs.",
                     source="h", position=i) for i in range(1, 6)]
    ingest(hostile, Settings.from_env(index_dir=index_dir))
    out = write_html(build_map(_retriever(index_dir)), tmp_path / "h.html")
    _open(browser, out)
    browser.execute_script("document.querySelector('#points circle').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    browser.execute_script("document.querySelector('#points circle').dispatchEvent(new MouseEvent('mousemove', {bubbles: true}))")
    assert browser.execute_script("return document.body.dataset.pwned") is None
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_map_writes_png_and_reports_json(bundled_index_dir, tmp_path):
    index_dir = tmp_path / "index"
    shutil.copytree(bundled_index_dir, index_dir)
    out = tmp_path / "fl.png"
    result = runner.invoke(app, ["map", "federated learning", "--out", str(out), "--index-dir", str(index_dir), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["out"] == str(out.resolve())
    assert {h["paper_id"] for h in data["highlighted"]} == FL_PAPERS
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # typed with a slip, the area is still found and numbered
    result = runner.invoke(app, ["map", "federated leanring", "--out", str(out), "--force", "--index-dir",
                                 str(index_dir), "--json"])
    assert {h["paper_id"] for h in json.loads(result.stdout)["highlighted"]} == FL_PAPERS


def test_cli_map_as_the_first_command_builds_the_index_then_maps(tmp_path, monkeypatch):
    """A new user's first command may be `map`: the index build's progress bar and the layout spinner take turns."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["map", "--out", "first.png"])  # the default index directory: ./index_store
    assert result.exit_code == 0, result.output
    assert (tmp_path / "first.png").read_bytes()[:4] == b"\x89PNG"
    assert "Map of 95 papers" in result.stdout


def test_cli_map_default_name_is_printed(mini_index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["map", "--index-dir", str(mini_index)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "map.html").exists()
    assert "map.html" in result.stdout


@pytest.mark.parametrize("out, message", [("m.pdf", "use --out NAME.html or NAME.png"),
                                          ("missing-dir/m.html", "does not exist")])
def test_cli_map_bad_output_is_one_line_error(mini_index, tmp_path, out, message):
    result = runner.invoke(app, ["map", "--out", str(tmp_path / out), "--index-dir", str(mini_index)])
    assert result.exit_code == 3
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not (tmp_path / out).exists()


def test_map_out_over_an_existing_file_needs_force(mini_index, tmp_path):
    """Issue 47 row 12: `map --out existing.html` overwrote the user's file; --save refuses without --force, and
    map must too."""
    mine = tmp_path / "existing.html"
    mine.write_text("<p>my notes</p>")
    result = runner.invoke(app, ["map", "--out", str(mine), "--index-dir", str(mini_index)])
    assert result.exit_code == 3 and "already exists; add --force" in " ".join(result.output.split())
    assert mine.read_text() == "<p>my notes</p>"
    result = runner.invoke(app, ["map", "--out", str(mine), "--force", "--index-dir", str(mini_index)])
    assert result.exit_code == 0 and mine.read_text().startswith("<!DOCTYPE html>")


def test_a_layout_that_is_not_one_is_bad_usage_said_first(mini_index, tmp_path, monkeypatch):
    """`map --layout bogus` was an input error (exit 3), and without --out it first said map.html exists."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "map.html").write_text("mine")
    result = runner.invoke(app, ["map", "--layout", "bogus", "--index-dir", str(mini_index)])
    assert result.exit_code == 2 and "'bogus' is not a layout; use tsne or pca" in " ".join(result.output.split())
    result = runner.invoke(app, ["map", "--layout", "PCA", "--out", "m.html", "--index-dir", str(mini_index)])
    assert result.exit_code == 0 and (tmp_path / "m.html").exists()


def test_a_map_named_after_its_query_keeps_the_query_letters_and_stays_in_its_folder():
    """`map "Nüwa token pruning"` wrote map-n-wa-token-pruning.html, and every all-CJK query map-query.html (the
    second one refused without --force)."""
    from assistant.qa.landscape import default_out

    assert default_out("Nüwa token pruning").name == "map-nüwa-token-pruning.html"
    assert default_out("联邦学习").name == "map-联邦学习.html" != default_out("扩散模型").name
    for hostile in ("../../etc/x", "a/b\\c", "\u202eevil", "..", "x\x00y"):
        out = default_out(hostile)
        assert out.parent == Path(".") and "/" not in out.name and "\\" not in out.name and ".." not in out.name
        assert out.name.isprintable()
