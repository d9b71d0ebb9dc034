"""``lens claims``: reproduce a published claim from the publisher's own per-question results.

``lens claims check FILE [FILE2] --reader zep|memobase|longmemeval|mab`` (or ``--mapping
MAP.yaml``) recomputes the publisher's figure with their arithmetic, re-scores the same answers
with lens's scorers and measures each scorer's leniency; ``lens claims assign TABLE`` says which
assignment of a per-category table's columns to the benchmark's categories reproduces it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lens.claims.assign import LOCOMO_COUNTS, Assignment, assignments, reproducing
from lens.claims.check import CheckResult, Judge, Options, check, read_claims
from lens.claims.items import ClaimItem
from lens.claims.output import write
from lens.claims.published import load_published
from lens.claims.readers import READERS
from lens.claims.rerun import RunAnswers, read_run
from lens.claims.rescore import JudgePrompt, judge_verdicts, lens_prompt, load_prompt
from lens.claims.table import blocks
from lens.commands.judge import add_judge_server_arguments, judge_model_config, usage
from lens.core import eventloop
from lens.core.errors import UserError
from lens.data.config import CacheConfig, ModelConfig
from lens.data.scoring_names import CLAIMS_GRADERS
from lens.flow.bundle.claims_bundle import export_claims
from lens.models.factory import create_client
from lens.report.documents.document import to_markdown


def register(sub: Any) -> None:
    p = sub.add_parser("claims", help="reproduce a published claim from the publisher's own "
                                      "per-question results, and re-score the same answers")
    claims_sub = p.add_subparsers(dest="claims_command", metavar="SUBCOMMAND")
    c = claims_sub.add_parser(
        "check", help="the publisher's figure exactly, then the same answers under lens's "
                      "scorers, with each scorer's leniency")
    c.add_argument("files", type=Path, nargs="+", metavar="FILE",
                   help="the results file (zep: the grades file, then optionally the "
                        "responses file; longmemeval: the evaluation log, then the dataset)")
    how = c.add_mutually_exclusive_group()
    how.add_argument("--reader", choices=sorted(READERS), help="a built-in reader")
    how.add_argument("--mapping", type=Path, metavar="MAP",
                     help="a mapping file (YAML or JSON) declaring the file's fields")
    c.add_argument("--published", metavar="NAME|FILE",
                   help="the published figures: a built-in table (zep, memobase-0.0.32, "
                        "memobase-0.0.37, mem0-table1) or a YAML/JSON table file")
    c.add_argument("--row", help="the published table's row to reproduce (when it has several)")
    c.add_argument("--runs", choices=("mean", "majority"),
                   help="how several judge runs make one figure (default: inferred)")
    c.add_argument("--category5", choices=("in", "out"),
                   help="whether LoCoMo's category 5 counts (default: inferred)")
    c.add_argument("--no-f1", action="store_true", help="skip LoCoMo's token F1")
    c.add_argument("--grader", choices=CLAIMS_GRADERS, default="matcher",
                   help="lens's fact grader on the gold answer: the phrase matcher (default), "
                        "the offline grader with the local model (slow: needs --work), or none")
    c.add_argument("--judge", action="append", default=[], metavar="MODEL",
                   help="a judge model (repeatable), e.g. openai/gpt-4o-mini")
    c.add_argument("--judge-prompt", action="append", default=[], metavar="FILE|lens",
                   help="a judge prompt (repeatable): 'lens' for lens's LoCoMo judge prompt, or "
                        "a file with the publisher's prompt ({question}, {gold_answer}, "
                        "{response}); each judge is asked under each prompt (default: lens)")
    add_judge_server_arguments(c)
    c.add_argument("--limit", type=int, metavar="N",
                   help="lens's scorers read a sample of N answers, chosen by a hash of the file")
    c.add_argument("--no-leniency", action="store_true",
                   help="skip the wrong answers that measure each scorer's leniency")
    c.add_argument("--work", type=Path, metavar="DIR",
                   help="keep model verdicts here (the local grader's and the judges'), so a "
                        "stopped check resumes")
    c.add_argument("--rerun", type=Path, action="append", default=[], metavar="RUN_DIR",
                   help="a `lens run` run directory that answered the same benchmark's "
                        "questions (repeatable): its answers, matched by question text, are "
                        "scored by the same scorers as a column of their own")
    c.add_argument("--out", type=Path, metavar="DIR",
                   help="write report.md, report.html and claims.json here")
    c.add_argument("--bundle", action="store_true",
                   help="with --out: also write claims-bundle.tar.gz (the reports, claims.json "
                        "and the publisher's files, hashed) for lens verify")
    c.set_defaults(handler=_check)
    a = claims_sub.add_parser(
        "assign", help="which assignment of a per-category table's columns to the benchmark's "
                       "categories reproduces its overall figures")
    a.add_argument("table", metavar="NAME|FILE",
                   help="a published table: built-in name (mem0-table1, zep, ...) or a file")
    a.add_argument("--counts-from", type=Path, metavar="FILE",
                   help="take each category's question count from a results file (with "
                        "--reader or --mapping); default: LoCoMo's 1,540 judged questions")
    how = a.add_mutually_exclusive_group()
    how.add_argument("--reader", choices=sorted(READERS))
    how.add_argument("--mapping", type=Path, metavar="MAP")
    a.set_defaults(handler=_assign)
    p.set_defaults(handler=lambda _args: usage(p))


def _probe(config: ModelConfig) -> None:
    """Build the judge's client once before any scoring: a missing key or an unknown setting
    is named before the check reads a file (exit 2), not after the other scorers ran."""
    async def build() -> None:
        await create_client(config, cache=CacheConfig(enabled=False)).aclose()

    eventloop.run(build)


def _judges(args: argparse.Namespace) -> tuple[Judge, ...]:
    if args.judge_prompt and not args.judge:
        raise UserError("--judge-prompt needs a --judge MODEL to ask")
    prompts = [lens_prompt() if p == "lens" else load_prompt(Path(p))
               for p in (args.judge_prompt or ["lens"])]
    cache = (CacheConfig(path=args.work / "judge-cache.sqlite") if args.work is not None
             else CacheConfig())
    out: list[Judge] = []
    for model in args.judge:
        config = judge_model_config(model, {"model": model}, args)
        _probe(config)

        def ask(prompt: JudgePrompt, items: Sequence[ClaimItem],
                config: ModelConfig = config) -> tuple[list[bool | None], list[str]]:
            errors: list[str] = []

            async def main() -> list[bool | None]:
                client = create_client(config, cache=cache)
                try:
                    return await judge_verdicts(client, prompt, items,
                                                concurrency=config.max_concurrency,
                                                errors=errors)
                finally:
                    await client.aclose()

            return eventloop.run(main), errors

        out.extend(Judge(model, prompt, ask) for prompt in prompts)
    return tuple(out)


def _check(args: argparse.Namespace) -> int:
    if args.bundle and args.out is None:
        raise UserError("--bundle needs --out DIR: the bundle is written there")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1 (got {args.limit})")
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
    reruns = _reruns(args.rerun)
    opts = Options(
        published=load_published(args.published) if args.published else None, row=args.row,
        runs=args.runs, category5=None if args.category5 is None else args.category5 == "in",
        f1=not args.no_f1, grader=args.grader, limit=args.limit,
        leniency=not args.no_leniency, judges=_judges(args), work=args.work,
        progress=lambda m: print(f"lens claims: {m}", flush=True), reruns=reruns)
    result = check(args.files, args.reader, args.mapping, opts)
    print(to_markdown(blocks(result)))
    if args.out is not None:
        _write(result, args.out, bundle=args.bundle)
    return _status(result)


def _write(result: CheckResult, out: Path, *, bundle: bool) -> None:
    """Write the check's files (and, with --bundle, its bundle) into ``out``."""
    for path in write(result, out):
        print(f"wrote {path}")
    if bundle:
        print(f"wrote {export_claims(result, out)}")


def _reruns(run_dirs: list[Path]) -> tuple[RunAnswers, ...]:
    """The answers of the runs given with --rerun; refuses with every problem of every run."""
    reruns: list[RunAnswers] = []
    problems: list[str] = []
    for run_dir in run_dirs:
        try:
            reruns.extend(read_run(run_dir))
        except UserError as exc:
            problems.extend(exc.lines)
    if problems:
        raise UserError(problems)
    return tuple(reruns)


def _status(result: CheckResult) -> int:
    """1 where a scorer's verdicts (or a leniency check's) are partly unknown, else 0."""
    failed = [s for s in result.scored + [x for r in result.reruns for x in r.scorers]
              if s.notes and s.unknown]
    failed_leniency = [x for x in result.leniency if x.unknown]
    # A scorer whose verdicts are partly unknown is shown in the table; the status says so too.
    return 1 if failed or failed_leniency else 0


def _assign(args: argparse.Namespace) -> int:
    table = load_published(args.table)
    counts, source = _category_counts(args)
    if len(table.columns) > len(counts):
        raise UserError(f"the table has {len(table.columns)} category columns but the counts "
                        f"name {len(counts)} categories")
    found = assignments(table, counts)
    good = reproducing(found, len(table.rows))
    print(f"{table.source}: {len(table.rows)} row(s), columns {', '.join(table.columns)}; "
          f"category counts from {source}: "
          + ", ".join(f"{k}={n}" for k, n in sorted(counts.items())))
    print(f"{len(found)} assignments of the columns to categories tried; rows each reproduces:")
    for a in sorted(found, key=lambda a: -len(a.rows_reproduced)):
        mark = " (LoCoMo's own names)" if a.is_benchmarks_own else ""
        cols = ", ".join(f"{c}={k}" for c, k in a.columns.items())
        print(f"  {len(a.rows_reproduced)}/{len(table.rows)}  {cols}{mark}")
    _print_verdict(found, good, len(table.rows))
    return 0


def _category_counts(args: argparse.Namespace) -> tuple[dict[str, int], str]:
    """Questions per category (LoCoMo's, or those of the answers --counts-from names), and
    where the counts come from."""
    if args.counts_from is None:
        return dict(LOCOMO_COUNTS), "LoCoMo's 1,540 judged questions (categories 1-4)"
    claims = read_claims([args.counts_from], args.reader, args.mapping)
    counts: dict[str, int] = {}
    for item in claims.items:
        if item.category is not None and item.category != "5":
            counts[item.category] = counts.get(item.category, 0) + 1
    return counts, f"{args.counts_from} ({sum(counts.values())} answers)"


def _print_verdict(found: list[Assignment], good: list[Assignment], rows: int) -> None:
    """Which assignments reproduce every row, and how many rows LoCoMo's own one does."""
    own = [a for a in found if a.is_benchmarks_own]
    if good:
        for a in good:
            print("reproduces every row: " + ", ".join(f"{c} = category {k}"
                                                       for c, k in a.columns.items())
                  + (" (LoCoMo's own assignment)" if a.is_benchmarks_own else
                     " (not LoCoMo's own assignment)"))
    else:
        print("no assignment reproduces every row")
    if own:
        print(f"LoCoMo's own assignment reproduces {len(own[0].rows_reproduced)} of "
              f"{rows} row(s)")
