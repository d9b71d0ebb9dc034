"""Fact graders against a large LLM judge on real agents' answers: agreement and cost.

Reads a folder of graded answers (``grading_tasks.jsonl`` and ``claude_scores.jsonl``, joined on
``grade_id``; ``fact_scores`` in ``key_facts`` order: the LENS v2 grades lens's tests find beside
the project) and grades every (question, fact, answer) with:

- ``matcher``: the phrase matcher alone;
- ``local``: the offline grader (lens.scoring.offline_grader), its model probabilities saved so
  thresholds can be studied without running the model again;
- ``judge-local``: lens's per-fact judge prompt (judge_prompts.FACT_GRADE_TEMPLATE) through the
  judge runner with the local model as the judge (grammar-constrained JSON).

Per-fact Cohen's kappa, precision and recall of "present" (grade >= 0.5) and answer-level
Pearson r (mean grade per answer) are given on the whole set and on its two halves: answers are
split by a hash of their grade_id into ``dev`` (used to choose the offline grader's threshold)
and ``held-out`` (never used to tune). Seconds per fact are wall time of the grading over the
facts graded, with the machine's load average.

    python -m bench.fact_grading --data ../shared/lens-v2-grades --graders matcher,local \\
        --threads 2 [--limit N] [--work DIR]

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
from lens.stats.agreement import agreement

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


def half(grade_id: str) -> str:
    return "dev" if hashlib.sha256(grade_id.encode()).digest()[0] % 2 == 0 else "held-out"


def _resume(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


def grade_matcher(rows: list[dict[str, Any]], path: Path, threads: int) -> float:
    from lens.scoring.facts import AnswerText, match_fact

    started = time.perf_counter()
    with path.open("w") as out:
        for r in rows:
            g = 1.0 if match_fact(r["fact"], AnswerText(r["answer"])).matched else 0.0
            out.write(json.dumps({"id": r["id"], "grade": g}) + "\n")
    return time.perf_counter() - started


def grade_local(rows: list[dict[str, Any]], path: Path, threads: int) -> float:
    from lens.scoring.offline_grader import FactTask, OfflineGrader

    done = _resume(path)
    todo = [r for r in rows if r["id"] not in done]
    grader = OfflineGrader(n_threads=threads)
    spent = 0.0
    with path.open("a") as out:
        by_answer: dict[str, list[dict[str, Any]]] = {}
        for r in todo:
            by_answer.setdefault(r["answer_id"], []).append(r)
        for n, group in enumerate(by_answer.values(), 1):
            started = time.perf_counter()
            grades = grader.grade([FactTask(r["question"], r["fact"], r["answer"])
                                   for r in group])
            spent += time.perf_counter() - started
            for r, g in zip(group, grades, strict=True):
                out.write(json.dumps({"id": r["id"], "grade": g.grade, "method": g.method,
                                      "p_present": g.p_present, "p_partial": g.p_partial})
                          + "\n")
            out.flush()
            print(f"local: {n}/{len(by_answer)} answers, {spent:.0f} s", flush=True)
    return spent


def grade_judge_local(rows: list[dict[str, Any]], path: Path, threads: int) -> float:
    from lens import eventloop
    from lens.config import ModelConfig
    from lens.models.llama_backend import LlamaCppClient
    from lens.scoring.judge import Judge, fact_grade_task
    from lens.scoring.judge_prompts import GRADE_POINTS

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
                                      if v else None, "raw": v.raw if v else None}) + "\n")
                out.flush()
                print(f"judge-local: {n}/{len(todo)}, {spent:.0f} s", flush=True)

    eventloop.run(main)
    return spent


def table(rows: list[dict[str, Any]], grades: dict[str, dict[str, Any]], name: str,
          seconds: float | None, graded_by_model: int | None) -> list[list[str]]:
    out = []
    answers = {r["id"]: r["answer_id"] for r in rows}
    for part in ("all", "dev", "held-out"):
        sel = [r for r in rows if part == "all" or r["half"] == part]
        mine = {r["id"]: grades[r["id"]]["grade"] for r in sel if r["id"] in grades}
        labels = {r["id"]: r["label"] for r in sel}
        a = agreement(mine, labels, answers)
        out.append([name, part, str(a.pairs), _f(a.kappa), _f(a.precision), _f(a.recall),
                    _f(a.answer_r), str(a.answers)])
    if seconds is not None:
        n = len(grades)
        per = f"{seconds / n:.2f} s/fact over {n}" if n else "-"
        if graded_by_model:
            per += f" ({seconds / graded_by_model:.2f} s per model-graded fact, " \
                   f"{graded_by_model} of them)"
        out[0].append(per)
    return out


def tune(rows: list[dict[str, Any]], grades: dict[str, dict[str, Any]]) -> str:
    """The offline grader's threshold, and two continuous readings of its probabilities, on
    each half: the threshold is chosen on ``dev`` and read on ``held-out``."""
    from lens.scoring.offline_grader import grade_from

    answers = {r["id"]: r["answer_id"] for r in rows}
    readings: dict[str, Any] = {
        f"present_at {t:.2f}": (lambda g, t=t: grade_from(g["p_present"], g["p_partial"], t))
        for t in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)}
    readings["P(present)"] = lambda g: g["p_present"]
    readings["P(present) + P(partial)/2"] = lambda g: g["p_present"] + g["p_partial"] / 2
    lines = []
    for name, read in readings.items():
        cells = [name]
        for part in ("dev", "held-out"):
            sel = [r for r in rows if r["half"] == part and r["id"] in grades]
            mine = {r["id"]: (read(grades[r["id"]]) if grades[r["id"]].get("method") == "model"
                              else grades[r["id"]]["grade"]) for r in sel}
            a = agreement(mine, {r["id"]: r["label"] for r in sel}, answers)
            cells += [_f(a.kappa), _f(a.precision), _f(a.recall), _f(a.answer_r)]
        lines.append(cells)
    return md_table(["reading", "dev kappa", "dev precision", "dev recall", "dev r",
                     "held-out kappa", "held-out precision", "held-out recall", "held-out r"],
                    lines)


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--graders", default="matcher,local")
    ap.add_argument("--threads", type=int, default=2,
                    help="model threads (0: the idle cores, as lens does by default)")
    ap.add_argument("--limit", type=int, default=0, help="first N facts only (0: all)")
    ap.add_argument("--part", choices=("all", "dev", "held-out"), default="all")
    ap.add_argument("--work", type=Path, default=Path("runs/fact_grading"))
    ap.add_argument("--tune-only", action="store_true",
                    help="only print the threshold table from the local grades in --work")
    args = ap.parse_args()
    rows = load_pairs(args.data)
    if args.part != "all":
        rows = [r for r in rows if r["half"] == args.part]
    if args.limit:
        rows = rows[:args.limit]
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
        seconds = fn(rows, path, args.threads)
        grades = _resume(path)
        model_graded = sum(g.get("method") == "model" for g in grades.values()) or None
        lines += table(rows, grades, name, seconds, model_graded)
        print(f"{name}: load average {os.getloadavg()[0]:.1f} after")
    print(md_table(["grader", "part", "facts", "kappa", "precision", "recall", "answer r",
                    "answers", "cost"], [line + [""] * (9 - len(line)) for line in lines]))
    if "local" in args.graders.split(","):
        print(tune(rows, _resume(args.work / "local.jsonl")))


if __name__ == "__main__":
    main()
