"""The self-contained HTML report: inline CSS, inline SVG plots, no network, every text escaped.

A Content-Security-Policy meta tag forbids every external load, so the page renders the same
offline and a hostile string in a transcript cannot pull anything in.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

import lens.report.documents.fmt as fmt
import lens.report.documents.layout as layout
import lens.report.documents.plots as plots
import lens.scoring.metrics as registry
from lens.models.base import Message
from lens.report.documents.document import e, html_table, to_html
from lens.report.foundations.data import QuestionRow
from lens.report.foundations.shapes import ReportSummary
from lens.report.sections.registry import Section
from lens.runs.records import BudgetOutcome, QuestionRecord
from lens.scoring.foundations.detail import QuestionDetail, read_detail, shown

MAX_TEXT = 4000

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;
max-width:1100px;padding:16px 24px;color:#1d2330;background:#fff}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f7}
.pass{color:#17693a;font-weight:600}.warn{color:#8a5a00;font-weight:600}
.fail{color:#b3261e;font-weight:600}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px}
.na{color:#555}.badge.na{background:#e8e8e8}.badge.pass{background:#d8f3e1}.badge.warn{background:#fdefc8}.badge.fail{background:#fbdad7}
.nc{background:#fbdad7;color:#b3261e;padding:4px 8px;font-weight:600}
.meta{color:#4a5263}.note{color:#4a5263;font-style:italic}
.plots{display:flex;flex-wrap:wrap;gap:12px}
svg.plot{border:1px solid #e3e6ec;background:#fff;max-width:100%;height:auto}
svg .ptitle{font-size:13px;font-weight:600}svg .tick,svg .legend{font-size:11px;fill:#333}
svg .axis{font-size:12px;fill:#333}svg .pnote{font-size:13px;fill:#777}
svg .grid{stroke:#eceef2}svg .whisker{stroke:#222;stroke-width:1.2}
svg .line{stroke-width:2}
details.q{border:1px solid #e3e6ec;margin:4px 0;padding:4px 8px;border-radius:4px}
details.q>summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;padding:6px;margin:4px 0}
.msg{border-left:3px solid #c5cad3;padding-left:8px;margin:6px 0}
.role{font-weight:600;color:#4a5263}.matched{color:#17693a}.missed{color:#b3261e}
#qfilter{width:320px;padding:4px}
"""

SCRIPT = """
(function(){
  var box=document.getElementById('qfilter');
  if(!box){return;}
  box.addEventListener('input',function(){
    var needle=box.value.toLowerCase();
    var items=document.querySelectorAll('details.q');
    var shown=0;
    for(var i=0;i<items.length;i++){
      var hit=items[i].getAttribute('data-search').indexOf(needle)>=0;
      items[i].style.display=hit?'':'none';
      if(hit){shown++;}
    }
    document.getElementById('qcount').textContent=shown+' shown';
  });
})();
"""


def _csp() -> str:
    # Only the report's own script may run (pinned by its hash): even if some text escaped
    # escaping, an injected <script> would be refused by the browser.
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
    return (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
            "img-src data:")


CSP = _csp()


def clip(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters in the run record]"


def tbl(head: Sequence[str], rows: Sequence[Sequence[str]], *, table_id: str = "") -> str:
    """A table of plain texts (escaped here)."""
    return html_table(head, rows, table_id)


def _checkpoint_series(s: ReportSummary) -> tuple[list[str], plots.Series]:
    """The checkpoints of every adapter in the order they come, and each adapter's estimate
    at each (None where it has none)."""
    adapters = list(s.adapters)
    cps: list[str] = []
    for a in adapters:
        cps += [p.label for p in s.adapters[a].by_checkpoint if p.label not in cps]
    lookup = {(a, p.label): p.estimate for a in adapters for p in s.adapters[a].by_checkpoint}
    return cps, [(a, [lookup.get((a, c)) for c in cps]) for a in adapters]


def _score_plots(s: ReportSummary, pm: str) -> list[str]:
    """The primary metric by question type, across checkpoints, against tokens and cost."""
    adapters = list(s.adapters)
    unit = registry.bounds(pm) == (0.0, 1.0)
    types = sorted({t for a in s.adapters.values() for t in a.by_type})
    return [
        plots.bar_chart(
            f"{pm} by question type (95% interval)", types,
            [(a, [s.adapters[a].by_type.get(t, {}).get(pm) for t in types]) for a in adapters],
            ylabel=pm, unit=unit),
        plots.line_chart(
            f"{pm} across checkpoints", *_checkpoint_series(s),
            ylabel=pm, xlabel="episodes ingested (checkpoint)", unit=unit),
        plots.scatter(
            f"{pm} against agent tokens per question",
            [(a, s.adapters[a].usage.agent_tokens_per_question.mean,
              s.adapters[a].metrics[pm]) for a in adapters],
            xlabel="agent tokens per question", ylabel=pm, unit=unit),
        plots.scatter(
            f"{pm} against cost per question",
            [(a, s.adapters[a].usage.cost_usd_per_question, s.adapters[a].metrics[pm])
             for a in adapters],
            xlabel="agent cost per question (USD)", ylabel=pm, unit=unit)]


def _plots(s: ReportSummary) -> list[str]:
    pm = s.primary_metric
    out = (_score_plots(s, pm) if pm else
           [plots.empty_plot("scores", "the run is not scored: no score plots")])
    j = s.judge
    if j.disagreement_rate is None:
        out.append(plots.empty_plot("judge agreement", "no position-swapped judge verdicts"))
    else:
        out.append(plots.bar_chart(
            "judge agreement under position swap (95% interval)", [j.model or "judge"],
            [("agreement", [j.agreement])], ylabel="agreement"))
    return out


def _metrics_rows(row: QuestionRow) -> list[list[str]]:
    if row.scores is None:
        return [["(not scored)", "unknown"]]
    return [[k, fmt.num(v)] for k, v in row.scores.metrics.items()]


def _block_class(key: str) -> str:
    """A detail block's colour, from its name: matched (or hit), missed, or none."""
    if "matched" in key or "hit" in key:
        return "matched"
    return "missed" if "missed" in key or "miss" in key else ""


def _block_html(key: str, value: Any) -> str:
    """One detail block: a list of plain values as a list, anything else as its JSON."""
    cls = _block_class(key)
    if isinstance(value, list) and all(v is None or isinstance(v, str | int | float)
                                       for v in value):
        items = "".join(f"<li>{e(v)}</li>" for v in value) or "<li><i>none</i></li>"
        return f'<div class="{cls}"><b>{e(key)}</b><ul>{items}</ul></div>'
    text = value if isinstance(value, str) else json.dumps(
        value, ensure_ascii=False, indent=1, default=_plain)
    return f'<div class="{cls}"><b>{e(key)}</b><pre>{e(clip(text))}</pre></div>'


def _detail_html(detail: QuestionDetail) -> str:
    return "".join(_block_html(key, value) for key, value in detail.blocks())


def _plain(value: Any) -> Any:
    """A typed block of the detail as JSON shows it: the fields it was given, its extra keys."""
    return shown(value) if isinstance(value, BaseModel) else str(value)


def question_html(row: QuestionRow, primary: str | None) -> str:
    r = row.record
    pv = fmt.num(row.metric(primary)) if primary else "not scored"
    head = (f"{r.adapter} · {r.scope_id} · {r.question_id} · r{r.repeat} · "
            f"{row.question_type} · checkpoint {r.checkpoint} · {r.status} · "
            f"{primary or 'score'} {pv}")
    search = " ".join([r.adapter, r.scope_id, r.question_id, row.question_type, r.status]).lower()
    return (f'<details class="q" data-search="{e(search)}"><summary>{e(head)}</summary>'
            f'{question_body(row)}</details>')


def question_body(row: QuestionRow, *, scores: bool = True) -> str:
    """A question's drill-down: metrics and their detail (unless ``scores`` is False, for a
    page that shows them its own way), the answer, refs, tool calls, budget, transcript."""
    r = row.record
    body = [tbl(["metric", "value"], _metrics_rows(row))] if scores else []
    if r.error:
        body.append(f'<p class="fail">error: {e(r.error)}</p>')
    body.append(_answers_html(r))
    body.append(_refs_html(r))
    # Read here, not through the cached ``details``: a page of every question would otherwise
    # keep every question's typed detail until the run is released.
    details = read_detail(row.scores.detail) if scores and row.scores else None
    if details:
        body.append("<h4>Gold facts and verdicts</h4>" + _detail_html(details))
    if r.tool_calls:
        body.append(_tool_calls_html(r))
    if r.budget:
        body.append(_budget_html(r.budget))
    if r.transcript:
        body.append("<h4>Transcript</h4>" + "".join(_message_html(m) for m in r.transcript))
    return "".join(body)


def _answers_html(r: QuestionRecord) -> str:
    """The answer, and the expected one where the record has it."""
    answer = f"<h4>Answer</h4><pre>{e(clip(r.answer)) or '<i>(empty)</i>'}</pre>"
    if r.expected_answer is None:
        return answer
    return (answer + "<h4>Expected answer</h4><pre class='expected'>"
            f"{e(clip(r.expected_answer)) or '<i>(empty)</i>'}</pre>")


def _refs_html(r: QuestionRecord) -> str:
    return (f"<p><b>cited refs:</b> {e(', '.join(r.cited_refs) or 'none')}<br>"
            f"<b>retrieved refs:</b> {e(', '.join(r.retrieved_refs) or 'none')}</p>")


def _budget_html(b: BudgetOutcome) -> str:
    return (f"<p><b>budget:</b> stop reason {e(b.stop_reason)}, "
            f"{'compliant' if b.compliant else 'NOT compliant'}; used "
            f"{e(json.dumps(b.used))} of {e(json.dumps(b.limits))}</p>")


def _tool_calls_html(r: QuestionRecord) -> str:
    rows = [[c.name, clip(json.dumps(c.arguments, ensure_ascii=False)
                          if not isinstance(c.arguments, str) else c.arguments, 500),
             "ok" if c.ok else f"error: {c.error}", str(c.result_count),
             ", ".join(c.result_refs)] for c in r.tool_calls]
    return "<h4>Tool calls</h4>" + tbl(["tool", "arguments", "outcome", "results", "refs"], rows)


def _message_html(m: Message) -> str:
    """One message of the transcript: its role, its text and the tool calls it asked for."""
    calls = "".join(f"<pre>→ {e(tc.name)}({e(clip(tc.arguments, 500))})</pre>"
                    for tc in m.tool_calls)
    content = f"<pre>{e(clip(m.content))}</pre>" if m.content else ""
    return f'<div class="msg"><span class="role">{e(m.role)}</span>{content}{calls}</div>'


def html_chunks(summary: ReportSummary, rows: Iterable[QuestionRow], questions: int,
                sections: Sequence[Section] = ()) -> Iterator[str]:
    """The page of :func:`render_html` in pieces, one per question's drill-down: ``rows`` may
    be read one at a time while the pieces are written (``questions`` is their number)."""
    s = summary
    yield "\n".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>lens report {e(s.run_id)}</title><style>{CSS}</style></head><body>",
        to_html(layout.report_blocks(s, sections, _plots(s))),
        f"<h2>Questions</h2><p><input id='qfilter' type='search' "
        f"placeholder='filter by adapter, scope, id, type, status' aria-label='filter'> "
        f"<span id='qcount' class='meta'>{questions} shown</span></p>"])
    for r in rows:
        yield "\n" + question_html(r, s.primary_metric)
    yield f"\n<script>{SCRIPT}</script></body></html>"


def render_html(summary: ReportSummary, rows: Sequence[QuestionRow],
                sections: Sequence[Section] = ()) -> str:
    return "".join(html_chunks(summary, rows, len(rows), sections))
