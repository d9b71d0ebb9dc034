"""Fact graders against a large LLM judge on real agents' answers: agreement and cost.

Reads a folder of graded answers (``grading_tasks.jsonl`` and ``claude_scores.jsonl``, joined on
``grade_id``; ``fact_scores`` in ``key_facts`` order: the LENS v2 grades lens's tests find beside
the project) and grades every (question, fact, answer) with:

- ``matcher``: the phrase matcher alone;
- ``local``: the offline grader (lens.scoring.grading.offline_grader), its model probabilities saved
  so thresholds can be studied without running the model again;
- ``judge-local``: lens's per-fact judge prompt (judge_prompts.FACT_GRADE_TEMPLATE) through the
  judge runner with the local model as the judge, read by its P(yes) (saved per fact, so the
  grade can be read again at another threshold).

Per-fact Cohen's kappa, precision and recall of "present" (grade >= 0.5) and answer-level
Pearson r (mean grade per answer) are given on the whole set and on its two halves: answers are
split by a hash of their grade_id into ``dev`` (used to choose the offline grader's threshold)
and ``held-out`` (never used to tune). Seconds per fact are wall time of the grading over the
facts graded, with the machine's load average.

    python -m bench.fact_grading --data FOLDER --graders matcher,local \\
        --threads 2 [--limit N] [--part held-out] [--work DIR]

``--limit N`` keeps at most N facts of whole answers chosen by a hash of their ids (the
order bench.grader_agreement samples in), never the file's first facts, which are one scope's.

Grades are kept in ``--work`` (default runs/fact_grading) and a re-run resumes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from bench.common import md_table
from lens.stats.fact_agreement import fact_agreement as agreement

GRADERS = ("matcher", "local", "judge-local")


def load_pairs(folder: Path) -> list[dict[str, Any]]:
    tasks = {}
    for line in (folder / "grading_tasks.jsonl").read_text().splitlines():
        if line.strip():
            t = json.loads(line)
            tasks[t["grade_id"]] = t
    rows = []
    for line in (folder / "claude_scores.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        s = json.loads(line)
        t = tasks.get(s["grade_id"])
        if t is None or len(s["fact_scores"]) != len(t["key_facts"]):
            continue  # a grade that does not line up with its facts is not a label
        for i, (fact, grade) in enumerate(zip(t["key_facts"], s["fact_scores"], strict=True)):
            rows.append({"id": f"{s['grade_id']}#{i}", "answer_id": s["grade_id"],
                         "question": t["question_prompt"], "fact": fact,
                         "answer": t["answer_text"], "label": grade, "half": half(s["grade_id"])})
    return rows


def first_answers(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The facts of whole answers taken in the order of a hash of their ids (the order
    bench.grader_sources.sample draws from), as many answers as keep the facts within
    ``limit`` (at least one answer). The grades file lists one scope's answers after another:
    its first facts would be one scope's."""
    from bench.grader_sources import hash_order

    by_answer: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_answer.setdefault(r["answer_id"], []).append(r)
    out: list[dict[str, Any]] = []
    for answer in hash_order(by_answer):
        if out and len(out) + len(by_answer[answer]) > limit:
            break
        out += by_answer[answer]
    return out


def half(grade_id: str) -> str:
    return "dev" if hashlib.sha256(grade_id.encode()).digest()[0] % 2 == 0 else "held-out"


def _resume(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


Cost = tuple[float, int, int]  # seconds, facts graded by this run, of them by the model


def grade_matcher(rows: list[dict[str, Any]], path: Path, threads: int) -> Cost:
    from lens.scoring.text.facts import AnswerText, match_fact

    started = time.perf_counter()
    with path.open("w") as out:
        for r in rows:
            g = 1.0 if match_fact(r["fact"], AnswerText(r["answer"])).matched else 0.0
            out.write(json.dumps({"id": r["id"], "grade": g}) + "\n")
    return time.perf_counter() - started, len(rows), 0


def grade_local(rows: list[dict[str, Any]], path: Path, threads: int) -> Cost:
    from lens.scoring.grading.offline_grader import FactTask, OfflineGrader

    done = _resume(path)
    todo = [r for r in rows if r["id"] not in done]
    grader = OfflineGrader(n_threads=threads)
    spent = 0.0
    model = 0
    with path.open("a") as out:
        by_answer: dict[str, list[dict[str, Any]]] = {}
        for r in todo:
            by_answer.setdefault(r["answer_id"], []).append(r)
        for n, group in enumerate(by_answer.values(), 1):
            started = time.perf_counter()
            grades = grader.grade([FactTask(r["question"], r["fact"], r["answer"])
                                   for r in group])
            spent += time.perf_counter() - started
            model += sum(g.method == "model" for g in grades)
            for r, g in zip(group, grades, strict=True):
                out.write(json.dumps({"id": r["id"], "grade": g.grade, "method": g.method,
                                      "p_present": g.p_present, "p_partial": g.p_partial})
                          + "\n")
            out.flush()
            print(f"local: {n}/{len(by_answer)} answers, {spent:.0f} s", flush=True)
    return spent, len(todo), model


def grade_judge_local(rows: list[dict[str, Any]], path: Path, threads: int) -> Cost:
    from lens.core import eventloop
    from lens.data.config import ModelConfig
    from lens.models.llama_backend import LlamaCppClient
    from lens.scoring.judging.judge import Judge, fact_grade_task
    from lens.scoring.judging.judge_prompts import GRADE_POINTS

    done = _resume(path)
    todo = [r for r in rows if r["id"] not in done]
    client = LlamaCppClient(ModelConfig(model="llama_cpp/qwen2.5-coder-1.5b",
                                        options={"n_ctx": 4096, "n_threads": threads}))
    spent = 0.0

    async def main() -> None:
        nonlocal spent
        judge = Judge(client, concurrency=1)  # type: ignore[arg-type]
        with path.open("a") as out:
            for n, r in enumerate(todo, 1):
                task = fact_grade_task(r["question"], r["fact"], r["answer"])
                started = time.perf_counter()
                verdicts = await judge.run([task])
                spent += time.perf_counter() - started
                v = verdicts.get(task.key(judge.model))
                out.write(json.dumps({"id": r["id"], "grade": GRADE_POINTS.get(v.value)
                                      if v else None, "raw": v.raw if v else None,
                                      **judge_probabilities(v.raw if v else None)}) + "\n")
                out.flush()
                print(f"judge-local: {n}/{len(todo)}, {spent:.0f} s", flush=True)

    eventloop.run(main)
    return spent, len(todo), len(todo)


def judge_probabilities(raw: str | None) -> dict[str, Any]:
    """A local judge's verdict read from its probabilities (judge_prompts.local_fact_verdict:
    the raw text holds P(yes), P(partly), P(no)) as saved fields, with ``method`` "model", so
    the grade can be read again at another P(yes) threshold without running the model; {} for
    a verdict the judge wrote."""
    try:
        given = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        return {}
    if not isinstance(given, dict) or not isinstance(given.get("p_yes"), float | int):
        return {}
    return {"method": "model", **{k: float(given[k]) for k in ("p_yes", "p_partly", "p_no")
                                  if isinstance(given.get(k), float | int)}}


def _grade(g: dict[str, Any], row: dict[str, Any]) -> float | None:
    """A saved grade; a model grade is read again from its probability, so the table follows
    the grader's thresholds (a long answer's its own) without running the model again."""
    if g.get("method") == "model" and g.get("p_present") is not None:
        from lens.scoring.grading.offline_grader import (
            LONG_PRESENT_AT,
            PRESENT_AT,
            FactTask,
            grade_from,
            long_answer,
        )

        long = long_answer(FactTask(row["question"], row["fact"], row["answer"]))
        at = LONG_PRESENT_AT if long else PRESENT_AT
        return grade_from(g["p_present"], at, at)
    return g["grade"]


def table(rows: list[dict[str, Any]], grades: dict[str, dict[str, Any]], name: str,
          cost: Cost) -> list[list[str]]:
    out = []
    answers = {r["id"]: r["answer_id"] for r in rows}
    for part in ("all", "dev", "held-out"):
        sel = [r for r in rows if part == "all" or r["half"] == part]
        mine = {r["id"]: _grade(grades[r["id"]], r) for r in sel if r["id"] in grades}
        labels = {r["id"]: r["label"] for r in sel}
        a = agreement(mine, labels, answers)
        out.append([name, part, str(a.pairs), _f(a.kappa), _f(a.precision), _f(a.recall),
                    _f(a.answer_r), str(a.answers)])
    seconds, n, by_model = cost
    per = f"{seconds / n:.2f} s/fact over {n} graded now" if n else "all resumed"
    if by_model:
        per += f" ({seconds / by_model:.2f} s per model-graded fact, {by_model} of them)"
    out[0].append(per)
    return out


def _banded(v: float, lo: float, hi: float) -> float:
    return 1.0 if v >= hi else 0.5 if v >= lo else 0.0


def _read(rows: list[dict[str, Any]], grades: dict[str, dict[str, Any]], part: str,
          read: Any) -> Any:
    sel = [r for r in rows if r["half"] == part and r["id"] in grades]
    mine = {r["id"]: (read(grades[r["id"]]) if grades[r["id"]].get("method") == "model"
                      else grades[r["id"]]["grade"]) for r in sel}
    return agreement(mine, {r["id"]: r["label"] for r in sel},
                     {r["id"]: r["answer_id"] for r in rows})


def tune(rows: list[dict[str, Any]], grades: dict[str, dict[str, Any]]) -> str:
    """Readings of the offline grader's probabilities, banded into 1 / 0.5 / 0: a score
    (P(present), or the expected grade P(present) + P(partial)/2) at or above ``hi`` grades 1,
    at or above ``lo`` 0.5. Ranked on ``dev`` by the mean of kappa and answer-level r; the
    ``held-out`` columns were not looked at to choose."""
    scores = {"P(present)": lambda g: g["p_present"],
              "expected": lambda g: g["p_present"] + g["p_partial"] / 2}
    candidates = []
    for sname, score in scores.items():
        for lo10 in range(1, 10):
            for hi10 in range(lo10, 10):
                lo, hi = lo10 / 10, hi10 / 10
                def read(g: dict[str, Any], score: Any = score, lo: float = lo,
                         hi: float = hi) -> float:
                    return _banded(score(g), lo, hi)

                dev = _read(rows, grades, "dev", read)
                rank = ((dev.kappa or 0) + (dev.answer_r or 0)) / 2
                candidates.append((rank, f"{sname} lo {lo:.1f} hi {hi:.1f}", read))
    candidates.sort(key=lambda c: -c[0])
    lines = []
    for _, name, read in candidates[:8]:
        cells = [name]
        for part in ("dev", "held-out"):
            a = _read(rows, grades, part, read)
            cells += [_f(a.kappa), _f(a.precision), _f(a.recall), _f(a.answer_r), str(a.pairs)]
        lines.append(cells)
    return md_table(["reading", "dev kappa", "dev precision", "dev recall", "dev r", "dev n",
                     "held-out kappa", "held-out precision", "held-out recall", "held-out r",
                     "held-out n"], lines)


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--graders", default="matcher,local")
    ap.add_argument("--threads", type=int, default=2,
                    help="model threads (0: the idle cores, as lens does by default)")
    ap.add_argument("--limit", type=int, default=0,
                    help="at most N facts, of whole answers chosen by a hash of their ids "
                         "(0: all)")
    ap.add_argument("--part", choices=("all", "dev", "held-out"), default="all")
    ap.add_argument("--work", type=Path, default=Path("runs/fact_grading"))
    ap.add_argument("--subset-of", metavar="GRADER",
                    help="only the facts GRADER has graded in --work (to compare graders on a "
                         "part of the set)")
    ap.add_argument("--tune-only", action="store_true",
                    help="only print the threshold table from the local grades in --work")
    args = ap.parse_args()
    rows = load_pairs(args.data)
    if args.part != "all":
        rows = [r for r in rows if r["half"] == args.part]
    if args.subset_of:
        graded = _resume(args.work / f"{args.subset_of}.jsonl")
        rows = [r for r in rows if r["id"] in graded]
    if args.limit:
        rows = first_answers(rows, args.limit)
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"{len(rows)} graded facts; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores; {args.threads} thread(s)")
    lines = []
    if args.tune_only:
        print(tune(rows, _resume(args.work / "local.jsonl")))
        return
    for name in args.graders.split(","):
        fn = {"matcher": grade_matcher, "local": grade_local,
              "judge-local": grade_judge_local}[name]
        path = args.work / f"{name}.jsonl"
        cost = fn(rows, path, args.threads)
        lines += table(rows, _resume(path), name, cost)
        print(f"{name}: load average {os.getloadavg()[0]:.1f} after")
    print(md_table(["grader", "part", "facts", "kappa", "precision", "recall", "answer r",
                    "answers", "cost"], [line + [""] * (9 - len(line)) for line in lines]))
    if "local" in args.graders.split(","):
        print(tune(rows, _resume(args.work / "local.jsonl")))


if __name__ == "__main__":
    main()
