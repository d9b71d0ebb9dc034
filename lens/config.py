"""RunConfig: the YAML a user writes, validated with every error naming the file and field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from lens.errors import ConfigError, Problem
from lens.redact import SECRET_KEY

MAX_CONFIG_BYTES = 1024 * 1024


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
    max_payload_bytes: int = Field(default=32_000, ge=0)
    max_agent_tokens: int = Field(default=16_000, ge=1)
    max_seconds: float = Field(default=300.0, gt=0)


class ModelConfig(_Section):
    """A model, named ``provider/model``: ``openai/gpt-4o-mini``, ``scripted/policy``, …"""

    model: str
    base_url: str | None = None
    # Name of the environment variable holding the API key; the key itself never goes in config.
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    max_concurrency: int = Field(default=16, ge=1)
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

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
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


class AgentConfig(ModelConfig):
    budget: BudgetConfig = Field(default_factory=BudgetConfig)


class AdapterConfig(_Section):
    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)
    # A label that tells two configurations of one adapter apart in reports.
    label: str | None = None
    # Per-call timeout for search/retrieve/tools, and for each ingest call.
    call_timeout_s: float = Field(default=60.0, gt=0)
    # Where the adapter runs under the local executor: "auto" gives third-party adapters
    # (entry points, module:Class) a process of their own and keeps lens's built-ins in-process.
    isolation: Literal["auto", "process", "none"] = "auto"
    # An address-space limit for the adapter's own process, in MiB (isolated adapters only).
    max_memory_mb: int | None = Field(default=None, ge=64)
    # Ray resources of the adapter's actor under executor kind 'ray' (num_cpus, num_gpus,
    # memory, or custom resources).
    resources: dict[str, float] = Field(default_factory=dict)

    @property
    def display(self) -> str:
        return self.label or self.name


class DatasetConfig(_Section):
    path: Path
    scopes: list[str] | None = None


class ConcurrencyConfig(_Section):
    units: int = Field(default=4, ge=1)
    questions: int = Field(default=8, ge=1)

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
    weights: dict[str, float] | None = None
    gate_threshold: float = Field(default=0.5, ge=0, le=1)
    # Ask the judge about each key fact the mechanical matcher missed (semantic matches).
    fact_judge: bool = False
    # "certified": score only the questions certified as needing memory (the dataset's
    # <stem>.certification.json from `lens datasets certify`).
    subset: Literal["all", "certified"] = "all"


class RunConfig(_Section):
    name: str = Field(default="run", pattern=r"^[A-Za-z0-9_.-]+$")
    dataset: DatasetConfig
    adapters: list[AdapterConfig] = Field(min_length=1)
    agent: AgentConfig
    judge: ModelConfig | None = None
    seed: int = 0
    repeats: int = Field(default=1, ge=1)
    out_dir: Path = Path("runs")
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    # Stop starting new model calls once the run has spent this much (known costs only).
    max_cost_usd: float | None = Field(default=None, gt=0)
    # Write report.md / report.html / summary.json / questions.csv at the end of the run.
    report: bool = True

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


class _NoAliasLoader(yaml.SafeLoader):
    """A safe loader that refuses anchors/aliases: they are the vector of 'billion laughs'."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ConfigError(
                f"line {event.start_mark.line + 1}: YAML aliases (*name) are not allowed in "
                "lens configs; write the value out"
            )
        return super().compose_node(parent, index)


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc) or "(top level)"


def parse_config(data: Any, file: str, base_dir: Path | None = None) -> RunConfig:
    """Validate parsed YAML; relative paths are resolved against ``base_dir``."""
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the config must be a YAML mapping (key: value lines)")
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field; check the spelling against the README's config reference"
            elif err["type"] == "missing":
                msg = "required field is missing"
            msg = msg.removeprefix("Value error, ")
            problems.append(Problem(file, _loc(tuple(err["loc"])), msg))
        first = problems[0]
        raise ConfigError(
            f"{file}: invalid config: field '{first.location}': {first.message}", problems[1:]
        ) from None
    if base_dir is not None:
        updates: dict[str, Any] = {}
        if not cfg.dataset.path.is_absolute():
            updates["dataset"] = cfg.dataset.model_copy(
                update={"path": (base_dir / cfg.dataset.path).resolve()}
            )
        if cfg.cache.path is not None and not cfg.cache.path.is_absolute():
            updates["cache"] = cfg.cache.model_copy(
                update={"path": (base_dir / cfg.cache.path).resolve()}
            )
        cfg = cfg.model_copy(update=updates)
    return cfg


def load_config(path: str | Path) -> RunConfig:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: config file not found")
    if p.is_dir():
        raise ConfigError(f"{p}: is a folder; give the path of a YAML config file")
    raw = p.read_bytes()
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: {len(raw)} bytes is too large for a config file "
                          f"(limit {MAX_CONFIG_BYTES})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from None
    try:
        data = yaml.load(text, Loader=_NoAliasLoader)
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc.args[0]}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{p}: YAML syntax error: {where}{problem}") from None
    return parse_config(data, str(p), base_dir=p.parent)
