"""The error-analysis report: one self-contained HTML file (``share-ner report``).

:func:`report_data` gathers what the page shows (scores, significance, errors by kind, each note's text and
mentions) as a JSON-ready dict; :func:`render_html` writes the page: the summary tables and the charts (inline
SVG) as static HTML, the error lists and the note views drawn in the browser, page by page, from the data embedded
as compact JSON, so a run of 10,000 notes stays usable. The page loads nothing: no network, no fonts, no images,
and a Content-Security-Policy that forbids any fetch. It holds note text, so it says so on its first screen.
"""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from share_ner import __version__
from share_ner.document import ATTRIBUTE_NAMES, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.eval import attributes as task2
from share_ner.eval.counting import METRICS, N_GOLD, N_PRED
from share_ner.eval.errors import ERROR_KINDS, KIND_LABELS, classify_corpus, frequent_strings
from share_ner.eval.scoring import Scores, score
from share_ner.eval.significance import approximate_randomization
from share_ner.formats import annotation_files, format_of
from share_ner.io import atomic_write_text, doc_id_from_path

PHI_NOTICE = (
    "This report contains the full text of the notes it was made from. Clinical notes carry protected health "
    "information (PHI): keep this file where the notes themselves may be kept, and share it only with whoever may "
    "read them. It loads nothing from the network and sends nothing."
)
NO_GROUP = "(all notes)"
# Groups shown in the F1 chart at most (the largest by number of notes); the note list filters by any group.
_MAX_CHART_GROUPS = 30
_SYSTEM_COLORS = ("#2b6cb0", "#c05621")


def _asset(name: str) -> str:
    return files("share_ner").joinpath("data", "report", name).read_text(encoding="utf-8")


def groups_by_folder(gold_path: str | Path) -> dict[str, str]:
    """Note id -> the folder of its per-note annotation file (``.pipe.txt``, ``.ann``) under ``gold_path``.

    Notes directly in ``gold_path``, in a JSON Lines file, or read from a single gold file have no group.
    """
    root = Path(gold_path)
    if not root.is_dir():
        return {}
    out: dict[str, str] = {}
    for p in annotation_files(root):
        folder = p.relative_to(root).parent.as_posix()
        if folder != "." and format_of(p) != "jsonl":
            out[doc_id_from_path(p)] = folder
    return out


def groups_by_pattern(doc_ids: Sequence[str], pattern: str) -> dict[str, str]:
    """Note id -> the first group of ``pattern`` searched in the id (the whole match when it has no group)."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ShareNerError(f"--group {pattern!r} is not a regular expression: {exc}") from None
    out = {}
    for d in doc_ids:
        m = rx.search(d)
        if m:
            out[d] = m.group(1) if rx.groups else m.group(0)
    return out


def _utf16_offsets(text: str) -> list[int] | None:
    """Code point -> UTF-16 offset (JavaScript counts UTF-16 units), or None when the text has no astral chars."""
    if all(ord(c) < 0x10000 for c in text):
        return None
    out = [0]
    for c in text:
        out.append(out[-1] + (2 if ord(c) >= 0x10000 else 1))
    return out


def _mention(m: Mention, to16: list[int] | None) -> list[Any]:
    flat = [x for sp in m.spans for x in sp]
    if to16 is not None:
        flat = [to16[x] if x < len(to16) else x for x in flat]
    out: list[Any] = [flat, m.cui]
    if m.attributes is not None or m.name:
        out.append(None if m.attributes is None else m.attributes.non_default())
    if m.name:
        out.append(m.name)  # the concept's preferred name, shown beside the CUI
    return out


def _group_f1(scores: Scores, groups: Mapping[str, str], names: Sequence[str]) -> dict[str, dict[str, float]]:
    index = {g: k for k, g in enumerate(names)}
    rows = np.array([index[groups.get(d, NO_GROUP)] for d in scores.counts.doc_ids], dtype=int)
    out = {}
    for g, k in index.items():
        t = scores.counts.table[rows == k].sum(axis=0)
        out[g] = {
            "strict_f1": float(METRICS["strict_f1"](t)),
            "relaxed_f1": float(METRICS["relaxed_f1"](t)),
            "n_notes": int((rows == k).sum()),
            "n_gold": int(t[N_GOLD]),
            "n_pred": int(t[N_PRED]),
        }
    return out


def report_data(
    gold: Mapping[str, Sequence[Mention]],
    systems: Mapping[str, Mapping[str, Sequence[Mention]]],
    texts: Mapping[str, str] | None = None,
    groups: Mapping[str, str] | None = None,
    *,
    n_shuffles: int = 10_000,
    seed: int | None = 0,
    allow_extra: bool = False,
    top_strings: int = 20,
    title: str = "share-ner error analysis",
) -> dict[str, Any]:
    """Everything the page shows, JSON-ready. ``systems``: one or two (name -> predictions); with two, each
    metric's difference is tested by approximate randomization over notes. When gold mentions carry attributes,
    each system has the Task 2a scores of :mod:`share_ner.eval.attributes` (as ``share-ner evaluate``), else None."""
    if not 1 <= len(systems) <= 2:
        raise ShareNerError(f"a report shows one or two systems, not {len(systems)}")
    groups = dict(groups or {})
    names = list(systems)
    scored = {n: score(gold, p, allow_extra=allow_extra) for n, p in systems.items()}
    with_attributes = task2.has_attributes(gold)
    summaries = {n: classify_corpus(gold, p, allow_extra=allow_extra) for n, p in systems.items()}
    doc_ids = scored[names[0]].counts.doc_ids
    present = {groups.get(d, NO_GROUP) for d in doc_ids}
    group_names = sorted(present - {NO_GROUP}) + ([NO_GROUP] if NO_GROUP in present else [])
    group_index = {g: k for k, g in enumerate(group_names)}

    sys_out = []
    for n in names:
        sc, summ = scored[n], summaries[n]
        sys_out.append({
            "name": n,
            "scores": sc.to_dict(),
            "n_correct_cui": sc.n_correct_cui,
            "missing": list(sc.missing),
            "extra": list(sc.extra),
            "kinds": summ.by_kind(),
            "details": {k: summ.by_detail(k) for k in ("boundary", "discontiguous")},
            "strings": frequent_strings(summ, texts, top=top_strings) if texts is not None else {},
            "attributes": task2.score_attributes(gold, systems[n]).to_dict() if with_attributes else None,
            "n_correct": summ.n_correct,
            "relaxed_gap": summ.relaxed_gap,
            "by_group": _group_f1(sc, groups, group_names),
        })
    significance = None
    if len(names) == 2:
        a, b = (scored[n].counts.table for n in names)
        comparisons = approximate_randomization(a, b, n_shuffles=n_shuffles, seed=seed)
        if with_attributes:
            comparisons.update(task2.compare_attributes(gold, *systems.values(), n_shuffles=n_shuffles, seed=seed))
        significance = {m: c.to_dict() for m, c in comparisons.items()}

    notes = []
    per_sys = [{ne.doc_id: ne for ne in summaries[n].notes} for n in names]
    for d in doc_ids:
        text = texts.get(d) if texts is not None else None
        to16 = _utf16_offsets(text) if text is not None else None
        first = per_sys[0][d]
        note: dict[str, Any] = {
            "id": d,
            "g": group_index[groups.get(d, NO_GROUP)],
            "t": text,
            "gold": [_mention(m, to16) for m in first.gold],
            "pred": [[_mention(m, to16) for m in ps[d].pred] for ps in per_sys],
            # per system: [kind index, gold index or -1, pred index or -1, detail]
            "err": [[[ERROR_KINDS.index(e.kind), -1 if e.gold is None else e.gold, -1 if e.pred is None else e.pred,
                      e.detail] for e in ps[d].errors] for ps in per_sys],
            "ok": [[list(p) for p in ps[d].correct] for ps in per_sys],
        }
        notes.append(note)
    return {
        "title": title,
        "version": __version__,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "systems": sys_out,
        "significance": significance,
        "shuffles": n_shuffles,
        "seed": seed,
        "kinds": [[k, KIND_LABELS[k]] for k in ERROR_KINDS],
        "groups": group_names,
        "has_text": texts is not None,
        "notes": notes,
    }


# ---- static HTML: the summary tables and the charts -------------------------------------------------------------

def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _f(x: float) -> str:
    return f"{x:.3f}"


def _scores_table(data: Mapping[str, Any]) -> str:
    systems = data["systems"]
    sig = data["significance"]
    head = "".join(f"<th>{_e(s['name'])}</th>" for s in systems)
    if sig:
        head += "<th>A − B</th><th>p</th>"
    rows = []

    def row(label: str, values: list[str], metric: str | None = None, cls: str = "") -> None:
        cells = "".join(f"<td>{v}</td>" for v in values)
        if sig:
            if metric and metric in sig:
                c = sig[metric]
                cells += f"<td>{c['diff']:+.3f}</td><td class='p'>{c['p_value']:.4f}</td>"
            else:
                cells += "<td></td><td></td>"
        rows.append(f"<tr class='{cls}'><th scope='row'>{label}</th>{cells}</tr>")

    for level in ("strict", "relaxed"):
        for key, label in (("precision", "P"), ("recall", "R"), ("f1", "F1")):
            metric = f"{level}_f1" if key == "f1" else None
            row(f"{level} {label}", [_f(s["scores"][level][key]) for s in systems], metric,
                "key" if key == "f1" else "")
        row(f"{level} TP / FP / FN",
            [f"{s['scores'][level]['tp']} / {s['scores'][level]['fp']} / {s['scores'][level]['fn']}"
             for s in systems], None, "counts")
    for level in ("strict", "relaxed"):
        row(f"{level} accuracy", [_f(s["scores"]["accuracy"][level]) for s in systems], f"{level}_accuracy", "key")
    row("correct CUIs", [str(s["n_correct_cui"]) for s in systems], None, "counts")
    row("gold / predicted mentions", [f"{s['scores']['n_gold']} / {s['scores']['n_pred']}" for s in systems],
        None, "counts")
    note = ""
    if sig:
        note = (f"<p class='small'>A = {_e(systems[0]['name'])}, B = {_e(systems[1]['name'])}. p: approximate "
                f"randomization over notes, {data['shuffles']} shuffles (seed {data['seed']}); "
                f"p = (c + 1) / (N + 1).</p>")
    return (f"<table class='scores' id='scores'><thead><tr><th></th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{note}")


def _attributes_table(data: Mapping[str, Any]) -> str:
    """Task 2a, as ``share-ner evaluate`` scores it: per attribute accuracy, and P/R/F1 of its values other than
    the default; with two systems, each metric's p-value."""
    systems = data["systems"]
    if systems[0]["attributes"] is None:
        return ("<p class='small' id='attributes-none'>Attributes (Task 2a): the gold mentions carry none "
                "(negation, subject, DocTime …); their scores are shown here when they do.</p>")
    sig = data["significance"]
    keys = ("accuracy", "precision", "recall", "f1")
    labels = ("accuracy", "P", "R", "F1")
    top = "".join(f"<th colspan='4'>{_e(s['name'])}</th>" for s in systems)
    sub = "".join(f"<th>{k}</th>" for _ in systems for k in labels)
    if sig:
        top += "<th colspan='4'>p (A − B)</th>"
        sub += "".join(f"<th>{k}</th>" for k in labels)
    rows = []
    for name in (*ATTRIBUTE_NAMES, "overall"):
        cells = []
        for s in systems:
            r = s["attributes"][name]
            cells.append(f"<td>{_f(r['accuracy'])}</td>")
            if name == "overall":
                cells.append("<td colspan='3'></td>")
                continue
            counts = (f"{r['tp']} agree of {r['gold_pos']} gold and {r['pred_pos']} predicted values other than "
                      f"the default")
            # a ratio over no values at all (0 / 0, scored 0) is shown as a dash
            defined = (r["pred_pos"], r["gold_pos"], r["gold_pos"] + r["pred_pos"])
            cells += [f"<td title='{_e(counts)}'>{_f(r[k]) if d else '–'}</td>" for k, d in zip(keys[1:], defined)]
        if sig:
            for k in keys:
                c = sig.get(f"attributes.{name}.{k}")
                cells.append(f"<td class='p'>{c['p_value']:.4f}</td>" if c else "<td></td>")
        rows.append(f"<tr class='{'key' if name == 'overall' else ''}'><th scope='row'>{_e(name)}</th>"
                    f"{''.join(cells)}</tr>")
    n = ", ".join(f"{_e(s['name'])} {s['attributes']['overall']['n']}" for s in systems)
    note = (f"<p class='small'>Over the gold mentions that carry attributes paired with a prediction of the same "
            f"spans ({n}); a prediction without attributes counts as the defaults. P/R/F1: the values other than "
            f"the default (hover a cell for its counts; – where there are none); overall: the mean of the nine accuracies. "
            f"Definitions: docs/attributes.md.</p>")
    return (f"<h3>Attributes (Task 2a)</h3><table class='scores' id='attributes'><thead><tr><th rowspan='2'></th>"
            f"{top}</tr><tr>{sub}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}")


def _bar_chart(title: str, labels: Sequence[str], series: Sequence[tuple[str, str, Sequence[float]]],
               fmt: str, vmax: float | None = None, chart_id: str = "") -> str:
    """A horizontal bar chart as inline SVG: one row per label, one bar per series."""
    label_w, bar_w, bar_h, gap = 210, 330, 14, 10
    n_series = len(series)
    row_h = n_series * bar_h + gap
    legend_top = 28 + row_h * len(labels) + 6
    height = legend_top + 16 * n_series + 4
    width = label_w + bar_w + 70
    top = max([vmax or 0.0] + [v for _, _, vals in series for v in vals]) or 1.0
    parts = [f"<svg class='chart' id='{chart_id}' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
             f"role='img' aria-label='{_e(title)}'>"]
    parts.append(f"<text x='0' y='16' class='ct'>{_e(title)}</text>")
    for r, label in enumerate(labels):
        y0 = 28 + r * row_h
        short = label if len(label) <= 32 else label[:31] + "…"
        parts.append(f"<text x='{label_w - 8}' y='{y0 + n_series * bar_h / 2 + 4}' text-anchor='end' class='cl'>"
                     f"<title>{_e(label)}</title>{_e(short)}</text>")
        for k, (_, color, vals) in enumerate(series):
            v = vals[r]
            w = bar_w * v / top
            y = y0 + k * bar_h
            parts.append(f"<rect x='{label_w}' y='{y}' width='{w:.1f}' height='{bar_h - 2}' fill='{color}'/>")
            parts.append(f"<text x='{label_w + w + 4:.1f}' y='{y + bar_h - 4}' class='cv'>{fmt.format(v)}</text>")
    for k, (name, color, _) in enumerate(series):
        y = legend_top + 16 * k
        parts.append(f"<rect x='{label_w}' y='{y}' width='10' height='10' fill='{color}'/>")
        parts.append(f"<text x='{label_w + 14}' y='{y + 9}' class='cl'>{_e(name)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _charts(data: Mapping[str, Any]) -> str:
    systems = data["systems"]
    groups = list(data["groups"])
    if len(groups) > _MAX_CHART_GROUPS:
        by_size = systems[0]["by_group"]
        groups = sorted(groups, key=lambda g: -by_size[g]["n_notes"])[:_MAX_CHART_GROUPS]
    shown = [f"{g} ({systems[0]['by_group'][g]['n_notes']})" for g in groups]
    series = []
    for k, s in enumerate(systems):
        color = _SYSTEM_COLORS[k]
        series.append((f"{s['name']} strict F1", color, [s["by_group"][g]["strict_f1"] for g in groups]))
        series.append((f"{s['name']} relaxed F1", color + "80", [s["by_group"][g]["relaxed_f1"] for g in groups]))
    what = "folder" if groups != [NO_GROUP] else "group (one: --group sets them)"
    f1 = _bar_chart(f"F1 by note {what} (number of notes)", shown, series, "{:.3f}", 1.0, "chart-groups")
    kinds = [k for k, _ in data["kinds"]]
    err_series = [(s["name"], _SYSTEM_COLORS[k], [s["kinds"][kind] for kind in kinds])
                  for k, s in enumerate(systems)]
    errs = _bar_chart("Errors by kind", [KIND_LABELS[k] for k in kinds], err_series, "{:.0f}", None,
                      "chart-kinds")
    return f"<div class='charts'>{f1}{errs}</div>"


def _details(data: Mapping[str, Any]) -> str:
    parts = []
    for s in data["systems"]:
        items = []
        for kind in ("boundary", "discontiguous"):
            d = s["details"][kind]
            if d:
                shown = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d.items())
                items.append(f"<li>{_e(KIND_LABELS[kind])}: {_e(shown)}</li>")
        if s["missing"]:
            items.append(f"<li>{len(s['missing'])} gold note(s) have no predictions (scored as predicting "
                         f"nothing)</li>")
        if s["extra"]:
            items.append(f"<li>{len(s['extra'])} predicted note(s) without gold were left out</li>")
        if s["relaxed_gap"]:
            items.append(f"<li>{s['relaxed_gap']} overlap(s) the relaxed score pairs are listed as a false "
                         f"positive and a false negative here (an exact pair came first)</li>")
        if items:
            parts.append(f"<p><b>{_e(s['name'])}</b></p><ul class='small'>{''.join(items)}</ul>")
    return "".join(parts)


def _json_for_script(data: Mapping[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    # inside <script>: no "</script" or "<!--" can close it; and "/" escaped, so no "://" of a URL appears either
    return text.replace("<", "\\u003c").replace("/", "\\/")


def render_html(data: Mapping[str, Any]) -> str:
    """The whole page: static summary, embedded data, inline CSS and JavaScript."""
    systems = data["systems"]
    n_notes = len(data["notes"])
    sub = (f"{n_notes} notes · gold {systems[0]['scores']['n_gold']} mentions · "
           + " · ".join(f"{_e(s['name'])}: {s['scores']['n_pred']} predicted" for s in systems)
           + f" · made {data['created']} by share-ner {data['version']}")
    if not data["has_text"]:
        sub += " · no note text (run with --text to see the notes)"
    csp = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
           "connect-src 'none'; form-action 'none'; base-uri 'none'")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(data['title'])}</title>
<style>
{_asset('report.css')}
</style>
</head>
<body>
<div class="phi" id="phi" role="note"><b>Contains note text (PHI).</b> {_e(PHI_NOTICE)}</div>
<header><h1>{_e(data['title'])}</h1><p class="small">{sub}</p>
<nav id="nav"><a href="#summary" data-view="summary">Summary</a><a href="#errors" data-view="errors">Errors by kind</a>
<a href="#notes" data-view="notes">Notes</a><span id="sys-pick"></span></nav></header>
<main>
<section id="view-summary" class="view">
<h2>Scores</h2>
{_scores_table(data)}
{_attributes_table(data)}
{_charts(data)}
{_details(data)}
<h2>Most frequent wrong strings</h2>
<div id="strings"></div>
</section>
<section id="view-errors" class="view" hidden><h2>Errors by kind</h2><div id="kind-tabs"></div>
<div id="error-list"></div></section>
<section id="view-notes" class="view" hidden><h2>Notes</h2><div id="note-controls"></div><div id="note-list"></div>
</section>
<section id="view-note" class="view" hidden><div id="note-view"></div></section>
</main>
<script type="application/json" id="report-data">{_json_for_script(data)}</script>
<script>
{_asset('report.js')}
</script>
</body>
</html>
"""


def write_report(path: str | Path, data: Mapping[str, Any]) -> int:
    """Write the page to ``path``; returns its size in bytes."""
    page = render_html(data)
    try:
        atomic_write_text(path, page)
    except OSError as exc:
        raise InputError(path, f"cannot write the report: {exc.strerror or exc}") from None
    return len(page.encode("utf-8"))


__all__ = [
    "NO_GROUP",
    "PHI_NOTICE",
    "groups_by_folder",
    "groups_by_pattern",
    "render_html",
    "report_data",
    "write_report",
]
