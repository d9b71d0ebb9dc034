"""``lens compare``: several runs set against each other, only under the same condition."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

import lens.report.documents.fmt as fmt
import lens.report.documents.layout as layout
from lens.core.errors import UserError
from lens.memory.adapter_identity import recorded
from lens.report.arm_selection import Candidate, Choice, choose, options_hash
from lens.report.checks.checklist import arm_size, compare_checklist
from lens.report.checks.parity import adapter_names
from lens.report.documents.document import (
    STATUS_LABEL,
    Block,
    Bullets,
    Heading,
    Para,
    Table,
    to_html,
    to_markdown,
)
from lens.report.documents.reference_blocks import floor_ceiling_blocks
from lens.report.figures.arm_comparison import (
    Arm,
    arm_estimates,
    arms_of,
    compare_pairs,
    compared_metrics,
    many_arms,
    noise_floor_of,
)
from lens.report.figures.estimates import repeat_reducer, report_metrics
from lens.report.figures.floor_ceiling import floor_ceiling
from lens.report.figures.frontier import arms_frontier, frontier_table
from lens.report.figures.judges import compare_under_judges, hold_under_every_judge
from lens.report.figures.sequential import SequentialSettings, sequential_blocks, sequential_replay
from lens.report.foundations.data import RunData, load_run
from lens.report.foundations.shapes import (
    Check,
    Comparison,
    EstimateOut,
    FloorCeiling,
    ManyArms,
    SequentialOut,
)
from lens.report.sections.memory_cost import FRONTIER_NOTE, AdapterFigures, memory_cost
from lens.report.sections.write_side_section import arm_row, compare_columns
from lens.stats import Estimate, condition_differences


class CompareSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[str]
    arms: dict[str, dict[str, EstimateOut]]
    metrics: list[str]
    not_comparable: list[str]
    differences: dict[str, list[object]]
    noise_floor: float | None
    checklist: list[Check]
    comparisons: list[Comparison]
    many_arms: list[ManyArms] = []
    # The judges every run was scored by (the primary first): each verdict holds under all.
    judges: list[str] = []
    judge_notes: list[str] = []
    # Per arm: the primary metric against cost and latency per question
    # (lens.report.figures.frontier).
    frontier: dict[str, object] = {}
    # Each arm between the floor (a null arm) and the ceiling (an oracle arm), when present.
    floor_ceiling: FloorCeiling | None = None
    # Where a sequential run would have stopped (``lens compare --sequential``).
    sequential: SequentialOut | None = None
    # Which pairs were compared: they are the confirmatory family (``--arms``, ``--baseline``).
    pairs_chosen: str = "every pair of arms"
    # Per arm: the adapter's distribution, version, source digest and libraries, as its run
    # recorded them (lens.memory.adapter_identity); absent for runs that recorded none.
    adapter_versions: dict[str, str] = {}
    # What each arm's memory wrote (lens.report.sections.write_side_section), when any arm lists it.
    write_side: list[list[str]] = []


@dataclass(frozen=True)
class CompareResult:
    summary: CompareSummary
    markdown: str

    @property
    def html(self) -> str:
        return render_compare_html(self.summary)


def shared_metrics(runs: Sequence[RunData]) -> list[str]:
    """Metrics every run has, in report order."""
    if not runs:
        return []
    common = set.intersection(*(set(report_metrics(r)) for r in runs))
    return [m for m in report_metrics(runs[0]) if m in common]


# Field names of the scoring condition in a refusal message.
_SCORING_FIELDS = {"protocol": "scoring_protocol", "tiers": "scoring_tiers",
                   "weights": "scoring_weights", "gate_threshold": "scoring_gate",
                   "judge_model": "scoring_judge", "judge_prompts_hash": "scoring_judge_prompts"}


def scoring_condition(run: RunData) -> dict[str, object]:
    """How a run was scored: numbers scored differently are not comparable either. Every
    field of the scoring condition recorded in scores.json is compared, each scoring setting
    (fact matcher, fact grading, ...) on its own; scores written before the condition was
    recorded count as protocol 1 with only their tiers, weights, gate and judge."""
    if run.scores is None:
        return {"scoring": None}
    s = run.scores
    reducer = repeat_reducer(run)
    if not s.condition:
        return {"scoring_protocol": 1, "scoring_tiers": sorted(s.tiers),
                "scoring_weights": dict(sorted(s.weights.items())),
                "scoring_gate": s.gate_threshold, "scoring_judge": s.judge.model,
                "scoring_repeat_reducer": reducer}
    out: dict[str, object] = {}
    for key, value in s.condition.items():
        if key == "settings" and isinstance(value, dict):
            out.update({f"scoring_{k}": v for k, v in value.items()})
        else:
            out[_SCORING_FIELDS.get(key, f"scoring_{key}")] = value
    out["scoring_repeat_reducer"] = reducer
    return out


def differences(runs: Sequence[RunData]) -> tuple[list[str], dict[str, list[object]]]:
    conds = [{**r.condition, **scoring_condition(r)} for r in runs]
    fields = condition_differences(conds)
    return fields, {f: [c.get(f) for c in conds] for f in fields}


# Longer values are shown around where they differ, never cut at an arbitrary character.
_SHOWN_CHARS = 80


def _differs_at(dicts: Sequence[dict[object, object]], key: object) -> bool:
    return len({json.dumps(d.get(key), sort_keys=True, default=str) for d in dicts}) > 1


def _several_dicts(values: Sequence[object]) -> list[dict[object, object]] | None:
    """The values when there are several and every one is a dict, else None."""
    if len(values) <= 1 or not all(isinstance(v, dict) for v in values):
        return None
    return [v for v in values if isinstance(v, dict)]


def _differing_keys(values: Sequence[object]) -> Sequence[object]:
    """Dicts reduced to the keys whose values differ (when some keys are alike); other values
    as they are."""
    dicts = _several_dicts(values)
    if dicts is None:
        return values
    keys = sorted({k for d in dicts for k in d}, key=str)
    differ = [k for k in keys if _differs_at(dicts, k)]
    if differ and len(differ) < len(keys):
        return [{k: d.get(k) for k in differ} for d in dicts]
    return values


def _first_difference(text: str, first: str) -> int:
    """Where ``text`` first differs from ``first`` (the shorter's end when one begins the
    other)."""
    return next((i for i, (a, b) in enumerate(zip(text, first, strict=False)) if a != b),
                min(len(text), len(first)))


def _around(text: str, start: int) -> str:
    """The stretch of a long text from ``start``, marked ``…`` where it is cut."""
    return (("…" if start else "") + text[start:start + _SHOWN_CHARS]
            + ("…" if start + _SHOWN_CHARS < len(text) else "") + f" ({len(text)} chars)")


def differing_parts(values: Sequence[object]) -> list[str]:
    """Each value as JSON, reduced to where the values differ: of dicts the keys whose values
    differ; of a long text the stretch from its first differing character, marked ``…``."""
    texts = [json.dumps(v, sort_keys=True, default=str) for v in _differing_keys(values)]
    if max(len(t) for t in texts) <= _SHOWN_CHARS:
        return texts
    first = min((_first_difference(t, texts[0]) for t in texts[1:]), default=0)
    start = max(0, first - _SHOWN_CHARS // 4)
    return [_around(t, start) for t in texts]


def refusal_message(runs: Sequence[RunData], diffs: dict[str, list[object]]) -> list[str]:
    """The refusal, one line per differing field (lens's line breaks, printed as such)."""
    lines = ["these runs ran under different conditions and are not comparable; differing "
             f"fields: {', '.join(diffs)}"]
    for field, values in diffs.items():
        shown = "; ".join(f"{r.run_id}={text}"
                          for r, text in zip(runs, differing_parts(values), strict=True))
        lines.append(f"  {field}: {shown}")
    lines.append("re-run under one condition, or pass --force to compare anyway (every table "
                 "is then labelled 'not comparable')")
    return lines


def arm_candidates(arms: Sequence[Arm]) -> list[Candidate[Arm]]:
    """The arms as ``--arms`` and ``--baseline`` may name them."""
    return [Candidate(item=a, name=a.name, run_id=a.run.run_id, run_dir=a.run.root.name,
                      label=a.adapter, identity=(a.adapter, options_hash(a.run, a.adapter)))
            for a in arms]


def _distinct_runs(run_dirs: Sequence[str | Path]) -> list[RunData]:
    """The runs, refused when none is given or one is given twice."""
    if len(run_dirs) < 1:
        raise UserError("compare needs at least one run directory")
    runs = [load_run(d) for d in run_dirs]
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise UserError(f"the same run is given twice: {', '.join(ids)}")
    return runs


def _choice(runs: Sequence[RunData], first_dir: str | Path, arms: Sequence[str],
            baseline: str | None, *, one_condition: bool) -> Choice[Arm]:
    """The arms and pairs ``--arms`` and ``--baseline`` choose; refused with one arm."""
    every_arm = arms_of(runs)
    if len(every_arm) < 2:
        raise UserError(f"{first_dir}: only one arm (one adapter in one run); give another "
                        "run directory, or a run with several adapters")
    return choose(arm_candidates(every_arm), arms=arms, baseline=baseline,
                  one_condition=one_condition)


def _estimates_out(own: Mapping[str, Mapping[str, Estimate]]
                   ) -> dict[str, dict[str, EstimateOut]]:
    return {name: {m: EstimateOut.of(e) for m, e in ests.items()} for name, ests in own.items()}


def _pairs_again(runs: Sequence[RunData], chosen: Sequence[Arm],
                 pair_names: Sequence[tuple[str, str]], metrics: Sequence[str],
                 fields: Sequence[str], confidence: float) -> list[Comparison]:
    """The chosen pairs compared again over ``runs`` (the runs as another judge scored
    them)."""
    by_name = {a.name: a for a in arms_of(runs)}
    return compare_pairs([by_name[a.name] for a in chosen], metrics,
                         noise_floor=noise_floor_of(runs), not_comparable=fields,
                         confidence=confidence,
                         pairs=[(by_name[a], by_name[b]) for a, b in pair_names])


def _adapter_names(arms: Sequence[Arm]) -> dict[str, str]:
    """Each arm's adapter by its registered name (its label where the run names none)."""
    return {a.name: adapter_names(a.run).get(a.adapter, a.adapter) for a in arms}


def _sequential(chosen: Sequence[Arm], metrics: Sequence[str], comps: list[Comparison],
                sequential: SequentialSettings | None) -> SequentialOut | None:
    """The sequential replay of the primary metric, when asked for and there is one."""
    if sequential is None or not metrics:
        return None
    return sequential_replay(chosen, metrics[0], comps, **sequential.as_kwargs())


def compare_runs(run_dirs: Sequence[str | Path], *, force: bool = False,
                 confidence: float = 0.95,
                 sequential: SequentialSettings | None = None,
                 arms: Sequence[str] = (), baseline: str | None = None) -> CompareResult:
    """``lens compare``: the runs' arms (``arms`` by name, default every different arm) in
    pairs (each against ``baseline`` when given, else every pair); see
    :mod:`lens.report.arm_selection`."""
    runs = _distinct_runs(run_dirs)
    fields, diffs = differences(runs)
    if fields and not force:
        raise UserError(refusal_message(runs, diffs))
    choice = _choice(runs, run_dirs[0], arms, baseline, one_condition=not fields)
    chosen = choice.arms
    pair_names = [(a.name, b.name) for a, b in choice.pairs]
    metrics = compared_metrics(chosen, shared_metrics(runs))
    floor = noise_floor_of(runs)
    own = {a.name: arm_estimates(a, metrics, confidence) for a in chosen}
    comps = compare_pairs(chosen, metrics, noise_floor=floor, not_comparable=fields,
                          confidence=confidence, own=own, pairs=choice.pairs)

    def under_judge(rs: Sequence[RunData]) -> list[Comparison]:
        return _pairs_again(rs, chosen, pair_names, metrics, fields, confidence)

    by_judge, judge_notes = compare_under_judges(runs, under_judge, comps)
    comps = hold_under_every_judge(comps, by_judge)
    sizes = {a.name: arm_size(a.run, a.adapter) for a in chosen}
    checks = compare_checklist(runs, sizes)
    arm_est = _estimates_out(own)
    summary = CompareSummary(runs=[str(r.root) for r in runs], arms=arm_est, metrics=metrics,
                             not_comparable=fields, differences=diffs, noise_floor=floor,
                             checklist=checks, comparisons=comps,
                             pairs_chosen=_pairs_chosen(choice.pairs[0][0].name
                                                        if baseline else None),
                             write_side=_write_side(chosen),
                             many_arms=many_arms(chosen, metrics), judges=list(by_judge),
                             judge_notes=judge_notes,
                             frontier=arms_frontier(chosen, metrics[0] if metrics else None,
                                                    own, _arm_costs(chosen)),
                             floor_ceiling=floor_ceiling(arm_est, _adapter_names(chosen),
                                                         metrics),
                             sequential=_sequential(chosen, metrics, comps, sequential),
                             adapter_versions=adapter_versions(chosen))
    return CompareResult(summary=summary, markdown=render_compare_md(summary))


def compare_blocks(s: CompareSummary) -> list[Block]:
    """What ``lens compare`` says, as report blocks (rendered to Markdown and to HTML)."""
    label: list[Block] = ([Para(fmt.not_comparable_label(s.not_comparable), "nc")]
                          if s.not_comparable else [])
    check_head, *check_rest = layout.checklist(s.checklist)
    arms = list(s.arms)
    out: list[Block] = [
        Heading("lens compare", level=1), *label,
        Bullets([f"{i + 1}. {r}" for i, r in enumerate(s.runs)]),
        Para(f"Judge-noise floor: {fmt.num(s.noise_floor)} (the largest position-swap "
             "disagreement rate of the runs).", "meta"),
        check_head, *label, *check_rest,
        Heading("Arms"), *label,
        Table(["metric", *arms], [[m, *(fmt.est(s.arms[a].get(m)) for a in arms)]
                                  for m in s.metrics], table_id="arms"),
        *_version_blocks(s),
        *floor_ceiling_blocks(s.floor_ceiling, label),
        *([Heading("What the memory wrote"), *label,
           Table(compare_columns(), s.write_side, table_id="write_side")]
          if s.write_side else []),
        *layout.many_arms(s.many_arms, label),
        *_frontier_blocks(s, label),
        Heading("Paired comparisons"),
        Para(f"Compared: {s.pairs_chosen}; these pairs are the confirmatory family (p ± its "
             "Monte Carlo error where it comes from 10,000 scope-clustered resamples). "
             + layout.FAMILIES, "meta"),
    ]
    out += _judges_blocks(s)
    for comp in s.comparisons:
        out += layout.comparison(comp)
    if s.sequential is not None:
        out += sequential_blocks(s.sequential)
    return out + _failed_checks(s)


def _judges_blocks(s: CompareSummary) -> list[Block]:
    """The judges a verdict must hold under, and their notes."""
    out: list[Block] = []
    if len(s.judges) > 1:
        out.append(Para(f"Judges: {', '.join(s.judges)}; a verdict holds only when every "
                        "judge gives it.", "meta"))
    if s.judge_notes:
        out.append(Bullets(list(s.judge_notes), style="meta"))
    return out


def _failed_checks(s: CompareSummary) -> list[Block]:
    fails = [c for c in s.checklist if c.status == "fail"]
    if not fails:
        return []
    return [Para("Failed checks: " + "; ".join(f"{STATUS_LABEL[c.status]} {c.title}"
                                               for c in fails), "fail")]


def adapter_versions(arms: Sequence[Arm]) -> dict[str, str]:
    out: dict[str, str] = {}
    for arm in arms:
        found = recorded(arm.run.manifest).get(arm.adapter)
        if found is not None:
            out[arm.name] = found.brief()
    return out


def _version_blocks(s: CompareSummary) -> list[Block]:
    if not s.adapter_versions:
        return []
    return [Para("Adapters, as each run recorded them (distribution and version, a digest of "
                 "the source files, the libraries they import):", "meta"),
            Bullets([f"{name}: {brief}" for name, brief in s.adapter_versions.items()],
                    style="meta")]


def _write_side(arms: Sequence[Arm]) -> list[list[str]]:
    rows = [arm_row(a.run, a.adapter, a.name) for a in arms]
    return rows if any(not r[-1].startswith("no memory listing") for r in rows) else []


def _pairs_chosen(baseline: str | None) -> str:
    if baseline is not None:
        return f"{baseline} (the baseline) against each other arm"
    return "every pair of arms"


def _arm_costs(arms: Sequence[Arm]) -> dict[str, float | None]:
    """Each arm's total cost per question (agent + memory + judge; None: unknown)."""
    by_run: dict[int, dict[str, AdapterFigures]] = {}
    out: dict[str, float | None] = {}
    for arm in arms:
        adapters = by_run.setdefault(id(arm.run), memory_cost(arm.run)["adapters"])
        figures = adapters.get(arm.adapter)
        out[arm.name] = None if figures is None else figures["cost_per_question"]["total"]
    return out


def _frontier_blocks(s: CompareSummary, label: Sequence[Block]) -> list[Block]:
    if not s.frontier:
        return []
    table = frontier_table(dict(s.frontier))
    return [Heading(table["title"]), *label, Para(FRONTIER_NOTE, "meta"),
            Table([str(c) for c in table["columns"]], table["rows"], table_id="frontier")]


def render_compare_md(s: CompareSummary) -> str:
    return to_markdown(compare_blocks(s))


def render_compare_html(s: CompareSummary) -> str:
    """The comparison as a self-contained page (same style and policy as report.html)."""
    from lens.report.documents.html import CSP, CSS

    return "\n".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>lens compare</title><style>{CSS}</style></head><body>",
        to_html(compare_blocks(s)), "</body></html>"])
