"""One check of a published claim, end to end: read the file, recompute the publisher's figure
with their arithmetic (named or inferred), re-score the same answers with the scorers asked for,
and measure each scorer's leniency on wrong answers lens builds."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lens.claims.arithmetic import (
    Arithmetic,
    Figure,
    Gap,
    RunRule,
    candidates,
    compute,
    gap,
    item_credit,
    rounds_to,
)
from lens.claims.assign import columns_of, label_key
from lens.claims.items import ClaimItem, ClaimSet, hash_file
from lens.claims.leniency import Leniency, as_items, leniency
from lens.claims.mapping import load_mapping, read_mapped
from lens.claims.published import OVERALL, PublishedTable
from lens.claims.readers import FILES, READERS
from lens.claims.rerun import Rerun, RunAnswers, match, rerun_items
from lens.claims.rescore import (
    JudgePrompt,
    Scored,
    judged,
    locomo_f1,
    matcher_grades,
    offline_grades,
    sample,
)
from lens.claims.wrong_answers import build
from lens.core.errors import UserError
from lens.data.scoring_names import ClaimsGraderName

GraderName = ClaimsGraderName
# A judge: its model name, and a function giving its verdicts on items (the command builds it
# over a model client; tests may pass their own).
JudgeFn = Callable[[JudgePrompt, Sequence[ClaimItem]], tuple[list[bool | None], list[str]]]


@dataclass(frozen=True)
class Judge:
    model: str
    prompt: JudgePrompt
    ask: JudgeFn


@dataclass(frozen=True)
class Options:
    published: PublishedTable | None = None
    row: str | None = None
    runs: RunRule | None = None
    category5: bool | None = None
    f1: bool = True
    grader: GraderName = "matcher"
    limit: int | None = None
    leniency: bool = True
    judges: tuple[Judge, ...] = ()
    work: Path | None = None
    progress: Callable[[str], None] | None = None
    # Run directories' answers to the same questions (``--rerun``), each a column.
    reruns: tuple[RunAnswers, ...] = ()


@dataclass(frozen=True)
class Tried:
    figure: Figure
    overall_reproduced: bool | None
    categories_reproduced: int


@dataclass
class CheckResult:
    claims: ClaimSet
    figure: Figure
    # How the arithmetic was chosen: "named", "inferred" (it alone reproduces the published
    # figure), "ambiguous" (several do; the first is shown) or "default" (nothing to match).
    how: str
    tried: list[Tried]
    published_name: str | None = None
    published_row: dict[str, float] = field(default_factory=dict)
    published: PublishedTable | None = None
    # published column -> the file's categories whose figure prints as it
    columns: dict[str, list[str]] = field(default_factory=dict)
    gaps: dict[str, Gap] = field(default_factory=dict)
    sampled: tuple[ClaimItem, ...] = ()
    publisher_on_sample: Scored | None = None
    scored: list[Scored] = field(default_factory=list)
    leniency: list[Leniency] = field(default_factory=list)
    wrong_answers: int = 0
    notes: list[str] = field(default_factory=list)
    reruns: list[Rerun] = field(default_factory=list)


def read_claims(files: Sequence[Path], reader: str | None, mapping: Path | None) -> ClaimSet:
    _check_inputs(files, reader, mapping)
    if mapping is not None:
        claims = read_mapped(files[0], load_mapping(mapping), source=str(mapping))
        return replace(claims, mapping=hash_file(mapping))
    if reader not in READERS:
        raise UserError(f"--reader {reader!r} is not a reader lens has; the readers are "
                        f"{', '.join(READERS)}, or write a --mapping file")
    return READERS[reader](files)


def _check_inputs(files: Sequence[Path], reader: str | None, mapping: Path | None) -> None:
    """Refuse a call naming both or neither of reader and mapping, a missing file, or more
    files than the reader reads."""
    if (reader is None) == (mapping is None):
        raise UserError("name how to read the file: --reader "
                        f"{'|'.join(READERS)} or --mapping MAP.yaml (one of them)")
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise UserError([f"{f}: no such file; give the publisher's results file" for f in
                         missing])
    _check_file_count(files, reader, mapping)


def _check_file_count(files: Sequence[Path], reader: str | None, mapping: Path | None) -> None:
    """Refuse more files than the reader (or a mapping) reads."""
    most = 1 if mapping is not None else FILES.get(reader or "", 1)
    if len(files) > most:
        raise UserError(f"{len(files)} files given, but {'a mapping' if mapping else reader} "
                        f"reads {most}: {', '.join(str(f) for f in files[most:])} would be "
                        "left unread; give only the results file"
                        + (" and its companion" if most > 1 else ""))


def _match(figure: Figure, row: dict[str, float], columns: dict[str, list[str]],
           decimals: int) -> Tried:
    overall = (rounds_to(figure.overall.percent, row[OVERALL], decimals) if OVERALL in row
               else None)
    cats = sum(any(rounds_to(figure.categories[k].percent, row[c], decimals) for k in ks)
               for c, ks in columns.items())
    return Tried(figure, overall, cats)


def reproduce(claims: ClaimSet, opts: Options) -> CheckResult:
    """The publisher's figure: under the named arithmetic, or the one that reproduces the
    published row (most categories, then the overall figure), or the plainest."""
    pub = opts.published
    name, row = pub.row(opts.row) if pub is not None else (None, {})
    tried = []
    for a in _arithmetics(claims, opts):
        f = compute(claims, a)
        cols = columns_of(f, row, pub.columns, pub.decimals) if pub else {}
        tried.append(_match(f, row, cols, pub.decimals) if pub else Tried(f, None, 0))
    how, best = _choose(tried, opts)
    result = CheckResult(claims, best.figure, how, tried, name, row, pub)
    if pub is not None:
        _record_gaps(result, best, row, pub)
    return result


def _arithmetics(claims: ClaimSet, opts: Options) -> list[Arithmetic]:
    """The arithmetics the options allow; refused when none does."""
    arithmetics = [a for a in candidates(claims)
                   if (opts.runs is None or a.runs == opts.runs or claims.runs <= 1)
                   and (opts.category5 is None or a.category5 in (None, opts.category5))]
    if not arithmetics:
        raise UserError(f"no arithmetic fits: --runs {opts.runs} needs several judge runs, "
                        f"and the file has {claims.runs}")
    return arithmetics


def _choose(tried: list[Tried], opts: Options) -> tuple[str, Tried]:
    """How the figure was chosen ("named", "default", "inferred" or "ambiguous"), and which."""
    if opts.runs is not None or opts.category5 is not None:
        return "named", tried[0]
    if opts.published is None:
        return "default", tried[0]
    best = max(tried, key=lambda t: (t.categories_reproduced, bool(t.overall_reproduced)))
    ties = [t for t in tried if (t.categories_reproduced, bool(t.overall_reproduced))
            == (best.categories_reproduced, bool(best.overall_reproduced))]
    return ("inferred" if len(ties) == 1 else "ambiguous"), best


def _record_gaps(result: CheckResult, best: Tried, row: dict[str, float],
                 pub: PublishedTable) -> None:
    """The published columns the chosen figure reproduces, and a gap for each it does not."""
    f = best.figure
    result.columns = columns_of(f, row, pub.columns, pub.decimals)
    if OVERALL in row and not best.overall_reproduced:
        result.gaps[OVERALL] = gap(f.overall, f.items, f.credit, row[OVERALL], pub.decimals)
    for col, cats in result.columns.items():
        if not cats:
            result.gaps[col] = _column_gap(result.claims, f, col, row[col], pub.decimals)


def _column_gap(claims: ClaimSet, f: Figure, column: str, published: float,
                decimals: int) -> Gap:
    """A published column no category reproduces: measured against the category the
    publisher's own code gives that label, where it names one."""
    named = [k for k, label in claims.labels.items() if label_key(label) == label_key(column)]
    if not named or named[0] not in f.categories:
        return Gap(published, None, (), None, "", ())
    k = named[0]
    pairs = [(i, c) for i, c in zip(f.items, f.credit, strict=True) if (i.category or "") == k]
    g = gap(f.categories[k], [i for i, _ in pairs], [c for _, c in pairs], published, decimals)
    return replace(g, category=k)


def rescore(result: CheckResult, opts: Options) -> None:
    """Every scorer asked for, on the same sample of the publisher's answers."""
    claims = result.claims
    items = sample(claims, opts.limit)
    result.sampled = items
    say = opts.progress or (lambda _m: None)
    if opts.limit is not None and len(items) < len(claims.items):
        result.notes.append(f"lens's scorers read a sample of {len(items)} of "
                            f"{len(claims.items)} answers, chosen by a hash of the file")
    # The publisher's own verdicts on that sample, for a like-for-like column.
    stored = judged("publisher", JudgePrompt("as stored", "", ""), items,
                    [None if (c := _credit(i)) is None else c >= 0.5 for i in items], [])
    result.publisher_on_sample = replace(stored, name="publisher's verdicts",
                                         condition={"scorer": "publisher", "verdicts": "stored"})
    result.scored.extend(_scorers(claims, items, opts, say))
    for rerun in result.reruns:
        _rescore_rerun(rerun, claims, items, opts, say)
    if opts.leniency:
        _leniency(result, items, opts, say)


def _rescore_rerun(rerun: Rerun, claims: ClaimSet, items: Sequence[ClaimItem], opts: Options,
                   say: Callable[[str], None]) -> None:
    """Every scorer asked for, on a rerun's answers to the sampled questions."""
    answers = rerun_items(items, rerun)
    say(f"rerun {rerun.run.name}: {len(answers)} matched answer(s)")
    if answers:
        rerun.scorers = _scorers(claims, answers, opts, say)
    if len(items) < len(claims.items):
        rerun.notes.append(f"scored on the matched questions of lens's sample of "
                           f"{len(items)} answers")
    if rerun.not_scored:
        rerun.notes.append(f"{rerun.not_scored} matched question(s) the run did not finish "
                           "(error or no_memory) are left out, as lens's scoring leaves "
                           "them out")


def _scorers(claims: ClaimSet, items: Sequence[ClaimItem], opts: Options,
             say: Callable[[str], None]) -> list[Scored]:
    """Every scorer asked for, on these items (the publisher's answers, or a rerun's)."""
    out: list[Scored] = []
    if opts.f1:
        say("F1")
        out.append(locomo_f1(claims, items))
    if opts.grader == "matcher":
        say("fact matcher")
        out.append(matcher_grades(items))
    elif opts.grader == "local":
        out.append(_local_grades(items, opts, say))
    for j in opts.judges:
        say(f"judge {j.model} ({j.prompt.name}) on {len(items)} answer(s)")
        verdicts, errors = j.ask(j.prompt, items)
        out.append(judged(j.model, j.prompt, items, verdicts, errors))
    return out


def _credit(item: ClaimItem) -> float | None:
    return item_credit(item, "majority")


def _local_grades(items: Sequence[ClaimItem], opts: Options,
                  say: Callable[[str], None]) -> Scored:
    from lens.models.cache import ModelCache
    from lens.scoring.grading.offline_grader import OfflineGrader

    if opts.work is None:
        raise UserError("--grader local needs --work DIR: the local model's verdicts are kept "
                        "there, so a stopped check resumes where it stopped")
    opts.work.mkdir(parents=True, exist_ok=True)
    grader = OfflineGrader(cache=ModelCache(opts.work / "offline-grades.sqlite"))
    say(f"offline grader on {len(items)} answer(s) (the local model reads what the matcher "
        "cannot settle)")
    try:
        return offline_grades(items, grader,
                              lambda d, t: say(f"  local model {d}/{t}") if d % 10 == 0 or d == t
                              else None)
    finally:
        grader.close()


def _leniency(result: CheckResult, items: Sequence[ClaimItem], opts: Options,
              say: Callable[[str], None]) -> None:
    seed = hashlib.sha256("".join(f.sha256 for f in result.claims.inputs).encode()).hexdigest()
    wrong = build(items, result.claims.items, seed)
    result.wrong_answers = len(wrong)
    wrong_items = as_items(wrong)
    say(f"leniency: {len(wrong)} wrong answer(s) built from the data")
    if opts.grader == "matcher":
        result.leniency.append(leniency("fact matcher", wrong,
                                        list(matcher_grades(wrong_items).values)))
    elif opts.grader == "local":
        result.leniency.append(leniency("offline grader", wrong, list(
            _local_grades(wrong_items, opts, say).values)))
    for j in opts.judges:
        say(f"leniency: judge {j.model} ({j.prompt.name}) on {len(wrong_items)} wrong answer(s)")
        verdicts, _errors = j.ask(j.prompt, wrong_items)
        result.leniency.append(leniency(f"judge {j.model} ({j.prompt.name})", wrong,
                                        [None if v is None else float(v) for v in verdicts]))


def check(files: Sequence[Path], reader: str | None, mapping: Path | None,
          opts: Options) -> CheckResult:
    claims = read_claims(files, reader, mapping)
    result = reproduce(claims, opts)
    result.reruns = matched_reruns(claims, opts.reruns)
    rescore(result, opts)
    return result


def matched_reruns(claims: ClaimSet, runs: Sequence[RunAnswers]) -> list[Rerun]:
    """Each run matched to the publisher's items; a run sharing no question is refused (every
    such run named at once) before anything is scored."""
    out = [match(claims.items, r) for r in runs]
    refused = [f"--rerun {r.run.path}: none of its {len(r.run.answers)} question(s) "
               f"({r.run.adapter}) is among the {len(claims.items)} of the results file (matched "
               "by question text); give a run that answered the same benchmark's questions"
               for r in out if not r.matched]
    if refused:
        raise UserError(refused)
    return out
