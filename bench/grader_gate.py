"""Rules for the offline grader on long answers, read from saved verdicts: no model call.

The offline grader's version 2 credits, on the LENS v2 answers (long analyses whose key facts
are sentences), facts its judge refused. This bench reads the local judge's saved P(yes)
(``judge-local`` verdicts of bench.grader_agreement, kept in ``--work``) for every pair the
version-2 cheap checks leave to the model, and compares, per source, the rules that could
refuse those credits without asking the model anything more:

- ``gate``: an answer of ``L`` characters or more must hold ``g`` of the fact's content words
  and figures (lens.scoring.grading.offline_grader.support) before P(yes) can credit it;
- ``long-threshold``: an answer of ``L`` characters or more is credited at P(yes) >= ``t`` (a
  stricter or a looser threshold than the shipped one);
- ``gate+threshold``: both, the gate and another threshold for the long answers it passes.

Only the rows a choice may rest on are read: ``lens-v2``'s development half and the
third-party sources; ``lens-v2``'s held-out half is never read here. A rule is chosen for each
source on the others (the mean over them of (kappa + r) / 2; among rules that do equally well,
the one changing fewest of version 2's grades, so a rule must beat version 2 to replace it), as
bench.grader_agreement chooses thresholds; ``lens-v2``'s held-out half, which no choice reads,
gets the rule chosen on every row read here, its development half included.

    python -m bench.grader_gate --work WORK [--lens-v2 DIR] [--sources DIR]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import md_table
from bench.grader_agreement import agree, choice_rows, probability, saved_path
from bench.grader_sources import (
    LENS_V2_DIR,
    MEMOBASE_DIR,
    SOURCES_DIR,
    ZEP_DIR,
    GradedFact,
    load_all,
)
from bench.grader_variants import version2_cheap_grade
from lens.scoring.grading.offline_grader import PRESENT_AT, FactTask, support

# Longest first: among rules that tie on every count, the one reaching fewest answers.
LENGTHS = (2000, 1500, 1000, 500)
SUPPORTS = (0.2, 0.3, 0.4, 0.5)
LONG_THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.65, 0.7, 0.75, 0.8)
GATED_THRESHOLDS = (0.45, 0.5, 0.55)

# A rule: the grade of a pair the version-2 checks left open, from its row and P(yes).
Rule = Callable[[GradedFact, float], float]


def v2_rule(row: GradedFact, p: float) -> float:
    return 1.0 if p >= PRESENT_AT else 0.0


def gate(length: int, share: float, at: float = PRESENT_AT) -> Rule:
    def rule(row: GradedFact, p: float) -> float:
        if len(row.answer) < length:
            return v2_rule(row, p)
        if max(support(f, row.answer) for f in row.forms()) < share:
            return 0.0
        return 1.0 if p >= at else 0.0
    return rule


def long_threshold(length: int, at: float) -> Rule:
    def rule(row: GradedFact, p: float) -> float:
        return 1.0 if p >= (at if len(row.answer) >= length else PRESENT_AT) else 0.0
    return rule


def rules() -> dict[str, Rule]:
    out: dict[str, Rule] = {"version 2": v2_rule}
    out |= {f"gate L {n} support {g}": gate(n, g) for n in LENGTHS for g in SUPPORTS}
    out |= {f"long-threshold L {n} P(yes) {t}": long_threshold(n, t)
            for n in LENGTHS for t in LONG_THRESHOLDS}
    out |= {f"gate+threshold L {n} support {g} P(yes) {t}": gate(n, g, t)
            for n in LENGTHS for g in SUPPORTS for t in GATED_THRESHOLDS}
    return out


def settled(rows: list[GradedFact]) -> dict[str, float | None]:
    """Each row's grade from version 2's cheap checks, None where the model reads it."""
    out: dict[str, float | None] = {}
    for r in rows:
        done = [version2_cheap_grade(FactTask(r.question, f, r.answer)) for f in r.forms()]
        if any(g is not None and g.grade == 1.0 for g in done):
            out[r.id] = 1.0
        elif None not in done:
            out[r.id] = 0.0
        else:
            out[r.id] = None
    return out


def score(rows: list[GradedFact], cheap: dict[str, float | None],
          saved: dict[str, dict[str, Any]], rule: Rule) -> tuple[float | None, float | None]:
    grades: dict[str, float | None] = {}
    for r in rows:
        c = cheap[r.id]
        p = probability(saved[r.id]) if r.id in saved else None
        grades[r.id] = c if c is not None else None if p is None else rule(r, p)
    a = agree(rows, grades, {r.id: r.label for r in rows})
    return a.kappa, a.answer_r


def _changes(rows: list[GradedFact], cheap: dict[str, float | None],
             saved: dict[str, dict[str, Any]], rule: Rule) -> int:
    """How many of version 2's grades of ``rows`` the rule changes."""
    n = 0
    for r in rows:
        p = probability(saved[r.id]) if r.id in saved else None
        if cheap[r.id] is None and p is not None and rule(r, p) != v2_rule(r, p):
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("runs/grader_agreement"))
    ap.add_argument("--sources", type=Path, default=SOURCES_DIR)
    ap.add_argument("--lens-v2", type=Path, default=LENS_V2_DIR)
    ap.add_argument("--zep", type=Path, default=ZEP_DIR)
    ap.add_argument("--memobase", type=Path, default=MEMOBASE_DIR)
    args = ap.parse_args(argv)
    found, missing = load_all(args.sources, args.lens_v2, args.zep, args.memobase)
    for line in missing:
        print(f"source missing: {line}")
    path = saved_path(args.work, "judge-local")
    if not path.is_file():
        print(f"--work: no local judge verdicts at {path}; run bench.grader_agreement "
              "--graders judge-local first")
        return 2
    from bench.grader_agreement import _resume

    saved = _resume(path)
    # Every fact of each answer the model read: a fact version 2's checks settle was not sent
    # to it (and no rule here changes its grade), but it is part of its answer's recall.
    read = {r.answer_id for rows in found.values() for r in rows if r.id in saved}
    sources = {name: [r for r in choice_rows(rows) if r.answer_id in read]
               for name, rows in found.items()}
    sources = {name: rows for name, rows in sources.items() if rows}
    names = list(sources)
    cheap = {name: settled(rows) for name, rows in sources.items()}
    table: dict[str, dict[str, tuple[float | None, float | None]]] = {
        rule_name: {s: score(sources[s], cheap[s], saved, rule) for s in names}
        for rule_name, rule in rules().items()}

    def mean(rule_name: str, among: list[str]) -> float:
        values = [((k or 0.0) + (r or 0.0)) / 2 for s in among
                  for k, r in [table[rule_name][s]]]
        return sum(values) / len(values)

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.2f}"

    print(md_table(["rule", *(f"{s} ({len(sources[s])}) kappa / r" for s in names)],
                   [[rule_name, *(f"{fmt(k)} / {fmt(r)}" for k, r in
                                  (by[s] for s in names))]
                    for rule_name, by in table.items()]))
    changed = {n: sum(_changes(sources[s], cheap[s], saved, rule) for s in names)
               for n, rule in rules().items()}

    def choose(among: list[str]) -> str:
        # Among rules that do equally well, the one that changes fewest of version 2's grades.
        return max(table, key=lambda n: (round(mean(n, among), 6), -changed[n]))

    lines = []
    for left_out in names:
        others = [s for s in names if s != left_out]
        best = choose(others)
        k, r = table[best][left_out]
        k2, r2 = table["version 2"][left_out]
        shown = "lens-v2 (development half)" if left_out == "lens-v2" else left_out
        lines.append([shown, best, f"{mean(best, others):.3f}",
                      f"{mean('version 2', others):.3f}", f"{fmt(k)} / {fmt(r)}",
                      f"{fmt(k2)} / {fmt(r2)}"])
    # lens-v2's held-out half is left out of every choice: its rule is chosen on every row
    # read here (its development half among them) and measured by bench.grader_agreement.
    best = choose(names)
    lines.append(["lens-v2 (held-out half)", best, f"{mean(best, names):.3f}",
                  f"{mean('version 2', names):.3f}", "not read here", "not read here"])
    print(md_table(["left out", "rule chosen on the others", "others' mean (kappa + r) / 2",
                    "version 2 there", "left-out source with it (kappa / r)",
                    "with version 2"], lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
