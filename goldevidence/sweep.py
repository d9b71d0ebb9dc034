"""Sweeps: a grid of data cells × answerer cells run as one concurrent lens run.

Data cells (state mode, distractor profile, seed) become scope prefixes; answerer cells (k, order,
rerank, wrong type) become labelled adapters. Every cell shares one agent model and one budget, so
the rows of the summary CSV are comparable with one another.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from goldevidence.config import PRESETS, Profile, StateMode, preset
from goldevidence.generate import generate
from goldevidence.lensrun import LensJob
from goldevidence.rows import CellLabels, Row
from goldevidence.selectors import RERANKERS
from lens import ConfigError

CANDIDATE_ADAPTER = "goldevidence.lens_adapter:CandidateAdapter"

Order = Literal["shuffle", "gold_first", "gold_middle", "gold_last"]
WrongType = Literal["none", "same_key", "other_key"]


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="goldevidence-sweep", pattern=r"^[A-Za-z0-9_.-]+$")
    preset: Literal["smoke", "quick", "standard"] = "quick"
    # GenConfig's fields, over the preset's.
    generator: dict[str, int | float | bool | str] = Field(default_factory=dict)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    state_modes: list[StateMode] = Field(default_factory=lambda: list[StateMode](["kv"]),
                                         min_length=1)
    profiles: list[Profile] = Field(default_factory=lambda: list[Profile](["standard"]),
                                    min_length=1)
    k: list[Annotated[int, Field(ge=1, le=256)]] = Field(
        default_factory=lambda: [1, 2, 4, 8], min_length=1)
    orders: list[Order] = Field(default_factory=lambda: list[Order](["shuffle"]), min_length=1)
    reranks: list[str] = Field(default_factory=lambda: ["none", "latest_step"], min_length=1)
    wrong_types: list[WrongType] = Field(default_factory=lambda: list[WrongType](["none"]),
                                         min_length=1)
    selector_path: str | None = None
    # Other memory adapters to measure on the same rows, as lens adapter entries.
    extra_adapters: list[dict[str, Any]] = Field(default_factory=list)
    agent: dict[str, Any] = Field(default_factory=lambda: {"model": "scripted/policy"})
    granularity: Literal["line", "step"] = "line"
    concurrency: dict[str, int] = Field(default_factory=lambda: {"units": 4, "questions": 8})
    out: Path = Path("runs")


def load_spec(path: str | Path, **overrides: Any) -> SweepSpec:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: sweep config not found")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: YAML syntax error: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a sweep config is a YAML mapping")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return parse_spec(data, str(p), base=p.parent)


def parse_spec(data: dict[str, Any], where: str, base: Path | None = None) -> SweepSpec:
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"{where}: field '{loc}': {err['msg']}") from None
    bad = [r for r in spec.reranks if r not in RERANKERS]
    if bad:
        raise ConfigError(f"{where}: field 'reranks': unknown {bad}; known: {list(RERANKERS)}")
    if "linear" in spec.reranks and not spec.selector_path:
        raise ConfigError(f"{where}: field 'selector_path': rerank 'linear' needs a selector "
                          "trained with train-selector")
    if base is not None and spec.selector_path and not Path(spec.selector_path).is_absolute():
        spec = spec.model_copy(update={"selector_path": str((base / spec.selector_path)
                                                            .resolve())})
    return spec


def sweep_job(spec: SweepSpec) -> LensJob:
    cells: dict[str, tuple[CellLabels, list[Row]]] = {}
    for mode, profile, seed in itertools.product(spec.state_modes, spec.profiles, spec.seeds):
        cfg = preset(spec.preset, **{**spec.generator, "state_mode": mode,
                                     "distractor_profile": profile})
        prefix = f"{mode}.{profile}.s{seed}."
        cells[prefix] = ({"state_mode": mode, "profile": profile, "seed": seed},
                         generate(cfg, seed=seed))
    adapters: list[dict[str, Any]] = []
    for k, order, rr, wrong in itertools.product(spec.k, spec.orders, spec.reranks,
                                                 spec.wrong_types):
        opts: dict[str, int | str | None] = {"k": k, "order": order, "rerank": rr,
                                             "wrong_type": wrong}
        if rr == "linear":
            opts["selector_path"] = spec.selector_path
        label = f"k{k}-{order}-{rr}" + ("" if wrong == "none" else f"-{wrong}")
        adapters.append({"name": CANDIDATE_ADAPTER, "label": label, "options": opts})
    adapters += spec.extra_adapters
    return LensJob(name=spec.name, cells=cells, adapters=adapters, agent=spec.agent,
                   out=spec.out, granularity=spec.granularity, concurrency=spec.concurrency)


def presets_text() -> str:
    return ", ".join(f"{k} ({v})" for k, v in PRESETS.items())
