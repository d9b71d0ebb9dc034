"""Everything ``lens run`` does, as a function: validate, create or reopen the run directory,
run, and finish. All user errors are raised before anything is written."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import anyio

from lens.core import eventloop, yamlhints
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError, DatasetError, Problem, UserError
from lens.core.progress import StageProgress
from lens.core.redact import redact, register_config_secrets, register_env_secrets
from lens.core.yamlguard import YamlRefused, load_yaml
from lens.data.config import MAX_CONFIG_BYTES, ModelConfig, RunConfig, load_config
from lens.data.dataset import Dataset
from lens.data.dataset_check import evidence_after_asked_at
from lens.data.dataset_load import DroppedQuestion, load_dataset_dropping
from lens.data.overrides import Overrides
from lens.flow.plan_cost import plan_cost
from lens.flow.stopping import OVERRIDE_EVENT, STOP_EVENT, RunStopper, check_stopping, scope_order
from lens.memory.adapter import check_options, options_error, resolve_adapter
from lens.memory.adapter_identity import ACCEPTED_EVENT, arm_identities, resume_check
from lens.models.base import ModelClient
from lens.models.providers import unknown_provider
from lens.models.runtime import ModelRuntime
from lens.models.usage import UsageSnapshot
from lens.report import ReportPaths, write_reports
from lens.runner.gateway.plan import needs_gateway
from lens.runner.orchestrator import Runner, RunProgress, RunSummary
from lens.runs.condition import condition, condition_hash, package_versions
from lens.runs.manifest import MANIFEST_VERSION, RunManifest
from lens.runs.store import RunStore, now_iso
from lens.scoring.aggregation.composite import resolve_weights
from lens.scoring.foundations.errata import load_errata
from lens.scoring.judging.batch_judge import batch_api_key
from lens.scoring.judging.judge_panel import with_prompts
from lens.scoring.metrics import judge_only_metrics, question_metrics
from lens.scoring.scorer import score_for_config

if TYPE_CHECKING:
    from lens.runner.gateway.server import ModelGateway


@dataclass
class RunOutcome:
    run_dir: Path
    summary: RunSummary
    # The reports written at the end of the run; None when the config turns them off.
    reports: ReportPaths | None = None


def errata_exclusions(config: RunConfig, config_file: str) -> set[str]:
    """The question ids the config's errata file excludes: a question the dataset gets wrong
    and the errata exclude is left out of the run instead of refusing the whole dataset."""
    if not config.scoring.enabled or config.scoring.errata is None:
        return set()
    try:
        errata = load_errata(config.scoring.errata)
    except UserError as exc:
        raise ConfigError(f"{config_file}: field 'scoring.errata': {exc.args[0]}") from None
    return {qid for qid, e in errata.entries.items() if e.action == "exclude"}


def prepare_dataset(config: RunConfig, config_file: str, *, drop_invalid: bool = False
                    ) -> tuple[Dataset, list[DroppedQuestion]]:
    try:
        # An outline: the runner reads each scope's text when its units start.
        dataset, dropped = load_dataset_dropping(
            config.dataset.path, drop=errata_exclusions(config, config_file),
            drop_invalid=drop_invalid, outline=True)
    except DatasetError as exc:
        if exc.problems:
            raise
        raise DatasetError(f"{config_file}: field 'dataset.path': {exc.args[0]}") from None
    if config.dataset.scopes is not None:
        known = {s.scope_id for s in dataset.scopes}
        unknown = [s for s in config.dataset.scopes if s not in known]
        if unknown:
            raise ConfigError(
                f"{config_file}: field 'dataset.scopes': unknown scope(s) {unknown}; the "
                f"dataset has {sorted(known)}"
            )
        dataset = dataset.select_scopes(config.dataset.scopes)
        if not dataset.questions:
            raise ConfigError(f"{config_file}: field 'dataset.scopes': the selected scope(s) "
                              "have no questions; nothing would be asked")
    if config.dataset.limit is not None and config.dataset.limit >= len(dataset.questions):
        # A limit that keeps every question is no sample: the run is the whole dataset, under
        # the whole dataset's condition (comparable with a run without --limit).
        config.dataset.limit = None
    return dataset.limit_questions(config.dataset.limit), dropped


SQLITE_HEADER = b"SQLite format 3\x00"


def check_paths(config: RunConfig, config_file: str, out: Path | None, resuming: bool) -> None:
    """Where the run will write, checked before anything is: a run that fails on its first
    write has already cost its model calls' set-up, or worse, its answers."""
    out_dir = out if out is not None else config.out_dir
    where = f"{config_file}: field 'out_dir'" if out is None else f"--out {out}"
    for parent in () if resuming else (out_dir, *out_dir.absolute().parents):
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"{where}: {parent} is not a folder; the run directory is "
                                  "created inside out_dir, so give a folder (or a new path)")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{where}: {parent} is not writable by this user; choose "
                                  "another folder")
            break
    if not config.cache.enabled or config.cache.path is None:
        return
    cache = config.cache.path
    field = f"{config_file}: field 'cache.path'"
    if cache.is_dir():
        raise ConfigError(f"{field}: {cache} is a folder; give the path of the cache's SQLite "
                          "file (it is created if missing)")
    if cache.exists():
        if not cache.is_file():
            raise ConfigError(f"{field}: {cache} is not a regular file")
        with open(cache, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
        if head and head != SQLITE_HEADER:
            raise ConfigError(f"{field}: {cache} is not an SQLite database; give a new path "
                              "or the file of an earlier lens cache")


def check_reader(config: RunConfig, config_file: str) -> None:
    """The fixed reader's prompt file, read now: a run never starts with one it cannot use."""
    path = config.agent.reader_prompt_file
    if path is None:
        return
    from lens.data.reader_prompts import load_reader_prompt

    try:
        load_reader_prompt(path)
    except UserError as exc:
        raise ConfigError(f"{config_file}: field {exc.args[0]}") from None


def check_scoring(config: RunConfig, config_file: str) -> None:
    if not config.scoring.enabled:
        return
    prompt_file = config.scoring.judge_prompt_file
    if prompt_file is not None:
        # Read now, not after every question is answered and paid for.
        from lens.scoring.protocols import get_protocol

        try:
            if config.scoring.protocol == "lens":
                raise UserError("scoring.judge_prompt_file: it applies to a published "
                                "protocol's judge prompts; remove it or set scoring.protocol")
            get_protocol(config.scoring.protocol).with_prompt_file(prompt_file)
        except UserError as exc:
            raise ConfigError(f"{config_file}: field {exc.args[0]}") from None
    try:
        weights = resolve_weights(config.scoring.weights)
    except ConfigError as exc:
        loc, _, msg = str(exc.args[0]).partition(": ")
        raise ConfigError(f"{config_file}: field '{loc}': {msg}") from None
    weighted = sorted(m for m, w in weights.items() if w > 0)
    judge_only = judge_only_metrics()
    if config.judge is None and set(weighted) <= judge_only:
        without = [m for m in question_metrics() if m not in judge_only]
        raise ConfigError(
            f"{config_file}: field 'scoring.weights': every weight above 0 is on a metric only "
            f"a judge grades ({', '.join(weighted)}) and the config has no judge, so the "
            "composite would be unknown for every question; configure a judge, or weight a "
            f"metric lens computes without one ({', '.join(without)})")


def adapter_problems(adapters: list[tuple[str, dict[str, Any]]], source: str | None
                     ) -> list[tuple[str, str]]:
    """Every problem of the adapters' names and options, as (field, message), with the line of
    the YAML file where ``source`` (its text) shows it."""
    problems: list[tuple[str, str]] = []
    for i, (name, options) in enumerate(adapters):
        try:
            cls = resolve_adapter(name)
        except UserError as exc:
            problems.append((f"adapters.{i}.name", str(exc.args[0])))
            continue
        problems.extend(check_options(cls, options, f"adapters.{i}.options")[1])
    if source is None:
        return problems
    located = []
    for field, message in problems:
        parts: list[Any] = [int(p) if p.isdigit() else p for p in field.split(".")]
        node = yamlhints.locate_key(source, parts) or yamlhints.locate(source, parts)
        if node is not None and "(line " not in message:
            # Where config errors put it: after the problem, before the hint.
            head, sep, rest = message.partition(";")
            message = f"{head} (line {node.start_mark.line + 1}){sep}{rest}"
        located.append((field, message))
    return located


def _source(config_file: str) -> str | None:
    """The config's text, when it is a regular file of a config's size (a FIFO or a device
    would block or never end; load_config has refused those already)."""
    path = Path(config_file)
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None


def check_adapters(config: RunConfig, config_file: str,
                   overrides: Overrides | None = None) -> None:
    """Every adapter's name and options, every problem of every adapter in one error."""
    changed = [how for key, how in (overrides or Overrides()).fields().items()
               if key == "adapters" or key.startswith("adapters.")]
    source = None if changed else _source(config_file)
    problems = adapter_problems([(a.name, a.options) for a in config.adapters], source)
    if problems:
        raise options_error(problems, f"{config_file} with {' '.join(changed)}" if changed
                            else config_file)


def load_run_config(config_file: str, overrides: Overrides | None = None) -> RunConfig:
    """The config, or one error with every problem of its fields and of its adapters' names
    and options (which only the adapters' classes can check), so that a file with several
    typos is fixed in one round. ``overrides``: the command line's changes."""
    try:
        return load_config(config_file, overrides)
    except ConfigError as exc:
        if overrides:
            # The file's adapters are not the run's: check_adapters reports those.
            raise
        # Only a file that read as YAML and failed validation (no aliases, no syntax errors:
        # load_config refused those) is read again for its adapters.
        source = _source(config_file) if "invalid config" in exc.lines[0] else None
        try:
            data = load_yaml(source) if source is not None else None
        except YamlRefused:
            raise exc from None
        raw = data.get("adapters") if isinstance(data, dict) else None
        entries = raw if isinstance(raw, list) else []
        # Only a list of well-formed entries: field numbers must match the file's.
        well_formed = all(isinstance(a, dict) and isinstance(a.get("name"), str)
                          and isinstance(a.get("options") or {}, dict) for a in entries)
        adapters = [(a["name"], a.get("options") or {}) for a in entries] if well_formed else []
        more = adapter_problems(adapters, source)
        if not more:
            raise
        first = exc.problems or [Problem(config_file, "", exc.lines[0].removeprefix(
            f"{config_file}: ").removeprefix("invalid config: "))]
        problems = [*first, *(Problem(config_file, f"field '{f}'", m) for f, m in more)]
        raise ConfigError(f"{config_file}: invalid config: {len(problems)} problems",
                          problems) from None


def check_models(config: RunConfig, config_file: str, *, agent_given: bool) -> None:
    # Provider names only, before the dataset is read: a misspelt provider fails at once.
    models: list[tuple[str, ModelConfig]] = [] if agent_given else [("agent.model", config.agent)]
    if config.judge is not None:
        models.append(("judge.model", config.judge))
    models += [(f"judges[{i}].model", j) for i, j in enumerate(config.judges or [])]
    for field, model in models:
        problem = unknown_provider(model.provider)
        if problem is not None:
            raise ConfigError(f"{config_file}: field '{field}': model {model.model!r}: {problem}")


def check_executor(config: RunConfig, config_file: str) -> None:
    if config.executor.kind == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(f"{config_file}: field 'executor.kind': 'ray' needs Ray, which is not "
                          f"installed; {install_hint('ray')}")


def check_run(config: RunConfig, config_file: str, overrides: Overrides | None, *,
              agent_given: bool = False, drop_invalid: bool = False
              ) -> tuple[Dataset, list[DroppedQuestion]]:
    """What ``lens run`` checks of a loaded config after its scoring, stopping and paths: the
    models' providers, the dataset (read once, as the run will read it), the adapters, the
    executor and a certified subset. ``lens plan CONFIG`` prices only what passes these."""
    check_models(config, config_file, agent_given=agent_given)
    return check_dataset_and_arms(config, config_file, overrides, drop_invalid=drop_invalid)


def check_dataset_and_arms(config: RunConfig, config_file: str, overrides: Overrides | None, *,
                           drop_invalid: bool = False
                           ) -> tuple[Dataset, list[DroppedQuestion]]:
    """The dataset (read once, as the run will read it), the adapters, the executor and a
    certified subset."""
    dataset, dropped = prepare_dataset(config, config_file, drop_invalid=drop_invalid)
    check_adapters(config, config_file, overrides)
    check_executor(config, config_file)
    check_certified_subset(config, config_file)
    return dataset, dropped


def model_gateway(config: RunConfig, config_file: str,
                  runtime: ModelRuntime) -> ModelGateway | None:
    """The run's model gateway (lens.runner.gateway) when an adapter calls models through it; its
    models are checked here, before any work."""
    if not needs_gateway(config):
        return None
    from lens.runner.gateway.server import ModelGateway

    gateway = ModelGateway(runtime)
    gateway.check(config, config_file)
    return gateway


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(3).hex()


def build_manifest(config: RunConfig, dataset: Dataset, run_id: str,
                   dropped: list[DroppedQuestion] | None = None,
                   overrides: Overrides | None = None) -> RunManifest:
    cond = condition(config, dataset)
    manifest: dict[str, object] = {
        "manifest_version": MANIFEST_VERSION,
        "run_id": run_id,
        "created_at": now_iso(),
        "status": "running",
        "config": redact(config.model_dump(mode="json")),
        "versions": package_versions(),
        "event_loop": eventloop.loop_in_use(),
        "dataset": {"id": dataset.dataset_id, "path": str(config.dataset.path),
                    "content_hash": cond["dataset_hash"],
                    # Questions of the file left out of the run (the checklist reports them);
                    # scoring leaves out the same ones.
                    "dropped": [d.model_dump() for d in dropped or ()],
                    "questions_asked": len(dataset.questions),
                    # Questions asked with evidence dated after their asked_at (a benchmark
                    # that gives the whole haystack, marked allow_later_episodes): the
                    # checklist counts them.
                    "evidence_after_asked_at": evidence_after_asked_at(dataset)},
        "condition": cond,
        "condition_hash": condition_hash(cond),
        # What `lens plan CONFIG` estimates; the report sets it beside the spend.
        "cost_estimate": plan_cost(config, dataset).as_dict(),
        # Per arm: the adapter's distribution, version, source digest and libraries.
        "arms": arm_identities(config),
    }
    if overrides:
        # What the command line changed in the config file (``config`` has it applied).
        manifest["overrides"] = overrides.as_args()
    return RunManifest.model_validate(manifest)


# How often a run in flight records its model usage (when it changed) for `lens view`.
USAGE_EVERY_S = 5.0


class RoleSpend(TypedDict):
    calls: int | None
    retries: int | None
    errors: int | None
    cost_usd: float | None
    cost_usd_known: float | None
    unknown_cost_calls: int | None


class UsageBrief(TypedDict):
    """The ``usage`` event of a run in flight."""

    by_role: dict[str, RoleSpend]
    rate_limited: dict[str, int]


def usage_brief(usage: UsageSnapshot) -> UsageBrief:
    """The part of the run's usage a viewer of a run in flight shows: spend, retries and
    errors by role, and the rate-limit answers (429s) by endpoint."""
    by_role: dict[str, RoleSpend] = {
        role: {"calls": u.get("calls"), "retries": u.get("retries"), "errors": u.get("errors"),
               "cost_usd": u.get("cost_usd"), "cost_usd_known": u.get("cost_usd_known"),
               "unknown_cost_calls": u.get("unknown_cost_calls")}
        for role, u in (usage.get("by_role") or {}).items() if isinstance(u, dict)}
    # Endpoints are named by URL, and a URL may carry a password.
    brief: UsageBrief = redact({"by_role": by_role,
                                "rate_limited": usage.get("rate_limited") or {}})
    return brief


async def log_usage(store: RunStore, runtime: ModelRuntime,
                    every_s: float = USAGE_EVERY_S) -> None:
    """Append a ``usage`` event whenever the run's model usage changed, every ``every_s``."""
    last: UsageBrief | None = None
    while True:
        await anyio.sleep(every_s)
        brief = usage_brief(runtime.usage())
        if brief != last:
            store.append_event("usage", **brief)
            last = brief


def execute(
    config_path: str | Path,
    *,
    out: Path | None = None,
    resume: Path | None = None,
    retry_errors: bool = False,
    progress: RunProgress | None = None,
    model: ModelClient | None = None,
    drop_invalid: bool = False,
    on_run_dir: Callable[[Path], None] | None = None,
    stages: StageProgress | None = None,
    continue_past_stop: bool = False,
    overrides: Overrides | None = None,
    accept_adapter_change: bool = False,
) -> RunOutcome:
    """Run ``config_path``. ``on_run_dir`` is told the run directory as soon as it exists,
    before any question (so that an interrupted run can name it); ``stages`` is shown the
    steps after the questions (scoring, the reports). ``continue_past_stop`` resumes a run that
    its ``stopping`` section stopped and answers the rest."""
    config_file = str(config_path)
    stage = stages.stage if stages is not None else (lambda name: None)
    config = validate(config_file, overrides, out=out, resume=resume, model=model,
                      continue_past_stop=continue_past_stop)
    dataset, dropped = check_dataset_and_arms(config, config_file, overrides,
                                              drop_invalid=drop_invalid)
    run_id = new_run_id()
    runtime = ModelRuntime.for_run(config, run_id)
    client, judge = run_clients(config, config_file, runtime, model)
    gateway = model_gateway(config, config_file, runtime)
    if resume is not None:
        store = reopen_run(resume, config, dataset, accept_adapter_change, continue_past_stop)
    else:
        store = RunStore.create(out or config.out_dir, config.name, run_id,
                                build_manifest(config, dataset, run_id, dropped, overrides))
    if on_run_dir is not None:
        on_run_dir(store.root)
    stopper = run_stopper(config, store, dataset, continue_past_stop)
    runner: Runner | None = Runner(config, dataset, store, client, progress=progress,
                                   retry_errors=retry_errors, gateway=gateway,
                                   stop_rule=stopper)
    # The runner holds the only copy (an outline, its text on disk), released before scoring
    # loads the dataset again: two outlines and their spill files never coexist.
    del dataset

    async def main() -> RunSummary:
        nonlocal runner
        try:
            assert runner is not None
            summary = await answer_all(runner, store, runtime, gateway)
            runner = None
            if stopper is not None:
                stopper.release()  # its hold on the dataset, before scoring loads it again
            store.close()
            if config.scoring.enabled:
                stage("scoring the answers")
                # The primary judge, then the panel's other judges, under one plan.
                try:
                    await score_for_config(store.root, config, judge=judge)
                except UserError as exc:
                    raise UserError(f"{exc.args[0]}; the answers are kept: fix this and score "
                                    f"them with `lens score {store.root}`") from None
            return summary
        finally:
            if model is not None:
                await model.aclose()
            if gateway is not None:
                await gateway.aclose()
            await runtime.aclose()

    status = "interrupted"
    summary: RunSummary | None = None
    try:
        summary = eventloop.run(main)
        status = "complete" if summary.units_failed == 0 else "complete_with_errors"
    finally:
        finish_manifest(store, config, runtime, status, summary)
    assert summary is not None  # eventloop.run returned
    reports = None
    if config.report and config.scoring.enabled:
        stage("writing the reports")
        reports = write_reports(store.root)
    stage(None)
    return RunOutcome(run_dir=store.root, summary=summary, reports=reports)


def validate(config_file: str, overrides: Overrides | None, *, out: Path | None,
             resume: Path | None, model: ModelClient | None,
             continue_past_stop: bool) -> RunConfig:
    """The config, its secrets registered for redaction, and every check that needs no
    dataset: all before anything is written."""
    config = load_run_config(config_file, overrides)
    register_env_secrets()
    register_config_secrets(config.model_dump(mode="json"))
    check_reader(config, config_file)
    check_scoring(config, config_file)
    check_stopping(config, config_file)
    if continue_past_stop and resume is None:
        raise UserError("--continue-past-stop needs --resume RUN_DIR (the stopped run)")
    check_paths(config, config_file, out, resume is not None)
    check_models(config, config_file, agent_given=model is not None)
    return config


def check_certified_subset(config: RunConfig, config_file: str) -> None:
    if config.scoring.enabled and config.scoring.subset == "certified":
        from lens.runs.certification import load_certification

        try:
            load_certification(config.dataset.path)
        except UserError as exc:
            raise ConfigError(f"{config_file}: field 'scoring.subset': {exc.args[0]}") from None


def run_clients(config: RunConfig, config_file: str, runtime: ModelRuntime,
                model: ModelClient | None) -> tuple[ModelClient, ModelClient | None]:
    """The agent's client (``model`` when given) and the primary judge's, if any."""
    try:
        client = model or runtime.client(config.agent)
    except ConfigError as exc:
        raise ConfigError(f"{config_file}: field 'agent.model': {exc.args[0]}") from None
    try:
        judge = None
        if config.judge is not None and config.judge.batch:
            # Scoring makes the batch client itself (it keeps its batches in the run
            # directory); its key is checked now, before any answer is paid for.
            batch_api_key(config.judge)
        elif config.judge is not None:
            judge = with_prompts(runtime.client(config.judge), config.judge.prompts)
    except ConfigError as exc:
        raise ConfigError(f"{config_file}: field 'judge.model': {exc.args[0]}") from None
    return client, judge


def reopen_run(resume: Path, config: RunConfig, dataset: Dataset,
               accept_adapter_change: bool = False,
               continue_past_stop: bool = False) -> RunStore:
    """The run directory to resume, refused when the config or dataset changed its
    condition or an arm's adapter changed (unless accepted, which the events record); its
    manifest marks it running again."""
    store = RunStore.open(resume)
    manifest = store.manifest()
    expected = condition(config, dataset)
    if manifest.condition_hash != condition_hash(expected):
        old = manifest.condition
        # A section removed from the config is a field of the old condition only.
        fields = sorted(k for k in {*expected, *old} if old.get(k) != expected.get(k))
        raise UserError(
            f"{resume}: cannot resume: the config or dataset differ from the run's condition "
            f"(fields: {', '.join(fields) or 'unknown'}); start a new run instead"
        )
    if continue_past_stop and not any(e.get("kind") == STOP_EVENT for e in store.events()):
        raise UserError(f"{resume}: --continue-past-stop: this run did not stop early (its "
                        "events hold no run_stopped); resume it without "
                        "--continue-past-stop, and its stop rule reads on")
    # The arms block is one of the manifest's open fields (kept as an extra).
    extra = manifest.model_extra if manifest.model_extra is not None else {}
    adapter_changes = resume_check(extra, config, resume, accept_adapter_change)
    manifest.status = "running"
    manifest.resumed_at = [*manifest.resumed_at, now_iso()]
    store.write_manifest(manifest)
    for label, diff in sorted(adapter_changes.items()):
        store.append_event(ACCEPTED_EVENT, arm=label, changes=diff)
    return store


def run_stopper(config: RunConfig, store: RunStore, dataset: Dataset,
                continue_past_stop: bool) -> RunStopper | None:
    """The rule that stops the run once its verdict is known (the ``stopping`` section), or
    None; a run continued past its stop records that it was."""
    if config.stopping is None:
        return None
    if continue_past_stop:
        store.append_event(OVERRIDE_EVENT, reason="--continue-past-stop: every unit is answered")
        return None
    return RunStopper(config, store, scope_order(dataset),
                      questions_total=len(dataset.questions) * len(config.adapters)
                      * config.repeats, dataset=dataset)


async def answer_all(runner: Runner, store: RunStore, runtime: ModelRuntime,
                     gateway: ModelGateway | None) -> RunSummary:
    """Every unit's questions, with the gateway up and the usage logged while they run."""
    if gateway is not None:
        await gateway.start()
    async with anyio.create_task_group() as tg:
        tg.start_soon(log_usage, store, runtime)
        summary = await runner.run()
        tg.cancel_scope.cancel()
    if gateway is not None:
        await gateway.aclose()
    return summary


def finish_manifest(store: RunStore, config: RunConfig, runtime: ModelRuntime, status: str,
                    summary: RunSummary | None) -> None:
    """The manifest's end of the run: usage, status, when, and whether it stopped early."""
    store.close()
    manifest = store.manifest()
    # Usage is keyed by endpoint, and an endpoint's URL may carry a password.
    manifest.usage = redact(runtime.usage())
    manifest.status = status
    manifest.finished_at = now_iso()
    if config.stopping is not None:
        # Whether the last session stopped early (its verdict settled) or answered all.
        manifest.stopped_early = status != "interrupted" and summary is not None \
            and summary.stopped
    store.write_manifest(manifest)
