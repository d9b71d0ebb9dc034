"""``lens score RUN_DIR [--judge MODEL] [--tier 1|2|3] [--subset all|certified]``: (re-)score a
stored run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from lens.commands.gating import add_fail_on, scored_exit_status
from lens.core import eventloop
from lens.core.errors import ConfigError, UserError
from lens.core.redact import register_config_secrets
from lens.core.visible import visible
from lens.data.config import JudgeConfig, ScoringConfig
from lens.data.scoring_names import FACT_GRADERS, PROTOCOL_NAMES
from lens.flow.bundle.rescore import unpack_for_rescore
from lens.runs.events import ScoringDone
from lens.runs.manifest import RecordedConfig, RunManifest
from lens.runs.store import MANIFEST, RunStore
from lens.scoring.foundations.types import RunScores
from lens.scoring.judging.judge_panel import judge_scores_path, load_panel, write_judge_scores
from lens.scoring.metrics import column_titles, judged_metrics, report_order, unweighted
from lens.scoring.plan import plan_for_config
from lens.scoring.scorer import SCORES_FILE, ScoringResult, score

# The values scoring.subset accepts, so the flag and the config cannot drift apart.
SUBSETS: tuple[str, ...] = get_args(ScoringConfig.model_fields["subset"].annotation)



def register(sub: Any) -> None:
    p = sub.add_parser("score", help="score a stored run (tiers 1-3) into RUN_DIR/scores.json")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory")
    p.add_argument("--judge", metavar="MODEL",
                   help="judge model, e.g. openai/gpt-4o-mini (default: the run config's judge)")
    p.add_argument("--tier", type=int, choices=(1, 2, 3), default=3,
                   help="score tiers up to this one (1 needs no model; default 3)")
    p.add_argument("--fact-grader", choices=FACT_GRADERS, default=None,
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
    p.add_argument("--judge-prompt-file", type=Path, metavar="FILE", default=None,
                   help="the protocol judge's prompts from this file, e.g. LongMemEval's "
                        "src/evaluation/evaluate_qa.py (default: the run config's "
                        "scoring.judge_prompt_file, else lens's wording)")
    p.add_argument("--subset", choices=SUBSETS, default=None,
                   help="which questions: all, or only those certified as needing memory by "
                        "`lens datasets certify` (default: the run config's scoring.subset)")
    p.add_argument("--primary", action="store_true",
                   help="with --judge: make it the run's primary judge (scores.json); without "
                        "this, a run already scored by another judge keeps its primary and "
                        "--judge adds a judge beside it (judge_scores/)")
    p.add_argument("--out", type=Path, metavar="DIR", default=None,
                   help="for a results bundle (lens export): where the re-judged copy goes "
                        "(default: beside the bundle)")
    add_fail_on(p)
    p.set_defaults(handler=_score)


def judge_config(settings: RecordedConfig, model: str | None) -> JudgeConfig | None:
    """The judge's settings: ``--judge MODEL`` if given (keeping the run's settings for it when
    the run configured the same judge; ``MODEL#version`` names a prompt version), else the run
    config's judge, else none."""
    if model is None:
        return settings.judge
    for cfg in [settings.judge, *settings.judges]:
        if cfg is not None and model in (cfg.label, cfg.model) and (
                cfg.prompts == "lens" or "#" in model):
            return cfg
    base, _, version = model.partition("#")
    try:
        return JudgeConfig.model_validate({"model": base, "prompts": version or "lens"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "model"
        hint = ("prompt versions: lens, strict, lenient" if where == "prompts"
                else "use provider/model, e.g. openai/gpt-4o-mini")
        raise ConfigError(f"judge model {model!r}: field '{where}': "
                          f"{first['msg']} ({hint})") from None


def recorded_settings(manifest: RunManifest, source: Path) -> RecordedConfig:
    """The run config's scoring sections, read once through the config's models. A weight on a
    metric that has since left the composite is dropped with a note rather than refused."""
    config = manifest.config
    weights = (config.get("scoring") or {}).get("weights")
    never = unweighted()
    if isinstance(weights, dict) and any(weights.get(m) for m in never):
        # A run configured before such a metric left the composite: re-score it without that
        # weight rather than refuse it.
        for name in sorted(m for m in never if weights.get(m)):
            print(f"note: the run's config weights {name}; it is reported beside the "
                  "composite, never in it, so that weight is ignored")
        scoring = {**config["scoring"],
                   "weights": {k: v for k, v in weights.items() if k not in never}}
        manifest = manifest.model_copy(update={"config": {**config, "scoring": scoring}})
    return manifest.settings(source)


def _stored_scores(run_dir: Path) -> RunScores | None:
    """The run's ``scores.json`` as it stands before this scoring (None: not scored yet, or
    unreadable: it is then written anew)."""
    path = run_dir / SCORES_FILE
    if not path.is_file():
        return None
    try:
        return RunScores.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError:
        return None


def _score(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1 (got {args.concurrency})")
    if run_dir.is_file():
        return _score_bundle(run_dir, args)
    if args.out is not None:
        raise UserError("--out is for a results bundle (lens export); a run directory is "
                        "scored in place")
    return _score_dir(run_dir, args, dataset=args.dataset, errata=args.errata)


def _score_bundle(bundle: Path, args: argparse.Namespace) -> int:
    """Re-judge a results bundle: a verified copy of its run, scored as a run directory is."""
    copy = unpack_for_rescore(bundle, args.out)
    status = _score_dir(copy.run_dir, args, dataset=copy.dataset,
                        errata=args.errata or copy.errata)
    from lens.report import write_reports

    paths = write_reports(copy.run_dir)
    print(f"re-judged copy of {bundle.name} (the bundle is unchanged): {copy.run_dir}")
    print(f"report: {paths.html}")
    print(f"score it with another judge: lens score {copy.run_dir} --judge MODEL "
          f"--dataset {copy.dataset}")
    return status


def _score_dir(run_dir: Path, args: argparse.Namespace, *, dataset: Path | None,
               errata: Path | None) -> int:
    manifest = RunStore.open(run_dir).manifest()
    register_config_secrets(manifest.config)  # the judge's key, by the variable the run named
    settings = recorded_settings(manifest, run_dir / MANIFEST)
    # The judge is asked only when a tier needs it.
    cfg = judge_config(settings, args.judge) if args.tier > 1 else None
    stored = _stored_scores(run_dir)
    primary = stored.judge.model if stored is not None else None
    # A judge other than the run's primary: added beside it (the run keeps its primary and
    # scores.json), or with --primary made the primary in its place.
    other = cfg is not None and primary is not None and primary != cfg.label
    adding = bool(other and args.judge and not args.primary)
    if other and args.primary:
        assert cfg is not None and stored is not None and primary is not None
        # The judge it replaces stays one of the run's judges; its own extra scores go.
        _keep_as_extra(run_dir, settings, primary, stored)
        judge_scores_path(run_dir, cfg.label).unlink(missing_ok=True)
    # Each flag given overrides the run config's setting; the run is over when its manifest
    # says so (run_finished=None). An added judge scores into its own file, and alone.
    plan = plan_for_config(
        settings, panel_of=None if adding else run_dir,
        target="judge_scores" if adding else "scores", judge_config=cfg,
        tiers=set(range(1, args.tier + 1)),
        fact_grader=args.fact_grader or ("judge" if args.fact_judge else None),
        concurrency=args.concurrency, protocol=args.protocol, errata=errata,
        subset=args.subset, dataset_path=dataset, judge_prompt_file=args.judge_prompt_file,
        run_finished=None)
    result = eventloop.run(lambda: score(run_dir, plan))
    if adding:
        assert cfg is not None and stored is not None
        return _judge_added(run_dir, result, cfg, stored)
    scores, more = result.scores, result.extras
    print(render_summary(scores, result.done))
    print(f"scores: {run_dir / SCORES_FILE}")
    if more:
        print(render_judge_ranges(scores, [m.scores for m in more]))
        for m in more:
            print(f"judge {visible(m.label)}: {m.new_verdicts} new verdict(s); "
                  f"scores: {m.path}")
    return scored_exit_status(run_dir, manifest, result, args.fail_on)


def _keep_as_extra(run_dir: Path, settings: RecordedConfig, label: str,
                   scores: RunScores) -> None:
    old = judge_config(settings, label)
    if old is not None:
        write_judge_scores(run_dir, old, scores)


def _judge_added(run_dir: Path, result: ScoringResult, cfg: JudgeConfig, scores: RunScores
                 ) -> int:
    """What a judge added beside the primary one (``scores``: the run's scores.json, which
    it leaves as it is) scored, beside the panel's other judges."""
    print(f"judge {visible(cfg.label)} added beside the primary judge "
          f"{visible(scores.judge.model or '')} ({result.new_verdicts} new verdict(s); the "
          "memory was not run again)")
    j = result.scores.judge
    if j.errors or j.invalid:
        print(f"judge {visible(cfg.label)}: {j.errors} failed call(s), {j.invalid} unreadable "
              "verdict(s): the scores resting on them are unknown (run this again to retry)")
    # Every judge of the run, the added one among them.
    panel = load_panel(run_dir, scores)
    print(render_judge_ranges(scores, list(panel.scores.values())[1:]))
    print(f"scores: {result.path}")
    return 0


def render_judge_ranges(primary: RunScores, others: list[RunScores]) -> str:
    """Per adapter, each judged metric under every judge and its range (from the scorer's
    aggregates)."""
    panel = [primary, *others]
    labels = [visible(s.judge.model or "none") for s in panel]
    lines = ["judged metrics per judge (" + "; ".join(labels) + "):"]
    for adapter in primary.aggregates.get("adapter", {}):
        for metric in report_order():
            values = [s.aggregates.get("adapter", {}).get(adapter, {}).get(metric)
                      for s in panel]
            # A judged metric always; another (fact_recall graded by the judge, the composite
            # over it) where the judges moved it.
            if all(v is None for v in values) or (
                    metric not in judged_metrics() and len(set(values)) == 1):
                continue
            known = [v for v in values if v is not None]
            spread = (f"range {min(known):.3f}–{max(known):.3f}" if len(known) == len(values)
                      else "range unknown (a judge left it unknown)")
            lines.append(f"  {visible(adapter)} {metric}: "
                         + " / ".join(_fmt(v).strip() for v in values) + f"  {spread}")
    return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "  -  " if v is None else f"{v:5.3f}"


def render_summary(scores: RunScores, last: ScoringDone | None = None) -> str:
    """A plain-text table of the per-adapter aggregates, judge noise and notes."""
    if "protocol" in scores.settings:
        return render_protocol_summary(scores)
    lines = []
    adapters = {visible(k): v for k, v in scores.aggregates.get("adapter", {}).items()}
    width = max([len("adapter"), *(len(a) for a in adapters)])
    shown = column_titles()
    header = f"{'adapter':<{width}}  {'n':>4}  " + "  ".join(t.rjust(9) for t in shown.values())
    lines.append(header)
    for name, agg in adapters.items():
        n = int(agg.get("n_questions") or 0)
        mark = "*" if agg.get("composite_renormalised") else " "
        cells = "  ".join(_fmt(agg.get(m)).rjust(9) for m in shown)
        lines.append(f"{name:<{width}}  {n:>4}  {cells}{mark}")
    j = scores.judge
    if j.model:
        rate = "unknown" if j.disagreement_rate is None else f"{j.disagreement_rate:.3f}"
        calls = "?" if last is None else last.new_judge_calls
        reused = "?" if last is None else last.reused_verdicts
        lines.append(f"judge {visible(j.model)}: {j.verdicts} verdict(s) "
                     f"({calls} new call(s), {reused} reused), {j.errors} failed, "
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
