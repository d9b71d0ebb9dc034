"""The sequential verdict read back on finished runs: had the arms answered scope block by scope
block in the seeded order, looking after each block, where would the primary metric's paired
verdicts have been settled, on how many of the questions, and do they agree with the full run?

Each pair of the confirmatory family (every pair of arms on the primary metric) gets a
confidence sequence at α / pairs (lens.stats.sequential); the run would stop at the block where
the last pair settles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

import lens.report.documents.fmt as fmt
import lens.scoring.metrics as registry
from lens.report.documents.document import Block, Heading, Para, Table
from lens.report.figures.arm_comparison import Arm, scope_table
from lens.report.figures.verdicts import sequential_reason
from lens.report.foundations.shapes import (
    Comparison,
    RunStopOut,
    RunStopPair,
    SequentialOut,
    SequentialPair,
)
from lens.stats.sequential import (
    ASSUMES,
    METHODS,
    Method,
    Sequential,
    block_order,
    family_verdicts,
)

# The fixed-n verdicts that agree with each sequential one.
_AGREES = {"better": ("better",), "worse": ("worse",),
           "equivalent": ("equivalent", "real but small")}


@dataclass(frozen=True)
class SequentialSettings:
    """How the sequential verdict is read: the family's α, the equivalence margin (0: never
    equivalent), a look every ``look_every`` blocks, and the confidence sequence."""

    alpha: float = 0.05
    margin: float = 0.0
    look_every: int = 1
    method: Method = "betting"

    def as_kwargs(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "margin": self.margin, "look_every": self.look_every,
                "method": self.method}


def _block_content(arms: Sequence[Arm], scope: str) -> list[str]:
    """What a scope block holds, for its seeded place in the order: the texts of its questions
    as the agent got them (the first user message), else their ids."""
    texts = set()
    for row in arms[0].rows:
        r = row.record
        if r.scope_id != scope:
            continue
        first = next((m.content for m in r.transcript if m.role == "user"), "")
        texts.add(first or r.question_id)
    return sorted(texts)


def _spend(arms: Sequence[Arm], scopes: set[str]) -> tuple[int, int]:
    """Questions and model tokens recorded with the answers, over the arms, in ``scopes``."""
    questions = tokens = 0
    for arm in arms:
        for row in arm.rows:
            if row.record.scope_id in scopes:
                questions += 1
                tokens += sum(c.prompt_tokens + c.completion_tokens
                              for c in row.record.model_calls)
    return questions, tokens


def sequential_replay(arms: Sequence[Arm], metric: str, comparisons: Sequence[Comparison], *,
                      alpha: float = 0.05, margin: float = 0.0, look_every: int = 1,
                      method: Method = "betting") -> SequentialOut | None:
    """The sequential verdicts on ``metric`` for every pair of ``arms`` (as ``compare_pairs``
    orders them), with the scopes answered in the seeded order; None with fewer than two arms,
    a ``note`` saying why when no scope has a value for every arm."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    if len(arms) < 2:
        return None
    scopes, table = scope_table(arms, metric)
    keep = [i for i in range(len(scopes)) if np.isfinite(table[i]).all()]
    if not keep:
        return SequentialOut(
            metric=metric, method=method, alpha=alpha, margin=margin, look_every=look_every,
            blocks=0, total_blocks=0, settled=False, questions_used=0, questions_total=0,
            tokens_share=None, order=[], pairs=[],
            note=f"not computed: no scope where every arm has a value of {metric}")
    present = {scopes[i]: i for i in keep}
    order = block_order({s: _block_content(arms, s) for s in present})
    rows = [present[s] for s in order]
    names = list(combinations(range(len(arms)), 2))
    values = {f"{i}-{j}": [float(table[r, j] - table[r, i]) for r in rows] for i, j in names}
    stop = family_verdicts(values, alpha=alpha, margin=margin, look_every=look_every,
                           bound=registry.difference_bound(metric), method=method)
    full = {(c.arm_a, c.arm_b): next((r.verdict for r in c.rows if r.metric == metric), None)
            for c in comparisons}
    pairs = [_pair(arms[i].name, arms[j].name, stop.pairs[f"{i}-{j}"],
                   full.get((arms[i].name, arms[j].name))) for i, j in names]
    used_q, used_t = _spend(arms, set(order[:stop.blocks]))
    all_q, all_t = _spend(arms, set(order))
    return SequentialOut(
        metric=metric, method=method, alpha=alpha, margin=margin, look_every=look_every,
        blocks=stop.blocks, total_blocks=stop.total_blocks, settled=stop.settled,
        questions_used=used_q, questions_total=all_q,
        tokens_share=used_t / all_t if all_t else None, order=order, pairs=pairs)


def _pair(a: str, b: str, s: Sequential, whole: str | None) -> SequentialPair:
    """One pair's sequential verdict beside the whole run's verdict ``whole``, and whether the
    two agree (unknown when the sequence left the pair undecided)."""
    return SequentialPair(
        arm_a=a, arm_b=b, verdict=s.verdict, blocks=s.blocks,
        mean=s.look.mean if s.look else None, low=s.look.low if s.look else None,
        high=s.look.high if s.look else None, alpha=s.alpha, full_verdict=whole,
        agrees=None if s.verdict == "undecided" or whole is None
        else whole in _AGREES[s.verdict])


SEQUENTIAL_NOTE = (
    "Had the arms answered scope by scope in the seeded order (by a hash of each scope's "
    "questions), reading the primary metric after every block: each pair's interval is an "
    "anytime-valid confidence sequence of the mean scope difference (Δ = B − A), at α divided "
    "by the pairs of the confirmatory family, so a verdict read at the first block that settles "
    "it keeps its error rate. Better: the interval above 0; worse: below 0; equivalent: inside "
    "± the margin; a pair not settled at the last block needs the whole run (a close call). "
    "See docs/reports.md, 'Sequential verdicts'.")


def sequential_blocks(s: SequentialOut) -> list[Block]:
    if s.note is not None:
        return [Heading("Sequential verdict"), Para(f"Sequential verdict {s.note}.", "warn")]
    stopped = (f"all pairs settled after {s.blocks} of {s.total_blocks} scope blocks"
               if s.settled else f"not every pair settled: all {s.total_blocks} scope blocks "
               "were needed")
    spend = f"{s.questions_used} of {s.questions_total} questions over the arms"
    if s.tokens_share is not None:
        spend += f", {s.tokens_share:.0%} of the model tokens recorded with the answers"
    rows = [[f"{p.arm_b} vs {p.arm_a}",
             f"{p.verdict}: {sequential_reason(p.verdict, p.blocks, p.low, p.high, s.margin)}",
             f"{p.blocks}/{s.total_blocks}",
             f"{fmt.num(p.mean)} [{fmt.num(p.low)}, {fmt.num(p.high)}]", f"{p.alpha:.3g}",
             p.full_verdict or "unknown",
             "—" if p.agrees is None else ("yes" if p.agrees else "NO")] for p in s.pairs]
    return [
        Heading("Sequential verdict"),
        Para(f"{SEQUENTIAL_NOTE} Metric {s.metric}, {s.method} sequence "
             f"({ASSUMES.get(s.method, 'unknown')}), α={s.alpha:g}, "
             f"margin ±{s.margin:g}, a look every {s.look_every} block(s).", "meta"),
        Para(f"Stop: {stopped}; {spend}."),
        Table(["pair (B vs A)", "sequential verdict", "blocks", "Δ [interval] at stop",
               "α per pair", "full-run verdict", "same verdict"], rows,
              table_id="sequential"),
    ]


def run_stop(events: Sequence[dict[str, Any]], answered: int) -> RunStopOut | None:
    """The run's last early stop (a ``run_stopped`` event of lens.flow.stopping), and whether a
    later session continued past it; None when the run never stopped early."""
    stop: dict[str, Any] | None = None
    continued = False
    for e in events:
        if e.get("kind") == "run_stopped":
            stop, continued = e, False
        elif e.get("kind") == "stop_overridden" and stop is not None:
            continued = True
    if stop is None:
        return None
    pairs = [RunStopPair(arm_a=p["arm_a"], arm_b=p["arm_b"], verdict=p["verdict"],
                         mean=p.get("mean"), low=p.get("low"), high=p.get("high"),
                         alpha=p["alpha"]) for p in stop.get("pairs") or []]
    return RunStopOut(
        at=stop.get("ts"), reason=stop["reason"], metric=stop["metric"], method=stop["method"],
        alpha=stop["alpha"], margin=stop["margin"], blocks=stop["blocks"],
        total_blocks=stop["total_blocks"], questions_used=stop["questions_used"],
        questions_total=stop["questions_total"], questions_answered=answered,
        graded_by=stop.get("graded_by", ""), pairs=pairs, continued=continued)


RUN_STOP_NOTE = (
    "The run answered its scope blocks in a seeded order and read the paired verdict of every "
    "pair of arms after each block from anytime-valid confidence sequences (α shared by the "
    "pairs), so stopping at the first block that settles them all keeps the error rate. The "
    "results above rest on the questions answered; a close call would have used every block. "
    "See docs/reports.md, 'Sequential verdicts'.")


def run_stop_blocks(s: RunStopOut | None) -> list[Block]:
    if s is None:
        return []
    when = f" at {s.at}" if s.at else ""
    head = (f"The run stopped answering{when} after {s.blocks} of {s.total_blocks} scope blocks "
            f"({s.reason}); {s.questions_used} of {s.questions_total} questions over the arms "
            f"were in those blocks, {s.questions_answered} answered in all (blocks in flight "
            "were finished).")
    if s.continued:
        head += (" A later session resumed it with --continue-past-stop: the results rest on "
                 "every question answered since.")
    rows = [[f"{p.arm_b} vs {p.arm_a}",
             f"{p.verdict}: {sequential_reason(p.verdict, s.blocks, p.low, p.high, s.margin)}",
             f"{fmt.num(p.mean)} [{fmt.num(p.low)}, {fmt.num(p.high)}]", f"{p.alpha:.3g}"]
            for p in s.pairs]
    return [
        Heading("Stopped early"),
        Para(f"{RUN_STOP_NOTE} Metric {s.metric} (graded by the {s.graded_by} during the run), "
             f"{s.method} sequence ({ASSUMES.get(s.method, 'unknown')}), α={s.alpha:g}, "
             f"margin ±{s.margin:g}.", "meta"),
        Para(head),
        Table(["pair (B vs A)", "verdict at the stop", "Δ [interval] at the stop",
               "α per pair"], rows, table_id="run-stop"),
    ]
