"""The fact matcher against a large LLM judge's per-fact grades of real agents' answers.

Reads a folder holding ``grading_tasks.jsonl`` (question, key facts, the agent's answer) and
``claude_scores.jsonl`` (the judge's grade of each key fact: 1, 0.5 or 0), joined on
``grade_id``, such as the per-fact grades published with the LENS benchmark's second version.
A fact counts as present for the judge at a grade of 0.5 or more. Printed: per fact, Cohen's
kappa, precision and recall of the matcher against the judge; per answer, the Pearson r of the
matcher's fact recall and the judge's mean grade.

    python -m bench.v2_agreement FOLDER

The matcher reads the answer's claims as scoring does (lens.scoring.text.claims.split_claims).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

from lens.scoring.text.claims import split_claims
from lens.scoring.text.facts import AnswerText, match_fact

PRESENT_AT = 0.5


@dataclass(frozen=True)
class Agreement:
    facts: int
    answers: int
    judge_present: int
    matcher_present: int
    both: int
    kappa: float | None
    precision: float | None
    recall: float | None
    pearson_r: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return dict(self.__dict__)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def pairs(folder: Path) -> list[tuple[str, list[str], list[float]]]:
    """(answer, key facts, the judge's grades) of every graded answer with key facts."""
    tasks = {t["grade_id"]: t for t in _read(folder / "grading_tasks.jsonl")}
    out = []
    for score in _read(folder / "claude_scores.jsonl"):
        task = tasks.get(score["grade_id"])
        grades = score.get("fact_scores") or []
        if task is None or not task["key_facts"] or len(grades) != len(task["key_facts"]):
            continue
        out.append((task["answer_text"], list(task["key_facts"]), [float(g) for g in grades]))
    return out


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def _kappa(a: list[bool], b: list[bool]) -> float | None:
    n = len(a)
    if not n:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def measure(folder: Path) -> Agreement:
    judge: list[bool] = []
    matcher: list[bool] = []
    recall_m: list[float] = []
    recall_j: list[float] = []
    graded = pairs(folder)
    for answer, facts, grades in graded:
        text = AnswerText(split_claims(answer, None).text)
        found = [match_fact(f, text).matched for f in facts]
        matcher += found
        judge += [g >= PRESENT_AT for g in grades]
        recall_m.append(sum(found) / len(facts))
        recall_j.append(sum(grades) / len(grades))
    both = sum(m and j for m, j in zip(matcher, judge, strict=True))
    return Agreement(
        facts=len(judge), answers=len(graded), judge_present=sum(judge),
        matcher_present=sum(matcher), both=both, kappa=_kappa(matcher, judge),
        precision=both / sum(matcher) if sum(matcher) else None,
        recall=both / sum(judge) if sum(judge) else None,
        pearson_r=_pearson(recall_m, recall_j))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.folder).as_dict(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
