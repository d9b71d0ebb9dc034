"""The markdown report: the same content as the HTML one, minus plots and transcripts."""

from __future__ import annotations

from collections.abc import Sequence

import lens.report.fmt as fmt
from lens.report.sections import Section
from lens.report.shapes import Check, Comparison, ManyArms, ReportSummary

STATUS = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}

HOW_TO_READ = (
    "Each value reads `mean [low, high] n=N n_eff=E`: the interval is 95% and accounts for "
    "scopes (questions of one scope share a memory, so N questions carry the information of "
    "E independent ones, E = N / (1 + (m̄ − 1)·ICC)); rates keep the Wilson shape at that "
    "effective size, continuous metrics use the scope-clustered standard error, both with "
    "Student's t on the number of scopes. Two values whose intervals overlap are not shown to "
    "differ; the paired comparison decides, and calls a difference a tie when it is inside "
    "either arm's margin of error, below the judge-noise floor, or not significant after "
    "Holm's correction, and borderline when its p-value is within its Monte Carlo error of 0.05."
)


def t(text: object) -> str:
    """Text from datasets, models and adapters, made inert for markdown renderers that pass
    raw HTML through (entities still display as the characters they stand for)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cell(text: object) -> str:
    return t(text).replace("|", "\\|").replace("\n", " ")


def table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def checklist_md(checks: Sequence[Check]) -> list[str]:
    return ["## Pre-flight checklist", "",
            *table(["status", "check", "measured", "why"],
                   [[f"**{STATUS[c.status]}**", c.title, c.value, c.detail] for c in checks])]


def comparison_md(comp: Comparison) -> list[str]:
    title = f"### {t(comp.arm_b)} vs {t(comp.arm_a)} (Δ = B − A)"
    out = [title, ""]
    if comp.not_comparable:
        out += [f"**{fmt.not_comparable_label(comp.not_comparable)}**", ""]
    out += [f"{comp.pairs} paired questions; unmatched: {comp.unmatched_a} only in "
            f"{t(comp.arm_a)}, {comp.unmatched_b} only in {t(comp.arm_b)}.", ""]
    rows = [[r.metric, r.pairs, fmt.num(r.mean_a), fmt.num(r.mean_b), fmt.est(r.delta),
             r.test, fmt.pval(r.p_value), fmt.pval(r.p_holm, r.p_mc_error),
             f"{fmt.verdict(r, comp.arm_a, comp.arm_b)}: {r.reason}"]
            for r in comp.rows]
    out += table(["metric", "pairs", "A", "B", "Δ [95% CI]", "test", "p", "p (Holm)",
                  "verdict"], rows)
    return out


def many_arms_md(items: Sequence[ManyArms], label: Sequence[str] = ()) -> list[str]:
    """Friedman's test and Kendall's W per metric (three or more arms)."""
    if not items:
        return []
    return ["## All arms at once", "", *label,
            "Friedman's test across scopes (each scope ranks the arms by its mean) and "
            "Kendall's W (1: every scope ranks the arms alike; 0: no agreement).", "",
            *table(["metric", "scopes", "χ²", "df", "p", "Kendall's W"],
                   [[f.metric, f.scopes, f"{f.statistic:.2f}", f.df, fmt.pval(f.p_value),
                     f"{f.kendall_w:.2f}"] for f in items])]


def render_markdown(summary: ReportSummary, sections: Sequence[Section] = ()) -> str:
    s = summary
    cond = s.condition
    adapters = list(s.adapters)
    lines = [f"# lens report: run {s.run_id}", ""]
    lines += [
        f"- run directory: `{s.run_dir}`; status: {s.status or 'unknown'}; "
        f"created: {s.created_at or 'unknown'}",
        f"- dataset: {t(cond.get('dataset_id', 'unknown'))} "
        f"(content hash {str(cond.get('dataset_hash', 'unknown'))[:12]})",
        f"- agent model: {t(cond.get('agent_model', 'unknown'))}; judge model: "
        f"{t(cond.get('judge_model') or 'none')}",
        f"- seed: {cond.get('seed', 'unknown')}; repeats: {cond.get('repeats', 'unknown')}; "
        f"condition hash: {str(s.condition_hash or 'unknown')[:12]}",
        f"- primary metric: {s.primary_metric or 'none (not scored)'}", "",
    ]
    lines += checklist_md(s.checklist)
    lines += ["## Results", "", HOW_TO_READ, ""]
    if s.metrics:
        rows = [[m, *(fmt.est(s.adapters[a].metrics.get(m)) for a in adapters)]
                for m in s.metrics]
        lines += table(["metric", *adapters], rows)
    else:
        lines += ["No scored metrics.", ""]
    run_level = sorted({k for a in s.adapters.values() for k in a.run_level})
    if run_level:
        lines += ["Run-level metrics from the scorer (no per-question values, so no interval):",
                  ""]
        lines += table(["metric", *adapters],
                       [[k, *(fmt.num(s.adapters[a].run_level.get(k)) for a in adapters)]
                        for k in run_level])
    lines += ["## Usage", ""]
    usage_rows = []
    for a in adapters:
        ad = s.adapters[a]
        u = ad.usage
        usage_rows.append([
            a, ad.questions, ad.answered, ad.errored, fmt.num(u.tool_calls_per_question, 2),
            fmt.num(u.search_results_per_question, 2), fmt.est(u.agent_tokens_per_question, 0),
            fmt.cost(u, ad.questions), fmt.est(u.budget_compliant),
            fmt.num(u.wall_s_per_question, 2),
        ])
    lines += table(["adapter", "questions", "answered", "errored", "tool calls/q",
                    "search results/q", "agent tokens/q", "cost/q", "budget compliant",
                    "wall s/q"], usage_rows)
    if s.model_usage:
        lines += ["Model usage of the whole run, by role (from the manifest):", ""]
        lines += table(["role", "calls", "prompt tokens", "completion tokens", "cost",
                        "cache hits", "retries", "errors"],
                       [[r, u.calls, u.prompt_tokens, u.completion_tokens, fmt.money(u.cost_usd),
                         u.cache_hits, u.retries, u.errors] for r, u in s.model_usage.items()])
    if s.primary_metric:
        pm = s.primary_metric
        types = sorted({t for a in s.adapters.values() for t in a.by_type})
        lines += [f"## {pm} by question type", ""]
        lines += table(["question type", *adapters],
                       [[t, *(fmt.est(s.adapters[a].by_type.get(t, {}).get(pm)) for a in adapters)]
                        for t in types])
        cps: list[str] = []
        for a in adapters:
            for p in s.adapters[a].by_checkpoint:
                if p.label not in cps:
                    cps.append(p.label)
        lines += [f"## {pm} across checkpoints (episodes ingested)", ""]
        lookup = {(a, p.label): p.estimate for a in adapters for p in s.adapters[a].by_checkpoint}
        lines += table(["checkpoint", *adapters],
                       [[c, *(fmt.est(lookup.get((a, c))) for a in adapters)] for c in cps])
    j = s.judge
    lines += ["## Judge", ""]
    if j.disagreement_rate is None:
        lines += ["No position-swapped judge verdicts: judge-based metrics are unknown and there "
                  "is no judge-noise floor.", ""]
    else:
        lines += [f"Judge {t(j.model or 'unknown')}: {j.pairs} position-swapped pairs, "
                  f"disagreement {j.disagreement_rate:.1%} (agreement {fmt.est(j.agreement)}). "
                  "Differences in judge-based metrics smaller than the disagreement rate are "
                  "ties.", ""]
    lines += many_arms_md(s.many_arms)
    if s.comparisons:
        lines += ["## Paired comparisons", "",
                  f"Baseline: {t(s.comparisons[0].arm_a)}. Questions are paired by scope and "
                  "question (repeats reduced first); binary metrics use the exact McNemar test, "
                  "continuous ones a scope-clustered paired bootstrap (10,000 resamples); "
                  "p-values are Holm-corrected across every pair of arms and every metric "
                  "shown.", ""]
        for comp in s.comparisons:
            lines += comparison_md(comp)
    for section in sections:
        lines += [section.markdown.rstrip(), ""]
    if s.notes:
        lines += ["## Notes", "", *(f"- {t(n)}" for n in s.notes), ""]
    return "\n".join(lines).rstrip() + "\n"
