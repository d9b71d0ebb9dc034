"""``lens judge calibrate --judge MODEL DATASET``: measure a judge on answers of known quality.

Prints a table, writes the calibration as JSON (``--out``) and stores it in the lens cache
folder, where ``lens report`` finds the calibration of the judge a run used.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lens.core import eventloop
from lens.core.errors import ConfigError, UserError
from lens.data.config import CacheConfig, ModelConfig, load_config
from lens.data.dataset_load import load_dataset
from lens.models.factory import create_client
from lens.models.providers import unknown_provider
from lens.runs.store import atomic_write_text
from lens.scoring.judging.calibration import (
    Calibration,
    calibrate,
    calibration_dir,
    save_calibration,
)
from lens.scoring.judging.calibration_answers import FLAWED_KINDS

DEFAULT_OUT = "judge-calibration.json"


def register(sub: Any) -> None:
    p = sub.add_parser("judge", help="judge tools: calibrate a judge model")
    judge_sub = p.add_subparsers(dest="judge_command", metavar="SUBCOMMAND")
    c = judge_sub.add_parser(
        "calibrate", help="measure a judge on correct, subtly wrong, stuffed and vague answers "
                          "built from a dataset's ground truth")
    c.add_argument("dataset", type=Path, metavar="DATASET", help="a lens dataset JSON file")
    c.add_argument("--judge", metavar="MODEL",
                   help="the judge model, e.g. openai/gpt-4o-mini (default: --config's judge)")
    c.add_argument("--config", type=Path, metavar="RUN_CONFIG",
                   help="a run config: its judge settings (and cache) are used")
    add_judge_server_arguments(c)
    c.add_argument("--limit", type=int, default=40, metavar="N",
                   help="questions to sample from the dataset (default 40; 0 = all)")
    c.add_argument("--concurrency", type=int, default=None, metavar="N",
                   help="judge calls in flight (default: the judge's max_concurrency)")
    c.add_argument("--no-fact-grades", action="store_true",
                   help="skip the per-fact grading part (pairwise verdicts only)")
    c.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), metavar="FILE",
                   help=f"write the calibration here (default {DEFAULT_OUT})")
    c.add_argument("--no-store", action="store_true",
                   help="do not keep the calibration in the cache folder for reports")
    c.set_defaults(handler=_calibrate)
    p.set_defaults(handler=lambda _args: usage(p))


def add_judge_server_arguments(p: argparse.ArgumentParser) -> None:
    """Where a judge named on the command line is served, and the secret it needs."""
    p.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible server for the judge")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="environment variable holding the judge's API key")


def usage(p: argparse.ArgumentParser) -> int:
    """A command group called without its subcommand: its help, and the status of bad input."""
    p.print_help()
    return 2


def judge_model_config(model: str, base: dict[str, Any], args: argparse.Namespace, *,
                       source: str = "--judge") -> ModelConfig:
    """A judge's model settings: ``base`` with the command line's server and secret, checked,
    its provider named before any dataset is read or judge call made."""
    settings = {**base}
    if args.base_url:
        settings["base_url"] = args.base_url
    if args.api_key_env:
        settings["api_key_env"] = args.api_key_env
    try:
        config = ModelConfig.model_validate(settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "model"
        raise ConfigError(f"--judge {model!r}: field '{where}': "
                          f"{first['msg'].removeprefix('Value error, ')}") from None
    problem = unknown_provider(config.provider)
    if problem is not None:
        raise ConfigError(f"{source} {model!r}: {problem}")
    return config


def _judge_settings(args: argparse.Namespace) -> tuple[ModelConfig, CacheConfig]:
    configured: ModelConfig | None = None
    cache = CacheConfig()
    if args.config is not None:
        run_config = load_config(args.config)
        configured, cache = run_config.judge, run_config.cache
    model = args.judge or (configured.model if configured else None)
    if model is None:
        raise UserError("no judge: give --judge MODEL (e.g. --judge openai/gpt-4o-mini) or a "
                        "--config whose judge section names one")
    # The model's own settings; calibration asks synchronously whatever the run's batch setting.
    base = (configured.model_dump(include=set(ModelConfig.model_fields))
            if configured is not None and configured.model == model else {"model": model})
    source = "--judge" if args.judge else f"{args.config}: field 'judge.model'"
    config = judge_model_config(model, base, args, source=source)
    return config, cache


def _calibrate(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise UserError(f"--limit must be 0 (all) or more (got {args.limit})")
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1 (got {args.concurrency})")
    cfg, cache = _judge_settings(args)
    ds = load_dataset(args.dataset)
    client = create_client(cfg, cache=cache)
    concurrency = args.concurrency or cfg.max_concurrency

    async def main() -> Calibration:
        try:
            return await calibrate(client, ds, dataset_label=args.dataset.name,
                                   limit=args.limit or None, concurrency=concurrency,
                                   fact_grades=not args.no_fact_grades)
        finally:
            await client.aclose()

    cal = eventloop.run(main)
    print(render(cal))
    atomic_write_text(args.out, cal.model_dump_json(indent=1))
    print(f"wrote {args.out}")
    if not args.no_store:
        print(f"stored for reports: {save_calibration(cal, calibration_dir(cache))}")
    return 0


def _f(v: float | None, pct: bool = True) -> str:
    if v is None:
        return "-"
    return f"{v:.1%}" if pct else f"{v:+.2f}"


def _credit(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def render(cal: Calibration) -> str:
    """The calibration as a plain-text table."""
    lines = [f"judge {cal.model} on {cal.dataset.get('label')}: {cal.questions} question(s), "
             f"{cal.pairs} pair(s) asked in both orders, {cal.verdicts} verdict(s)"]
    head = f"{'flawed answer':<14} {'pairs':>5} {'correct wins':>12} {'flawed wins':>11} " \
           f"{'tie/split':>9} {'fooled':>7} {'fact credit':>11}"
    lines.append(head)
    if cal.fact_credit:
        lines.append(f"{'(correct)':<14} {'':>5} {'':>12} {'':>11} {'':>9} {'':>7} "
                     f"{_credit(cal.fact_credit.get('correct')):>11}")
    for kind in FLAWED_KINDS:
        rs = [r for r in cal.results if r.kind == kind and r.final is not None]
        n = len([r for r in cal.results if r.kind == kind])
        won = sum(r.final == "correct" for r in rs)
        lost = sum(r.final == "flawed" for r in rs)
        split = sum(r.final == "tie" for r in rs)
        credit = _credit(cal.fact_credit.get(kind)) if cal.fact_credit else ""
        fooled = _f(cal.fooled_by_kind.get(kind))
        lines.append(f"{kind:<14} {n:>5} {won:>12} {lost:>11} {split:>9} {fooled:>7} "
                     f"{credit:>11}")
    lines.append(f"accuracy {_f(cal.accuracy)}; position disagreement "
                 f"{_f(cal.position_disagreement)} (response A chosen {_f(cal.position_a_rate)} "
                 f"of decisive verdicts); length bias {_f(cal.length_bias, False)} (flawed "
                 f"answer wins {_f(cal.longer_flawed_win_rate)} when longer, "
                 f"{_f(cal.shorter_flawed_win_rate)} when shorter); unreadable "
                 f"{cal.unreadable}/{cal.verdicts}; failed calls {cal.failed_calls}")
    if cal.fact_grade_gap is not None:
        lines.append(f"fact-grade gap {_f(cal.fact_grade_gap, False)} (credit of the correct "
                     "answer's key facts minus the most any flawed answer got)")
    lines.append("fooled: the share of a kind's pairs in which the judge did not prefer the "
                 "correct answer in both orders")
    lines.append(f"calibration: {cal.status.upper()}")
    lines.extend(f"  {p}" for p in cal.problems)
    return "\n".join(lines)
