"""``python -m goldevidence generate|validate|run|grade|model|sweep|train-selector|report``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
from pydantic import ValidationError

from goldevidence.baselines import predictions
from goldevidence.book import validate_book
from goldevidence.compat import METRICS as COMPAT_METRICS
from goldevidence.compat import (
    GradeOptions,
    grade_original,
    prediction_index,
)
from goldevidence.config import PRESETS, GenConfig, preset
from goldevidence.generate import iter_rows
from goldevidence.grade import METRICS, GradeResult, grade
from goldevidence.io import read_jsonl_objects, read_predictions, read_rows, write_jsonl
from goldevidence.retrieval import RetrievalAnswerer, RetrievalOptions, build_candidates
from goldevidence.rows import PredictionLine, Row
from goldevidence.selectors import RERANKERS, CandidateExport, export_record, train_linear
from lens import UserError
from lens.plugin_api import run_async

_KNOBS: dict[str, type] = {
    "episodes": int, "steps": int, "keys": int, "queries": int, "derived_query_rate": float,
    "distractor_rate": float, "clear_rate": float, "note_rate": float,
    "tail_distractor_steps": int, "mid_query_rate": float, "chapters": int,
    "max_support_k": int,
}


def _gen_config(args: argparse.Namespace) -> GenConfig:
    over: dict[str, int | float | str | bool] = {k: getattr(args, k) for k in _KNOBS
                                                 if getattr(args, k) is not None}
    if args.state_mode:
        over["state_mode"] = args.state_mode
    if args.distractor_profile:
        over["distractor_profile"] = args.distractor_profile
    if args.twins is not None:
        over["twins"] = args.twins
    if args.require_citations is not None:
        over["require_citations"] = args.require_citations
    try:
        return preset(args.preset, **over) if args.preset else GenConfig.model_validate(over)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UserError(f"--{'-'.join(str(x) for x in err['loc']).replace('_', '-')}: "
                        f"{err['msg']}") from None


def cmd_generate(args: argparse.Namespace) -> int:
    cfg = _gen_config(args)
    n = write_jsonl(args.out, iter_rows(cfg, seed=args.seed))
    print(f"wrote {n} rows to {args.out} ({cfg.episodes} episode(s), state_mode="
          f"{cfg.state_mode}, profile={cfg.distractor_profile}, seed={args.seed})")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    rows = read_rows(args.data)
    bad = 0
    seen: set[str] = set()
    for r in rows:
        book = r.get("book") or ""
        if not book or book in seen:
            continue
        seen.add(book)
        check = validate_book(book)
        if not check.ok:
            bad += 1
            print(f"{r['id']}: " + "; ".join(check.errors[:5]))
    print(f"{len(seen)} book(s) checked, {bad} invalid")
    return 1 if bad else 0


def _shown(v: object) -> str:
    return "unknown" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))


def _print_result(title: str, g: GradeResult, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"name": title, "mode": "lens", **g.as_dict()}, default=str))
        return
    print(f"== {title} (n={g.n})")
    for name in (*METRICS, "cite_precision", "cite_recall", "clean_acc", "tokens_per_query",
                 "passes_per_query", "wall_s_per_query"):
        print(f"  {name:30s} {_shown(getattr(g, name))}")
    if g.errors:
        print(f"  per-row errors                 {g.errors} ({g.rows_with_errors} row(s))")


def _retrieval_options(args: argparse.Namespace) -> RetrievalOptions:
    try:
        return RetrievalOptions(
            k=args.k, wrong_type=args.wrong_type, order=args.order, drop_prob=args.drop_prob,
            authority_filter=args.authority_filter, query_sandwich=args.query_sandwich,
            pick_then_answer=args.pick_then_answer, selector_only=args.selector_only,
            rerank=args.rerank, selector_path=args.selector_path, seed=args.retrieval_seed,
            source="book" if args.protocol != "open_book" else "log")
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UserError(f"--{err['loc'][0]}: {err['msg']}") from None


async def _answer_all(answerer: RetrievalAnswerer, rows: list[Row],
                      concurrency: int) -> list[PredictionLine]:
    limiter = anyio.CapacityLimiter(concurrency)
    out: dict[str, PredictionLine] = {}

    async def one(row: Row) -> None:
        async with limiter:
            out[row["id"]] = await answerer.answer(row)

    async with anyio.create_task_group() as tg:
        for r in rows:
            tg.start_soon(one, r)
    if answerer.client is not None:
        await answerer.client.aclose()
    return [out[r["id"]] for r in rows]


def _client(model: str | None) -> Any:
    if not model:
        return None
    from lens import ModelConfig
    from lens.plugin_api import create_client

    return create_client(ModelConfig(model=model))


def cmd_run(args: argparse.Namespace) -> int:
    rows = read_rows(args.data)
    if args.limit is not None:
        rows = rows[: args.limit]
    protocols = ["open_book", "closed_book"] if args.protocol == "both" else [args.protocol]
    for protocol in protocols:
        if args.baseline == "retrieval":
            args.protocol = protocol
            try:
                answerer = RetrievalAnswerer(_retrieval_options(args), _client(args.model))
                preds = run_async(_answer_all, answerer, rows, args.concurrency)
            except ValueError as exc:
                raise UserError(str(exc)) from None
        else:
            preds = list(predictions(rows, args.baseline, protocol))
        if args.pred_out:
            target = Path(args.pred_out)
            if len(protocols) > 1:
                target = target.with_name(f"{target.stem}.{protocol}{target.suffix}")
            write_jsonl(target, preds)
        _print_result(f"{args.baseline} {protocol}", grade(rows, {p["id"]: p for p in preds}),
                      args.json)
    return 0


def _print_compat(title: str, res: GradeResult, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"name": title, **res.as_dict()}))
        return
    print(f"== {title} (n={res.n}) [compat original: the original GoldEvidenceBench grader's "
          "definitions, flaws included; see docs/goldevidence.md, Departures]")
    for name in COMPAT_METRICS:
        v = getattr(res, name)
        print(f"  {name:30s} {_shown(v)}")


def _check_grade_options(args: argparse.Namespace) -> None:
    if args.compat is None and (args.support_metric != "f1" or not args.entailment_check):
        raise UserError("--support-metric exact and --no-entailment-check are options of the "
                        "original grader: add --compat original")
    if args.max_support_k is not None and args.max_support_k < 1:
        raise UserError(f"--max-support-k {args.max_support_k}: give 1 or more")


def _note_unmatched(preds: Mapping[str, object], rows: list[Row], data: Path) -> None:
    unknown = sorted(set(preds) - {r["id"] for r in rows})
    if unknown:
        print(f"note: {len(unknown)} prediction(s) name no row of {data} "
              f"(first: {unknown[0]}); ignored", file=sys.stderr)


def _grade_compat(args: argparse.Namespace) -> int:
    # Graded as written: lens's mode fills row defaults in, and the original skips prediction
    # lines without an id where lens's reader rejects the file.
    rows = read_rows(args.data, defaults=False)
    preds = prediction_index(read_jsonl_objects(args.pred, "predictions"))
    _note_unmatched(preds, rows, args.data)
    opts = GradeOptions(citations=args.citations, support_metric=args.support_metric,
                        max_support_k=args.max_support_k or 3,
                        entailment_check=args.entailment_check)
    _print_compat(f"grade {args.pred}", grade_original(rows, preds, opts), args.json)
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    _check_grade_options(args)
    if args.compat == "original":
        return _grade_compat(args)
    rows = read_rows(args.data)
    preds = read_predictions(args.pred)
    _note_unmatched(preds, rows, args.data)
    result = grade(rows, preds, citations=args.citations, max_support_k=args.max_support_k)
    _print_result(f"grade {args.pred}", result, args.json)
    return 0


def _adapter_entry(name: str, options: list[str], label: str | None) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for item in options:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"--adapter-option {item!r}: write key=value")
        try:
            opts[key] = json.loads(raw)
        except json.JSONDecodeError:
            opts[key] = raw
    if name in ("goldevidence", "candidates"):
        name = "goldevidence.lens_adapter:CandidateAdapter"
    entry: dict[str, Any] = {"name": name, "options": opts}
    if label:
        entry["label"] = label
    return entry


def _agent(args: argparse.Namespace) -> dict[str, Any]:
    agent: dict[str, Any] = {"model": args.model}
    if args.model_option:
        agent["options"] = dict(_adapter_entry("x", args.model_option, None)["options"])
    agent["budget"] = {"max_turns": args.max_turns, "max_tool_calls": args.max_tool_calls,
                       "max_agent_tokens": args.max_agent_tokens, "max_seconds": args.max_seconds}
    return agent


def cmd_model(args: argparse.Namespace) -> int:
    from goldevidence.lensrun import LensJob, run_job, summary_rows

    rows = read_rows(args.data)
    job = LensJob(name=args.name, cells={"": ({}, rows)},
                  adapters=[_adapter_entry(args.adapter, args.adapter_option, args.label)],
                  agent=_agent(args), out=Path(args.out), granularity=args.granularity,
                  concurrency={"units": args.units, "questions": args.questions})
    run_dir = run_job(job, resume=Path(args.resume) if args.resume else None)
    report = json.loads((run_dir / "goldevidence" / "grades.json").read_text())
    for g, row in zip(report["groups"], summary_rows(report), strict=True):
        print(f"== {g['adapter']} via lens (n={row['n']}, agent {report['agent_model']})")
        for name in METRICS:
            print(f"  {name:30s} {_shown(row.get(name))}")
    print(f"run directory: {run_dir}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from goldevidence.lensrun import run_job
    from goldevidence.sweep import load_spec, parse_spec, sweep_job

    def ints(s: str | None) -> list[int] | None:
        return [int(x) for x in s.split(",")] if s else None

    def strs(s: str | None) -> list[str] | None:
        return s.split(",") if s else None

    over = {"seeds": ints(args.seeds), "k": ints(args.k), "orders": strs(args.orders),
            "reranks": strs(args.reranks), "state_modes": strs(args.state_modes),
            "profiles": strs(args.profiles), "preset": args.preset, "name": args.name,
            "out": args.out}
    if args.model:
        over["agent"] = _agent(args)
    if args.config:
        spec = load_spec(args.config, **over)
    else:
        spec = parse_spec({k: v for k, v in over.items() if v is not None}, "command line")
    job = sweep_job(spec)
    run_dir = run_job(job, resume=Path(args.resume) if args.resume else None)
    csv_path = run_dir / "goldevidence" / "summary.csv"
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        Path(args.csv).write_text(csv_path.read_text(encoding="utf-8"), encoding="utf-8")
        csv_path = Path(args.csv)
    print(csv_path.read_text(encoding="utf-8"), end="")
    print(f"summary: {csv_path}\nrun directory: {run_dir}")
    return 0


def cmd_train_selector(args: argparse.Namespace) -> int:
    import numpy as np

    if args.from_export:
        # An export this command wrote: export_record's objects, read back.
        records = [cast(CandidateExport, r) for _, r in _jsonl(Path(args.from_export))]
    else:
        if not args.data:
            raise UserError("give --data (rows to export candidate sets from) or --from-export")
        rows = read_rows(args.data)
        opts = _retrieval_options(args)
        records = []
        for r in rows:
            cs = build_candidates(r, opts)
            if cs.entries:
                records.append(export_record(r["id"], cs.entries, r["question"], cs.gold_uid))
        if args.export:
            write_jsonl(args.export, records)
    sets = [(np.asarray(r["features"], dtype=float), int(r["gold_index"])) for r in records
            if r.get("features")]
    try:
        model = train_linear(sets, epochs=args.epochs, lr=args.lr, l2=args.l2)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    hits = sum(1 for x, y in sets if y >= 0 and int(np.argmax(x @ model.weights)) == y)
    usable = sum(1 for _, y in sets if y >= 0)
    model.save(Path(args.out))
    print(f"trained on {usable} candidate set(s); training selection accuracy "
          f"{hits / usable:.4f}; wrote {args.out}")
    return 0


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    from goldevidence.io import _read_jsonl

    return _read_jsonl(path, "candidate export")


def cmd_report(args: argparse.Namespace) -> int:
    from goldevidence.report import section_markdown

    text = section_markdown(args.run_dir)
    if text is None:
        raise UserError(f"{args.run_dir}: not a GoldEvidence lens run")
    print(text, end="")
    return 0


def _retrieval_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("retrieval answerer")
    g.add_argument("--k", type=int, default=4)
    g.add_argument("--wrong-type", choices=["none", "same_key", "other_key"], default="none")
    g.add_argument("--order", choices=["shuffle", "gold_first", "gold_middle", "gold_last"],
                   default="shuffle")
    g.add_argument("--drop-prob", type=float, default=0.0)
    g.add_argument("--authority-filter", action="store_true")
    g.add_argument("--query-sandwich", action="store_true")
    g.add_argument("--pick-then-answer", action="store_true")
    g.add_argument("--selector-only", action="store_true")
    g.add_argument("--rerank", choices=RERANKERS, default="none")
    g.add_argument("--selector-path", type=Path)
    g.add_argument("--retrieval-seed", type=int, default=0)


def _agent_args(p: argparse.ArgumentParser, default_model: str | None) -> None:
    g = p.add_argument_group("agent")
    g.add_argument("--model", default=default_model,
                   help="lens model name (scripted/policy, llama_cpp/…, openai/…) or "
                        "goldevidence-policy/first|latest_step|random")
    g.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE")
    g.add_argument("--max-turns", type=int, default=4)
    g.add_argument("--max-tool-calls", type=int, default=4)
    g.add_argument("--max-agent-tokens", type=int, default=16_000)
    g.add_argument("--max-seconds", type=float, default=300.0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m goldevidence",
                                     description="GoldEvidenceBench: state tracking under "
                                                 "distractors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("generate", help="write rows (JSONL)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preset", choices=sorted(PRESETS))
    for knob, typ in _KNOBS.items():
        p.add_argument(f"--{knob.replace('_', '-')}", type=typ)
    p.add_argument("--state-mode", choices=["kv", "kv_commentary", "counter", "set",
                                            "relational"])
    p.add_argument("--distractor-profile", choices=["standard", "instruction",
                                                    "instruction_suite", "adversarial"])
    p.add_argument("--twins", dest="twins", action="store_true", default=None)
    p.add_argument("--no-twins", dest="twins", action="store_false")
    p.add_argument("--require-citations", dest="require_citations", action="store_true",
                   default=None)
    p.add_argument("--no-require-citations", dest="require_citations", action="store_false")
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser("validate", help="check every book of a data file")
    p.add_argument("--data", required=True, type=Path)
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("run", help="run a baseline or the retrieval answerer; print metrics")
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--baseline", choices=["naive", "ledger", "retrieval"], required=True)
    p.add_argument("--protocol", choices=["open_book", "closed_book", "both"],
                   default="open_book")
    p.add_argument("--pred-out", type=Path)
    p.add_argument("--json", action="store_true")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--limit", type=int, help="only the first N rows")
    p.add_argument("--model", help="model for the retrieval answerer (lens model name)")
    _retrieval_args(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("grade", help="grade a predictions file")
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--pred", required=True, type=Path)
    p.add_argument("--citations", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--max-support-k", type=int,
                   help="ids scored per answer (default: the row's max_support_k, else 3; "
                        "with --compat original: 3, as the original)")
    p.add_argument("--compat", choices=["original"],
                   help="grade by the original GoldEvidenceBench grader's definitions, flaws "
                        "included, to re-derive published numbers")
    p.add_argument("--support-metric", choices=["f1", "exact"], default="f1",
                   help="with --compat original: the original's citation rule for exact_acc")
    p.add_argument("--entailment-check", action=argparse.BooleanOptionalAction, default=True,
                   help="with --compat original: the original's entailment switch")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_grade)

    p = sub.add_parser("model", help="run rows through lens with a memory adapter and a model")
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--adapter", required=True,
                   help="lens adapter name (sqlite_fts, …, module:Class) or 'goldevidence' "
                        "for the candidate-set adapter")
    p.add_argument("--adapter-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--label")
    p.add_argument("--granularity", choices=["line", "step"], default="line")
    p.add_argument("--name", default="goldevidence-model")
    p.add_argument("--out", default="runs")
    p.add_argument("--resume", help="a run directory to resume")
    p.add_argument("--units", type=int, default=4)
    p.add_argument("--questions", type=int, default=8)
    _agent_args(p, "scripted/policy")
    p.set_defaults(handler=cmd_model)

    p = sub.add_parser("sweep", help="a grid as one concurrent lens run; one summary CSV")
    p.add_argument("--config", type=Path, help="sweep YAML (see configs/goldevidence-*.yaml)")
    p.add_argument("--preset", choices=sorted(PRESETS))
    p.add_argument("--name")
    p.add_argument("--seeds")
    p.add_argument("--k")
    p.add_argument("--orders")
    p.add_argument("--reranks")
    p.add_argument("--state-modes")
    p.add_argument("--profiles")
    p.add_argument("--out", type=Path)
    p.add_argument("--csv", type=Path, help="also copy the summary CSV here")
    p.add_argument("--resume")
    _agent_args(p, None)
    p.set_defaults(handler=cmd_sweep)

    p = sub.add_parser("train-selector", help="train the linear selector on candidate sets")
    p.add_argument("--data", type=Path)
    p.add_argument("--export", type=Path, help="write the candidate sets here too")
    p.add_argument("--from-export", type=Path, help="train on an existing export")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--l2", type=float, default=1e-3)
    p.add_argument("--protocol", default="closed_book", help=argparse.SUPPRESS)
    _retrieval_args(p)
    p.set_defaults(handler=cmd_train_selector)

    p = sub.add_parser("report", help="print the GoldEvidence report section of a lens run")
    p.add_argument("run_dir", type=Path)
    p.set_defaults(handler=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except UserError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        for problem in getattr(exc, "problems", []) or []:
            print(f"  {problem}", file=sys.stderr)
        return 2
