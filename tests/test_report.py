"""``share-ner report``: the page's data, its self-containment (nothing to load), and the page in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.document import Attributes, Mention
from share_ner.eval.html_report import PHI_NOTICE, groups_by_folder, groups_by_pattern, render_html, report_data
from share_ner.formats.share import write_pipe
from share_ner.formats.share2014 import read_share2014, write_share2014

REPORT = Path(__file__).parent / "fixtures" / "report"
GOLD, PRED, PRED_B, TEXT = (str(REPORT / d) for d in ("gold", "pred", "pred_b", "text"))


def embedded(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["report", "--gold", GOLD, "--pred", PRED, "--vs", PRED_B, "--text", TEXT, "--out", str(out),
                 "--shuffles", "200"]) == 0
    return out.read_text(encoding="utf-8")


def test_page_holds_the_hand_counted_figures(page):
    d = embedded(page)
    a, b = d["systems"]
    assert (a["name"], b["name"]) == ("pred", "pred_b")
    # tests/test_eval_errors.py counts these by hand
    assert a["kinds"] == {"false_positive": 2, "false_negative": 2, "boundary": 3, "discontiguous": 6,
                          "wrong_cui": 1, "cui_for_cui_less": 1, "cui_less_for_cui": 1}
    assert a["scores"]["strict"]["tp"] == 8 and a["scores"]["relaxed"]["tp"] == 17
    # pred_b is gold on the three clinic notes (10 mentions) and predicts nothing on the four radiology notes
    assert b["kinds"]["false_negative"] == 9 and sum(b["kinds"].values()) == 9
    assert d["groups"] == ["clinic", "radiology"]
    assert a["by_group"]["clinic"]["n_notes"] == 3
    # clinic for pred: strict TP 2 + 4 = 6 of 10 gold and 9 predicted -> F1 12/19
    assert a["by_group"]["clinic"]["strict_f1"] == pytest.approx(12 / 19)
    assert b["by_group"]["radiology"]["strict_f1"] == 0
    assert set(d["significance"]) == {"strict_f1", "relaxed_f1", "discontiguous_f1", "strict_accuracy",
                                      "relaxed_accuracy"}
    assert d["significance"]["strict_f1"]["diff"] == pytest.approx(8 / 19 - 20 / 29)
    assert [n["id"] for n in d["notes"]] == ["cuis", "discont", "discont2", "exact", "fp", "missing", "spans"]
    discont = d["notes"][1]
    assert discont["gold"][0] == [[0, 11, 15, 22], "CUI-less"]
    assert discont["t"].startswith("Left atrium is dilated.")
    # static summary: the scores table, with both systems and the p-values
    assert "<th>pred</th><th>pred_b</th><th>A − B</th><th>p</th>" in page
    assert "<td>0.421</td>" in page and "<td>0.690</td>" in page


def test_page_loads_nothing_and_says_it_holds_phi(page):
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(//|[a-z]+:)""", page, re.I)
    assert "@import" not in page and "url(" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "fetch(" not in page and "XMLHttpRequest" not in page
    # the notice comes first in the body, before any score
    body = page[page.index("<body>"):]
    assert body.index(PHI_NOTICE) < body.index("<table")


def test_note_text_cannot_break_out_of_the_page():
    text = "See </script><script>alert(1)</script> at https://example.org/x <!-- fever"
    start = text.index("fever")
    gold = {"n": [Mention("n", ((start, start + 5),))]}
    page = render_html(report_data(gold, {"sys": gold}, {"n": text}, n_shuffles=10))
    assert page.count("</script>") == 2  # the data block's and the code's own
    assert "https://" not in page and "<!--" not in page
    assert embedded(page)["notes"][0]["t"] == text


def test_offsets_count_utf16_units_for_the_browser():
    text = "\U0001F600 fever"  # one astral character: two UTF-16 units
    gold = {"n": [Mention("n", ((2, 7),))]}
    d = report_data(gold, {"sys": gold}, {"n": text})
    assert d["notes"][0]["gold"][0][0] == [3, 8]


def test_attributes_travel_and_their_accuracy_is_shown():
    m = Mention("n", ((0, 5),)).with_attributes(Attributes(negation="yes"))
    d = report_data({"n": [m]}, {"sys": {"n": [m.with_attributes(Attributes())]}}, {"n": "fever"})
    assert d["notes"][0]["gold"][0] == [[0, 5], "CUI-less", {"negation": "yes"}]
    neg = d["systems"][0]["attributes"]["negation"]
    assert (neg["correct"], d["systems"][0]["attributes"]["overall"]["n"]) == (0, 1)
    assert "id='attributes'" in render_html(d)


def test_the_concept_s_name_travels_beside_its_cui():
    pred = Mention("n", ((0, 5),), "C0015967", name="Fever")
    d = report_data({"n": [Mention("n", ((0, 5),), "C0015967")]}, {"sys": {"n": [pred]}}, {"n": "fever"})
    assert d["notes"][0]["gold"][0] == [[0, 5], "C0015967"]  # no name: as before
    assert d["notes"][0]["pred"][0][0] == [[0, 5], "C0015967", None, "Fever"]
    assert "function mCui(m)" in render_html(d)


def test_gold_without_attributes_has_no_attribute_scores(page):
    d = embedded(page)
    assert d["systems"][0]["attributes"] is None and d["systems"][1]["attributes"] is None
    assert not any(m.startswith("attributes.") for m in d["significance"])
    assert "id='attributes-none'" in page


def test_task2a_scores_and_p_values_as_evaluate_gives_them(tmp_path, capsys):
    """share2014 gold (tests/fixtures/share2014: DVT doctime before; chest pain negated, doctime overlap; dyspnea
    all defaults; breast cancer family_member, body location, doctime before_overlap) against two systems."""
    fix = Path(__file__).parent / "fixtures" / "share2014"
    dvt, chest, dyspnea, cancer = read_share2014(fix / "gold" / "note1.pipe.txt")
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    # a: DVT without attributes (the defaults), chest pain as gold, dyspnea negated, no breast cancer
    write_share2014(a_dir / "note1.pipe.txt",
                    [dvt.with_attributes(Attributes()), chest, dyspnea.with_attributes(Attributes(negation="yes"))])
    # b: the four gold spans in a 2013 pipe file, no attributes at all
    write_pipe(b_dir / "note1.pipe.txt", [Mention(m.doc_id, m.spans, m.cui) for m in (dvt, chest, dyspnea, cancer)])
    out = tmp_path / "r.html"
    assert main(["report", "--gold", str(fix / "gold"), "--pred", str(a_dir), "--vs", str(b_dir),
                 "--text", str(fix / "text"), "--out", str(out), "--shuffles", "50"]) == 0
    page = out.read_text(encoding="utf-8")
    d = embedded(page)
    a, b = (s["attributes"] for s in d["systems"])
    # a, 3 pairs: negation no/yes/no vs no/yes/yes -> 2/3, tp 1 of gold 1 and predicted 2: P 1/2, R 1, F1 2/3;
    # doctime before/overlap/unknown vs unknown/overlap/unknown -> 2/3, tp 1 of gold 2, predicted 1: F1 2/3;
    # the seven others agree on all three: overall (2 + 2 + 21) / 27
    assert a["overall"] == {"accuracy": pytest.approx(25 / 27), "n": 3}
    assert (a["negation"]["accuracy"], a["negation"]["precision"], a["negation"]["recall"]) == (
        pytest.approx(2 / 3), 0.5, 1.0)
    assert (a["doctime"]["tp"], a["doctime"]["gold_pos"], a["doctime"]["pred_pos"]) == (1, 2, 1)
    assert a["doctime"]["f1"] == pytest.approx(2 / 3)
    # b, 4 pairs, all defaults: negation 3/4, subject 3/4, body location 3/4, doctime 1/4 (gold unknown once),
    # the five others 4/4: overall (3 + 3 + 3 + 1 + 20) / 36
    assert b["overall"] == {"accuracy": pytest.approx(30 / 36), "n": 4}
    assert b["doctime"]["accuracy"] == 0.25 and b["negation"]["f1"] == 0.0 and b["body_location"]["gold_pos"] == 1
    sig = d["significance"]
    assert sig["attributes.negation.accuracy"]["diff"] == pytest.approx(2 / 3 - 3 / 4)
    assert sig["attributes.overall.accuracy"]["diff"] == pytest.approx(25 / 27 - 30 / 36)
    assert sig["attributes.overall.accuracy"]["p_value"] == 1.0  # one note: every shuffle is as far apart
    # evaluate gives the same figures
    assert main(["evaluate", "--gold", str(fix / "gold"), "--pred", str(a_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attributes"] == a
    # the page's table: both systems, accuracy and P/R/F1, and the p-value columns
    table = page[page.index("id='attributes'"):]
    table = table[:table.index("</table>")]
    assert "<th colspan='4'>a</th><th colspan='4'>b</th><th colspan='4'>p (A − B)</th>" in table
    assert "<th scope='row'>doctime</th><td>0.667</td>" in table and "<td>0.250</td>" in table
    assert "<td class='p'>1.0000</td>" in table


def test_groups():
    assert groups_by_folder(GOLD)["discont"] == "radiology"
    assert groups_by_folder(PRED) == {}
    assert groups_by_pattern(["NCT1_inc", "NCT1_exc", "x"], r"_(inc|exc)$") == {"NCT1_inc": "inc", "NCT1_exc": "exc"}
    assert groups_by_pattern(["ab12"], r"[a-z]+") == {"ab12": "ab"}


def test_without_text(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--gold", GOLD, "--pred", PRED, "--out", str(out)]) == 0
    d = embedded(out.read_text(encoding="utf-8"))
    assert d["has_text"] is False and d["notes"][0]["t"] is None
    assert d["systems"][0]["strings"] == {}
    assert "no note text" in capsys.readouterr().err


def test_help_and_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "PHI" in capsys.readouterr().out
    assert main(["report", "--gold", GOLD, "--pred", PRED, "--out", str(tmp_path / "r.html"), "--group", "("]) == 2
    assert "--group '(' is not a regular expression" in capsys.readouterr().err
    assert main(["report", "--gold", GOLD, "--pred", PRED, "--vs", PRED, "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()
    assert main(["report", "--gold", GOLD, "--pred", PRED, "--out", str(tmp_path / "new" / "r.html")]) == 0
    assert (tmp_path / "new" / "r.html").is_file()  # its folder is created, as every command's output folder
    (tmp_path / "blocker").write_text("")
    capsys.readouterr()
    assert main(["report", "--gold", GOLD, "--pred", PRED, "--out", str(tmp_path / "blocker" / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "blocker" in err


# ---- the page in a real browser ---------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(page: Path, fragment: str, tmp_path: Path) -> str:
    profile = tmp_path / f"profile-{abs(hash(fragment))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--virtual-time-budget=3000", "--dump-dom", f"{page.as_uri()}#{fragment}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_rendered_in_chromium(page, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")

    dom = dump_dom(path, "summary", tmp_path)
    assert 'data-ready="summary"' in dom
    # the frequent-strings tables are drawn by the script
    fp = re.search(r'<table class="list" data-kind="false_positive">(.*?)</table>', dom, re.S).group(1)
    assert re.findall(r'<td><a class="note" [^>]*>([a-z]+)</a></td>', fp) == ["chills", "fever"]

    dom = dump_dom(path, "errors?kind=boundary", tmp_path)
    assert 'id="error-count" data-count="3"' in dom
    assert dom.count('<tr class="err">') == 3
    tabs = dict(re.findall(r'data-kind="([a-z_]+)" data-count="(\d+)"', dom))
    assert tabs == {"false_positive": "2", "false_negative": "2", "boundary": "3", "discontiguous": "6",
                    "wrong_cui": "1", "cui_for_cui_less": "1", "cui_less_for_cui": "1"}

    dom = dump_dom(path, "errors?kind=discontiguous&detail=split", tmp_path)
    assert 'id="error-count" data-count="1"' in dom and "knee is swollen" in dom
    # a frequent string links to its errors; "left … atrium"-style strings survive the URL
    dom = dump_dom(path, "summary", tmp_path)
    assert 'href="#errors?kind=discontiguous&amp;str=ascending+aorta+%E2%80%A6+enlarged&amp;sys=0"' in dom
    dom = dump_dom(path, "errors?kind=discontiguous&str=ascending+aorta+%E2%80%A6+enlarged", tmp_path)
    assert 'id="error-count" data-count="1"' in dom
    dom = dump_dom(path, "errors?kind=false_positive&str=chills", tmp_path)
    assert 'id="error-count" data-count="1"' in dom

    dom = dump_dom(path, "errors?kind=false_negative&sys=1", tmp_path)
    assert 'id="error-count" data-count="9"' in dom

    dom = dump_dom(path, "notes", tmp_path)
    assert 'id="note-count" data-count="7"' in dom and dom.count('class="noterow"') == 7
    dom = dump_dom(path, "notes?errors=1", tmp_path)
    # every note but "exact" has an error
    assert 'id="note-count" data-count="6"' in dom
    assert 'data-id="exact"' not in dom and 'data-id="discont"' in dom

    dom = dump_dom(path, "note?id=discont", tmp_path)
    assert '<h2 id="note-title">discont</h2>' in dom
    kinds = re.findall(r'<tr class="mrow" data-kind="([a-z_]+)">', dom)
    assert sorted(kinds) == ["correct", "discontiguous", "discontiguous", "discontiguous"]
    # four two-fragment gold mentions and two two-fragment predictions: six arcs join fragments
    assert 'data-arcs="6"' in dom
    # "Left atrium": gold in error and predicted in error, one segment
    assert '<span class="seg g gx p px" data-m="g0 p0">Left atrium</span>' in dom

    # hovering "dilated" outlines both fragments of its gold mention and tells its CUI and error
    hover = path.with_name("hover.html")
    hover.write_text(page.replace("</body>", "<script>document.querySelector('span.seg[data-m=\"g0\"]')"
                                  ".dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));</script></body>"),
                     encoding="utf-8")
    dom = dump_dom(hover, "note?id=discont", tmp_path)
    assert re.findall(r'<span class="seg [^"]*hl" data-m="([^"]+)">', dom) == ["g0 p0", "g0"]
    tip = re.search(r'<div id="tip"[^>]*>(.*?)</div>', dom, re.S).group(1)
    assert "gold: Left atrium … dilated  [0-11;15-22]  CUI-less" in tip
    assert "discontiguous mistake: fragment missing" in tip


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_long_lists_are_drawn_a_page_at_a_time(tmp_path):
    # 250 notes, each with one false positive: 100 rows a page, three pages
    ids = [f"n{k:03d}" for k in range(250)]
    gold = {d: [] for d in ids}
    pred = {d: [Mention(d, ((0, 5),))] for d in ids}
    path = tmp_path / "long.html"
    path.write_text(render_html(report_data(gold, {"sys": pred}, dict.fromkeys(ids, "fever"))), encoding="utf-8")
    dom = dump_dom(path, "errors?kind=false_positive", tmp_path)
    assert 'id="error-count" data-count="250"' in dom and dom.count('<tr class="err">') == 100
    assert "page 1 of 3" in dom
    dom = dump_dom(path, "notes?errors=1&page=2", tmp_path)
    assert 'id="note-count" data-count="250"' in dom and dom.count('class="noterow"') == 50
    assert 'data-id="n200"' in dom and 'data-id="n199"' not in dom
