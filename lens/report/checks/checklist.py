"""The pre-flight checklist: what must hold before a number can be trusted.

Each item passes, warns or fails, and says why with the measured value. Thresholds follow the
LENS methodology, in effective terms: at least 100 effective questions for a single result and
200 per arm for a comparison (half of that warns, less fails), where questions of one scope
count for less than independent ones (n_eff = n / (1 + (m̄ − 1)·ICC)); fewer than 5 scopes
warns whatever the n, since no number of questions makes up for few scopes. Retrieval must
actually happen (mean search results and tool calls per question above 0), or the score
measures the model's own knowledge.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from lens.data.config import CacheConfig
from lens.memory.oracle import FLOOR
from lens.report.checks.memory_state_check import check_memory_state
from lens.report.checks.parity import adapter_names, context_parity_checks
from lens.report.checks.reader_check import check_fixed_reader
from lens.report.figures.estimates import question_values, repeat_reducer
from lens.report.foundations.data import QuestionRow, RunData
from lens.report.foundations.shapes import Check, Status
from lens.report.sections.memory_cost import memory_model_usage
from lens.runs.manifest import DatasetBlock, dataset_block
from lens.scoring.foundations.detail import GroundingDetail
from lens.scoring.judging.calibration import calibration_dir, find_calibration
from lens.stats import Clustered
from lens.stats.bounded import scopes_needed

SINGLE_MIN = 100
COMPARE_MIN = 200
MIN_SCOPES = 5
JUDGE_WARN = 0.10
JUDGE_FAIL = 0.25
ERROR_WARN = 0.05
# Unreadable verdicts (after the judge's format retry) are unknown scores; past this share the
# judged metrics rest on the questions the judge happened to answer legibly.
UNREADABLE_FAIL = 0.02

_RANK = {"na": -1, "pass": 0, "warn": 1, "fail": 2}


def worst(statuses: Sequence[Status]) -> Status:
    return max(statuses, key=lambda s: _RANK[s]) if statuses else "pass"


def culprits(statuses: Mapping[str, Status]) -> list[str]:
    """The arms (or runs) whose status is the worst one: who failed or warned the row."""
    status = worst(list(statuses.values()))
    return ([] if status in ("pass", "na")
            else [a for a, s in statuses.items() if s == status])


def blame(statuses: Mapping[str, Status]) -> dict[str, list[str]]:
    """A row's ``failing`` (the arms at its worst level, as :func:`culprits`) and ``warned``
    (the arms that warned a row that fails), so that every arm at any failing level is named."""
    status = worst(list(statuses.values()))
    warned = [a for a, s in statuses.items() if s == "warn"] if status == "fail" else []
    return {"failing": culprits(statuses), "warned": warned}


def _run_culprits(names: Sequence[str], statuses: Sequence[Status]) -> dict[str, list[str]]:
    """The runs that failed or warned a row of whole runs (none named for a single run)."""
    return (blame(dict(zip(names, statuses, strict=True))) if len(names) > 1
            else {"failing": [], "warned": []})


def _arm_name(run: RunData, adapter: str, many: bool) -> str:
    return f"{run.run_id}:{adapter}" if many else adapter


def _arms(runs: Sequence[RunData]) -> Iterator[tuple[RunData, str, str]]:
    """Every arm of the runs: its run, its adapter label and its name in a row (the run's id
    before the label where there are several runs)."""
    many = len(runs) > 1
    for run in runs:
        for adapter in run.adapters:
            yield run, adapter, _arm_name(run, adapter, many)


def _share_status(count: int, share: float) -> Status:
    """An arm with ``count`` questions gone wrong, ``share`` of its questions: passes at none,
    warns up to ERROR_WARN, fails above."""
    return "pass" if count == 0 else "warn" if share <= ERROR_WARN else "fail"


def _row_of_parts(cid: str, title: str, parts: Sequence[str], statuses: Sequence[Status],
                  detail: str, **named: list[str]) -> Check | None:
    """A row made of one part per run that has something to say, at the worst of their
    statuses; None when no run had."""
    if not parts:
        return None
    return Check(id=cid, title=title, status=worst(statuses), value="; ".join(parts),
                 detail=detail, **named)


@dataclass(frozen=True)
class ArmSize:
    """What an arm's result rests on: questions, the independent questions they are worth
    (None when it cannot be estimated), and scopes."""

    n: int
    n_eff: float | None
    scopes: int

    def text(self) -> str:
        # n_eff only where it can be estimated (not from one scope).
        eff = "" if self.n_eff is None else f", n_eff={self.n_eff:.0f}"
        return f"n={self.n}{eff}, {self.scopes} scope{'s' if self.scopes != 1 else ''}"


def _size_status(size: ArmSize | int, need: int) -> Status:
    if isinstance(size, int):
        size = ArmSize(size, size, MIN_SCOPES)
    # Without an estimate of the ICC (one scope) only the questions can be counted, and the
    # scope rule below warns.
    n = size.n if size.n_eff is None else size.n_eff
    status: Status = "pass" if n >= need else "warn" if n >= need // 2 else "fail"
    if size.scopes < MIN_SCOPES:
        status = worst([status, "warn"])
    return status


def arm_size(run: RunData, adapter: str) -> ArmSize:
    """The size of an arm's primary result: its questions (repeats reduced), their effective n
    and scopes; every record when the run is not scored."""
    rows = run.rows_for(adapter)
    primary = run.primary_metric
    if primary is None:
        return ArmSize(len(rows), None, len({r.record.scope_id for r in rows}))
    keys, vals, _ = question_values(rows, primary, repeat_reducer(run))
    if not vals:
        return ArmSize(0, None, 0)
    grouped = Clustered.of(vals, [k[0] for k in keys])
    return ArmSize(len(vals), grouped.n_eff(grouped.icc()), grouped.k)


def _scored_n(run: RunData, adapter: str) -> int:
    """Questions of an arm that count towards its result: scored ones, else all records."""
    return arm_size(run, adapter).n


def _size_value(sizes: Mapping[str, ArmSize | int]) -> str:
    return ", ".join(f"{a}: {s.text() if isinstance(s, ArmSize) else f'n={s}'}"
                     for a, s in sizes.items())


_SIZE_DETAIL = ("n_eff counts questions of one scope as partly redundant (n / (1 + (m̄ − 1)·ICC), "
                "ICC of the primary metric); ")


ONE_SCOPE = "not applicable: one scope"


def _one_scope(sizes: Mapping[str, ArmSize | int]) -> bool:
    """Every arm's result comes from a single scope (a demo, a smoke run): its questions share
    one memory, so the independent questions they are worth cannot be estimated and the
    sample-size rules cannot apply; the row says so instead of failing."""
    return bool(sizes) and all(isinstance(s, ArmSize) and s.scopes == 1 and s.n
                               for s in sizes.values())


def _not_applicable(cid: str, title: str, value: str, detail: str) -> Check:
    return Check(id=cid, title=title, status="na", value=f"{ONE_SCOPE} ({value})",
                 detail=detail + f"; a result to rely on needs ≥ {MIN_SCOPES} scopes")


def _size_check(cid: str, title: str, detail: str, sizes: Mapping[str, ArmSize | int],
                need: int, none: str) -> Check:
    """A sample-size row: each arm against ``need`` effective questions (failed without
    arms, not applicable where every arm has one scope)."""
    each = {a: _size_status(n, need) for a, n in sizes.items()}
    status = worst(list(each.values())) if sizes else "fail"
    value = _size_value(sizes) or none
    if _one_scope(sizes):
        return _not_applicable(cid, title, value, detail)
    return Check(id=cid, **blame(each), title=title, status=status, value=value,
                 detail=detail)


def check_sample_size(run: RunData) -> Check:
    return _size_check(
        "sample_size", f"n_eff ≥ {SINGLE_MIN} for a single result, ≥ {MIN_SCOPES} scopes",
        _SIZE_DETAIL + "below 100 the margin of error of a rate is wider than "
        f"±6 points; warns from {SINGLE_MIN // 2} or under {MIN_SCOPES} scopes, fails below",
        {a: arm_size(run, a) for a in run.adapters}, SINGLE_MIN, "no questions")


def check_compare_size(arm_sizes: Mapping[str, ArmSize | int]) -> Check:
    return _size_check(
        "compare_size", f"n_eff ≥ {COMPARE_MIN} per arm for a comparison, ≥ {MIN_SCOPES} scopes",
        _SIZE_DETAIL + "fewer effective questions per arm cannot separate a "
        f"10-point difference at 80% power; warns from {COMPARE_MIN // 2} or "
        f"under {MIN_SCOPES} scopes, fails below", arm_sizes, COMPARE_MIN, "no arms")


# The differences a verdict-scopes check names the scopes for (|Δ| of the primary metric).
VERDICT_DELTAS = (0.5, 0.2, 0.1)


def check_verdict_scopes(arm_sizes: Mapping[str, ArmSize | int],
                         alpha: float = 0.05) -> Check | None:
    """Whether the arms have the scopes a better/worse verdict needs at all: the bounded-mean
    test (lens.stats.bounded) at α over the pairs of arms cannot reject on fewer scopes than
    ``scopes_needed`` even when every scope differs alike; None with one arm."""
    arms = len(arm_sizes)
    if arms < 2:
        return None
    pairs = arms * (arms - 1) // 2
    each_alpha = alpha / pairs
    need = {d: scopes_needed(d, alpha=each_alpha) for d in VERDICT_DELTAS}
    scopes = min((s.scopes if isinstance(s, ArmSize) else 0) for s in arm_sizes.values())
    status: Status = "pass" if scopes >= (need[0.2] or 0) else "warn"
    shown = ", ".join(f"{n} at |Δ| {d:g}" for d, n in need.items())
    return Check(id="verdict_scopes", title="scopes enough for a better/worse verdict",
                 status=status, failing=[] if status == "pass" else list(arm_sizes),
                 value=f"{scopes} scopes; a verdict at α={alpha:g} over {pairs} pair(s) needs "
                       f"at least {shown}",
                 detail="the bounded-mean test every better/worse verdict passes holds however "
                        "skewed the scope differences are, and so cannot rule out a minority of "
                        "scopes far behind on fewer scopes (the best case: every scope differing "
                        "alike); warns below what a 0.2 difference needs, where every verdict "
                        "of a smaller one is undecided (docs/reports.md, 'Verdicts')")


def check_seed(runs: Sequence[RunData]) -> Check:
    seeds = [r.condition.get("seed") for r in runs]
    title = "same seed"
    if any(s is None for s in seeds):
        return Check(id="seed", title=title, status="warn", value="unknown",
                     detail="a run's manifest records no seed")
    if len(set(seeds)) > 1:
        return Check(id="seed", title=title, status="fail",
                     value=", ".join(f"{r.run_id}: {s}" for r, s in zip(runs, seeds, strict=True)),
                     detail="runs with different seeds differ by more than the memory system")
    detail = ("every arm ran with this seed" if len(runs) > 1
              else "every unit of the run used this seed")
    return Check(id="seed", title=title, status="pass", value=f"seed {seeds[0]}", detail=detail)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def check_retrieval(runs: Sequence[RunData]) -> list[Check]:
    """Mean search results and tool calls per question, per arm, must be above 0."""
    out = []
    for cid, title, attr in (
        ("search_results", "mean search results per question above 0", "search_results"),
        ("tool_calls", "mean tool calls per question above 0", "tool_calls"),
    ):
        parts: list[str] = []
        each: dict[str, Status] = {}
        for run, a, name in _arms(runs):
            m = _mean([float(getattr(r, attr)) for r in run.rows_for(a)])
            control = a in control_arms(run)
            parts.append(f"{name}: {_retrieval_shown(m, control)}")
            each[name] = _retrieval_status(m, control)
        out.append(Check(
            id=cid, title=title, status=worst(list(each.values())) if each else "fail",
            **blame(each),
            value=", ".join(parts) or "no questions",
            detail="at 0 the score measures the model's own knowledge, not the memory system; "
                   f"a control arm (the `{FLOOR}` adapter) is meant to be at 0"))
    return out


CONTROL = "expected for a control arm"


def _retrieval_shown(mean: float | None, control: bool) -> str:
    shown = "unknown" if mean is None else f"{mean:.2f}"
    return f"{shown} ({CONTROL})" if not mean and control else shown


def _retrieval_status(mean: float | None, control: bool) -> Status:
    """Nothing retrieved fails an arm, except a control arm: the floor arm exists to have
    nothing to return, its 0 is the design."""
    if not mean:
        return "na" if control else "fail"
    return "pass"


def control_arms(run: RunData) -> set[str]:
    """The run's arms that run the floor adapter (``null``: remembers nothing)."""
    return {label for label, name in adapter_names(run).items() if name == FLOOR}


def check_judge(runs: Sequence[RunData]) -> Check:
    title = "judge disagreement rate (position swap)"
    parts: list[str] = []
    each: dict[str, Status] = {}
    for run in runs:
        judge = run.scores.judge if run.scores else None
        rate = judge.disagreement_rate if judge else None
        if rate is None:
            parts.append(f"{run.run_id}: no judge verdicts")
            each[run.run_id] = "warn"
            continue
        parts.append(f"{run.run_id}: {rate:.1%} of {judge.pairs if judge else 0} pairs")
        each[run.run_id] = ("pass" if rate <= JUDGE_WARN else "warn" if rate <= JUDGE_FAIL
                            else "fail")
    return Check(id="judge", title=title, status=worst(list(each.values())),
                 **(blame(each) if len(runs) > 1 else {}), value="; ".join(parts),
                 detail="the judge-noise floor: differences below it are smaller than the "
                        f"margin; warns above {JUDGE_WARN:.0%}, fails above "
                        f"{JUDGE_FAIL:.0%}; without a judge, tier-2 metrics are unknown")


def check_judge_unreadable(runs: Sequence[RunData]) -> Check | None:
    """Share of judge verdicts that could not be read; None when no run used a judge."""
    parts: list[str] = []
    statuses: list[Status] = []
    names: list[str] = []
    for run in runs:
        judge = run.scores.judge if run.scores else None
        if judge is None or not judge.model or not judge.verdicts:
            continue
        rate = judge.invalid / judge.verdicts
        parts.append(f"{run.run_id}: {judge.invalid} of {judge.verdicts} ({rate:.1%})")
        statuses.append("fail" if rate > UNREADABLE_FAIL else "pass")
        names.append(run.run_id)
    return _row_of_parts("judge_unreadable", "judge verdicts readable", parts, statuses,
                         **_run_culprits(names, statuses),
                         detail="a verdict unreadable even after a retry with a format "
                                "reminder leaves its score unknown (never a tie); fails above "
                                f"{UNREADABLE_FAIL:.0%}, where the judged metrics would rest on "
                                "the answers the judge happened to grade legibly")


def _cache_of(run: RunData) -> CacheConfig | None:
    config = run.manifest.get("config")
    cache = config.get("cache") if isinstance(config, dict) else None
    try:
        return CacheConfig.model_validate(cache) if isinstance(cache, dict) else None
    except ValidationError:
        return None


def _calibration_part(run: RunData, model: str, name: str) -> tuple[str, Status]:
    """What the stored calibration of ``model`` under the run's judge prompts says, with its
    status (a warning when there is none)."""
    prompts = run.scores.settings.get("judge_prompts") if run.scores else None
    found = (find_calibration(calibration_dir(_cache_of(run)), model, prompts)
             if isinstance(prompts, str) else None)
    if found is None:
        return (f"{name}: not calibrated (lens judge calibrate --judge {model} DATASET)",
                "warn")
    cal, _path = found
    acc = "unknown" if cal.accuracy is None else f"{cal.accuracy:.0%}"
    dis = ("unknown" if cal.position_disagreement is None
           else f"{cal.position_disagreement:.0%}")
    bias = "unknown" if cal.length_bias is None else f"{cal.length_bias:+.2f}"
    return (f"{name}: {cal.status}, accuracy {acc}, position disagreement {dis}, "
            f"length bias {bias} ({cal.pairs} pairs on {cal.dataset.get('label')}, "
            f"{cal.created[:10]})", cal.status)


def check_judge_calibration(runs: Sequence[RunData]) -> Check | None:
    """The stored calibration (``lens judge calibrate``) of each run's judge model under the
    judge prompts it was scored with; None when no run used a judge."""
    parts: list[str] = []
    statuses: list[Status] = []
    for run in runs:
        judge = run.scores.judge if run.scores else None
        if judge is None or not judge.model or run.scores is None:
            continue
        name = f"{run.run_id}: {judge.model}" if len(runs) > 1 else judge.model
        part, status = _calibration_part(run, judge.model, name)
        parts.append(part)
        statuses.append(status)
    return _row_of_parts("judge_calibration", "judge calibrated on answers of known quality",
                         parts, statuses,
                         detail="correct, subtly wrong, stuffed and vague answers built from "
                                "ground truth, asked in both orders; a judge that prefers the "
                                "longer answer, or misses changed numbers, fails here")


def check_fact_grader(runs: Sequence[RunData]) -> Check | None:
    """Who decided fact_recall. The phrase matcher alone misses facts restated in other words,
    so its fact_recall is a lower bound; None when no run is scored."""
    parts: list[str] = []
    statuses: list[Status] = []
    for run in runs:
        if run.scores is None:
            continue
        settings = run.scores.settings
        grader = settings.get("fact_grader") or ("judge" if settings.get("fact_judge")
                                                 else "matcher")
        name = f"{run.run_id}: " if len(runs) > 1 else ""
        if grader == "matcher":
            parts.append(f"{name}phrase matcher only: fact_recall is a lower bound")
            statuses.append("warn")
        elif grader == "local":
            parts.append(f"{name}offline grader: the matcher's credit and its checks of "
                         "figures, ids and dates, the local model's yes/no for the rest")
            statuses.append("pass")
        else:
            parts.append(f"{name}judge grades each key fact ({grader})")
            statuses.append("pass")
    return _row_of_parts("fact_grader", "fact_recall graded per fact by a judge", parts,
                         statuses,
                         detail="the phrase matcher misses paraphrases (real agents restate "
                                "findings in their own words), so matcher-only fact_recall "
                                "understates every arm; install the 'local' extra (the offline "
                                "grader is then the default) or configure a judge "
                                "(scoring.fact_grader: judge is then the default)")


def check_failures(runs: Sequence[RunData]) -> Check:
    """Errored questions per arm: one arm failing often is not hidden by another that never
    does."""
    total = sum(len(r.rows) for r in runs)
    units = sum(len(r.unit_errors) for r in runs)
    if total == 0:
        return Check(id="failures", title="failed or errored questions", status="fail",
                     value="no questions recorded", detail="the run produced no records")
    parts: list[str] = []
    each: dict[str, Status] = {}
    for run, a, name in _arms(runs):
        rows = run.rows_for(a)
        errored = _ended_with(rows, "error")
        share = errored / len(rows) if rows else 0.0
        parts.append(f"{name}: {errored} of {len(rows)} ({share:.1%})")
        each[name] = _share_status(errored, share)
    # A failed unit asked fewer questions than planned: a failure whatever the shares say.
    unit_status: list[Status] = ["fail"] if units else []
    statuses = [*each.values(), *unit_status]
    return Check(id="failures", title="failed or errored questions (per arm)",
                 status=worst(statuses), **blame(each),
                 value=f"{'; '.join(parts)}; {units} unit failure(s)",
                 detail="errored questions have unknown scores and are left out of every "
                        "metric's mean, which flatters an arm that fails on hard questions "
                        "(the composite counts them as failures); warns up "
                        f"to {ERROR_WARN:.0%} in any arm, fails above or when a unit failed; "
                        "see errors/ in the run directory")


def _ended_with(rows: Sequence[QuestionRow], status: str) -> int:
    """How many of the questions ended with ``status``."""
    return sum(1 for row in rows if row.record.status == status)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def check_tool_errors(runs: Sequence[RunData]) -> Check:
    """Questions of each arm with a failed tool call, with the first failure's message: an
    adapter whose search raises on some queries answers from nothing on those, which no
    errored count shows (the session goes on)."""
    parts: list[str] = []
    each: dict[str, Status] = {}
    for run, a, name in _arms(runs):
        rows = run.rows_for(a)
        hit = [r for r in rows if r.tool_errors]
        share = len(hit) / len(rows) if rows else 0.0
        parts.append(f"{name}: {len(hit)} of {len(rows)} questions ({share:.1%})"
                     + _first_tool_errors(hit))
        each[name] = _share_status(len(hit), share)
    return Check(id="tool_errors", title="questions with a failed tool call (per arm)",
                 status=worst(list(each.values())) if each else "warn", **blame(each),
                 value="; ".join(parts) or "no questions",
                 detail="a tool call that raised (the adapter's search or retrieve, or arguments "
                        "the model wrote wrong) gave the agent nothing on that call; warns up to "
                        f"{ERROR_WARN:.0%} of an arm's questions, fails above; the tracebacks "
                        "are in errors/ of the run directory, the count per question in "
                        "questions.csv (tool_errors)")


def _first_tool_errors(hit: Sequence[QuestionRow]) -> str:
    """The failed calls of the questions that had any, and the first one's message."""
    if not hit:
        return ""
    first = hit[0].first_tool_error or ""
    return f", {sum(r.tool_errors for r in hit)} failed call(s), first: {_clip(first)}"


# How the agent words a failed call that reached the memory system (lens/runner/agent.py), as
# against arguments the model wrote wrong, which never reach it.
MEMORY_FAULT = "the memory system "
# Past this share of an arm's calls failing on the memory's side, the arm broke its contract.
MEMORY_FAULT_FAIL = 0.5


def _memory_faults(rows: Sequence[QuestionRow]) -> tuple[list[str | None], int]:
    """The errors of an arm's calls that failed on the memory system's side, and how many of
    its calls reached the memory system (those and the ones that succeeded)."""
    calls = [c for row in rows for c in row.record.tool_calls]
    failed = [c.error for c in calls if not c.ok and (c.error or "").startswith(MEMORY_FAULT)]
    return failed, sum(1 for c in calls if c.ok) + len(failed)


def check_memory_calls(runs: Sequence[RunData]) -> Check:
    """FAIL when most of an arm's calls to its memory system failed on the memory's side
    (raised, timed out, returned malformed results): its answers measure the failures, not the
    memory, and the run exits 1 (lens/report/checks/gate.py) whatever ``--fail-on`` says."""
    parts: list[str] = []
    each: dict[str, Status] = {}
    for run, a, name in _arms(runs):
        failed, reached = _memory_faults(run.rows_for(a))
        share = len(failed) / reached if reached else 0.0
        each[name] = "fail" if failed and share > MEMORY_FAULT_FAIL else "pass"
        if failed:
            parts.append(f"{name}: {len(failed)} of {reached} calls failed ({share:.0%}), "
                         f"first: {_clip(failed[0] or '', 120)}")
    return Check(id="memory_calls", title="the memory system answered its calls (per arm)",
                 status=worst(list(each.values())) if each else "warn", **blame(each),
                 value="; ".join(parts) or ("no call failed" if each else "no questions"),
                 detail="fails when more than half of an arm's calls that reached its memory "
                        "system raised, timed out or returned malformed results (the adapter "
                        "broke its contract; the run exits with status 1); fewer such failures "
                        "show in the failed-tool-call row; the tracebacks are in errors/")


LOST_MARK = "AdapterWorkerLost"


def _lost_to_adapter(row: QuestionRow) -> bool:
    """The question errored because its adapter's process was lost."""
    return row.record.status == "error" and LOST_MARK in (row.record.error or "")


def check_adapter_lost(runs: Sequence[RunData]) -> Check:
    """Questions lost because their adapter's process hung, died or broke the protocol."""
    parts = []
    lost_total = 0
    for run, a, name in _arms(runs):
        lost = sum(1 for row in run.rows_for(a) if _lost_to_adapter(row))
        if lost:
            parts.append(f"{name}: {lost}")
            lost_total += lost
    return Check(id="adapter_lost", title="questions lost to a hung or crashed adapter",
                 status="fail" if lost_total else "pass",
                 failing=[p.rsplit(": ", 1)[0] for p in parts],
                 value=", ".join(parts) or "none",
                 detail="the adapter's process hung past call_timeout_s, died or broke the "
                        "protocol; its unit's remaining questions are errors with the reason")


def _groundings(runs: Sequence[RunData]) -> Iterator[tuple[str, GroundingDetail]]:
    """The evidence-grounding detail of every scored question that has one, after its arm's
    name."""
    many = len(runs) > 1
    for run in runs:
        for row in run.rows:
            grounding = (row.detail_block("evidence_grounding").block(
                "evidence_grounding", GroundingDetail) if row.scores else None)
            if grounding:
                yield _arm_name(run, row.record.adapter, many), grounding


def check_future_leak(runs: Sequence[RunData]) -> Check:
    """FAIL when an adapter handed out an episode it had not been given yet at the question's
    checkpoint: its memory did not come from the stream, so none of its scores can be trusted."""
    title = "future leak: no refs past the question's checkpoint"
    if any(r.scores is None for r in runs):
        return Check(id="future_leak", title=title, status="warn", value="unknown (not scored)",
                     detail="scoring compares every ref with the episodes ingested so far")
    leaks: dict[str, int] = {}
    for name, grounding in _groundings(runs):
        if grounding.future_leak:
            leaks[name] = leaks.get(name, 0) + 1
    if leaks:
        return Check(id="future_leak", title=title, status="fail", failing=list(leaks),
                     value=", ".join(f"{a}: {n} question(s)" for a, n in leaks.items()),
                     detail="the adapter returned episodes not yet ingested when the question was "
                            "asked (it read them from elsewhere); those refs count as ungrounded, "
                            "see detail.evidence_grounding.future_leak in scores.json")
    return Check(id="future_leak", title=title, status="pass", value="none",
                 detail="every ref an adapter returned was ingested by the question's checkpoint")


def check_unknown_refs(runs: Sequence[RunData]) -> Check:
    """FAIL when an adapter handed out refs that name no episode it was given and no synthetic
    prefix it declared (its own row ids, an undeclared summary): citations of them can never
    be grounded, so its grounding and the composite gated on it measure its ids, not its
    memory."""
    title = "refs name episodes or declared synthetic refs"
    if any(r.scores is None for r in runs):
        return Check(id="unknown_refs", title=title, status="warn", value="unknown (not scored)",
                     detail="scoring compares every ref with the dataset's episodes")
    found: dict[str, list[int | str]] = {}
    for name, grounding in _groundings(runs):
        refs = grounding.unknown_refs
        if refs:
            entry = found.setdefault(name, [0, str(refs[0])])
            entry[0] = int(entry[0]) + 1
    if found:
        return Check(id="unknown_refs", title=title, status="fail", failing=list(found),
                     value=", ".join(f"{a}: {n} question(s), e.g. {_clip(str(ex), 80)!r}"
                                     for a, (n, ex) in found.items()),
                     detail="the adapter returned ref ids that are neither an episode id (or "
                            "episode#chunk) of the scope nor start with a prefix it declares in "
                            "CapabilityManifest.synthetic_ref_prefixes; return episode ids, or "
                            "declare the prefix (docs/writing-an-adapter.md); see "
                            "detail.evidence_grounding.unknown_refs in scores.json")
    return Check(id="unknown_refs", title=title, status="pass", value="none",
                 detail="every ref an adapter returned names an episode of its scope or a "
                        "declared synthetic prefix")


def _dataset_blocks(runs: Sequence[RunData]) -> list[tuple[str, DatasetBlock]]:
    """Each run's dataset block, after the run's name where a line speaks of several runs."""
    return [(f"{run.run_id}: " if len(runs) > 1 else "", dataset_block(run.manifest))
            for run in runs]


def _dropped_line(name: str, recorded: DatasetBlock) -> str:
    dropped, asked = recorded.dropped, recorded.questions_asked
    total = f" of {asked + len(dropped)}" if asked is not None else ""
    shown = "; ".join(f"{d.question_id}: {_clip(d.reason, 160)}" for d in dropped[:3])
    more = f"; and {len(dropped) - 3} more (manifest.json)" if len(dropped) > 3 else ""
    return f"{name}{len(dropped)}{total} question(s) dropped as invalid: {shown}{more}"


def check_dropped_questions(runs: Sequence[RunData]) -> Check:
    """WARN when questions of the dataset file were left out of the run (``--drop-invalid-
    questions`` or an errata file's exclusions): the result covers the questions asked, not the
    published dataset whole."""
    parts = [_dropped_line(name, recorded) for name, recorded in _dataset_blocks(runs)
             if recorded.dropped]
    title = "every question of the dataset asked"
    if parts:
        return Check(id="dropped_questions", title=title, status="warn", value="; ".join(parts),
                     detail="questions the dataset gets wrong (evidence streamed after their "
                            "checkpoint, a checkpoint out of range) were left out by "
                            "--drop-invalid-questions or an errata file; the result is over the "
                            "questions asked, and runs of another question set are not "
                            "comparable with it; manifest.json lists every one")
    return Check(id="dropped_questions", title=title, status="pass", value="none dropped",
                 detail="no question of the dataset file was left out")


def check_evidence_after_question(runs: Sequence[RunData]) -> Check | None:
    """WARN, naming the dataset, when questions were asked with evidence dated after their
    ``asked_at`` (kept by a benchmark's importer under ``allow_later_episodes``, as LongMemEval's
    official generation keeps them): a question about time may read "now" as earlier than the
    evidence. Absent when no run has such questions."""
    parts = [f"{name}{len(recorded.evidence_after_asked_at)}"
             f"{'' if recorded.questions_asked is None else f' of {recorded.questions_asked}'}"
             f" in {recorded.id}"
             for name, recorded in _dataset_blocks(runs) if recorded.evidence_after_asked_at]
    if not parts:
        return None
    return Check(id="evidence_after_question",
                 title="questions whose evidence is dated after the question date",
                 status="warn", value="; ".join(parts),
                 detail="kept as the benchmark's official protocol keeps them (the whole "
                        "haystack is ingested before the question; allow_later_episodes in the "
                        "dataset): the agent is told the question's date while its memory holds "
                        "later records; manifest.json lists them (dataset."
                        "evidence_after_asked_at)")


def _status_share(runs: Sequence[RunData], status: str, cid: str, title: str,
                  detail: str) -> Check:
    """Questions of each arm that ended with ``status``: warns up to ERROR_WARN of any arm's
    questions, fails above, and names the arms that did."""
    total = sum(len(r.rows) for r in runs)
    if total == 0:
        # Unknown, not passed; the failures check already fails a run without records.
        return Check(id=cid, title=title, status="warn", value="no questions recorded",
                     detail="the run produced no records")
    count = 0
    parts: list[str] = []
    each: dict[str, Status] = {}
    for run, a, name in _arms(runs):
        rows = run.rows_for(a)
        n = _ended_with(rows, status)
        share = n / len(rows) if rows else 0.0
        count += n
        if n:
            parts.append(f"{name}: {n} of {len(rows)} ({share:.1%})")
        each[name] = _share_status(n, share)
    value = f"{count} of {total} questions ({count / total:.1%})"
    if parts:
        value += f"; {', '.join(parts)}"
    return Check(id=cid, title=title, status=worst(list(each.values())),
                 **blame(each), value=value, detail=detail)


def check_empty_answers(runs: Sequence[RunData]) -> Check:
    """Sessions that ended without any answer text, even after the agent's one reminder."""
    return _status_share(
        runs, "empty_answer", "empty_answer", "empty final answers",
        "the agent ended without answer text after a reminder; these score as wrong answers. "
        "Many usually mean the model server's tool-calling template drops the reply after a "
        f"tool result (see docs/models.md); warns up to {ERROR_WARN:.0%} of an arm's "
        "questions, fails above")


def check_no_memory(runs: Sequence[RunData]) -> Check:
    """Answers given without a single tool call (and without standing context): whatever they
    say, they did not come from the memory system."""
    return _status_share(
        runs, "no_memory", "no_memory", "answers given without consulting memory",
        "an answer given without any tool call (and no standing context) measures the model's "
        "own knowledge, so it counts as a failed question of its arm, like an error; many "
        "usually mean the model server returns tool calls as text (see docs/models.md and "
        "the agent's min_tool_rounds); warns up to "
        f"{ERROR_WARN:.0%} of an arm's questions, fails above")


def check_memory_model_cut(runs: Sequence[RunData]) -> Check | None:
    """WARN when a memory system's own model stopped a reply at max_tokens; absent when no arm
    reports model calls of its own."""
    cut: dict[str, str] = {}
    reported = False
    for run in runs:
        for a, usage in memory_model_usage(run).items():
            if usage is None:
                continue
            reported = True
            if usage["truncated"]:
                name = f"{run.run_id}:{a}" if len(runs) > 1 else a
                cut[name] = f"{name}: {usage['truncated']} of {usage['calls']} calls"
    if not reported:
        return None
    return Check(id="memory_model_cut", title="memory model replies cut at max_tokens",
                 status="warn" if cut else "pass", failing=list(cut),
                 value=", ".join(cut.values()) or "none",
                 detail="a memory system's extraction or agent step that stops at its output "
                        "limit is usually broken JSON or a tool call never made: what it meant "
                        "to store is lost, or the system fails the episode; raise the adapter's "
                        "max_tokens (see the memory-cost section)")


def check_unknown_usage(runs: Sequence[RunData]) -> Check | None:
    """WARN when a model reply's usage block was unreadable: the reply was kept and charged at
    the most the call can have cost, so the run is complete but its token and cost figures
    are upper bounds. Absent when every reply's usage was read."""
    found = [(run, u) for run in runs if (u := run.unknown_usage) is not None]
    if not found:
        return None
    many = len(runs) > 1
    return Check(id="unknown_usage", title="model replies reported their usage",
                 status="warn", failing=[run.run_id for run, _ in found] if many else [],
                 value="; ".join(f"{run.run_id}: {u.text()}" if many else u.text()
                                 for run, u in found),
                 detail="a reply whose only fault is its usage block (a count that is a "
                        "string, negative or absurd) is kept, not retried, its counts charged at "
                        "the most the call can have cost (the prompt's bytes, the request's "
                        "max_tokens), so budgets and the cost cap still hold; the token and cost "
                        "figures of this run are upper bounds; the records name the calls "
                        "(usage_unknown), the manifest counts them (unknown_usage_calls)")


def check_scored(runs: Sequence[RunData]) -> Check:
    missing = [r.run_id for r in runs if r.scores is None]
    if missing:
        return Check(id="scored", title="run scored", status="fail",
                     value=f"no scores.json: {', '.join(missing)}",
                     detail="run `lens score RUN_DIR` first")
    return Check(id="scored", title="run scored", status="pass",
                 value=", ".join(f"tiers {r.scores.tiers}" for r in runs if r.scores),
                 detail="scores.json present")


def run_checklist(run: RunData) -> list[Check]:
    """The checklist of a single run report (its adapters are the arms it may be compared on)."""
    sizes = {a: arm_size(run, a) for a in run.adapters}
    return [
        check_scored([run]),
        check_sample_size(run),
        check_compare_size(sizes),
        *_present(check_verdict_scopes(sizes)),
        check_seed([run]),
        *check_retrieval([run]),
        check_judge([run]),
        *_present(check_judge_unreadable([run]), check_judge_calibration([run]),
                  check_fact_grader([run])),
        check_failures([run]),
        check_tool_errors([run]),
        check_memory_calls([run]),
        check_adapter_lost([run]),
        check_future_leak([run]),
        check_unknown_refs([run]),
        *_present(check_memory_state([run])),
        check_dropped_questions([run]),
        *_present(check_evidence_after_question([run])),
        check_empty_answers([run]),
        *context_parity_checks([run]),
        *_present(check_fixed_reader([run])),
        check_no_memory([run]),
        *_present(check_memory_model_cut([run]), check_unknown_usage([run])),
    ]


def run_failure_checks(run: RunData) -> list[Check]:
    """The rows of :func:`run_checklist` whose FAIL means the run failed its purpose
    (lens/report/checks/gate.py ``RUN_FAILURE_CHECKS``), in the checklist's order: all the exit
    status reads under ``--fail-on never``, without the sample sizes, the judge's calibration or the
    transcripts' context parity."""
    return [
        check_failures([run]),
        check_memory_calls([run]),
        check_adapter_lost([run]),
        check_future_leak([run]),
        check_unknown_refs([run]),
        *_present(check_memory_state([run])),
        check_no_memory([run]),
    ]


def compare_checklist(runs: Sequence[RunData],
                      arm_sizes: Mapping[str, ArmSize | int]) -> list[Check]:
    return [
        check_scored(runs),
        check_compare_size(arm_sizes),
        *_present(check_verdict_scopes(arm_sizes)),
        check_seed(runs),
        *check_retrieval(runs),
        check_judge(runs),
        *_present(check_judge_unreadable(runs), check_judge_calibration(runs),
                  check_fact_grader(runs)),
        check_failures(runs),
        check_tool_errors(runs),
        check_memory_calls(runs),
        check_adapter_lost(runs),
        check_future_leak(runs),
        check_unknown_refs(runs),
        *_present(check_memory_state(runs)),
        check_dropped_questions(runs),
        *_present(check_evidence_after_question(runs)),
        check_empty_answers(runs),
        *context_parity_checks(runs),
        *_present(check_fixed_reader(runs)),
        check_no_memory(runs),
        *_present(check_memory_model_cut(runs), check_unknown_usage(runs)),
    ]


def _present(*checks: Check | None) -> list[Check]:
    return [c for c in checks if c is not None]
