"""``t2s report``: one run as one self-contained HTML file, readable offline.

Everything is inline: the style, the charts (SVG drawn here, not by a script library) and a few
lines of script that filter the item table. Opening the file makes no network request. The
sections: every family's means with their intervals, EX by difficulty band, the diagnosis
histogram with example items, the comparison with a baseline (a forest plot of paired deltas,
the items that regressed and improved) and one row per item with both SQL texts, the findings
and the first rows each side returned.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.export import export_frame
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.scoring.compare import Comparison, Regression
from t2s_pipeline.scoring.stats import Mean
from t2s_pipeline.scoring.summary import RunSummary
from t2s_pipeline.store import ResultsStore

REPORT_FILE = "report.html"
PREVIEW_ROWS = 5
EXAMPLES_PER_CATEGORY = 3
CHANGES_SHOWN = 200


@dataclass(frozen=True)
class ReportInputs:
    """What a report shows: the run, its comparison (if any) and the case set it ran on."""

    store: ResultsStore
    run_id: str
    comparison: Comparison | None = None
    compared_by: str = ""
    """Why this comparison (``--compare``, ``baseline: compare_to: ...``), shown above it."""
    case_set: CaseSet | None = None
    notes: tuple[str, ...] = ()


def report_path(store: ResultsStore, run_id: str) -> Path:
    """Where a run's own report is kept: in its folder of the store, written by its compare
    stage (against its baseline) and replaced when the run is compared again."""
    return store.run_dir(run_id) / REPORT_FILE


def build_report(inputs: ReportInputs) -> str:
    """The report as one HTML document."""
    store, run_id = inputs.store, inputs.run_id
    summary = summarise_run(store, run_id)
    items = export_frame(store, run_id, inputs.case_set)
    previews = _previews(store, run_id)
    run = store.read("runs", run_id)
    config = str(run["config_name"].iloc[0]) if not run.empty else "unknown"
    sections = [
        _header(summary, config, inputs.notes),
        _families(summary),
        _bands(summary),
        _diagnoses(summary, items),
        _comparison(inputs.comparison, inputs.compared_by),
        _items(items, previews),
    ]
    title = f"t2s report: {run_id}"
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        + "".join(sections)
        + f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_report(inputs: ReportInputs, out: Path) -> Path:
    """Write the report to ``out`` atomically (a reader never sees half a file)."""
    text = build_report(inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp's 0600 would hide it from a web server
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return out


# --- sections ---------------------------------------------------------------------------------


def _header(summary: RunSummary, config: str, notes: Sequence[str]) -> str:
    ex = summary.families.get("exact", {}).get("ex")
    failed = summary.ceilings.get("gold_failed", 0)
    headline = (
        "" if ex is None else f"<p class='headline'>EX {_e(ex.of(summary.n_items, failed))}</p>"
    )
    ex_ts = summary.families.get("exact", {}).get("ex_ts")
    if ex_ts is not None and ex_ts.n:
        headline += f"<p class='headline'>EX on the test suite (ex_ts) {_e(str(ex_ts))}</p>"
    raised = ", ".join(f"{k} {v}" for k, v in sorted(summary.ceilings.items()) if v) or "none"
    shown = "".join(f"<p class='note'>{_e(note)}</p>" for note in notes)
    return (
        f"<header><h1>Run <code>{_e(summary.run_id)}</code></h1>"
        f"<p>configuration <b>{_e(config)}</b> · {summary.n_items} items over "
        f"{summary.n_cases} cases · robustness across phrasings {_e(str(summary.robustness))}</p>"
        f"{headline}<p>ceilings (counted, never corrected): {_e(raised)}</p>{shown}</header>"
    )


def _families(summary: RunSummary) -> str:
    parts = ["<section id='families'><h2>Families</h2><p>Each mean with its 95% interval and n; "
             "families are never folded into one score; an undefined mean is neither 0 nor 1."
             "</p>"]  # fmt: skip
    for family, metrics in summary.families.items():
        rows = [(metric, mean) for metric, mean in metrics.items()]
        parts.append(f"<h3>{_e(family)}</h3>")
        parts.append(_interval_chart(f"family-{family}", rows))
    parts.append("</section>")
    return "".join(parts)


def _bands(summary: RunSummary) -> str:
    rows = list(summary.ex_by_difficulty.items())
    return (
        "<section id='bands'><h2>EX by difficulty</h2>"
        + _interval_chart("ex-by-band", rows)
        + "</section>"
    )


def _diagnoses(summary: RunSummary, items: pd.DataFrame) -> str:
    histogram = summary.diagnoses.get("all", {})
    if not histogram:
        return "<section id='diagnoses'><h2>Diagnosis</h2><p>No diagnosis stored.</p></section>"
    ordered = sorted(histogram.items(), key=lambda kv: (-kv[1], kv[0]))
    total = max(1, sum(histogram.values()))
    width, label_w, bar_w, row_h = 760, 210, 430, 24
    height = row_h * len(ordered) + 10
    marks = []
    for i, (category, count) in enumerate(ordered):
        y = 5 + i * row_h
        w = max(1.0, bar_w * count / max(c for _, c in ordered))
        marks.append(
            f"<text x='{label_w - 8}' y='{y + 16}' text-anchor='end'>{_e(category)}</text>"
            f"<rect class='mark bar' data-category='{_e(category)}' data-count='{count}' "
            f"x='{label_w}' y='{y + 3}' width='{w:.1f}' height='{row_h - 8}'/>"
            f"<text x='{label_w + w + 6:.1f}' y='{y + 16}'>{count} "
            f"({100 * count / total:.0f}%)</text>"
        )
    chart = _svg("diagnosis-histogram", width, height, "".join(marks))
    examples = []
    for category, count in ordered:
        ids = items.loc[items["diagnosis"] == category, "item_id"].astype(str).tolist()
        shown = ", ".join(
            f"<a href='#item-{_anchor(i)}'>{_e(i)}</a>" for i in ids[:EXAMPLES_PER_CATEGORY]
        )
        more = f" and {len(ids) - EXAMPLES_PER_CATEGORY} more" if len(ids) > 3 else ""
        examples.append(f"<tr><td>{_e(category)}</td><td>{count}</td><td>{shown}{more}</td></tr>")
    table = (
        "<table class='examples'><thead><tr><th>category</th><th>items</th><th>examples</th>"
        "</tr></thead><tbody>" + "".join(examples) + "</tbody></table>"
    )
    return f"<section id='diagnoses'><h2>Diagnosis (all bands)</h2>{chart}{table}</section>"


def _comparison(comparison: Comparison | None, compared_by: str) -> str:
    head = "<section id='comparison'><h2>Comparison</h2>"
    if comparison is None:
        why = compared_by or "this run has no baseline (SPEC 13)"
        return f"{head}<p>Not compared: {_e(why)}.</p></section>"
    deltas = [
        (f"{d.family} / {d.metric}", d.delta) for d in comparison.deltas if d.delta.mean is not None
    ]
    undefined = [f"{d.family}/{d.metric}" for d in comparison.deltas if d.delta.mean is None]
    intro = (
        f"<p><code>{_e(comparison.run_b)}</code> against <code>{_e(comparison.run_a)}</code> "
        f"({_e(compared_by)}) over {comparison.n_shared} shared items: the paired delta "
        "B &minus; A of each metric with its 95% interval.</p>"
    )
    plot = _interval_chart("forest-plot", deltas, centre=0.0, signed=True)
    note = (
        f"<p class='note'>No paired delta (no item defined in both): {_e(', '.join(undefined))}</p>"
        if undefined
        else ""
    )
    return (
        head
        + intro
        + plot
        + note
        + _changes("regressions", "Regressed items", comparison.regressions)
        + _changes("improvements", "Improved items", comparison.improvements)
        + "</section>"
    )


def _changes(kind: str, title: str, changes: Sequence[Regression]) -> str:
    """One row per item, its changed figures largest first (the items moved most first)."""
    if not changes:
        return f"<h3>{title}</h3><p id='{kind}-none'>none</p>"
    by_item: dict[str, list[Regression]] = {}
    for change in sorted(changes, key=lambda c: -c.size):
        by_item.setdefault(change.item_id, []).append(change)
    ordered = list(by_item.items())
    rows = "".join(
        f"<tr><td><a href='#item-{_anchor(item_id)}'>{_e(item_id)}</a></td><td>"
        + "<br>".join(_e(c.movement()) for c in moved)
        + "</td></tr>"
        for item_id, moved in ordered[:CHANGES_SHOWN]
    )
    more = (
        f"<p class='note'>{len(ordered) - CHANGES_SHOWN} more items not shown</p>"
        if len(ordered) > CHANGES_SHOWN
        else ""
    )
    return (
        f"<h3>{title}: {len(ordered)} items</h3><table id='{kind}'><thead><tr><th>item</th>"
        f"<th>figures (before &rarr; after)</th></tr></thead><tbody>{rows}</tbody></table>{more}"
    )


def _items(items: pd.DataFrame, previews: dict[tuple[str, str], str]) -> str:
    rows = []
    for item in items.to_dict("records"):
        item_id, case_id = str(item["item_id"]), str(item["case_id"])
        ex = item["ex"]
        state = "undefined" if ex is None or pd.isna(ex) else ("pass" if ex else "fail")
        findings = "".join(f"<li>{_e(f)}</li>" for f in item["findings"]) or "<li>none</li>"
        search = " ".join(
            str(item.get(k) or "") for k in ("item_id", "question", "diagnosis", "difficulty")
        ).lower()
        rows.append(
            f"<tr class='item {state}' id='item-{_anchor(item_id)}' data-ex='{state}' "
            f"data-search='{_e(search)}'>"
            f"<td><b>{_e(item_id)}</b><br><span class='small'>{_e(item['difficulty'])}</span>"
            f"</td><td>{_e(item['question'])}</td><td class='ex'>{state}</td>"
            f"<td>{_e(item['diagnosis'] or '')}<ul>{findings}</ul></td>"
            f"<td><details><summary>SQL and rows</summary>"
            f"<p>gold ({_e(_status(previews, 'gold', case_id))})</p>"
            f"<pre>{_e(item['gold_sql'] or '(not available)')}</pre>"
            f"{previews.get(('gold', case_id), '')}"
            f"<p>candidate ({_e(item['candidate_status'] or item['sut_status'] or '')})</p>"
            f"<pre>{_e(item['candidate_sql'] or '(no SQL)')}</pre>"
            f"{previews.get(('candidate', item_id), '')}</details></td></tr>"
        )
    return (
        "<section id='items'><h2>Items</h2><div class='controls'>"
        "<input id='item-filter' type='search' placeholder='filter by id, question, diagnosis'>"
        "<label><input id='failing-only' type='checkbox'> failing only</label>"
        f"<span id='item-count'>{len(rows)} of {len(rows)} items</span></div>"
        "<table id='item-table'><thead><tr><th>item</th><th>question</th><th>EX</th>"
        "<th>diagnosis and findings</th><th>gold vs candidate</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


# --- pieces -----------------------------------------------------------------------------------


def _interval_chart(
    name: str, rows: Sequence[tuple[str, Mean]], centre: float | None = None, signed: bool = False
) -> str:
    """A dot per mean and a line for its interval, on one axis; undefined rows say so."""
    if not rows:
        return "<p>nothing to show</p>"
    values = [v for _, m in rows for v in (m.mean, *(m.ci or ())) if v is not None]
    low = min([-1.0 if signed else 0.0, *values])
    high = max([1.0, *values])
    width, label_w, plot_w, row_h = 1000, 250, 420, 22
    height = row_h * len(rows) + 30

    def x(value: float) -> float:
        return label_w + plot_w * (value - low) / (high - low)

    axis_y = height - 20
    marks = [
        f"<line class='axis' x1='{label_w}' x2='{label_w + plot_w}' y1='{axis_y}' y2='{axis_y}'/>",
        *(
            f"<text class='tick' x='{x(t):.1f}' y='{axis_y + 14}' text-anchor='middle'>{t:g}</text>"
            for t in _ticks(low, high)
        ),
    ]
    if centre is not None:
        marks.append(
            f"<line class='zero' x1='{x(centre):.1f}' x2='{x(centre):.1f}' y1='0' y2='{axis_y}'/>"
        )
    for i, (label, mean) in enumerate(rows):
        y = 6 + i * row_h + row_h / 2
        marks.append(
            f"<text x='{label_w - 8}' y='{y + 4:.1f}' text-anchor='end'>{_e(label)}</text>"
        )
        if mean.mean is None:
            marks.append(
                f"<text class='undefined' x='{label_w + 4}' y='{y + 4:.1f}'>undefined "
                f"(n={mean.n})</text>"
            )
            continue
        if mean.ci is not None:
            marks.append(
                f"<line class='interval' x1='{x(mean.ci[0]):.1f}' x2='{x(mean.ci[1]):.1f}' "
                f"y1='{y:.1f}' y2='{y:.1f}'/>"
            )
        tone = "" if not signed else (" up" if mean.mean > 0 else " down" if mean.mean < 0 else "")
        ci = "" if mean.ci is None else f" [{mean.ci[0]:.3f}, {mean.ci[1]:.3f}]"
        shown = f"{mean.mean:+.3f}" if signed else f"{mean.mean:.3f}"
        marks.append(
            f"<circle class='mark dot{tone}' data-label='{_e(label)}' data-mean='{mean.mean:.6f}' "
            f"cx='{x(mean.mean):.1f}' cy='{y:.1f}' r='5'><title>{_e(label)}: "
            f"{shown}{ci} n={mean.n}</title></circle>"
            f"<text class='value' x='{label_w + plot_w + 12}' y='{y + 4:.1f}'>"
            f"{shown}{ci} n={mean.n}</text>"
        )
    return _svg(name, width, height, "".join(marks))


def _ticks(low: float, high: float) -> Iterable[float]:
    step = 0.25 if high - low <= 2 else max(1.0, round((high - low) / 4))
    value = step * int(low / step)
    while value <= high + 1e-9:
        yield round(value, 6)
        value += step


def _svg(name: str, width: int, height: int, body: str) -> str:
    return (
        f"<svg class='chart' id='{_e(name)}' role='img' viewBox='0 0 {width} {height}' "
        f"width='{width}' height='{height}' xmlns='http://www.w3.org/2000/svg'>{body}</svg>"
    )


def _previews(store: ResultsStore, run_id: str) -> dict[tuple[str, str], str]:
    """Each stored result's first rows as a small HTML table, by (side, key)."""
    out: dict[tuple[str, str], str] = {}
    for side, table in (("gold", "gold_results"), ("candidate", "candidate_results")):
        stored = store.read(table, run_id)
        for row in stored.to_dict("records") if not stored.empty else []:
            key = str(row["key"])
            out[(side, "status:" + key)] = " ".join(
                str(v) for v in (row.get("status"), row.get("reason")) if _present(v)
            )
            out[(side, key)] = _preview_table(row)
    return out


def _preview_table(row: dict[str, object]) -> str:
    try:
        columns = json.loads(str(row.get("columns_json") or "[]"))
        rows = json.loads(str(row.get("preview_json") or "[]"))
    except json.JSONDecodeError:
        return ""
    if not columns and not rows:
        return ""
    n_rows = row.get("n_rows")
    head = "".join(f"<th>{_e(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(_cell(v))}</td>" for v in r) + "</tr>"
        for r in rows[:PREVIEW_ROWS]
        if isinstance(r, list)
    )
    total = f"{n_rows} row(s)" if _present(n_rows) else ""
    return (
        f"<table class='preview'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"<p class='small'>{_e(total)}{', first ' + str(PREVIEW_ROWS) if rows else ''}</p>"
    )


def _status(previews: dict[tuple[str, str], str], side: str, key: str) -> str:
    return previews.get((side, "status:" + key), "")


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value)


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and pd.isna(value))


def _anchor(item_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in item_id)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;color:#1d2330}
h1{font-size:22px}h2{border-bottom:1px solid #d5d9e0;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:18px 0 4px}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f4f6f9;padding:6px;white-space:pre-wrap;margin:2px 0}
.headline{font-size:18px;font-weight:600}.note,.small{color:#5a6270;font-size:12px}
svg.chart text{font-size:12px;fill:#1d2330}svg.chart .tick{fill:#5a6270;font-size:11px}
.axis{stroke:#9aa1ad}.zero{stroke:#c0392b;stroke-dasharray:4 3}
.interval{stroke:#4a6fa5;stroke-width:3}.dot{fill:#1f3b73}.dot.up{fill:#1e8449}
.dot.down{fill:#c0392b}.bar{fill:#4a6fa5}.undefined{fill:#8a8f99;font-style:italic}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #dde1e7;padding:3px 6px;
vertical-align:top;text-align:left}thead th{background:#eef1f5}
#item-table td:nth-child(2){max-width:280px}tr.fail td.ex{color:#c0392b;font-weight:600}
tr.pass td.ex{color:#1e8449}table.preview{font-size:12px}ul{margin:2px 0;padding-left:18px}
.controls{display:flex;gap:16px;align-items:center;margin:8px 0}#item-filter{width:320px}
"""

_SCRIPT = """
(function(){
  var input=document.getElementById('item-filter'),
      failing=document.getElementById('failing-only'),
      count=document.getElementById('item-count'),
      rows=Array.prototype.slice.call(document.querySelectorAll('#item-table tr.item'));
  function apply(){
    var text=input.value.trim().toLowerCase(), shown=0;
    rows.forEach(function(row){
      var ok=(!text||row.dataset.search.indexOf(text)>=0)&&
             (!failing.checked||row.dataset.ex==='fail');
      row.style.display=ok?'':'none'; if(ok){shown++;}
    });
    count.textContent=shown+' of '+rows.length+' items';
  }
  input.addEventListener('input',apply); failing.addEventListener('change',apply);
})();
"""
