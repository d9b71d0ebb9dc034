"""LongMemEval-V2's leaderboard submission from a lens run scored under the ``longmemeval-v2``
protocol: per adapter and domain, the run folder the leaderboard's step 1
(``leaderboard/build_submission_step_1_single_operating_point.py``) takes, with the files its
``submission_utils.validate_run`` checks:

* ``run_args.json``: ``domain``, ``tier``, ``method`` (the adapter), ``model`` (the reader),
  ``evaluator_model`` (the judge), and lens's own: the reader's mode, whether the reader and the
  judge are the leaderboard's (its checker requires ``qwen3.5-9b`` and ``gpt-5.2`` in them);
* ``per_question.jsonl``: one row a question (id, question type, category, gold, response, its
  boxed answer, unknown, score, memory query seconds);
* ``aggregated_metrics.json``: the harness's aggregates (overall, per category without and with
  the premise questions, abstention overall) and the memory query times;
* ``runtime_inputs/questions.json`` and ``runtime_inputs/haystack.json``: the questions as the
  benchmark's files give them and each question's trajectory ids.

The folder is named ``<method>_<domain>_<tier>``, the name the leaderboard reads the method
from. A question without a score (a judge call failed) stops the export: the leaderboard counts
every question.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict

from lens.core.errors import UserError
from lens.core.safenames import UnsafeName, child
from lens.data.dataset import Dataset, Question
from lens.runs.store import atomic_write_text
from lens.scoring.foundations.run_input import RunInput, load_run
from lens.scoring.foundations.types import SCORES_FILE, RunScores
from lens.scoring.protocols.longmemeval_v2 import (
    ACCURACY,
    LEADERBOARD_JUDGE,
    SECONDS,
    UNKNOWN,
    boxed_answer,
    uses_leaderboard_reader,
)

NON_PREMISE = ("static", "dynamic", "procedure", "gotchas")
PREMISE = ("static-abs", "dynamic-abs", "procedure-abs")
COMBINED = {"static": ("static", "static-abs"), "dynamic": ("dynamic", "dynamic-abs"),
            "procedure": ("procedure", "procedure-abs")}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class SubmissionRow(TypedDict):
    """One line of the leaderboard's per_question.jsonl."""

    id: object
    question_id: object
    question_type: object
    category: object
    answer_gold: str
    response_raw: str
    response_parsed_boxed: str
    is_unknown: bool
    score: float
    score_bool: bool
    memory_query_duration_seconds: float | None


class Breakdown(TypedDict):
    count: int
    pct_correct: float | None
    pct_answered_wrong: float | None
    pct_unknown: float | None


class Overall(TypedDict):
    overall_full_set: float | None
    overall_non_abstention_only: float | None
    overall_abstention_only: float | None
    count_all_questions: int
    count_non_abstention: int
    count_abstention: int


class MemoryQuery(TypedDict):
    avg_seconds: float | None
    max_seconds: float | None
    total_seconds: float | None


class Aggregated(TypedDict):
    """aggregated_metrics.json, in the harness's shape."""

    overall: Overall
    non_abstention_by_category: dict[str, Breakdown]
    abstention_by_category: dict[str, Breakdown]
    combined_abstention_by_category: dict[str, Breakdown]
    abstention_overall: Breakdown
    memory_query: MemoryQuery


class RunArgs(TypedDict):
    """run_args.json: the leaderboard's fields, then lens's."""

    domain: str
    tier: str
    method: str
    model: object
    evaluator_model: str | None
    lens_run_id: str | None
    lens_reader_mode: object
    leaderboard_reader: bool
    leaderboard_judge: bool


# Each (adapter, domain)'s questions with their per_question.jsonl rows.
Groups = dict[tuple[str, str], list[tuple[Question, SubmissionRow]]]


def write_submission(run_dir: Path, out_dir: Path, *, method: str | None = None,
                     force: bool = False) -> list[Path]:
    """The leaderboard's run folders of a scored run, one per (adapter, domain), under
    ``out_dir``; returns them. A UserError names every problem."""
    scores = _scores(run_dir)
    run = load_run(run_dir)
    groups, tier = _groups(run_dir, run, scores)
    folders = _folders(run_dir, out_dir, groups, tier, method, force)
    written = []
    for (adapter, domain), rows in sorted(groups.items()):
        name, folder = folders[(adapter, domain)]
        args = _run_args(domain, tier, name, run, scores)
        _replace(folder, functools.partial(_write, run=run, rows=rows, run_args=args))
        written.append(folder)
    return written


def _groups(run_dir: Path, run: RunInput, scores: RunScores) -> tuple[Groups, str]:
    """The scored questions of the run's first repeat by (adapter, domain), and their one tier;
    a UserError naming every question without a score and a mix of tiers."""
    groups, problems = _scored_rows(run, scores)
    tiers = {str(q.meta.get("tier")) for rows in groups.values() for q, _ in rows}
    if not _one_released_tier(tiers):
        problems.append(f"the questions are of tiers {sorted(tiers)}; a submission is of one "
                        "released tier (small or medium)")
    if problems:
        raise _unwritable(run_dir, problems)
    return groups, tiers.pop()


def _scored_rows(run: RunInput, scores: RunScores) -> tuple[Groups, list[str]]:
    """The rows of the first repeat's scored questions by (adapter, domain), and a problem
    for each question without a score."""
    by_key = {q.key: q for q in scores.questions}
    groups: Groups = {}
    problems: list[str] = []
    for item in run.items:
        if item.record.repeat != 0:
            continue
        q, s = item.question, by_key.get(item.record.key)
        if s is None or s.metrics.get(ACCURACY) is None:
            problems.append(f"{q.question_id} ({item.record.adapter}) has no score")
            continue
        row = _row(q, item.record.answer if item.answered else "", s.metrics)
        groups.setdefault((item.record.adapter, str(q.meta.get("domain"))), []).append((q, row))
    return groups, problems


def _one_released_tier(tiers: set[str]) -> bool:
    return len(tiers) <= 1 and not tiers & {"None", ""}


def _unwritable(run_dir: Path, problems: list[str]) -> UserError:
    """The first ten problems, and a retry hint where a question has no score."""
    return UserError(f"{run_dir}: cannot write the LongMemEval-V2 submission: "
                     f"{len(problems)} problem(s): " + "; ".join(problems[:10])
                     + ("; re-run lens score to retry failed judge calls"
                        if any("no score" in p for p in problems) else ""))


def _folders(run_dir: Path, out_dir: Path, groups: Groups, tier: str, method: str | None,
             force: bool) -> dict[tuple[str, str], tuple[str, Path]]:
    """Each group's method name and run folder; a UserError when ``method`` names one of several
    adapters, a folder name is unsafe, or a folder exists (without ``force``)."""
    if method is not None:
        _check_one_adapter(run_dir, groups)
    names = {key: _method_name(method or key[0]) for key in groups}
    folders = _folder_paths(run_dir, out_dir, names, tier)
    present = sorted(str(f) for f in folders.values() if f.exists())
    if present and not force:
        raise UserError(f"{', '.join(present)}: already exist(s); pass --force to replace")
    return {key: (names[key], folders[key]) for key in groups}


def _check_one_adapter(run_dir: Path, groups: Groups) -> None:
    """Refuse --method for a run of several adapters (each is a method of its own)."""
    adapters = sorted({a for a, _ in groups})
    if len(adapters) > 1:
        raise UserError(f"{run_dir}: --method names one method, and the run has "
                        f"{len(adapters)} adapters ({', '.join(adapters)}): leave --method out "
                        "(each adapter is then a method, by its label)")


def _method_name(label: str) -> str:
    """A method's name as a folder may carry it."""
    return _UNSAFE.sub("-", label).strip("-") or "method"


def _folder_paths(run_dir: Path, out_dir: Path, names: dict[tuple[str, str], str], tier: str
                  ) -> dict[tuple[str, str], Path]:
    """Each group's folder, named ``METHOD_DOMAIN_TIER``; refused when a name is unsafe."""
    try:
        # The domain and tier come from the dataset's question meta: checked as a file name.
        return {key: child(out_dir, f"{name}_{key[1]}_{tier}", "a submission folder")
                for key, name in names.items()}
    except UnsafeName as exc:
        raise UserError(f"{run_dir}: cannot write the LongMemEval-V2 submission: {exc}; the "
                        "questions' meta.domain and meta.tier name its folders") from None


def _run_args(domain: str, tier: str, method: str, run: RunInput, scores: RunScores
              ) -> RunArgs:
    """run_args.json: the leaderboard's fields, then lens's (the reader's mode, and whether the
    reader and the judge are the leaderboard's)."""
    agent = run.manifest.config.get("agent") or {}
    mode = agent.get("mode", "tool_agent")
    return {"domain": domain, "tier": tier, "method": method, "model": agent.get("model"),
            "evaluator_model": scores.judge.model, "lens_run_id": run.manifest.run_id,
            "lens_reader_mode": mode,
            "leaderboard_reader": uses_leaderboard_reader(agent.get("model"), mode),
            "leaderboard_judge": LEADERBOARD_JUDGE in str(scores.judge.model).lower()}


def _replace(folder: Path, write: Callable[[Path], None]) -> None:
    """``folder`` written whole by ``write`` into a folder beside it, then put in its place."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        write(tmp)
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _scores(run_dir: Path) -> RunScores:
    path = run_dir / SCORES_FILE
    if not path.is_file():
        raise UserError(f"{run_dir}: not scored yet; run `lens score {run_dir} --tier 2 "
                        "--protocol longmemeval-v2` first")
    scores = RunScores.model_validate_json(path.read_text(encoding="utf-8"))
    protocol = (scores.settings.get("protocol") or {}).get("name")
    if protocol != "longmemeval-v2":
        raise UserError(f"{path}: scored under {protocol or 'lens'}, not longmemeval-v2; run "
                        f"`lens score {run_dir} --tier 2 --protocol longmemeval-v2` first")
    return scores


def _row(q: Question, answer: str, metrics: Mapping[str, Any]) -> SubmissionRow:
    final = boxed_answer(answer)
    score = float(metrics.get(ACCURACY) or 0.0)
    return {"id": q.meta.get("question_id", q.question_id), "question_id":
            q.meta.get("question_id", q.question_id), "question_type": q.meta.get("question_type"),
            "category": q.meta.get("category"), "answer_gold": q.ground_truth.canonical_answer,
            "response_raw": answer, "response_parsed_boxed": final,
            "is_unknown": metrics.get(UNKNOWN) == 1.0, "score": score,
            "score_bool": score == 1.0,
            "memory_query_duration_seconds": metrics.get(SECONDS)}


def _breakdown(rows: list[SubmissionRow]) -> Breakdown:
    n = len(rows)
    if not n:
        return {"count": 0, "pct_correct": None, "pct_answered_wrong": None, "pct_unknown": None}
    unknown = sum(1 for r in rows if r["is_unknown"])
    correct = sum(1 for r in rows if r["score_bool"] and not r["is_unknown"])
    return {"count": n, "pct_correct": correct / n, "pct_answered_wrong": (n - correct - unknown)
            / n, "pct_unknown": unknown / n}


def _mean(rows: Iterable[SubmissionRow], key: Literal["score"]) -> float | None:
    values = [r[key] for r in rows]
    return sum(values) / len(values) if values else None


def aggregated(rows: list[SubmissionRow]) -> Aggregated:
    """The harness's aggregates of per-question rows (premise questions: categories ``-abs``)."""
    premise = [r for r in rows if r["category"] in PREMISE]
    plain = [r for r in rows if r["category"] not in PREMISE]
    return {
        "overall": {"overall_full_set": _mean(rows, "score"),
                    "overall_non_abstention_only": _mean(plain, "score"),
                    "overall_abstention_only": _mean(premise, "score"),
                    "count_all_questions": len(rows), "count_non_abstention": len(plain),
                    "count_abstention": len(premise)},
        "non_abstention_by_category": _by_category(plain, {c: (c,) for c in NON_PREMISE}),
        "abstention_by_category": _by_category(premise, {c: (c,) for c in PREMISE}),
        "combined_abstention_by_category": _by_category(rows, COMBINED),
        "abstention_overall": _breakdown(premise),
        "memory_query": _memory_query(rows),
    }


def _by_category(rows: list[SubmissionRow], categories: Mapping[str, tuple[str, ...]]
                 ) -> dict[str, Breakdown]:
    """The breakdown of the rows of each named category (one or several of the rows')."""
    return {name: _breakdown([r for r in rows if r["category"] in members])
            for name, members in categories.items()}


def _memory_query(rows: list[SubmissionRow]) -> MemoryQuery:
    """The mean, longest and total time of the memory's queries, where the rows recorded it."""
    seconds = [r["memory_query_duration_seconds"] for r in rows
               if r["memory_query_duration_seconds"] is not None]
    if not seconds:
        return {"avg_seconds": None, "max_seconds": None, "total_seconds": None}
    return {"avg_seconds": sum(seconds) / len(seconds), "max_seconds": max(seconds),
            "total_seconds": sum(seconds)}


def _write(folder: Path, run: RunInput, rows: list[tuple[Question, SubmissionRow]],
           run_args: RunArgs) -> None:
    (folder / "runtime_inputs").mkdir(parents=True)
    plain = [r for _, r in rows]
    atomic_write_text(folder / "run_args.json", json.dumps(run_args, indent=2))
    atomic_write_text(folder / "aggregated_metrics.json", json.dumps(aggregated(plain), indent=2))
    atomic_write_text(folder / "per_question.jsonl",
                      "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in plain))
    atomic_write_text(folder / "runtime_inputs" / "questions.json",
                      json.dumps([_source_question(q) for q, _ in rows], indent=1,
                                 ensure_ascii=False))
    atomic_write_text(folder / "runtime_inputs" / "haystack.json",
                      json.dumps(_haystacks(run.dataset, [q for q, _ in rows]), indent=1))


def _source_question(q: Question) -> dict[str, object]:
    """The question as the benchmark's questions file gives it (from what the importer kept)."""
    m = q.meta
    out = {"id": m.get("question_id", q.question_id), "domain": m.get("domain"),
           "environment": m.get("environment"), "question_type": m.get("question_type"),
           "question": m.get("raw_question", q.prompt), "answer": q.ground_truth.canonical_answer,
           "eval_function": m.get("eval_function")}
    if m.get("image") is not None:
        out["image"] = m["image"]
    out.update(m.get("lme_v2") or {})
    return out


def _haystacks(dataset: Dataset, questions: list[Question]) -> dict[str, list[str]]:
    scopes = {s.scope_id: s for s in dataset.scopes}
    return {str(q.meta.get("question_id", q.question_id)):
            list(scopes[q.scope_id].meta.get("haystack") or []) for q in questions}
