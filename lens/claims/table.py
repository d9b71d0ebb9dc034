"""The check as one report: the published figure beside the reproduced one (with the arithmetic
and the category labels), lens's scorers on the same answers with their intervals and agreement,
and each scorer's leniency; rendered by lens's report blocks to Markdown and HTML alike."""

from __future__ import annotations

from collections.abc import Sequence

from lens.claims.arithmetic import LOCOMO_NAMES, Gap, Share
from lens.claims.check import CheckResult
from lens.claims.leniency import Leniency
from lens.claims.published import OVERALL
from lens.claims.rerun import Rerun
from lens.claims.rescore import Scored
from lens.claims.wrong_answers import KINDS
from lens.report.documents.document import Block, Bullets, Heading, Para, Styled, Table
from lens.stats.intervals import Estimate

# Disagreements listed in the report per scorer; claims.json keeps them all.
SHOWN_DISAGREEMENTS = 20


def pct(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.2f}%"


def share(s: Share) -> str:
    count = f"{s.correct:g}" if s.correct == int(s.correct) else f"{s.correct:.2f}"
    extra = f", {s.unreadable} unreadable" if s.unreadable else ""
    return f"{pct(s.percent)} ({count} of {s.n}{extra})"


def interval(e: Estimate, scale: float = 100.0) -> str:
    if e.mean is None:
        return "unknown"
    if e.low is None or e.high is None:
        return f"{e.mean * scale:.1f}"
    return f"{e.mean * scale:.1f} [{e.low * scale:.1f}, {e.high * scale:.1f}]"


def _verdict(ok: bool | None) -> Styled:
    if ok is None:
        return Styled("-")
    return Styled("yes", "pass", badge=True) if ok else Styled("no", "fail", badge=True)


def _publisher_label(result: CheckResult, category: str) -> str:
    labels = [c for c, ks in result.columns.items() if category in ks]
    written = result.claims.labels.get(category)
    parts = ([f"{written} (their code)"] if written else []) + [f"{c} (their table)"
                                                              for c in labels]
    return "; ".join(parts) or "-"


def _figure_intro(r: CheckResult) -> list[Block]:
    """The heading and the paragraph naming the arithmetic, how it was chosen and the source."""
    f = r.figure
    how = {"named": "as named on the command line",
           "inferred": "inferred: the only one that reproduces the published figures",
           "ambiguous": "several reproduce the published figures equally; the first is shown",
           "default": "no published figure to match: lens's default; --runs and --category5 "
                      "name another"}[r.how]
    return [Heading("The publisher's figure"),
            Para(f"Arithmetic: {f.arithmetic.describe(r.claims.runs)} ({how}). "
                 f"Denominator: {f.overall.n} answers with a readable verdict."
                 + (f" Published: {r.published.source}, row {r.published_name}."
                    if r.published is not None else ""))]


def _overall_verdict(r: CheckResult, pub_overall: float | None) -> Styled:
    """Whether the overall figure reproduces exactly, or misses only within the printed margin."""
    f = r.figure
    exact = None if pub_overall is None else any(t.figure is f and bool(t.overall_reproduced)
                                                   for t in r.tried)
    margin = r.published.margins.get(OVERALL) if r.published else None
    verdict = _verdict(exact)
    if exact is False and margin is not None and pub_overall is not None and \
            f.overall.percent is not None and abs(f.overall.percent - pub_overall) <= margin:
        verdict = Styled(f"no; within the printed ±{margin:g}", "warn", badge=True)
    return verdict


def _overall_row(r: CheckResult) -> list[str | Styled]:
    """The overall line of the figure table: published (with its note) beside reproduced."""
    f = r.figure
    pub_overall = r.published_row.get(OVERALL)
    note = r.published.notes.get(OVERALL, "") if r.published else ""
    verdict = _overall_verdict(r, pub_overall)
    return ["overall", "", "", str(f.overall.n),
            "-" if pub_overall is None else f"{pub_overall:.2f}%" + (f" ({note})" if note
                                                                      else ""),
            share(f.overall), verdict]


def _category_rows(r: CheckResult) -> list[list[str | Styled]]:
    """One line per category: the published columns it reproduces beside its own figure."""
    row = r.published_row
    rows: list[list[str | Styled]] = []
    for cat, s in r.figure.categories.items():
        cols = [c for c, ks in r.columns.items() if cat in ks]
        published = ", ".join(f"{row[c]:.2f}%" for c in cols) or "-"
        rows.append([cat or "(none)", _publisher_label(r, cat),
                     LOCOMO_NAMES.get(cat, "-") if r.claims.benchmark == "locomo" else "-",
                     str(s.n), published, share(s), _verdict(True if cols else None)])
    return rows


def _figure_misses(r: CheckResult) -> list[Block]:
    """The published columns no category reproduces and the gaps to the nearest figures."""
    blocks: list[Block] = []
    row = r.published_row
    unmatched = [c for c, ks in r.columns.items() if not ks]
    if unmatched:
        blocks.append(Para("Published columns no category reproduces: " + ", ".join(
            f"{c} ({row[c]:.2f}%)" for c in unmatched), "fail"))
    if r.gaps:
        n = r.figure.overall.n
        blocks.append(Bullets([f"{k}: published {g.published:.2f}%, {g.describe(n)}"
                               for k, g in r.gaps.items() if k == OVERALL]
                              + [_column_gap(k, g, r) for k, g in r.gaps.items()
                                 if k != OVERALL],
                              "warn"))
    return blocks


def figure_blocks(r: CheckResult) -> list[Block]:
    """The publisher's figure beside the reproduced one, overall and per category."""
    runs = r.claims.runs
    blocks = _figure_intro(r)
    rows: list[list[str | Styled]] = [_overall_row(r), *_category_rows(r)]
    blocks.append(Table(["category as written", "publisher's label",
                         "LoCoMo's code (task_eval/evaluation.py)", "n", "published",
                         "reproduced", "reproduces"], rows, "claims-figure"))
    blocks += _figure_misses(r)
    if len(r.tried) > 1:
        blocks.append(Table(["arithmetic tried", "overall", "reproduces overall",
                             "categories reproduced"],
                            [[t.figure.arithmetic.describe(runs), share(t.figure.overall),
                              _verdict(t.overall_reproduced),
                              str(t.categories_reproduced)] for t in r.tried],
                            "claims-arithmetic"))
    return blocks


def _column_gap(column: str, g: Gap, r: CheckResult) -> str:
    if g.category is None:
        return f"{column}: published {g.published:.2f}%, no category's figure prints as it"
    n = r.figure.categories[g.category].n
    return (f"{column}: published {g.published:.2f}%; category {g.category}, which the "
            f"publisher's code calls {r.claims.labels.get(g.category)}, {g.describe(n)}")


def _lenient(lens: Sequence[Leniency], name: str) -> str:
    for x in lens:
        if x.scorer == name:
            return interval(x.overall)
    return "-"


def _scorer_row(r: CheckResult, s: Scored) -> list[str | Styled]:
    """A scorer's row of the summary table."""
    is_f1 = s.condition.get("scorer") in ("locomo-f1", "token-f1")
    kappa = s.agreement.kappa if s.agreement else None
    return [s.name + (" (mean F1 x 100)" if is_f1 else ""), interval(s.estimate),
            str(len(s.ids) - s.unknown),
            "-" if kappa is None else f"{kappa:.2f}",
            "-" if s.agreement is None else str(len(s.disagreements)),
            _lenient(r.leniency, s.name),
            *(_rerun_cell(x, s.name) for x in r.reruns)]


def summary_blocks(r: CheckResult) -> list[Block]:
    """The one table: published | reproduced | each lens scorer | leniency."""
    f = r.figure
    pub = r.published_row.get(OVERALL)
    n_sample = len(r.sampled)
    dash = ["-"] * len(r.reruns)
    rows: list[list[str | Styled]] = [
        ["published", "-" if pub is None else f"{pub:.2f}", "-", "-", "-", "-", *dash],
        ["reproduced (publisher's verdicts, all answers)",
         "unknown" if f.overall.percent is None else f"{f.overall.percent:.2f}",
         str(f.overall.n), "-", "-", "-", *dash]]
    everyone: list[Scored] = ([r.publisher_on_sample] if r.publisher_on_sample else []) \
        + r.scored
    rows.extend(_scorer_row(r, s) for s in everyone)
    rerun_note = (" A rerun column: the same scorer on a lens run's answers to the matched "
                  "questions (n in brackets); a run of lens's adapter, not the publisher's "
                  "system." if r.reruns else "")
    return [Heading("Published, reproduced, re-scored"),
            Para(f"Figures in percent with 95% intervals clustered by conversation. lens's "
                 f"scorers read {n_sample} answer(s). kappa: Cohen's kappa against the "
                 "publisher's verdicts on the same answers. Leniency: the share of lens's wrong "
                 f"answers ({r.wrong_answers}) the scorer accepts." + rerun_note),
            Table(["figure", "value", "n", "kappa vs publisher", "disagreements", "leniency",
                   *(f"rerun {x.run.name}" for x in r.reruns)], rows, "claims-summary"),
            *_band(r), *rerun_blocks(r.reruns)]


def _band(r: CheckResult) -> list[Block]:
    """The published figure's band: the lowest and highest share of the same answers that lens's
    graders and judges accept (F1 is not a share of answers accepted: left out)."""
    graded = [(s.estimate.mean, s.name) for s in r.scored
              if s.condition.get("scorer") not in ("locomo-f1", "token-f1")
              and s.estimate.mean is not None]
    if not graded:
        return []
    (lo, lo_name), (hi, hi_name) = min(graded), max(graded)
    theirs = r.publisher_on_sample.estimate.mean if r.publisher_on_sample else None
    against = "" if theirs is None else \
        f", against {100 * theirs:.1f} by the publisher's verdicts on them"
    span = (f"{100 * lo:.1f} ({lo_name})" if len(graded) == 1 else
            f"{100 * lo:.1f} ({lo_name}) to {100 * hi:.1f} ({hi_name})")
    return [Para(f"The band: the same answers score {span} under lens's "
                 f"{len(graded)} grader(s) and judge(s){against}.")]


def _rerun_cell(rerun: Rerun, name: str) -> str:
    for s in rerun.scorers:
        if s.name == name:
            return f"{interval(s.estimate)} (n={len(s.ids) - s.unknown})"
    return "-"


def rerun_blocks(reruns: Sequence[Rerun]) -> list[Block]:
    if not reruns:
        return []
    lines = [f"rerun {x.run.name}: {x.run.path}, adapter {x.run.adapter}, condition "
             f"{x.run.condition_hash}; {len(x.matched)} of the publisher's questions matched, "
             f"{x.unmatched_publisher} unmatched; {x.unmatched_run} of the run's questions "
             "unmatched" + "".join(f"; {n}" for n in (*x.run.notes, *x.notes))
             for x in reruns]
    return [Bullets(lines, "warn" if any(x.unmatched_publisher for x in reruns) else "")]


def detail_blocks(r: CheckResult) -> list[Block]:
    blocks: list[Block] = []
    if r.leniency:
        blocks.append(Heading("Leniency by kind of wrong answer"))
        blocks.append(Para("vague: on topic, no value; specific: the gold's shape with another "
                           "value of its kind; other_gold: another question's gold answer."))
        blocks.append(Table(["scorer", *KINDS, "all", "unknown"],
                            [[x.scorer, *(interval(x.by_kind[k]) for k in KINDS),
                              interval(x.overall), str(x.unknown)] for x in r.leniency],
                            "claims-leniency"))
    for s in r.scored:
        if not s.disagreements:
            continue
        blocks.append(Heading(f"Where {s.name} and the publisher disagree", 3))
        shown = s.disagreements[:SHOWN_DISAGREEMENTS]
        blocks.append(Bullets([f"{i}: publisher {'correct' if p else 'wrong'}, lens "
                               f"{'correct' if v else 'wrong'}" for i, p, v in shown]
                              + ([f"... and {len(s.disagreements) - len(shown)} more in "
                                  "claims.json"] if len(s.disagreements) > len(shown) else [])))
    return blocks


def input_blocks(r: CheckResult) -> list[Block]:
    c = r.claims
    lines = [f"{f.path}: sha256 {f.sha256}, {f.bytes} bytes" for f in c.inputs]
    lines += [f"{s.name}: " + ", ".join(f"{k}={v}" for k, v in s.condition.items())
              for s in r.scored]
    lines += list(c.notes) + r.notes
    for s in r.scored:
        lines += [f"{s.name}: {n}" for n in s.notes]
    return [Heading("Inputs and conditions"),
            Para(f"reader {c.reader}, benchmark {c.benchmark}, {len(c.items)} answers, "
                 f"{c.runs} judge run(s) stored"),
            Bullets(lines)]


def blocks(r: CheckResult) -> list[Block]:
    return [Heading("Reproducing a published claim", 1), *summary_blocks(r), *figure_blocks(r),
            *detail_blocks(r), *input_blocks(r)]
