"""The self-contained HTML report: inline CSS, inline SVG plots, no network, every text escaped.

A Content-Security-Policy meta tag forbids every external load, so the page renders the same
offline and a hostile string in a transcript cannot pull anything in.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from html import escape
from typing import Any

import lens.report.fmt as fmt
import lens.report.plots as plots
from lens.report.data import QuestionRow
from lens.report.markdown import HOW_TO_READ
from lens.report.sections import Section
from lens.report.shapes import Check, Comparison, EstimateOut, ManyArms, ReportSummary

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
.badge.pass{background:#d8f3e1}.badge.warn{background:#fdefc8}.badge.fail{background:#fbdad7}
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


# C0 controls (but tab, newline, carriage return) and DEL shown as their visible Unicode
# pictures: a NUL is a parse error in HTML and an ESC would hide text in a terminal dump.
_CONTROLS = {c: chr(0x2400 + c) for c in range(32) if c not in (9, 10, 13)} | {127: "\u2421"}


def e(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True).translate(_CONTROLS)


def clip(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters in the run record]"


def tbl(head: Sequence[str], rows: Sequence[Sequence[str]], *, table_id: str = "",
        raw: bool = False) -> str:
    """A table; cells are escaped unless ``raw`` (then the caller escaped them)."""
    tid = f' id="{e(table_id)}"' if table_id else ""
    h = "".join(f"<th>{e(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else e(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f'<table class="data"{tid}><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def many_arms_html(items: Sequence[ManyArms], label: str = "") -> str:
    """Friedman's test and Kendall's W per metric (three or more arms)."""
    if not items:
        return ""
    return ("<h2>All arms at once</h2>" + label
            + "<p class='meta'>Friedman's test across scopes and Kendall's W (1: every scope "
            "ranks the arms alike).</p>"
            + tbl(["metric", "scopes", "χ²", "df", "p", "Kendall's W"],
                  [[f.metric, str(f.scopes), f"{f.statistic:.2f}", str(f.df),
                    fmt.pval(f.p_value), f"{f.kendall_w:.2f}"] for f in items],
                  table_id="many-arms"))


def badge(status: str) -> str:
    return f'<span class="badge {e(status)}">{e(status.upper())}</span>'


def checklist_html(checks: Sequence[Check]) -> str:
    rows = [[badge(c.status), e(c.title), e(c.value), e(c.detail)] for c in checks]
    return "<h2>Pre-flight checklist</h2>" + tbl(["status", "check", "measured", "why"], rows,
                                                 table_id="checklist", raw=True)


def comparison_html(comp: Comparison) -> str:
    out = [f"<h3>{e(comp.arm_b)} vs {e(comp.arm_a)} (Δ = B − A)</h3>"]
    if comp.not_comparable:
        out.append(f'<p class="nc">{e(fmt.not_comparable_label(comp.not_comparable))}</p>')
    out.append(f'<p class="meta">{comp.pairs} paired questions; unmatched: '
               f'{comp.unmatched_a} only in {e(comp.arm_a)}, {comp.unmatched_b} only in '
               f'{e(comp.arm_b)}.</p>')
    rows = []
    for r in comp.rows:
        v = fmt.verdict(r, comp.arm_a, comp.arm_b)
        cls = "pass" if r.verdict in ("a", "b") else "meta"
        rows.append([e(r.metric), str(r.pairs), e(fmt.num(r.mean_a)), e(fmt.num(r.mean_b)),
                     e(fmt.est(r.delta)), e(r.test), e(fmt.pval(r.p_value)),
                     e(fmt.pval(r.p_holm, r.p_mc_error)),
                     f'<span class="{cls}">{e(v)}</span>: {e(r.reason)}'])
    out.append(tbl(["metric", "pairs", "A", "B", "Δ [95% CI]", "test", "p", "p (Holm)",
                    "verdict"], rows, table_id="comparison", raw=True))
    return "".join(out)


def _plots(s: ReportSummary) -> list[str]:
    adapters = list(s.adapters)
    pm = s.primary_metric
    unit = pm is None or pm not in ("longitudinal_advantage",)
    out: list[str] = []
    if pm:
        types = sorted({t for a in s.adapters.values() for t in a.by_type})
        out.append(plots.bar_chart(
            f"{pm} by question type (95% interval)", types,
            [(a, [s.adapters[a].by_type.get(t, {}).get(pm) for t in types]) for a in adapters],
            ylabel=pm, unit=unit))
        cps: list[str] = []
        for a in adapters:
            cps += [p.label for p in s.adapters[a].by_checkpoint if p.label not in cps]
        lookup = {(a, p.label): p.estimate for a in adapters for p in s.adapters[a].by_checkpoint}
        out.append(plots.line_chart(
            f"{pm} across checkpoints", cps,
            [(a, [lookup.get((a, c)) for c in cps]) for a in adapters],
            ylabel=pm, xlabel="episodes ingested (checkpoint)", unit=unit))
        out.append(plots.scatter(
            f"{pm} against agent tokens per question",
            [(a, s.adapters[a].usage.agent_tokens_per_question.mean,
              s.adapters[a].metrics[pm]) for a in adapters],
            xlabel="agent tokens per question", ylabel=pm, unit=unit))
        out.append(plots.scatter(
            f"{pm} against cost per question",
            [(a, s.adapters[a].usage.cost_usd_per_question, s.adapters[a].metrics[pm])
             for a in adapters],
            xlabel="agent cost per question (USD)", ylabel=pm, unit=unit))
    else:
        out.append(plots.empty_plot("scores", "the run is not scored: no score plots"))
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


def _detail_html(detail: dict[str, Any]) -> str:
    parts = []
    for key, value in detail.items():
        cls = ("matched" if "matched" in key or "hit" in key
               else "missed" if "missed" in key or "miss" in key else "")
        if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
            items = "".join(f"<li>{e(v)}</li>" for v in value) or "<li><i>none</i></li>"
            parts.append(f'<div class="{cls}"><b>{e(key)}</b><ul>{items}</ul></div>')
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                  indent=1, default=str)
            parts.append(f'<div class="{cls}"><b>{e(key)}</b><pre>{e(clip(text))}</pre></div>')
    return "".join(parts)


def question_html(row: QuestionRow, primary: str | None) -> str:
    r = row.record
    pv = fmt.num(row.metric(primary)) if primary else "not scored"
    head = (f"{r.adapter} · {r.scope_id} · {r.question_id} · r{r.repeat} · "
            f"{row.question_type} · checkpoint {r.checkpoint} · {r.status} · "
            f"{primary or 'score'} {pv}")
    search = " ".join([r.adapter, r.scope_id, r.question_id, row.question_type, r.status]).lower()
    body = [tbl(["metric", "value"], _metrics_rows(row))]
    if r.error:
        body.append(f'<p class="fail">error: {e(r.error)}</p>')
    body.append(f"<h4>Answer</h4><pre>{e(clip(r.answer)) or '<i>(empty)</i>'}</pre>")
    body.append(f"<p><b>cited refs:</b> {e(', '.join(r.cited_refs) or 'none')}<br>"
                f"<b>retrieved refs:</b> {e(', '.join(r.retrieved_refs) or 'none')}</p>")
    if row.scores and row.scores.detail:
        body.append("<h4>Gold facts and verdicts</h4>" + _detail_html(row.scores.detail))
    if r.tool_calls:
        rows = [[c.name, clip(json.dumps(c.arguments, ensure_ascii=False)
                              if not isinstance(c.arguments, str) else c.arguments, 500),
                 "ok" if c.ok else f"error: {c.error}", str(c.result_count),
                 ", ".join(c.result_refs)] for c in r.tool_calls]
        body.append("<h4>Tool calls</h4>" + tbl(["tool", "arguments", "outcome", "results",
                                                  "refs"], rows))
    if r.budget:
        b = r.budget
        body.append(f"<p><b>budget:</b> stop reason {e(b.stop_reason)}, "
                    f"{'compliant' if b.compliant else 'NOT compliant'}; used "
                    f"{e(json.dumps(b.used))} of {e(json.dumps(b.limits))}</p>")
    if r.transcript:
        msgs = []
        for m in r.transcript:
            calls = "".join(f"<pre>→ {e(tc.name)}({e(clip(tc.arguments, 500))})</pre>"
                            for tc in m.tool_calls)
            content = f"<pre>{e(clip(m.content))}</pre>" if m.content else ""
            msgs.append(f'<div class="msg"><span class="role">{e(m.role)}</span>'
                        f'{content}{calls}</div>')
        body.append("<h4>Transcript</h4>" + "".join(msgs))
    return (f'<details class="q" data-search="{e(search)}"><summary>{e(head)}</summary>'
            f'{"".join(body)}</details>')


def _est_cell(x: EstimateOut | None) -> str:
    return e(fmt.est(x))


def render_html(summary: ReportSummary, rows: Sequence[QuestionRow],
                sections: Sequence[Section] = ()) -> str:
    s = summary
    cond = s.condition
    adapters = list(s.adapters)
    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           "<meta name='viewport' content='width=device-width, initial-scale=1'>",
           f"<title>lens report {e(s.run_id)}</title><style>{CSS}</style></head><body>",
           f"<h1>lens report: run {e(s.run_id)}</h1>",
           '<p class="meta">'
           f"dataset {e(cond.get('dataset_id', 'unknown'))} "
           f"(hash {e(str(cond.get('dataset_hash', 'unknown'))[:12])}) · agent "
           f"{e(cond.get('agent_model', 'unknown'))} · judge {e(cond.get('judge_model') or 'none')}"
           f" · seed {e(cond.get('seed', 'unknown'))} · repeats {e(cond.get('repeats', '?'))} · "
           f"condition {e(str(s.condition_hash or 'unknown')[:12])} · status "
           f"{e(s.status or 'unknown')}</p>"]
    out.append(checklist_html(s.checklist))
    out.append(f"<h2>Results</h2><p class='meta'>{e(HOW_TO_READ)}</p>")
    if s.metrics:
        out.append(tbl(["metric", *adapters],
                       [[e(m), *(_est_cell(s.adapters[a].metrics.get(m)) for a in adapters)]
                        for m in s.metrics], table_id="summary-table", raw=True))
    else:
        out.append(tbl(["metric", *adapters], [["(not scored)", *("unknown" for _ in adapters)]],
                       table_id="summary-table"))
    run_level = sorted({k for a in s.adapters.values() for k in a.run_level})
    if run_level:
        out.append("<p class='meta'>Run-level metrics (no per-question values, no interval):</p>")
        out.append(tbl(["metric", *adapters],
                       [[k, *(fmt.num(s.adapters[a].run_level.get(k)) for a in adapters)]
                        for k in run_level]))
    out.append("<h2>Plots</h2><div class='plots' id='plots'>" + "".join(_plots(s)) + "</div>")
    usage = []
    for a in adapters:
        ad = s.adapters[a]
        u = ad.usage
        usage.append([a, str(ad.questions), str(ad.answered), str(ad.errored),
                      fmt.num(u.tool_calls_per_question, 2),
                      fmt.num(u.search_results_per_question, 2),
                      fmt.est(u.agent_tokens_per_question, 0), fmt.cost(u, ad.questions),
                      fmt.est(u.budget_compliant), fmt.num(u.wall_s_per_question, 2)])
    out.append("<h2>Usage</h2>" + tbl(["adapter", "questions", "answered", "errored",
                                       "tool calls/q", "search results/q", "agent tokens/q",
                                       "cost/q", "budget compliant", "wall s/q"], usage,
                                      table_id="usage"))
    if s.model_usage:
        out.append("<p class='meta'>Model usage of the whole run, by role:</p>")
        out.append(tbl(["role", "calls", "prompt tokens", "completion tokens", "cost",
                        "cache hits", "retries", "errors"],
                       [[r, str(u.calls), str(u.prompt_tokens), str(u.completion_tokens),
                         fmt.money(u.cost_usd), str(u.cache_hits), str(u.retries),
                         str(u.errors)] for r, u in s.model_usage.items()]))
    if s.primary_metric:
        pm = s.primary_metric
        types = sorted({t for a in s.adapters.values() for t in a.by_type})
        out.append(f"<h2>{e(pm)} by question type</h2>")
        out.append(tbl(["question type", *adapters],
                       [[t, *(fmt.est(s.adapters[a].by_type.get(t, {}).get(pm))
                              for a in adapters)] for t in types]))
    if s.many_arms:
        out.append(many_arms_html(s.many_arms))
    if s.comparisons:
        out.append("<h2>Paired comparisons</h2>")
        out += [comparison_html(c) for c in s.comparisons]
    out += [sec.html for sec in sections]
    if s.notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in s.notes)
                   + "</ul>")
    out.append(f"<h2>Questions</h2><p><input id='qfilter' type='search' "
               f"placeholder='filter by adapter, scope, id, type, status' aria-label='filter'> "
               f"<span id='qcount' class='meta'>{len(rows)} shown</span></p>")
    out += [question_html(r, s.primary_metric) for r in rows]
    out.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(out)
