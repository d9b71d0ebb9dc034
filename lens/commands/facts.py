"""``lens facts grade ROWS.jsonl --out GRADES.jsonl``: grade key facts in answers, and check a
grader against a user's own labels before trusting it.

Each input row is ``{"id", "question", "fact", "answer"}`` (optionally ``"answer_id"``); each
output row is ``{"id", "grade"}`` with grade 1, 0.5, 0 or null (unreadable verdict). Rows already
in ``--out`` are skipped, so an interrupted grading resumes where it stopped; a grade whose model
call failed is not written (the next run asks again) and the exit status is 1. With
``--labels FILE`` (rows ``{"id", "grade"}``) the agreement is printed: Cohen's kappa, precision
and recall of "present" (grade >= 0.5) and the answer-level Pearson r, answers being the rows'
``answer_id`` or else their id up to the last ``#``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lens.commands.judge import add_judge_server_arguments, usage
from lens.core import eventloop
from lens.core.errors import UserError
from lens.core.jsonguard import JsonRefused, find_lone_surrogate, loads_guarded
from lens.core.redact import quoted, shown
from lens.core.safenames import file_problems
from lens.data.scoring_names import FACT_GRADERS
from lens.stats.fact_agreement import answer_of
from lens.stats.fact_agreement import fact_agreement as agreement

# Each grader on its own: "both" is the judge with the matcher kept beside it.
GRADERS = tuple(g for g in FACT_GRADERS if g != "both")
ROW_FIELDS = ("id", "question", "fact", "answer")
_MAX_PROBLEMS = 20


def register(sub: Any) -> None:
    p = sub.add_parser("facts", help="fact grading: grade key facts in answers, check a grader")
    facts_sub = p.add_subparsers(dest="facts_command", metavar="SUBCOMMAND")
    g = facts_sub.add_parser(
        "grade", help="grade rows of {id, question, fact, answer}; compare with --labels")
    g.add_argument("rows", type=Path, metavar="ROWS.jsonl",
                   help='JSON lines {"id", "question", "fact", "answer"} (optional "answer_id")')
    g.add_argument("--out", type=Path, required=True, metavar="GRADES.jsonl",
                   help='write {"id", "grade"} lines here; rows already in it are skipped')
    g.add_argument("--grader", choices=GRADERS, default=None,
                   help="matcher: the phrase matcher alone; local: the offline grader (the "
                        "matcher's credit, the local model for what it misses); judge: "
                        "lens's per-fact judge prompt on --judge MODEL (default: judge when "
                        "--judge is given, else local)")
    g.add_argument("--judge", metavar="MODEL",
                   help="the judge model for --grader judge, e.g. openai/gpt-4o-mini or "
                        "llama_cpp/qwen2.5-coder-1.5b")
    add_judge_server_arguments(g)
    g.add_argument("--labels", type=Path, metavar="FILE",
                   help='your own grades, JSON lines {"id", "grade"}: print the agreement')
    g.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads of the local model (default: the idle cores)")
    g.add_argument("--no-cache", action="store_true",
                   help="do not read or write lens's model cache (the --out file still resumes)")
    g.set_defaults(handler=_grade)
    p.set_defaults(handler=lambda _args: usage(p))


# One row: a question, a fact and an answer are a few kilobytes.
MAX_ROW_BYTES = 16 * 1024 * 1024


def _jsonl(path: Path, what: str) -> Iterator[tuple[int, Any | None, str | None]]:
    """(line number, value, problem) for each non-blank line of ``path``, each read through the
    JSON guard: strict UTF-8, bounded depth and size, no lone surrogate."""
    if not path.is_file():
        raise UserError(f"{path}: {what} file not found")
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield n, None, f"not UTF-8 text (byte {exc.start} of the line); re-save as UTF-8"
                continue
            lone = find_lone_surrogate(line)
            if lone is not None:
                yield n, None, lone
                continue
            try:
                yield n, loads_guarded(line, what="the line", max_bytes=MAX_ROW_BYTES), None
            except JsonRefused as exc:
                why = str(exc).removeprefix("the line: ")
                yield n, None, (f"not valid JSON ({why.removeprefix('invalid JSON at ')})"
                                if why.startswith("invalid JSON") else why)


def _raise_problems(path: Path, problems: list[str], fix: str) -> None:
    if not problems:
        return
    shown = problems[:_MAX_PROBLEMS]
    more = len(problems) - len(shown)
    lines = [f"{path}: {len(problems)} problem(s):", *(f"  {p}" for p in shown)]
    if more:
        lines.append(f"  … and {more} more")
    lines.append(fix)
    raise UserError(lines)


def read_rows(path: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for n, value, problem in _jsonl(path, "rows"):
        if problem:
            problems.append(f"line {n}: {problem}")
            continue
        if not isinstance(value, dict):
            problems.append(f"line {n}: not a JSON object")
            continue
        bad = False
        for name in ROW_FIELDS:
            if not isinstance(value.get(name), str) or (name == "id" and not value[name]):
                problems.append(f"line {n}: field '{name}' is missing or not a "
                                f"{'non-empty ' if name == 'id' else ''}string")
                bad = True
        if "answer_id" in value and not isinstance(value["answer_id"], str):
            problems.append(f"line {n}: field 'answer_id' is not a string")
            bad = True
        if bad:
            continue
        if value["id"] in seen:
            problems.append(f"line {n}: field 'id' {quoted(value['id'])} repeats line "
                            f"{seen[value['id']]}")
            continue
        seen[value["id"]] = n
        rows.append({k: value[k] for k in (*ROW_FIELDS, "answer_id") if k in value})
    _raise_problems(path, problems, 'fix: every line is a JSON object {"id": "...", '
                    '"question": "...", "fact": "...", "answer": "..."} with a unique id')
    return rows


def read_grades(path: Path, what: str) -> dict[str, float | None]:
    grades: dict[str, float | None] = {}
    problems: list[str] = []
    for n, value, problem in _jsonl(path, what):
        if problem:
            problems.append(f"line {n}: {problem}")
            continue
        if not isinstance(value, dict) or not isinstance(value.get("id"), str):
            problems.append(f"line {n}: field 'id' is missing or not a string")
            continue
        g = value.get("grade", "missing")
        if g is not None and (isinstance(g, bool) or not isinstance(g, int | float)
                              or not 0 <= g <= 1):
            problems.append(f"line {n}: field 'grade' must be a number from 0 to 1 or null "
                            f"(got {quoted(json.dumps(g))})")
            continue
        grades[value["id"]] = None if g is None else float(g)
    _raise_problems(path, problems, 'fix: every line is a JSON object {"id": "...", "grade": '
                    '1 | 0.5 | 0 | null}')
    return grades


def _progress(total: int) -> Callable[[int], None]:
    started = last = time.monotonic()
    tty = sys.stderr.isatty()

    def show(done: int) -> None:
        nonlocal last
        now = time.monotonic()
        # A line a few seconds (and the last one): a log file stays readable.
        if done < total and now - last < (1.0 if tty else 10.0):
            return
        last = now
        rate = f", {(now - started) / done:.2f} s/fact" if done else ""
        end = "\n" if done == total or not tty else "\r"
        print(f"graded {done}/{total} fact(s){rate}", file=sys.stderr, end=end, flush=True)

    return show


def _check_args(args: argparse.Namespace) -> str:
    grader = args.grader or ("judge" if args.judge else "local")
    if grader == "judge" and not args.judge:
        raise UserError("--grader judge needs --judge MODEL (e.g. --judge openai/gpt-4o-mini)")
    if args.judge and grader != "judge":
        raise UserError(f"--judge is only used by --grader judge (got --grader {grader})")
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1 (got {args.threads})")
    return grader


def _grade(args: argparse.Namespace) -> int:
    grader = _check_args(args)
    problems = file_problems(args.out, "--out")
    if problems:
        raise UserError(problems)
    if args.out.exists() and args.out.resolve() in {args.rows.resolve(),
                                                     *([args.labels.resolve()]
                                                       if args.labels else [])}:
        raise UserError(f"--out {shown(args.out, 200)}: is an input file; give a file of "
                        "its own")
    rows = read_rows(args.rows)
    labels = read_grades(args.labels, "labels") if args.labels else None
    done = read_grades(args.out, "grades") if args.out.exists() else {}
    todo = [r for r in rows if r["id"] not in done]
    print(f"{len(rows)} row(s), {len(rows) - len(todo)} already graded in {args.out}, "
          f"{len(todo)} to grade with the {grader} grader", file=sys.stderr)
    grade_with = {"matcher": _grade_matcher, "local": _grade_local, "judge": _grade_judge}[grader]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a", encoding="utf-8") as out:
        def write(row_id: str, grade: float | None) -> None:
            out.write(json.dumps({"id": row_id, "grade": grade}) + "\n")
            out.flush()
            done[row_id] = grade

        failed = grade_with(args, todo, write) if todo else []
    if failed:
        print(f"lens: {len(failed)} grade(s) failed and were not written (run the same command "
              f"again to retry): {failed[0]}", file=sys.stderr)
    if labels is not None:
        answers = {r["id"]: answer_of(r["id"], r.get("answer_id")) for r in rows}
        ours = {i: g for i, g in done.items() if i in answers}
        print(agreement(ours, labels, answers).render())
    return 1 if failed else 0


Writer = Callable[[str, float | None], None]


def _grade_matcher(args: argparse.Namespace, rows: list[dict[str, str]],
                   write: Writer) -> list[str]:
    from lens.scoring.text.facts import AnswerText, match_fact

    show = _progress(len(rows))
    for n, r in enumerate(rows, 1):
        write(r["id"], 1.0 if match_fact(r["fact"], AnswerText(r["answer"])).matched else 0.0)
        show(n)
    return []


def _grade_local(args: argparse.Namespace, rows: list[dict[str, str]],
                 write: Writer) -> list[str]:
    from lens.data.config import CacheConfig
    from lens.scoring.grading.offline_grader import FactTask, OfflineGrader

    grader = OfflineGrader.with_cache(CacheConfig(enabled=not args.no_cache),
                                      n_threads=args.threads)
    by_answer: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_answer[(r["question"], r["answer"])].append(r)
    show = _progress(len(rows))
    failed: list[str] = []
    n = 0
    try:
        for group in by_answer.values():
            tasks = [FactTask(r["question"], r["fact"], r["answer"]) for r in group]
            for r, g in zip(group, grader.grade(tasks), strict=True):
                n += 1
                if g.method == "error":
                    failed.append(f"{r['id']}: {g.reason}")
                else:
                    write(r["id"], g.grade)
                show(n)
    finally:
        grader.close()
    return failed


def _grade_judge(args: argparse.Namespace, rows: list[dict[str, str]],
                 write: Writer) -> list[str]:
    from lens.commands.judge import _judge_settings
    from lens.models.factory import create_client
    from lens.scoring.judging.judge import Judge, fact_grade_task
    from lens.scoring.judging.judge_prompts import GRADE_POINTS

    args.config = None
    cfg, cache = _judge_settings(args)
    client = create_client(cfg, cache=None if args.no_cache else cache)
    show = _progress(len(rows))
    failed: list[str] = []

    async def main() -> None:
        judge = Judge(client, concurrency=cfg.max_concurrency)
        step = max(1, cfg.max_concurrency)
        try:
            for start in range(0, len(rows), step):
                chunk = rows[start:start + step]
                tasks = [fact_grade_task(r["question"], r["fact"], r["answer"]) for r in chunk]
                verdicts = await judge.run(tasks)
                for r, t in zip(chunk, tasks, strict=True):
                    v = verdicts.get(t.key(judge.model))
                    if v is None:
                        failed.append(f"{r['id']}: "
                                      f"{(judge.usage.error_messages or ['call failed'])[-1]}")
                    else:
                        write(r["id"], GRADE_POINTS.get(v.value))
                show(min(start + step, len(rows)))
        finally:
            await client.aclose()

    eventloop.run(main)
    return failed
