"""What a run report says, as blocks of :mod:`lens.report.documents.document`, section by section.

Each function builds one part of the report from the summary; :func:`report_blocks` puts them
in order. The Markdown and HTML files are both renderings of this one list; only the plots and
the per-question drill-down are HTML-only (they have no text form worth reading).
"""

from __future__ import annotations

from collections.abc import Sequence

import lens.report.documents.fmt as fmt
from lens.report.documents.document import (
    STATUS_LABEL,
    Block,
    Bullets,
    Cell,
    Format,
    Heading,
    Para,
    Parts,
    Raw,
    Style,
    Styled,
    Table,
)
from lens.report.documents.judge_blocks import judge_panel_blocks
from lens.report.documents.reference_blocks import context_parity, floor_ceiling
from lens.report.documents.verdict_lines import verdict_lines
from lens.report.figures.plan_spend import estimate_blocks
from lens.report.figures.sequential import run_stop_blocks
from lens.report.figures.verdicts import DIFFERENT
from lens.report.foundations.shapes import Check, Comparison, ManyArms, ReportSummary, RoleUsage
from lens.report.sections.registry import Section

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
HTML_ONLY: frozenset[Format] = frozenset({"html"})


def header(s: ReportSummary) -> list[Block]:
    cond = s.condition
    return [Heading(f"lens report: run {s.run_id}", level=1), Bullets([
        f"run directory: {s.run_dir}; status: {s.status or 'unknown'}; "
        f"created: {s.created_at or 'unknown'}",
        f"dataset: {cond.get('dataset_id', 'unknown')} "
        f"(content hash {str(cond.get('dataset_hash', 'unknown'))[:12]})",
        f"agent model: {cond.get('agent_model', 'unknown')}; judge model: "
        f"{cond.get('judge_model') or 'none'}",
        f"seed: {cond.get('seed', 'unknown')}; repeats: {cond.get('repeats', 'unknown')}; "
        f"condition hash: {str(s.condition_hash or 'unknown')[:12]}",
        f"primary metric: {s.primary_metric or 'none (not scored)'}",
    ], style="meta")]


def checklist(checks: Sequence[Check]) -> list[Block]:
    rows: list[list[Cell]] = [[Styled(STATUS_LABEL[c.status], c.status, badge=True), c.title,
                               fmt.check_value(c), c.detail] for c in checks]
    return [Heading("Pre-flight checklist"),
            Table(["status", "check", "measured", "why"], rows, table_id="checklist")]


def results(s: ReportSummary) -> list[Block]:
    adapters = list(s.adapters)
    out: list[Block] = [Heading("Results"), Para(HOW_TO_READ, "meta")]
    if s.metrics:
        out.append(Table(["metric", *adapters],
                         [[m, *(fmt.est(s.adapters[a].metrics.get(m)) for a in adapters)]
                          for m in s.metrics], table_id="summary-table"))
    else:
        out += [Para("No scored metrics."),
                Table(["metric", *adapters], [["(not scored)", *("unknown" for _ in adapters)]],
                      table_id="summary-table", formats=HTML_ONLY)]
    run_level = sorted({k for a in s.adapters.values() for k in a.run_level})
    if run_level:
        out += [Para("Run-level metrics from the scorer (no per-question values, so no "
                     "interval):", "meta"),
                Table(["metric", *adapters],
                      [[k, *(fmt.num(s.adapters[a].run_level.get(k)) for a in adapters)]
                       for k in run_level])]
    return out


def verdicts(s: ReportSummary) -> list[Block]:
    """The paired verdicts on the primary metric, as the terminal prints them; the tables of
    every metric are under "Paired comparisons"."""
    lines = [line.removeprefix("compared: ") for line in verdict_lines(s)]
    return [Heading("Verdict"), Bullets(lines)] if lines else []


def plots(svgs: Sequence[str]) -> list[Block]:
    if not svgs:
        return []
    return [Heading("Plots", formats=HTML_ONLY),
            Raw(html="<div class='plots' id='plots'>" + "".join(svgs) + "</div>",
                formats=HTML_ONLY)]


def usage(s: ReportSummary) -> list[Block]:
    rows = []
    for a, ad in s.adapters.items():
        u = ad.usage
        rows.append([a, str(ad.questions), str(ad.answered), str(ad.empty_answers),
                     str(ad.no_memory), str(ad.errored),
                     fmt.num(u.tool_calls_per_question, 2), str(u.tool_errors),
                     fmt.num(u.search_results_per_question, 2),
                     fmt.at_most(fmt.est(u.agent_tokens_per_question, 0), u.unknown_usage_calls),
                     fmt.at_most(fmt.cost(u, ad.questions), u.unknown_usage_calls),
                     fmt.est(u.budget_compliant), fmt.num(u.wall_s_per_question, 2)])
    out: list[Block] = [Heading("Usage"), Table(
        ["adapter", "questions", "answered", "empty", "no memory", "errored", "tool calls/q",
         "tool errors", "search results/q", "agent tokens/q", "cost/q", "budget compliant",
         "wall s/q"],
        rows, table_id="usage")]
    if s.model_usage:
        out += [Para("Model usage of the whole run, by role (from the manifest):", "meta"),
                Table(["role", "calls", "prompt tokens", "provider-cached prompt",
                       "completion tokens", "cost", "cache hits", "retries", "errors"],
                      [[r, str(u.calls), fmt.at_most(str(u.prompt_tokens), u.unknown_usage_calls),
                        _cached_share(u),
                        fmt.at_most(str(u.completion_tokens), u.unknown_usage_calls),
                        fmt.at_most(fmt.money(u.cost_usd), u.unknown_usage_calls),
                        str(u.cache_hits), str(u.retries), str(u.errors)]
                       for r, u in s.model_usage.items()])]
    if s.unknown_usage is not None:
        # Beside the figures it qualifies: they are upper bounds, never to be read as exact.
        out.append(Para(f"Token and cost figures are incomplete: {s.unknown_usage.text()} "
                        "(marked ≤).", "warn"))
    return out + estimate_blocks(s.estimate)


def _cached_share(u: RoleUsage) -> str:
    """The share of prompt tokens the provider's prompt cache served, or unknown."""
    if u.cached_prompt_tokens is None or not u.prompt_tokens:
        return "—"
    return f"{u.cached_prompt_tokens / u.prompt_tokens:.0%}"


def primary_breakdown(s: ReportSummary) -> list[Block]:
    """The primary metric by question type and across checkpoints."""
    pm = s.primary_metric
    if not pm:
        return []
    adapters = list(s.adapters)
    types = sorted({t for a in s.adapters.values() for t in a.by_type})
    cps: list[str] = []
    for a in adapters:
        cps += [p.label for p in s.adapters[a].by_checkpoint if p.label not in cps]
    lookup = {(a, p.label): p.estimate for a in adapters for p in s.adapters[a].by_checkpoint}
    return [Heading(f"{pm} by question type"),
            Table(["question type", *adapters],
                  [[t, *(fmt.est(s.adapters[a].by_type.get(t, {}).get(pm)) for a in adapters)]
                   for t in types]),
            Heading(f"{pm} across checkpoints (episodes ingested)"),
            Table(["checkpoint", *adapters],
                  [[c, *(fmt.est(lookup.get((a, c))) for a in adapters)] for c in cps])]


def judge(s: ReportSummary) -> list[Block]:
    j = s.judge
    if j.disagreement_rate is None:
        return [Heading("Judge"), Para("No position-swapped judge verdicts: judge-based metrics "
                                       "are unknown and there is no judge-noise floor.")]
    return [Heading("Judge"), Para(
        f"Judge {j.model or 'unknown'}: {j.pairs} position-swapped pairs, disagreement "
        f"{j.disagreement_rate:.1%} (agreement {fmt.est(j.agreement)}). Differences in "
        "judge-based metrics smaller than the disagreement rate are ties.")]


def many_arms(items: Sequence[ManyArms], label: Sequence[Block] = ()) -> list[Block]:
    """Friedman's test and Kendall's W per metric (three or more arms)."""
    if not items:
        return []
    return [Heading("All arms at once"), *label,
            Para("Friedman's test across scopes (each scope ranks the arms by its mean) and "
                 "Kendall's W (1: every scope ranks the arms alike; 0: no agreement).", "meta"),
            Table(["metric", "scopes", "χ²", "df", "p", "Kendall's W"],
                  [[f.metric, str(f.scopes), f"{f.statistic:.2f}", str(f.df),
                    fmt.pval(f.p_value), f"{f.kendall_w:.2f}"] for f in items],
                  table_id="many-arms")]


FAMILIES = (
    "The primary metric (the first row) is the confirmatory comparison: its p-values are "
    "Holm-corrected over the pairs of arms on it alone. Every other metric, the first "
    "search's MRR and NDCG@10 included, is exploratory: Holm-corrected over the pairs and those "
    "metrics, to be read as leads, not findings. Verdicts: better / worse (a real difference "
    "beyond either arm's margin of error), equivalent within the margin (the interval of Δ "
    "inside ± the margin of error), a real difference smaller than the margin, undecided "
    "(the reason says what is missing); a difference is real when the family's "
    "Holm-corrected test, the scope-clustered interval and the bounded-mean test over scopes "
    "(valid however skewed the scope differences are) agree. Each verdict names the rule that "
    "decided it and its reason. See docs/reports.md, 'Verdicts'.")


def comparison(comp: Comparison) -> list[Block]:
    out: list[Block] = [Heading(f"{comp.arm_b} vs {comp.arm_a} (Δ = B − A)", level=3)]
    if comp.not_comparable:
        out.append(Para(fmt.not_comparable_label(comp.not_comparable), "nc"))
    out.append(Para(f"{comp.pairs} paired questions; unmatched: {comp.unmatched_a} only in "
                    f"{comp.arm_a}, {comp.unmatched_b} only in {comp.arm_b}.", "meta"))
    rows: list[list[Cell]] = []
    judged = any(r.by_judge for r in comp.rows)
    for r in comp.rows:
        style: Style = "pass" if r.verdict in DIFFERENT else "meta"
        rule = f" ({r.rule} rule)" if r.rule != "none" else ""
        verdict = Parts((Styled(fmt.verdict(r, comp.arm_a, comp.arm_b), style),
                         f"{rule}: {r.reason}"))
        row: list[Cell] = [r.metric, r.family, str(r.pairs), fmt.num(r.mean_a), fmt.num(r.mean_b),
               fmt.est(r.delta), r.test, fmt.pval(r.p_value),
               fmt.pval(r.p_holm, r.p_mc_error), verdict]
        if judged:
            row.append("; ".join(f"{j}: {v}" for j, v in r.by_judge.items()))
        rows.append(row)
    out.append(Table(["metric", "family", "pairs", "A", "B", "Δ [95% CI]", "test", "p",
                      "p (Holm)", "verdict", *(["verdict by judge"] if judged else [])], rows,
                     table_id="comparison"))
    return out


def comparisons(s: ReportSummary) -> list[Block]:
    if not s.comparisons:
        return []
    out: list[Block] = [Heading("Paired comparisons"), Para(
        f"Baseline: {s.comparisons[0].arm_a}. Questions are paired by scope and question "
        "(repeats reduced first); binary metrics use the exact McNemar test, continuous ones a "
        "scope-clustered paired bootstrap (10,000 resamples). " + FAMILIES, "meta")]
    for comp in s.comparisons:
        out += comparison(comp)
    return out


def extra_sections(sections: Sequence[Section]) -> list[Block]:
    return [Raw(markdown=sec.markdown, html=sec.html) for sec in sections]


def notes(s: ReportSummary) -> list[Block]:
    return [Heading("Notes"), Bullets(list(s.notes))] if s.notes else []


def report_blocks(s: ReportSummary, sections: Sequence[Section] = (),
                  plot_svgs: Sequence[str] = ()) -> list[Block]:
    """The whole run report, in reading order."""
    # The result and the verdict first, what qualifies them (the checklist) right after.
    return [*header(s), *results(s), *verdicts(s), *checklist(s.checklist),
            *run_stop_blocks(s.stopped),
            *floor_ceiling(s),
            *plots(plot_svgs), *usage(s), *context_parity(s), *primary_breakdown(s),
            *judge(s), *judge_panel_blocks(s.judges),
            *many_arms(s.many_arms), *comparisons(s),
            *extra_sections(sections), *notes(s)]
