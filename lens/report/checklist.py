"""The pre-flight checklist: what must hold before a number can be trusted.

Each item passes, warns or fails, and says why with the measured value. Thresholds follow the
LENS methodology: at least 100 questions for a single result and 200 per arm for a comparison
(half of that warns, less fails); retrieval must actually happen (mean search results and tool
calls per question above 0), or the score measures the model's own knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence

from lens.report.data import RunData
from lens.report.models import Check, Status

SINGLE_MIN = 100
COMPARE_MIN = 200
JUDGE_WARN = 0.10
JUDGE_FAIL = 0.25
ERROR_WARN = 0.05

_RANK = {"pass": 0, "warn": 1, "fail": 2}


def worst(statuses: Sequence[Status]) -> Status:
    return max(statuses, key=lambda s: _RANK[s]) if statuses else "pass"


def _size_status(n: int, need: int) -> Status:
    if n >= need:
        return "pass"
    return "warn" if n >= need // 2 else "fail"


def _scored_n(run: RunData, adapter: str) -> int:
    """Questions of an arm that count towards its result: scored ones, else all records."""
    rows = run.rows_for(adapter)
    primary = run.primary_metric
    if primary is None:
        return len(rows)
    return sum(1 for r in rows if r.metric(primary) is not None)


def check_sample_size(run: RunData) -> Check:
    sizes = {a: _scored_n(run, a) for a in run.adapters}
    status = worst([_size_status(n, SINGLE_MIN) for n in sizes.values()]) if sizes else "fail"
    value = ", ".join(f"{a}: n={n}" for a, n in sizes.items()) or "no questions"
    return Check(id="sample_size", title=f"n ≥ {SINGLE_MIN} questions for a single result",
                 status=status, value=value,
                 detail="below 100 the margin of error of a rate is wider than ±6 points; "
                        f"warns from {SINGLE_MIN // 2}, fails below")


def check_compare_size(arm_sizes: dict[str, int]) -> Check:
    status = worst([_size_status(n, COMPARE_MIN) for n in arm_sizes.values()])
    if not arm_sizes:
        status = "fail"
    value = ", ".join(f"{a}: n={n}" for a, n in arm_sizes.items()) or "no arms"
    return Check(id="compare_size", title=f"n ≥ {COMPARE_MIN} per arm for a comparison",
                 status=status, value=value,
                 detail="fewer questions per arm cannot separate a 10-point difference at 80% "
                        f"power; warns from {COMPARE_MIN // 2}, fails below")


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
        statuses: list[Status] = []
        for run in runs:
            for a in run.adapters:
                m = _mean([float(getattr(r, attr)) for r in run.rows_for(a)])
                name = f"{run.run_id}:{a}" if len(runs) > 1 else a
                parts.append(f"{name}: {'unknown' if m is None else f'{m:.2f}'}")
                statuses.append("fail" if not m else "pass")
        out.append(Check(
            id=cid, title=title, status=worst(statuses) if statuses else "fail",
            value=", ".join(parts) or "no questions",
            detail="at 0 the score measures the model's own knowledge, not the memory system"))
    return out


def check_judge(runs: Sequence[RunData]) -> Check:
    title = "judge disagreement rate (position swap)"
    parts: list[str] = []
    statuses: list[Status] = []
    for run in runs:
        judge = run.scores.judge if run.scores else None
        rate = judge.disagreement_rate if judge else None
        if rate is None:
            parts.append(f"{run.run_id}: no judge verdicts")
            statuses.append("warn")
            continue
        parts.append(f"{run.run_id}: {rate:.1%} of {judge.pairs if judge else 0} pairs")
        statuses.append("pass" if rate <= JUDGE_WARN else "warn" if rate <= JUDGE_FAIL
                        else "fail")
    return Check(id="judge", title=title, status=worst(statuses), value="; ".join(parts),
                 detail=f"the judge-noise floor: differences below it are ties; warns above "
                        f"{JUDGE_WARN:.0%}, fails above {JUDGE_FAIL:.0%}; without a judge, "
                        "tier-2 metrics are unknown")


def check_failures(runs: Sequence[RunData]) -> Check:
    total = sum(len(r.rows) for r in runs)
    errored = sum(1 for r in runs for row in r.rows if row.record.status == "error")
    units = sum(len(r.unit_errors) for r in runs)
    if total == 0:
        return Check(id="failures", title="failed or errored questions", status="fail",
                     value="no questions recorded", detail="the run produced no records")
    share = errored / total
    status: Status = "pass" if errored == 0 else "warn" if share <= ERROR_WARN else "fail"
    return Check(id="failures", title="failed or errored questions", status=status,
                 value=f"{errored} of {total} questions ({share:.1%}); {units} unit failure(s)",
                 detail="errored questions have unknown scores and are left out of every "
                        "mean, which flatters an arm that fails on hard questions; warns up "
                        f"to {ERROR_WARN:.0%}, fails above; see errors/ in the run directory")


def check_empty_answers(runs: Sequence[RunData]) -> Check:
    """Sessions that ended without any answer text, even after the agent's one reminder."""
    total = sum(len(r.rows) for r in runs)
    empty = sum(1 for r in runs for row in r.rows if row.record.status == "empty_answer")
    title = "empty final answers"
    if total == 0:
        # Unknown, not passed; the failures check already fails a run without records.
        return Check(id="empty_answer", title=title, status="warn",
                     value="no questions recorded", detail="the run produced no records")
    share = empty / total
    status: Status = "pass" if empty == 0 else "warn" if share <= ERROR_WARN else "fail"
    return Check(id="empty_answer", title=title, status=status,
                 value=f"{empty} of {total} questions ({share:.1%})",
                 detail="the agent ended without answer text after a reminder; these score as "
                        "wrong answers. Many usually mean the model server's tool-calling "
                        "template drops the reply after a tool result (see docs/models.md); "
                        f"warns up to {ERROR_WARN:.0%}, fails above")


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
    sizes = {a: _scored_n(run, a) for a in run.adapters}
    return [
        check_scored([run]),
        check_sample_size(run),
        check_compare_size(sizes),
        check_seed([run]),
        *check_retrieval([run]),
        check_judge([run]),
        check_failures([run]),
        check_empty_answers([run]),
    ]


def compare_checklist(runs: Sequence[RunData], arm_sizes: dict[str, int]) -> list[Check]:
    return [
        check_scored(runs),
        check_compare_size(arm_sizes),
        check_seed(runs),
        *check_retrieval(runs),
        check_judge(runs),
        check_failures(runs),
        check_empty_answers(runs),
    ]
