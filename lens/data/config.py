"""RunConfig: the YAML a user writes, validated with every error naming the file and field."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from lens.core import plugins, yamlhints
from lens.core.errors import ConfigError, Problem, did_you_mean, unknown_options
from lens.core.fields import unset
from lens.core.redact import SECRET_KEY
from lens.core.yamlguard import GuardedLoader, YamlRefused
from lens.data.overrides import COMMAND_LINE, Overrides, apply, origin
from lens.data.scoring_names import JUDGE_GRADERS, FactGraderName, ProtocolName

MAX_CONFIG_BYTES = 1024 * 1024
# Counts past these are typos (1e9) rather than plans; each is far beyond what one machine runs.
MAX_REPEATS = 100
MAX_UNITS_IN_FLIGHT = 1024
MAX_QUESTIONS_IN_FLIGHT = 10_000
# A registered adapter name, or package.module:ClassName (no relative or path-like modules).
_ADAPTER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*|"
                           r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _looks_like_key(name: str) -> bool:
    """A well-formed variable name that is more likely a pasted key: a long run of letters and
    digits with no word separator (variable names are words joined by underscores)."""
    return len(name) >= 24 and "_" not in name and any(c.isdigit() for c in name)


def _secret_keys(value: Any, prefix: str = "options") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}"
            if isinstance(k, str) and SECRET_KEY.match(k):
                found.append(path)
            found.extend(_secret_keys(v, path))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(_secret_keys(v, f"{prefix}.{i}"))
    return found


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BudgetConfig(_Section):
    """Hard limits for one agent session (one question)."""

    max_turns: int = Field(default=8, ge=1)
    max_tool_calls: int = Field(default=12, ge=0)
    # The fixed reader (agent.mode: fixed_reader) cuts its history at its model's context
    # window unless this is set in the config (lens/runner/reader.py).
    max_payload_bytes: int = Field(default=32_000, ge=0)
    # The fixed reader's limit is its model's context window unless this is set.
    max_agent_tokens: int = Field(default=16_000, ge=1)
    max_seconds: float = Field(default=300.0, gt=0)
    # The fixed reader's model's context window in tokens, for a model whose window lens does
    # not know (lens/runner/reader.py); written only when set.
    # Budgets (and the run conditions that hold them) stay as they were without it.
    context_window: int | None = Field(default=None, ge=1, exclude_if=unset)


class ModelConfig(_Section):
    """A model, named ``provider/model``: ``openai/gpt-4o-mini``, ``scripted/policy``, …"""

    model: str
    base_url: str | None = None
    # Name of the environment variable holding the API key; the key itself never goes in config.
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0, le=100)
    max_concurrency: int = Field(default=16, ge=1, le=MAX_QUESTIONS_IN_FLIGHT)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    # Prices in USD per million tokens; unknown prices leave the cost unknown.
    price_input_per_mtok: float | None = Field(default=None, ge=0)
    price_output_per_mtok: float | None = Field(default=None, ge=0)
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("model")
    @classmethod
    def _provider_slash_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/.+", v):
            raise ValueError(
                f"{v!r} must look like provider/model, e.g. openai/gpt-4o-mini, "
                "llama_cpp/default or scripted/policy"
            )
        return v

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        # Checked here: any other scheme fails every model call of the run, one by one.
        if v is None:
            return v
        parts = urlsplit(v)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            # The URL is not repeated: it may carry a password.
            raise ValueError(
                "must be an http:// or https:// URL with a host, such as "
                "http://localhost:8080/v1 (the server's OpenAI-compatible endpoint)")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, v: str | None) -> str | None:
        # The message never repeats the value: it may be the key itself, pasted by mistake.
        if v is not None and (not _ENV_NAME.fullmatch(v) or _looks_like_key(v)):
            raise ValueError(
                "must be the name of the environment variable that holds the key (such as "
                "OPENAI_API_KEY), not the key itself; the value given is not shown here"
            )
        return v

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
        if "extra_body" in v and not isinstance(v["extra_body"], dict):
            raise ValueError("'options.extra_body' must be a mapping of request fields "
                             "(key: value lines), merged into every request body")
        for path in _secret_keys(v):
            raise ValueError(
                f"'{path}' looks like a secret; configs are copied into every run directory, "
                "so put the secret in an environment variable and name it with 'api_key_env'"
            )
        return v

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.model.split("/", 1)[1]

    def backend_options(self, known: Collection[str]) -> dict[str, Any]:
        """A copy of ``options`` for a backend that reads the ``known`` ones: another name is a
        typo that would be ignored, so it stops the run with the close spelling."""
        unknown = sorted(set(self.options) - set(known))
        if unknown:
            raise ConfigError(f"model {self.model!r}: {unknown_options(unknown, known)}")
        return dict(self.options)


# The judge prompt versions a judge may be asked under (their texts:
# lens.scoring.judging.judge_panel).
JudgePrompts = Literal["lens", "strict", "lenient"]


class JudgeConfig(ModelConfig):
    """The judge: a model, its prompt version, and whether its calls go through the provider's
    batch API."""

    # Which instructions the judge reads: lens's own, a strict or a lenient reading. A judge
    # is a (model, prompts) pair: the same model under two versions is two judges.
    prompts: JudgePrompts = "lens"

    # Send judge calls as one OpenAI Batch API job (about half the price, results within the
    # completion window); the batch id is kept in the run, so a killed scoring resumes polling.
    batch: bool = False
    batch_poll_s: float = Field(default=30.0, gt=0)
    # Stop waiting after this long; calls still pending are retried by the next scoring.
    batch_max_wait_s: float = Field(default=26 * 3600.0, gt=0)

    @property
    def label(self) -> str:
        """The judge's name in scores and reports: the model, with its prompt version unless
        it is lens's own."""
        return self.model if self.prompts == "lens" else f"{self.model}#{self.prompts}"


class AgentConfig(ModelConfig):
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    # Rounds of tool calls the agent must make before it may answer: on those turns lens asks
    # for a tool call (tool_choice "required" where the provider supports it) and answers one
    # reminder turn otherwise. An answer with no tool call at all is recorded as no_memory.
    min_tool_rounds: int = Field(default=0, ge=0, le=100)
    # Who answers: the tool-using agent, or a fixed reader (one search with the question, its
    # top_k results given to this model in the benchmark's reader prompt; lens/runner/reader.py).
    mode: Literal["tool_agent", "fixed_reader"] = "tool_agent"
    top_k: int | None = Field(default=None, ge=1, le=1000)
    # How the fixed reader is asked to answer: step by step (LongMemEval's official default)
    # or with the answer alone (lens/data/reader_prompts.py).
    reading: Literal["step_by_step", "direct"] | None = None
    # A publisher's reader prompt in place of lens's wording: a text template with {history},
    # {question} and optionally {now_line} (lens/data/reader_prompts.py; read when the run is
    # checked, its sha256 in the run's condition).
    reader_prompt_file: Path | None = None

    @model_validator(mode="after")
    def _reader_settings(self) -> AgentConfig:
        problems = []
        if self.mode == "tool_agent" and self.reader_prompt_file is not None:
            problems.append("'reader_prompt_file' applies to mode 'fixed_reader' only; remove "
                            "it or set mode: fixed_reader")
        elif self.reading is not None and self.reader_prompt_file is not None:
            problems.append("'reading' chooses one of lens's reader prompts and "
                            "'reader_prompt_file' replaces them; remove one")
        if self.mode == "tool_agent" and self.reading is not None:
            problems.append("'reading' applies to mode 'fixed_reader' only; remove it or set "
                            "mode: fixed_reader")
        if self.mode == "tool_agent" and self.top_k is not None:
            problems.append("'top_k' applies to mode 'fixed_reader' only (the tool-using agent "
                            "chooses its own search limits); remove it or set mode: "
                            "fixed_reader")
        if self.mode == "tool_agent" and self.budget.context_window is not None:
            problems.append("'budget.context_window' applies to mode 'fixed_reader' only (it "
                            "sets where the reader's history is cut); remove it or set mode: "
                            "fixed_reader")
        if self.mode == "fixed_reader" and self.min_tool_rounds:
            problems.append("'min_tool_rounds' applies to mode 'tool_agent' only (the fixed "
                            "reader searches exactly once); remove it")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class AdapterConfig(_Section):
    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)
    # A label that tells two configurations of one adapter apart in reports.
    label: str | None = None
    # Per-call timeout for search/retrieve/tools, and for each ingest call.
    call_timeout_s: float = Field(default=60.0, gt=0)
    # Where the adapter runs under the local executor: "auto" gives third-party adapters
    # (entry points, module:Class) a process of their own and keeps lens's built-ins in-process,
    # except those with process-wide state (lens.memory.adapter.OWN_PROCESS).
    isolation: Literal["auto", "process", "none"] = "auto"
    # An address-space limit for the adapter's own process, in MiB (isolated adapters only).
    max_memory_mb: int | None = Field(default=None, ge=64)
    # Ray resources of the adapter's actor under executor kind 'ray' (num_cpus, num_gpus,
    # memory, or custom resources).
    resources: dict[str, float] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _importable_name(cls, v: str) -> str:
        if not _ADAPTER_NAME.fullmatch(v):
            raise ValueError("must be a registered adapter name (see `lens adapters list`) or "
                             "package.module:ClassName, without a path or a leading dot")
        return v

    @field_validator("label")
    @classmethod
    def _printable_label(cls, v: str | None) -> str | None:
        if v is not None and (not v.strip() or _CONTROL.search(v) or len(v) > 200):
            raise ValueError("must be 1 to 200 printable characters (no newlines or control "
                             "characters): it names the adapter in every report")
        return v

    @property
    def display(self) -> str:
        return self.label or self.name


class DatasetConfig(_Section):
    path: Path
    # None runs every scope; an empty list would run nothing.
    scopes: list[str] | None = Field(default=None, min_length=1)
    # A seeded sample of this many questions (``Dataset.limit_questions``); part of the
    # run's condition.
    limit: int | None = Field(default=None, ge=1)


class ConcurrencyConfig(_Section):
    units: int = Field(default=4, ge=1, le=MAX_UNITS_IN_FLIGHT)
    questions: int = Field(default=8, ge=1, le=MAX_QUESTIONS_IN_FLIGHT)

    @model_validator(mode="before")
    @classmethod
    def _removed_processes(cls, data: Any) -> Any:
        if isinstance(data, dict) and "processes" in data:
            raise ValueError(
                "'processes' is no longer an option: one lens process keeps hundreds of model "
                "calls in flight; to spread adapters over machines use 'executor: {kind: ray}'"
            )
        return data


class ExecutorConfig(_Section):
    """Where units' adapters run. ``local``: in this process, or a process of their own
    (see ``adapters[].isolation``); ``ray``: one Ray actor per unit."""

    kind: Literal["local", "ray"] = "local"
    # Ray only: the cluster to join ("auto", "ray://host:10001", "host:6379"); unset starts a
    # Ray instance on this machine.
    address: str | None = None
    # Ray only: a unit whose actor is lost (its node went away) runs again this many times.
    unit_retries: int = Field(default=2, ge=0, le=10)
    # Ray only: passed to ray.init (working_dir, pip, env_vars …).
    runtime_env: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, data: Any) -> Any:
        return {"kind": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _ray_only(self) -> ExecutorConfig:
        if self.kind == "local" and (self.address or self.runtime_env):
            raise ValueError("'address' and 'runtime_env' apply to kind 'ray' only")
        return self


class CacheConfig(_Section):
    enabled: bool = True
    path: Path | None = None


class ScoringConfig(_Section):
    enabled: bool = True
    # Checked against the metric registry (names, metrics never weighted) before a run starts,
    # by lens.scoring.aggregation.composite.resolve_weights.
    weights: dict[str, float] | None = None
    gate_threshold: float = Field(default=0.5, ge=0, le=1)
    # Who decides fact_recall: the phrase matcher, the offline grader (local: the matcher for
    # figures, ids and dates, the local model for the rest), the judge (per-fact grades with
    # partial credit) or both (judge grades, matcher kept beside them). Unset: the judge
    # whenever a judge is configured, else local when the 'local' extra is installed (and the
    # agent is not scripted), else the matcher.
    fact_grader: FactGraderName | None = None
    # Older spelling of ``fact_grader: judge``.
    fact_judge: bool = False
    # How a question's repeats become one value in reports: mean, majority, any or pass@K.
    repeat_reducer: str = "mean"

    @field_validator("repeat_reducer")
    @classmethod
    def _known_reducer(cls, v: str) -> str:
        # Imported here: lens.stats brings numpy and scipy, which a config check does not need.
        from lens.stats.repeats import check_reducer

        return check_reducer(v)
    # "certified": score only the questions certified as needing memory (the dataset's
    # <stem>.certification.json from `lens datasets certify`).
    subset: Literal["all", "certified"] = "all"
    # Whose metrics: lens's own, or a published benchmark's protocol (docs/datasets.md).
    protocol: ProtocolName = "lens"
    # A gold errata file (question id -> excluded or corrected answer, with a source).
    errata: Path | None = None
    # The protocol judge's prompts read from this file (the official repository's, e.g.
    # LongMemEval's src/evaluation/evaluate_qa.py) instead of lens's wording; its hash enters
    # the scoring condition.
    judge_prompt_file: Path | None = None

    def grader(self) -> str | None:
        """The grader asked for, None for "judge if there is one"."""
        return self.fact_grader or ("judge" if self.fact_judge else None)


# The smallest error rate lens takes (stopping.alpha, lens plan --alpha): below it an α shared
# among pairs, or the quantile it needs, is no longer a float.
MIN_ALPHA = 1e-12


class StoppingConfig(_Section):
    """Sequential stopping (docs/runs.md, "Stopping early"): the scope blocks are answered in a
    seeded order, and the run stops answering once every pair of arms has a settled verdict on
    ``metric`` (unset: the composite), read from anytime-valid confidence sequences."""

    metric: str | None = None
    # The family's error rate, shared by every pair of arms (Bonferroni).
    # At least MIN_ALPHA: a smaller α (5e-324) divided among the pairs is 0.0.
    alpha: float = Field(default=0.05, ge=MIN_ALPHA, lt=1)
    # Equivalence margin on the metric's difference; 0: a tie never settles (it runs to the end).
    margin: float = Field(default=0.0, ge=0, lt=1)
    # Read the verdicts after every K scope blocks.
    look_every: int = Field(default=1, ge=1)
    # The confidence sequence (lens.stats.sequential): betting holds for any bounded scope
    # differences; symmetric and t-mixture assume symmetric or normal ones.
    method: Literal["betting", "symmetric", "t-mixture"] = "betting"


class RunConfig(_Section):
    name: str = Field(default="run", pattern=r"^[A-Za-z0-9_.-]+$")
    dataset: DatasetConfig
    adapters: list[AdapterConfig] = Field(min_length=1)
    agent: AgentConfig
    judge: JudgeConfig | None = None
    # Several judges (models and prompt versions): the first scores the run's headline numbers
    # as ``judge`` would; every one of them scores it too, for the per-judge range.
    judges: list[JudgeConfig] | None = Field(default=None, min_length=1)
    seed: int = 0
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    out_dir: Path = Path("runs")
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    # Stop starting new model calls once the run has spent this much (known costs only).
    max_cost_usd: float | None = Field(default=None, gt=0)
    # Write report.md / report.html / summary.json / questions.csv at the end of the run.
    report: bool = True
    # Stop answering once the arms' verdict is known (off unless the section is given).
    stopping: StoppingConfig | None = None

    @field_validator("adapters")
    @classmethod
    def _unique_labels(cls, v: list[AdapterConfig]) -> list[AdapterConfig]:
        seen: set[str] = set()
        for a in v:
            if a.display in seen:
                raise ValueError(
                    f"two adapters are called {a.display!r}; give each a distinct 'label'"
                )
            seen.add(a.display)
        return v


    @model_validator(mode="after")
    def _one_primary_judge(self) -> RunConfig:
        if self.judges is None:
            return self
        labels = [j.label for j in self.judges]
        twice = sorted({x for x in labels if labels.count(x) > 1})
        if twice:
            raise ValueError(f"judges: {', '.join(twice)} listed twice; each (model, prompts) "
                             "pair is one judge")
        if self.judge is None:
            self.judge = self.judges[0]
        elif self.judge.label != self.judges[0].label:
            raise ValueError("both judge and judges are given and judge is not the first of "
                             "judges; keep judges only (its first entry is the primary judge)")
        return self

    def all_judges(self) -> list[JudgeConfig]:
        """Every judge of the run, the primary first (none without a judge)."""
        if self.judges is not None:
            return list(self.judges)
        return [self.judge] if self.judge is not None else []

    @model_validator(mode="after")
    def _grader_has_a_judge(self) -> RunConfig:
        grader = self.scoring.grader()
        if grader in JUDGE_GRADERS and self.judge is None:
            raise ValueError(
                f"scoring.fact_grader is {grader!r} but no judge is configured: add a judge "
                "section (judge: {model: openai/gpt-4o-mini}) or set scoring.fact_grader: "
                "matcher")
        return self


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc) or "(top level)"


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The config section (a pydantic model) at ``loc``, for the fields it takes."""
    kind: Any = RunConfig
    for part in loc:
        while typing.get_origin(kind) in (typing.Union, types.UnionType):
            kind = next((a for a in typing.get_args(kind) if a is not type(None)), None)
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field = kind.model_fields.get(str(part))
            kind = field.annotation if field is not None else None
        elif typing.get_origin(kind) is list and isinstance(part, int):
            kind = typing.get_args(kind)[0]
        else:
            return None
    while typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next((a for a in typing.get_args(kind) if a is not type(None)), None)
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _valid_fields(loc: tuple[Any, ...]) -> str | None:
    """The close spelling and the valid fields beside an unknown field at ``loc``."""
    model = _model_at(loc[:-1])
    return did_you_mean(loc[-1], model.model_fields, "field") if model is not None else None


def _explain(err: Any, source: str | None) -> tuple[str, str]:
    """The location and message of one validation error, with YAML's part in it when YAML
    turned the written text into something else (``name: null``, ``label: no``)."""
    loc = tuple(err["loc"])
    where = _loc(loc)
    msg = err["msg"]
    hint = None
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
        key = yamlhints.locate_key(source, loc) if source is not None and loc else None
        hint = ((yamlhints.key_hint(loc[-1], yamlhints.spelled(key)) or _valid_fields(loc))
                if loc else None)
        node = key
    elif err["type"] == "invalid_key":
        # A key YAML made a boolean or number (``on:``, ``no:``); pydantic puts it in the loc
        # as an int, so look it up by the key's own value.
        key = (yamlhints.locate_key(source, (*loc[:-1], err.get("input")))
               if source is not None and loc else None)
        written = yamlhints.spelled(key)
        if written is not None:
            where = _loc((*loc[:-1], written))
        hint = yamlhints.key_hint(err.get("input"), written)
        node = key
    elif err["type"] == "missing":
        msg = "required field is missing"
        node = None
    else:
        node = yamlhints.locate(source, loc) if source is not None else None
        wants_text = err["type"] == "string_type"
        if wants_text or err.get("input", ...) is None:
            hint = yamlhints.value_hint(where, err.get("input"), yamlhints.spelled(node),
                                        wants_text=wants_text)
    msg = msg.removeprefix("Value error, ")
    if node is not None:
        msg = f"{msg} (line {node.start_mark.line + 1})"
    if hint:
        msg = f"{msg}; {hint}"
    return where, msg


def parse_config(data: Any, file: str, base_dir: Path | None = None,
                 source: str | None = None, overrides: Overrides | None = None) -> RunConfig:
    """Validate parsed YAML; relative paths are resolved against ``base_dir``. ``source``, the
    YAML text, lets errors say where a value is and what YAML made of it. ``overrides`` are
    the command line's changes (applied already): a problem in a field they wrote names the
    change instead of the file."""
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the config must be a YAML mapping (key: value lines)")
    changes = overrides or Overrides()
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as exc:
        command = plugins.config_command(data, file)
        if command is not None:
            raise ConfigError(f"{file}: not a `lens run` config: {command}") from None
        problems = []
        for err in exc.errors():
            how = origin(_loc(tuple(err["loc"])), changes)
            where, msg = _explain(err, source if how is None else None)
            problems.append(Problem(file, f"field '{where}'", msg) if how is None
                            else Problem(COMMAND_LINE, f"{how}: field '{where}'", msg))
        if len(problems) == 1:
            only = problems[0]
            head = (f"{file}: invalid config: " if only.file == file
                    else f"{COMMAND_LINE}: invalid change to {file}: ")
            raise ConfigError(f"{head}{only.location}: {only.message}") from None
        raise ConfigError(f"{file}: invalid config: {len(problems)} problems", problems) from None
    if base_dir is not None:
        updates: dict[str, object] = {}
        if not cfg.dataset.path.is_absolute():
            updates["dataset"] = cfg.dataset.model_copy(
                update={"path": (base_dir / cfg.dataset.path).resolve()}
            )
        if not cfg.out_dir.is_absolute():
            updates["out_dir"] = (base_dir / cfg.out_dir).resolve()
        if cfg.cache.path is not None and not cfg.cache.path.is_absolute():
            updates["cache"] = cfg.cache.model_copy(
                update={"path": (base_dir / cfg.cache.path).resolve()}
            )
        scoring: dict[str, Path] = {}
        for name in ("errata", "judge_prompt_file"):
            path = getattr(cfg.scoring, name)
            if path is not None and not path.is_absolute():
                scoring[name] = (base_dir / path).resolve()
        if scoring:
            updates["scoring"] = cfg.scoring.model_copy(update=scoring)
        reader_file = cfg.agent.reader_prompt_file
        if reader_file is not None and not reader_file.is_absolute():
            updates["agent"] = cfg.agent.model_copy(
                update={"reader_prompt_file": (base_dir / reader_file).resolve()})
        cfg = cfg.model_copy(update=updates)
    return cfg


def load_config(path: str | Path, overrides: Overrides | None = None) -> RunConfig:
    """The config of ``path``, with the command line's ``overrides`` applied before it is
    validated."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: config file not found")
    if p.is_dir():
        raise ConfigError(f"{p}: is a folder; give the path of a YAML config file")
    if not p.is_file():
        # A FIFO would block the read for good, a device (/dev/zero) would never end.
        raise ConfigError(f"{p}: not a regular file; give the path of a YAML config file")
    raw = p.read_bytes()
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: {len(raw)} bytes is too large for a config file "
                          f"(limit {MAX_CONFIG_BYTES})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from None
    try:
        data = yaml.load(text, Loader=GuardedLoader)  # a SafeLoader
    except YamlRefused as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        tabs = yamlhints.tab_hint(text, mark.line + 1 if mark else None)
        raise ConfigError(f"{p}: YAML syntax error: {where}{problem}"
                          + (f"; {tabs}" if tabs else "")) from None
    except RecursionError:
        raise ConfigError(f"{p}: YAML nested too deeply to be a lens config") from None
    except ValueError as exc:
        # A number too long to convert (over Python's 4,300-digit limit), an invalid date, ...
        reason = ("a number is too long to read (over 4,300 digits)" if "digits" in str(exc)
                  else str(exc)[:200])
        raise ConfigError(f"{p}: a value cannot be read: {reason}") from None
    if overrides:
        data, problems = apply(data, overrides)
        if problems:
            raise ConfigError(f"{COMMAND_LINE}: {len(problems)} change(s) to {p} cannot be "
                              "made", problems)
    try:
        return parse_config(data, str(p), base_dir=p.parent, source=text, overrides=overrides)
    except RecursionError:
        raise ConfigError(f"{p}: YAML nested too deeply to be a lens config") from None
