"""Fact graders against several sources' judges, each threshold chosen leaving the source out.

Reads every graded source bench.grader_sources finds beside the project (the LENS v2 per-fact
grades, MemoryAgentBench's LongMemEval and RULER QA verdicts, Memobase's LoCoMo verdicts),
grades each (question, fact, answer) with the chosen graders, and prints per source and grader:
per-fact Cohen's kappa, precision and recall of "present" (grade >= 0.5) and the answer-level
Pearson r of the grader's fact recall against the judge's mean grade, each with a 95%
bootstrap interval over the source's answers; and, where the source graded the same answers
twice, the same statistics of its second judge against its first.

Leave one source out: a grader with a threshold (``local``, ``judge-local`` and the variants
read from them: the model's P(yes) of lens's per-fact judge prompt, shipped at
``LOCAL_YES_AT``, the offline grader's ``present_at``) is read, on each source, at the
threshold that does best on the other sources (the mean over them of (kappa + r) / 2), never
at one chosen on the source itself, and at the threshold lens ships. On ``lens-v2`` only the
held-out half is measured: the offline grader's version 1 was chosen on its dev half
(bench.fact_grading), which lends itself to the other sources' choices unless
``--measured-only`` leaves it ungraded.

    python -m bench.grader_agreement --graders matcher,local --answers 60 \\
        [--threads 2] [--work runs/grader_agreement] [--sources DIR] [--lens-v2 DIR] \\
        [--measured-only]

Graders: ``matcher``; ``local`` (the shipped offline grader); ``local-open`` and ``either``
(the model also reads pairs the shipped grader settles without it); ``judge-local`` (lens's
per-fact judge prompt with the local model as the judge, read from its P(yes)); and the
variants of bench.grader_variants (``split``, ``matcher-dates``, ``split-dates``,
``matcher+yes``, ``offline-v2``, ``local+yes``), read from the saved grades of the graders
they name.

``--answers N`` grades at most N answers of each source (chosen by a hash of their ids); grades
are kept in ``--work`` and a re-run resumes. ``--subset-of GRADER`` reports every grader on the
pairs a slow grader reached. Seconds per fact are wall time over the facts the
model graded, with the machine's load average: under load they are not a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import md_table
from bench.fact_grading import half
from bench.grader_sources import (
    LENS_V2_DIR,
    MEMOBASE_DIR,
    SOURCES_DIR,
    ZEP_DIR,
    GradedFact,
    lens_v2_scope,
    load_all,
    sample,
)
from bench.grader_variants import VARIANTS, variant
from lens.scoring.grading.offline_grader import PRESENT_AT
from lens.scoring.judging.judge_prompts import LOCAL_YES_AT, judge_prompts_hash
from lens.stats.fact_agreement import FactAgreement, fact_agreement
from lens.stats.resample import rng_for

GRADERS = ("matcher", "local")
THRESHOLDS = tuple(round(t / 20, 2) for t in range(1, 20))
RESAMPLES = 500


@dataclass(frozen=True)
class Interval:
    value: float | None
    low: float | None
    high: float | None

    def text(self) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}]"


def measured(rows: list[GradedFact]) -> list[GradedFact]:
    """The rows a source's agreement is reported on (lens-v2: its held-out half only)."""
    return [r for r in rows if r.source != "lens-v2" or half(r.answer_id) == "held-out"]


# --- graders -------------------------------------------------------------------------------

Saved = dict[str, dict[str, Any]]


def _resume(path: Path) -> Saved:
    if not path.exists():
        return {}
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


def grade_matcher(rows: list[GradedFact], path: Path, threads: int) -> tuple[float, int]:
    from lens.scoring.text.facts import AnswerText, match_fact

    # Instant, so graded again; the grades of rows outside this run (other sources, a larger
    # sample) are kept for a --report-only of them all.
    saved = _resume(path)
    for r in rows:
        text = AnswerText(r.answer)
        found = any(match_fact(form, text).matched for form in r.forms())
        saved[r.id] = {"id": r.id, "grade": 1.0 if found else 0.0}
    path.write_text("".join(json.dumps(g) + "\n" for g in saved.values()))
    return 0.0, 0


def grade_local(rows: list[GradedFact], path: Path, threads: int,
                reread: Callable[[Any], bool] | None = None) -> tuple[float, int]:
    """``reread``: which of the shipped grader's grades the model reads again (the variants
    ``local-open`` and ``either``: the shipped grader never asks the model about them)."""
    from lens.scoring.grading.offline_grader import FactTask, OfflineGrader

    done = _resume(path)
    todo = [r for r in rows if r.id not in done]
    grader = OfflineGrader(n_threads=threads)
    spent, by_model = 0.0, 0
    groups: dict[str, list[GradedFact]] = {}
    for r in todo:
        groups.setdefault(f"{r.source}/{r.answer_id}", []).append(r)
    with path.open("a") as out:
        # Short answers first: a run cut short has graded the most answers it could.
        ordered = sorted(groups.values(), key=lambda g: len(g[0].answer))
        for n, group in enumerate(ordered, 1):
            started = time.perf_counter()
            tasks = [(r, FactTask(r.question, form, r.answer)) for r in group
                     for form in r.forms()]
            graded = grader.grade([t for _, t in tasks])
            if reread is not None:
                graded = [grader._ask(t, grader.key(t)) if reread(g) else g
                          for (_, t), g in zip(tasks, graded, strict=True)]
            spent += time.perf_counter() - started
            by_model += sum(g.method == "model" for g in graded)
            for r in group:
                # The best-graded accepted form stands for the fact.
                best = max((g for (row, _), g in zip(tasks, graded, strict=True) if row is r),
                           key=_rank)
                out.write(json.dumps({"id": r.id, "grade": best.grade, "method": best.method,
                                      "p_present": best.p_present}) + "\n")
            out.flush()
            if n % 10 == 0:
                print(f"local: {n}/{len(groups)} answers, {spent:.0f} s", flush=True)
    return spent, by_model


def _rank(g: Any) -> tuple[int, float]:
    # A form the cheap checks credit outranks any model reading; among model readings the
    # highest P(present) stands, so a re-read at another threshold stays the best form's.
    return (1 if g.method != "model" and g.grade == 1.0 else 0, g.p_present or 0.0)


def grade_local_open(rows: list[GradedFact], path: Path, threads: int) -> tuple[float, int]:
    """The model also reads the facts the matcher alone settles as misses (bare figures, ids,
    dates; restated facts it rejects)."""
    return grade_local(rows, path, threads,
                       reread=lambda g: g.method == "matcher" and g.grade == 0.0)


def grade_either(rows: list[GradedFact], path: Path, threads: int) -> tuple[float, int]:
    """An ensemble: credit when the matcher credits or the model's P(present) reaches the
    threshold, the model reading every pair the matcher does not credit (short phrases and
    abstentions too: the shipped grader settles those without it)."""
    return grade_local(rows, path, threads,
                       reread=lambda g: g.method != "empty" and g.grade != 1.0)


def grade_judge_local(rows: list[GradedFact], path: Path, threads: int) -> tuple[float, int]:
    """lens's per-fact judge prompt with the local model as the judge, through
    bench.fact_grading's runner (the judge reads the gold with its accepted forms joined by
    "or", as the source wrote it)."""
    from bench.fact_grading import grade_judge_local as run_judge

    tasks = [{"id": r.id, "answer_id": r.answer_id, "question": r.question,
              "fact": " or ".join(r.forms()), "answer": r.answer} for r in interleaved(rows)]
    spent, _, by_model = run_judge(tasks, path, threads)
    return spent, by_model


def interleaved(rows: list[GradedFact]) -> list[GradedFact]:
    """The rows taken from each source in turn, shortest answers first: a run cut short has
    graded about as many answers of every source."""
    by_source: dict[str, list[GradedFact]] = {}
    for r in sorted(rows, key=lambda r: (len(r.answer), r.id)):
        by_source.setdefault(r.source, []).append(r)
    queues = list(by_source.values())
    return [q[n] for n in range(max(map(len, queues), default=0)) for q in queues
            if n < len(q)]


GRADE_FNS: dict[str, Callable[[list[GradedFact], Path, int], tuple[float, int]]] = {
    "matcher": grade_matcher, "local": grade_local, "local-open": grade_local_open,
    "either": grade_either, "judge-local": grade_judge_local}


def probability(saved: dict[str, Any]) -> float | None:
    """The model's probability a saved grade rests on: P(present) of the offline grader's
    prompt, P(yes) of lens's judge prompt."""
    p = saved.get("p_present", saved.get("p_yes"))
    return None if p is None else float(p)


def reading(saved: dict[str, Any], threshold: float | None) -> float | None:
    """A saved grade, a model grade read again at ``threshold`` (None: as saved)."""
    p = probability(saved)
    if threshold is not None and saved.get("method") == "model" and p is not None:
        return 1.0 if p >= threshold else 0.0
    return saved.get("grade")


def shipped_at(name: str) -> float:
    """The threshold lens ships for the probability grader ``name`` reads."""
    bases = VARIANTS[name][0] if name in VARIANTS else (name,)
    return LOCAL_YES_AT if "judge-local" in bases else PRESENT_AT


def saved_path(work: Path, name: str) -> Path:
    """Where a grader's grades are kept in ``work``; the local judge's under lens's judge
    prompts hash, so verdicts reached under other wording are never resumed."""
    if name == "judge-local":
        return work / f"judge-local-{judge_prompts_hash()}.jsonl"
    return work / f"{name}.jsonl"


def thresholded(saved: Saved) -> bool:
    return any(g.get("method") == "model" for g in saved.values())


# --- statistics ----------------------------------------------------------------------------

def agree(rows: Sequence[GradedFact], grades: dict[str, float | None],
          labels: dict[str, float | None]) -> FactAgreement:
    return fact_agreement({r.id: grades.get(r.id) for r in rows if r.id in grades},
                          {r.id: labels[r.id] for r in rows},
                          {r.id: f"{r.source}/{r.answer_id}" for r in rows})


def with_intervals(rows: list[GradedFact], grades: dict[str, float | None],
                   labels: dict[str, float | None], label: str
                   ) -> tuple[FactAgreement, dict[str, Interval]]:
    """The agreement and 95% intervals of kappa, precision, recall and answer r from a
    bootstrap over answers, seeded by the source, the grader and the row ids."""
    point = agree(rows, grades, labels)
    by_answer: dict[str, list[GradedFact]] = {}
    for r in rows:
        by_answer.setdefault(r.answer_id, []).append(r)
    keys = sorted(by_answer)
    rng = rng_for("grader_agreement", label, *keys)
    draws: dict[str, list[float]] = {"kappa": [], "precision": [], "recall": [],
                                     "answer_r": []}
    for _ in range(RESAMPLES):
        picked = rng.integers(0, len(keys), len(keys))
        boot: list[GradedFact] = []
        for n, k in enumerate(picked):
            # Each draw of an answer is an answer of its own in the replicate.
            boot += [GradedFact(r.source, f"{r.id}@{n}", f"{r.answer_id}@{n}", "", "", "",
                                r.label) for r in by_answer[keys[k]]]
        g = {f"{r.id}@{n}": grades.get(r.id) for n, k in enumerate(picked)
             for r in by_answer[keys[k]] if r.id in grades}
        lab = {f"{r.id}@{n}": labels[r.id] for n, k in enumerate(picked)
               for r in by_answer[keys[k]]}
        a = agree(boot, g, lab)
        for name in draws:
            v = getattr(a, name)
            if v is not None:
                draws[name].append(v)
    out = {}
    for name, values in draws.items():
        v = getattr(point, name)
        if v is None or len(values) < RESAMPLES // 2:
            out[name] = Interval(v, None, None)
        else:
            lo, hi = np.percentile(values, [2.5, 97.5])
            out[name] = Interval(v, float(lo), float(hi))
    return point, out


def choose_threshold(sources: dict[str, list[GradedFact]], saved: Saved, left_out: str,
                     prefer: float | None = None) -> float | None:
    """The threshold that does best on the sources other than ``left_out``; among thresholds
    that do equally well there, the one nearest ``prefer`` (the shipped threshold, chosen on
    none of these sources), else the lowest."""
    others = [s for s in sources if s != left_out]
    if not thresholded(saved) or not others:
        return None
    best: tuple[float, float] | None = None
    # Where the other sources cannot tell thresholds apart (short answers the model reads far
    # from any threshold), the lowest of a tie would be an arbitrary extreme, not a choice.
    order = sorted(THRESHOLDS, key=lambda t: abs(t - prefer)) if prefer is not None \
        else THRESHOLDS
    for t in order:
        scores = []
        for s in others:
            rows = [r for r in choice_rows(sources[s]) if r.id in saved]
            if not rows:
                continue
            a = agree(rows, {r.id: reading(saved[r.id], t) for r in rows},
                      {r.id: r.label for r in rows})
            scores.append(((a.kappa or 0.0) + (a.answer_r or 0.0)) / 2)
        if scores and (best is None or np.mean(scores) > best[0]):
            best = (float(np.mean(scores)), t)
    return None if best is None else best[1]


def choice_rows(rows: list[GradedFact]) -> list[GradedFact]:
    """The rows a source lends to the choice for other sources (lens-v2: its dev half, on
    which the prompt was chosen; the others: all)."""
    return [r for r in rows if r.source != "lens-v2" or half(r.answer_id) == "dev"]


# --- the report ----------------------------------------------------------------------------

def by_scope(rows: list[GradedFact], saved: dict[str, Saved]) -> str:
    """Each ``lens-v2`` scope's agreement, at the threshold lens ships only: nothing is chosen
    on a scope. Its held-out half is four scopes' answers, which the graders do not find
    equally hard."""
    lines = []
    v2 = [r for r in measured(rows) if r.source == "lens-v2"]
    for scope in sorted({lens_v2_scope(r.answer_id) for r in v2}):
        mine = [r for r in v2 if lens_v2_scope(r.answer_id) == scope]
        labels = {r.id: r.label for r in mine}
        for name, grades in saved.items():
            graded = [r for r in mine if r.id in grades]
            if not graded:
                continue
            t = shipped_at(name) if thresholded(grades) else None
            read = {r.id: reading(grades[r.id], t) for r in graded}
            _, iv = with_intervals(graded, read, labels, f"lens-v2/{scope}/{name}")
            lines.append([scope, name, "—" if t is None else f"{t:.2f} (shipped)",
                          str(len(graded)), str(len({r.answer_id for r in graded})),
                          iv["kappa"].text(), iv["precision"].text(), iv["recall"].text(),
                          iv["answer_r"].text()])
    return md_table(["lens-v2 scope (held-out)", "grader", "threshold", "facts", "answers",
                     "kappa", "precision", "recall", "answer r"], lines)


def report(sources: dict[str, list[GradedFact]], saved: dict[str, Saved],
           costs: dict[str, tuple[float, int]],
           full: dict[str, list[GradedFact]] | None = None) -> str:
    """``full``: every row of each source, for the two judges' agreement (it costs nothing,
    so it is not limited to the graded sample)."""
    lines = []
    for source, rows in sources.items():
        rows_m = measured(rows)
        labels = {r.id: r.label for r in rows_m}
        second = [r for r in measured((full or sources)[source]) if r.label2 is not None]
        if second:
            _, iv = with_intervals(second, {r.id: r.label2 for r in second},
                                   {r.id: r.label for r in second}, f"{source}/second-judge")
            lines.append([source, "second judge", "—", str(len(second)),
                          iv["kappa"].text(), iv["precision"].text(), iv["recall"].text(),
                          iv["answer_r"].text()])
        for name, grades in saved.items():
            mine = [r for r in rows_m if r.id in grades]
            if not mine:
                continue
            chosen = choose_threshold(sources, grades, source, shipped_at(name))
            # A thresholded grader is shown at the threshold chosen on the other sources and
            # at the one lens ships (P(present): chosen on lens-v2's dev half; P(yes): on
            # LoCoMo's answers known to be wrong).
            readings = [(chosen, "left-out choice")] if chosen is None else [
                (chosen, f"{chosen:.2f} (chosen on the others)"),
                (shipped_at(name), f"{shipped_at(name):.2f} (shipped)")]
            for t, shown in readings:
                read = {r.id: reading(grades[r.id], t) for r in mine}
                _, iv = with_intervals(mine, read, labels, f"{source}/{name}")
                lines.append([source, name, "—" if t is None else shown, str(len(mine)),
                              iv["kappa"].text(), iv["precision"].text(),
                              iv["recall"].text(), iv["answer_r"].text()])
    table = md_table(["source (measured)", "grader", "threshold",
                      "facts", "kappa", "precision", "recall", "answer r"], lines)
    cost_lines = [f"{name}: {s / n:.2f} s per model-graded fact over {n} (load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
                  for name, (s, n) in costs.items() if n]
    return "\n".join([table, *cost_lines])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graders", default="matcher")
    ap.add_argument("--answers", type=int, default=60,
                    help="at most N answers of each source (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("runs/grader_agreement"))
    ap.add_argument("--sources", type=Path, default=SOURCES_DIR)
    ap.add_argument("--lens-v2", type=Path, default=LENS_V2_DIR)
    ap.add_argument("--zep", type=Path, default=ZEP_DIR,
                    help="the folder of Zep's zep_locomo_grades.json")
    ap.add_argument("--memobase", type=Path, default=MEMOBASE_DIR,
                    help="Memobase's published folder, when --sources has no memobase-locomo")
    ap.add_argument("--only", default="",
                    help="comma-separated source names to grade and report (default: all)")
    ap.add_argument("--subset-of", metavar="GRADER",
                    help="only the facts GRADER has graded in --work (to compare graders on the "
                         "part of each source a slow grader reached)")
    ap.add_argument("--measured-only", action="store_true",
                    help="grade only the rows a source's agreement is reported on (lens-v2: its "
                         "held-out half); each threshold is then chosen on the third-party "
                         "sources alone (lens-v2's dev half lends it nothing)")
    ap.add_argument("--by-scope", action="store_true",
                    help="also report lens-v2's held-out answers scope by scope, at the "
                         "shipped threshold")
    ap.add_argument("--report-only", action="store_true",
                    help="grade nothing: report the grades already in --work (a run cut short "
                         "is reported on the facts it graded; the facts column says how many)")
    args = ap.parse_args(argv)
    names = [g for g in args.graders.split(",") if g]
    unknown = [g for g in names if g not in GRADE_FNS and g not in VARIANTS]
    if unknown:
        print(f"--graders: unknown {', '.join(unknown)}; choose from "
              f"{', '.join([*GRADE_FNS, *VARIANTS])}")
        return 2
    found, missing = load_all(args.sources, args.lens_v2, args.zep, args.memobase)
    for line in missing:
        print(f"source missing: {line}")
    if not found:
        return 2
    wanted = [s for s in args.only.split(",") if s]
    if unknown_sources := [s for s in wanted if s not in found]:
        print(f"--only: no source {', '.join(unknown_sources)}; found {', '.join(found)}")
        return 2
    sources = {name: sample(rows, args.answers) for name, rows in found.items()
               if not wanted or name in wanted}
    if args.subset_of:
        reached = _resume(saved_path(args.work, args.subset_of))
        sources = {name: [r for r in rows if r.id in reached] for name, rows in sources.items()}
    if args.measured_only:
        sources = {name: measured(rows) for name, rows in sources.items()}
    for name, rows in sources.items():
        print(f"{name}: {len(rows)} facts of {len({r.answer_id for r in rows})} answers")
    args.work.mkdir(parents=True, exist_ok=True)
    every = [r for rows in sources.values() for r in rows]
    # A variant is read from the grades of the graders it names, which are graded first.
    graded = list(dict.fromkeys(b for n in names
                                for b in (VARIANTS[n][0] if n in VARIANTS else (n,))))
    loaded: dict[str, Saved] = {}
    costs: dict[str, tuple[float, int]] = {}
    for name in graded:
        path = saved_path(args.work, name)
        if not args.report_only:
            costs[name] = GRADE_FNS[name](every, path, args.threads)
        loaded[name] = _resume(path)
    saved = {n: variant(n, every, loaded) if n in VARIANTS else loaded[n] for n in names}
    print(report(sources, saved, costs, found))
    if args.by_scope:
        print(by_scope(every, saved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
