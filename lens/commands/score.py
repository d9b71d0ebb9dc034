"""``lens score RUN_DIR [--judge MODEL] [--tier 1|2|3] [--subset all|certified]``: (re-)score a
stored run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from lens import eventloop
from lens.config import CacheConfig, JudgeConfig, ScoringConfig
from lens.errors import ConfigError, UserError
from lens.models.base import ModelClient
from lens.redact import register_config_secrets
from lens.scoring.batch_judge import make_judge_client
from lens.scoring.fact_grader import is_model_free
from lens.scoring.offline_grader import OfflineGrader
from lens.scoring.protocols import PROTOCOL_NAMES
from lens.scoring.scorer import SCORES_FILE, score_run
from lens.scoring.types import RunScores
from lens.store import RunStore
from lens.visible import visible

# The values scoring.subset accepts, so the flag and the config cannot drift apart.
SUBSETS: tuple[str, ...] = get_args(ScoringConfig.model_fields["subset"].annotation)

# Column titles of the summary table, by metric.
_SHOWN = {
    "composite": "composite", "evidence_grounding": "grounding", "fact_recall": "facts",
    "citation_precision": "cit.prec", "evidence_coverage": "coverage",
    "budget_compliance": "budget",
    "answer_quality": "quality", "insight_depth": "depth", "reasoning_quality": "reasoning",
    "longitudinal_advantage": "long.adv", "action_quality": "action",
}


def register(sub: Any) -> None:
    p = sub.add_parser("score", help="score a stored run (tiers 1-3) into RUN_DIR/scores.json")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory")
    p.add_argument("--judge", metavar="MODEL",
                   help="judge model, e.g. openai/gpt-4o-mini (default: the run config's judge)")
    p.add_argument("--tier", type=int, choices=(1, 2, 3), default=3,
                   help="score tiers up to this one (1 needs no model; default 3)")
    p.add_argument("--fact-grader", choices=("matcher", "local", "judge", "both"), default=None,
                   help="who decides fact_recall: the phrase matcher, the offline grader "
                        "(local model), the judge (each key fact graded present/partial/absent) "
                        "or both (judge grades, matcher kept beside them); default: the run "
                        "config's scoring.fact_grader, else the judge when there is one, else "
                        "local when installed")
    p.add_argument("--fact-judge", action="store_true",
                   help="the same as --fact-grader judge")
    p.add_argument("--dataset", type=Path, metavar="PATH",
                   help="the run's dataset, if it has moved since the run")
    p.add_argument("--concurrency", type=int, default=None, metavar="N",
                   help="judge calls in flight (default: the judge's max_concurrency)")
    p.add_argument("--protocol", choices=PROTOCOL_NAMES, default=None,
                   help="whose metrics: lens's own or a published benchmark's (default: the "
                        "run config's scoring.protocol, else lens)")
    p.add_argument("--errata", type=Path, metavar="FILE", default=None,
                   help="a gold errata file to apply (default: the run config's "
                        "scoring.errata)")
    p.add_argument("--subset", choices=SUBSETS, default=None,
                   help="which questions: all, or only those certified as needing memory by "
                        "`lens datasets certify` (default: the run config's scoring.subset)")
    p.set_defaults(handler=_score)


def judge_config(run_config: dict[str, Any], model: str | None) -> JudgeConfig | None:
    """The judge's settings: ``--judge MODEL`` if given (keeping the run's settings for it when
    the run configured the same model), else the run config's judge, else none."""
    configured = run_config.get("judge")
    try:
        if model is None:
            return JudgeConfig.model_validate(configured) if configured else None
        if configured and configured.get("model") == model:
            return JudgeConfig.model_validate(configured)
        return JudgeConfig(model=model)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "model"
        raise ConfigError(f"judge model {model or configured!r}: field '{where}': "
                          f"{first['msg']} (use provider/model, e.g. openai/gpt-4o-mini)"
                          ) from None


def scoring_config(run_config: dict[str, Any]) -> ScoringConfig:
    raw = dict(run_config.get("scoring") or {})
    weights = raw.get("weights")
    if isinstance(weights, dict) and weights.get("longitudinal_advantage"):
        # A run configured before longitudinal_advantage left the composite: re-score it
        # without that weight rather than refuse it.
        print("note: the run's config weights longitudinal_advantage; it is reported beside "
              "the composite, never in it, so that weight is ignored")
        raw["weights"] = {k: v for k, v in weights.items() if k != "longitudinal_advantage"}
    try:
        return ScoringConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"run manifest: field 'config.scoring."
                          f"{'.'.join(str(x) for x in first['loc'])}': {first['msg']}") from None


def _cache_config(run_config: dict[str, Any]) -> CacheConfig:
    try:
        return CacheConfig.model_validate(run_config.get("cache") or {})
    except ValidationError:
        return CacheConfig()


def _score(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1 (got {args.concurrency})")
    manifest = RunStore.open(run_dir).manifest()
    run_config = manifest.get("config") or {}
    register_config_secrets(run_config)  # the judge's key, by the variable the run named
    scoring = scoring_config(run_config)
    tiers = set(range(1, args.tier + 1))
    cfg = judge_config(run_config, args.judge) if args.tier > 1 else None
    client: ModelClient | None = None
    if cfg is not None:
        # The run's model cache: a judge verdict asked before (by this or another run) is free.
        client = make_judge_client(cfg, run_dir, _cache_config(run_config))
    concurrency = args.concurrency or (cfg.max_concurrency if cfg else 1)
    grader = args.fact_grader or ("judge" if args.fact_judge else scoring.grader())
    if args.tier == 1 and grader != "local":
        # Tier 1 calls no judge: the matcher decides, or the offline grader when asked for.
        grader = "matcher"
    model_free = is_model_free(str((run_config.get("agent") or {}).get("model", "")))
    offline = OfflineGrader.with_cache(_cache_config(run_config))
    if cfg is not None and cfg.batch:
        # Every call at once: the batch client gathers them into one batch.
        concurrency = 1_000_000
    protocol = args.protocol or scoring.protocol
    errata = args.errata or scoring.errata
    subset = args.subset or scoring.subset

    async def main() -> RunScores:
        try:
            return await score_run(run_dir, judge=client, tiers=tiers, weights=scoring.weights,
                                   gate_threshold=scoring.gate_threshold,
                                   fact_grader=grader, judge_concurrency=concurrency,
                                   dataset_path=args.dataset, protocol=protocol,
                                   errata=errata, subset=subset, offline=offline,
                                   model_free=model_free)
        finally:
            offline.close()
            if client is not None:
                await client.aclose()

    scores = eventloop.run(main)
    done = [e for e in RunStore.open(run_dir).events() if e.get("kind") == "scoring_done"]
    print(render_summary(scores, done[-1] if done else {}))
    print(f"scores: {run_dir / SCORES_FILE}")
    return 0


def _fmt(v: float | None) -> str:
    return "  -  " if v is None else f"{v:5.3f}"


def render_summary(scores: RunScores, last: dict[str, Any] | None = None) -> str:
    """A plain-text table of the per-adapter aggregates, judge noise and notes."""
    if "protocol" in scores.settings:
        return render_protocol_summary(scores)
    lines = []
    adapters = {visible(k): v for k, v in scores.aggregates.get("adapter", {}).items()}
    width = max([len("adapter"), *(len(a) for a in adapters)])
    header = f"{'adapter':<{width}}  {'n':>4}  " + "  ".join(t.rjust(9) for t in _SHOWN.values())
    lines.append(header)
    for name, agg in adapters.items():
        n = int(agg.get("n_questions") or 0)
        mark = "*" if agg.get("composite_renormalised") else " "
        cells = "  ".join(_fmt(agg.get(m)).rjust(9) for m in _SHOWN)
        lines.append(f"{name:<{width}}  {n:>4}  {cells}{mark}")
    j = scores.judge
    if j.model:
        rate = "unknown" if j.disagreement_rate is None else f"{j.disagreement_rate:.3f}"
        last = last or {}
        lines.append(f"judge {visible(j.model)}: {j.verdicts} verdict(s) "
                     f"({last.get('new_judge_calls', '?')} new call(s), "
                     f"{last.get('reused_verdicts', '?')} reused), {j.errors} failed, "
                     f"{j.invalid} unreadable; "
                     f"position-swap disagreement {rate} over {j.pairs} pairs")
    else:
        lines.append("judge: none (judge metrics missing)")
    lines.append("(- = not computable; * = composite renormalised over the metrics present)")
    lines.extend(f"note: {visible(n)}" for n in scores.notes)
    return "\n".join(lines)


def render_protocol_summary(scores: RunScores) -> str:
    """The protocol's headline figures and per-group table, one block per adapter."""
    lines = []
    for level, groups in scores.aggregates.items():
        metrics = sorted({k for e in groups.values() for k in e} - {"n_questions"})
        width = max([len(level), *(len(k) for k in groups)])
        lines.append(f"{level:<{width}}  {'n':>5}  " + "  ".join(m.rjust(10) for m in metrics))
        for key, e in groups.items():
            cells = "  ".join(_fmt(e.get(m)).rjust(10) for m in metrics)
            lines.append(f"{key:<{width}}  {int(e.get('n_questions') or 0):>5}  {cells}")
        lines.append("")
    lines.append("(- = not computable)")
    lines.extend(f"note: {n}" for n in scores.notes)
    return "\n".join(lines)
