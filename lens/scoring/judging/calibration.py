"""Calibrating a judge: how it ranks answers of known quality, and where the result is kept.

Each question's correct answer is put against each of its flawed answers (``wrong``,
``stuffed``, ``vague``, ``reversed``, ``hedged``, ``bare_list``, ``other_question``; see
calibration_answers) with the criterion the scorer uses for a whole answer, once in each order.
Measured:

- ``accuracy``: share of pairs where both orders prefer the correct answer;
- ``fooled_by_kind``: for each kind of flawed answer, the share of its pairs where the judge
  did not prefer the correct answer in both orders (it preferred the flawed one, or tied);
- ``position_disagreement``: share of pairs whose two orders disagree (the judge-noise floor);
- ``length_bias``: among one-order decisive verdicts, how often the flawed answer wins when it
  is the longer one (by at least a fifth) minus how often it wins when it is the shorter one.
  A judge that reads content scores about 0 whatever its accuracy; one that prefers length
  scores near 1; one that prefers brevity is negative;
- ``unreadable_rate``: share of verdicts unreadable even after the format retry;
- ``fact_credit``: with per-fact grading, the mean grade (present 1, partial 0.5, absent 0)
  the judge gives the key facts in each kind of answer (for ``wrong``, only the facts the
  change contradicts; for ``reversed``, the conclusion). ``fact_grade_gap`` is the correct
  answer's credit minus the most any flawed kind got.

A calibration is valid for one judge model and one wording of the judge prompts. It is stored
in the lens cache folder under ``judge-calibrations/``, keyed by both, where reports look for
the calibration of the judge a run used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lens.data.config import CacheConfig
from lens.data.dataset import Dataset
from lens.models.base import ModelClient
from lens.models.cache import default_cache_dir
from lens.runs.store import atomic_write_text
from lens.scoring.judging.calibration_answers import (
    FLAWED_KINDS,
    LENGTH_MARGIN,
    CalibrationItem,
    build_items,
)
from lens.scoring.judging.judge import Judge, JudgeTask, Verdict, fact_grade_task, pairwise_task
from lens.scoring.judging.judge_prompts import GRADE_POINTS, judge_prompts_hash
from lens.scoring.judging.pairwise import WHOLE_CRITERION, winner
from lens.scoring.text.conclusion import conclusion_as_fact

CALIBRATION_DIR = "judge-calibrations"
Status = Literal["pass", "warn", "fail"]

# Thresholds of the assessment (and of the report's checklist row).
ACCURACY_PASS, ACCURACY_WARN = 0.90, 0.75
DISAGREE_PASS, DISAGREE_WARN = 0.10, 0.25
LENGTH_PASS, LENGTH_WARN = 0.10, 0.25
UNREADABLE_MAX = 0.02
GAP_PASS = 0.5


class PairResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question_id: str
    kind: str
    correct_chars: int
    flawed_chars: int
    # Winner ("correct", "flawed", "tie") with the correct answer as A, then as B; None when
    # the verdict was unreadable or the call failed.
    correct_as_a: str | None
    correct_as_b: str | None
    final: str | None


class Calibration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    judge_prompts: str
    created: str
    dataset: dict[str, Any]
    questions: int
    pairs: int
    verdicts: int
    unreadable: int
    failed_calls: int
    unreadable_rate: float | None
    accuracy: float | None
    accuracy_by_kind: dict[str, float | None]
    fooled_by_kind: dict[str, float | None] = Field(default_factory=dict)
    position_disagreement: float | None
    position_a_rate: float | None
    longer_flawed_win_rate: float | None
    shorter_flawed_win_rate: float | None
    length_bias: float | None
    fact_credit: dict[str, float | None] = Field(default_factory=dict)
    fact_grade_gap: float | None = None
    status: Status
    problems: list[str]
    usage: dict[str, Any]
    results: list[PairResult]


def _rate(hits: Iterable[bool]) -> float | None:
    xs = list(hits)
    return sum(xs) / len(xs) if xs else None


class _Plan:
    def __init__(self, items: list[CalibrationItem], fact_grades: bool) -> None:
        self.pairs: list[tuple[CalibrationItem, str, JudgeTask, JudgeTask]] = []
        # (answer kind, task) for every fact grade asked.
        self.grades: list[tuple[str, JudgeTask]] = []
        for it in items:
            for kind in FLAWED_KINDS:
                flawed = it.flawed.get(kind)
                if flawed is None:
                    continue
                self.pairs.append((it, kind,
                                   pairwise_task(it.question, WHOLE_CRITERION, it.correct, flawed),
                                   pairwise_task(it.question, WHOLE_CRITERION, flawed, it.correct)))
            if not fact_grades:
                continue
            for fact in dict.fromkeys(it.key_facts):
                self.grades.append(("correct", fact_grade_task(it.question, fact, it.correct)))
                for kind in ("stuffed", "vague", "hedged", "bare_list", "other_question"):
                    if kind in it.flawed:
                        self.grades.append((kind, fact_grade_task(it.question, fact,
                                                                  it.flawed[kind])))
            if it.conclusion and "reversed" in it.flawed:
                fact = conclusion_as_fact(it.conclusion)
                self.grades.append(("reversed", fact_grade_task(it.question, fact,
                                                                it.flawed["reversed"])))
            for fact in it.facts_hit_by_change():
                self.grades.append(("wrong", fact_grade_task(it.question, fact,
                                                             it.flawed["wrong"])))

    def tasks(self) -> list[JudgeTask]:
        out = [t for _, _, a, b in self.pairs for t in (a, b)]
        return out + [t for _, t in self.grades]


async def calibrate(client: ModelClient, ds: Dataset, *, dataset_label: str,
                    limit: int | None = 40, concurrency: int = 8,
                    fact_grades: bool = True) -> Calibration:
    """Ask ``client`` about the seeded sample of ``ds`` and measure it."""
    items = build_items(ds, limit)
    plan = _Plan(items, fact_grades)
    judge = Judge(client, None, concurrency=concurrency)
    verdicts = await judge.run(plan.tasks())
    return measure(judge.model, plan, verdicts, ds, dataset_label, len(items),
                   failed_calls=judge.usage.errors)


def _pair_results(model: str, plan: _Plan, verdicts: dict[str, Verdict]
                  ) -> tuple[list[PairResult], list[tuple[bool, bool, bool]], list[bool]]:
    """Each pair's verdicts in both orders; the decisive verdicts as (flawed longer, flawed
    shorter, flawed won); whether each decisive verdict went to the answer shown first."""
    results: list[PairResult] = []
    decisive: list[tuple[bool, bool, bool]] = []
    first_is_a: list[bool] = []
    for it, kind, a_task, b_task in plan.pairs:
        va, vb = verdicts.get(a_task.key(model)), verdicts.get(b_task.key(model))
        w1 = winner(va.value, True, "correct", "flawed") if va else None
        w2 = winner(vb.value, False, "correct", "flawed") if vb else None
        final = None if w1 is None or w2 is None else (w1 if w1 == w2 else "tie")
        flawed = it.flawed[kind]
        results.append(PairResult(question_id=it.question_id, kind=kind,
                                  correct_chars=len(it.correct), flawed_chars=len(flawed),
                                  correct_as_a=w1, correct_as_b=w2, final=final))
        longer = len(flawed) >= LENGTH_MARGIN * len(it.correct)
        shorter = len(it.correct) >= LENGTH_MARGIN * len(flawed)
        for w, correct_is_a in ((w1, True), (w2, False)):
            if w in ("correct", "flawed"):
                decisive.append((longer, shorter, w == "flawed"))
                first_is_a.append((w == "correct") == correct_is_a)
    return results, decisive, first_is_a


def _fact_credit(model: str, plan: _Plan, verdicts: dict[str, Verdict]
                 ) -> tuple[dict[str, float | None], float | None]:
    """The judge's mean fact credit per answer kind, and the correct answer's lead over the
    best-credited flawed one (unknown without grades on both sides)."""
    credit: dict[str, float | None] = {}
    if not plan.grades:
        return credit, None
    for kind in ("correct", *FLAWED_KINDS):
        points = [GRADE_POINTS[v.value] for k, t in plan.grades if k == kind
                  and (v := verdicts.get(t.key(model))) is not None and v.readable]
        credit[kind] = sum(points) / len(points) if points else None
    flawed_credit = [c for k, c in credit.items() if k != "correct" and c is not None]
    correct = credit.get("correct")
    if correct is None or not flawed_credit:
        return credit, None
    return credit, correct - max(flawed_credit)


def _usage(verdicts: list[Verdict]) -> dict[str, Any]:
    costs = [v.cost_usd for v in verdicts]
    return {"calls": sum(v.attempts for v in verdicts if not v.reused),
            "prompt_tokens": sum(v.prompt_tokens for v in verdicts),
            "completion_tokens": sum(v.completion_tokens for v in verdicts),
            "cost_usd": None if any(c is None for c in costs) else sum(c or 0 for c in costs)}


def measure(model: str, plan: _Plan, verdicts: dict[str, Verdict], ds: Dataset,
            dataset_label: str, n_questions: int, *, failed_calls: int = 0) -> Calibration:
    results, decisive, first_is_a = _pair_results(model, plan, verdicts)
    readable = [r for r in results if r.final is not None]
    by_kind = {k: _rate(r.final == "correct" for r in readable if r.kind == k)
               for k in FLAWED_KINDS}
    fooled = {k: None if v is None else 1.0 - v for k, v in by_kind.items()}
    all_verdicts = list(verdicts.values())
    unreadable = sum(not v.readable for v in all_verdicts)
    longer_rate = _rate(won for longer, _, won in decisive if longer)
    shorter_rate = _rate(won for _, shorter, won in decisive if shorter)
    credit, gap = _fact_credit(model, plan, verdicts)
    cal = Calibration(
        model=model, judge_prompts=judge_prompts_hash(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        dataset={"label": dataset_label, "id": ds.dataset_id, "content_hash": ds.content_hash()},
        questions=n_questions, pairs=len(results), verdicts=len(all_verdicts),
        unreadable=unreadable, failed_calls=failed_calls,
        unreadable_rate=unreadable / len(all_verdicts) if all_verdicts else None,
        accuracy=_rate(r.final == "correct" for r in readable),
        accuracy_by_kind=by_kind, fooled_by_kind=fooled,
        position_disagreement=_rate(r.correct_as_a != r.correct_as_b for r in readable),
        position_a_rate=_rate(first_is_a),
        longer_flawed_win_rate=longer_rate, shorter_flawed_win_rate=shorter_rate,
        length_bias=(None if longer_rate is None or shorter_rate is None
                     else longer_rate - shorter_rate),
        fact_credit=credit, fact_grade_gap=gap, status="pass", problems=[],
        usage=_usage(all_verdicts), results=results,
    )
    status, problems = assess(cal)
    return cal.model_copy(update={"status": status, "problems": problems})


def _level(value: float | None, pass_at: float, warn_at: float, *, higher_is_better: bool
           ) -> Status:
    if value is None:
        return "warn"
    if higher_is_better:
        return "pass" if value >= pass_at else "warn" if value >= warn_at else "fail"
    return "pass" if value <= pass_at else "warn" if value <= warn_at else "fail"


def assess(cal: Calibration) -> tuple[Status, list[str]]:
    """Pass, warn or fail, with one reason per measure that is not a pass."""
    checks: list[tuple[Status, str]] = []
    s = _level(cal.accuracy, ACCURACY_PASS, ACCURACY_WARN, higher_is_better=True)
    checks.append((s, f"accuracy {_pct(cal.accuracy)} (pass from {ACCURACY_PASS:.0%})"))
    s = _level(cal.position_disagreement, DISAGREE_PASS, DISAGREE_WARN, higher_is_better=False)
    checks.append((s, f"position disagreement {_pct(cal.position_disagreement)} "
                      f"(pass up to {DISAGREE_PASS:.0%})"))
    bias = None if cal.length_bias is None else abs(cal.length_bias)
    s = _level(bias, LENGTH_PASS, LENGTH_WARN, higher_is_better=False)
    checks.append((s, f"length bias {_num(cal.length_bias)} (pass within ±{LENGTH_PASS})"))
    rate = cal.unreadable_rate
    s = "warn" if rate is None else "pass" if rate <= UNREADABLE_MAX else "fail"
    checks.append((s, f"unreadable verdicts {_pct(rate)} (fail above {UNREADABLE_MAX:.0%})"))
    if cal.fact_credit:
        gap = cal.fact_grade_gap
        s = "warn" if gap is None else "pass" if gap >= GAP_PASS else "warn" if gap > 0 else "fail"
        checks.append((s, f"fact-grade gap {_num(gap)} (correct minus best flawed credit; "
                          f"pass from {GAP_PASS})"))
    rank = {"pass": 0, "warn": 1, "fail": 2}
    worst: Status = max((s for s, _ in checks), key=lambda x: rank[x])
    return worst, [f"{s}: {msg}" for s, msg in checks if s != "pass"]


def _pct(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.1%}"


def _num(v: float | None) -> str:
    return "unknown" if v is None else f"{v:+.2f}"


# -- where calibrations are kept -------------------------------------------------------------

def calibration_dir(cache: CacheConfig | None = None) -> Path:
    """``judge-calibrations/`` beside the model cache (the run's cache path, else the lens
    cache folder)."""
    if cache is not None and cache.path is not None:
        return Path(cache.path).expanduser().parent / CALIBRATION_DIR
    return default_cache_dir() / CALIBRATION_DIR


def calibration_path(folder: Path, model: str, prompts: str) -> Path:
    key = hashlib.sha256(json.dumps([model, prompts]).encode()).hexdigest()[:20]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)[:60]
    return folder / f"{slug}-{key}.json"


def save_calibration(cal: Calibration, folder: Path) -> Path:
    path = calibration_path(folder, cal.model, cal.judge_prompts)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, cal.model_dump_json(indent=1))
    return path


def find_calibration(folder: Path, model: str, prompts: str) -> tuple[Calibration, Path] | None:
    """The stored calibration of ``model`` under these judge prompts, if any (an unreadable
    file counts as none)."""
    path = calibration_path(folder, model, prompts)
    if not path.is_file():
        return None
    try:
        cal = Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, OSError, UnicodeDecodeError):
        return None
    if cal.model != model or cal.judge_prompts != prompts:
        return None
    return cal, path
