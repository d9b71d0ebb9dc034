"""Finding plugins: the entry-point groups lens reads, in one place.

A package extends lens by declaring entry points in its own metadata (``pyproject.toml``)::

    [project.entry-points."lens.adapters"]
    my_memory = "my_pkg.adapter:MyAdapter"

The groups:

- ``lens.adapters``: a MemoryAdapter or SyncMemoryAdapter subclass, created by name in a config.
- ``lens.report_sections``: a function ``(RunData) -> Section | None`` adding a report section.
- ``lens.prompt_templates``: a mapping ``{name: template text}`` (or a function returning one);
  the templates join the prompts hash, so changing one changes the run's condition.
- ``lens.model_providers``: a callable ``(ModelConfig) -> ModelClient`` (a client class taking
  the config is one), used for models named ``<provider>/<model>``; see
  :mod:`lens.models.providers` for the contract.
- ``lens.metrics``: a :class:`lens.scoring.metrics.MetricSpec` (or a list of them, or a
  function returning either): a metric scored, aggregated, weighted and reported like lens's own.
- ``lens.scenarios``: an object with ``applies(manifest) -> bool`` and
  ``after_scoring(run_dir) -> None``, called when lens has scored a run of that scenario; and
  optionally ``config_command(data, file) -> str | None``, which recognises a config of the
  scenario's own command given to ``lens run`` and says which command runs it.

A program that cannot install metadata (a notebook, a test) adds the same declarations with
:func:`add_entry_points`; they are read exactly like installed ones.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Any

ADAPTERS = "lens.adapters"
REPORT_SECTIONS = "lens.report_sections"
PROMPT_TEMPLATES = "lens.prompt_templates"
SCENARIOS = "lens.scenarios"
MODEL_PROVIDERS = "lens.model_providers"
METRICS = "lens.metrics"
GROUPS = (ADAPTERS, REPORT_SECTIONS, PROMPT_TEMPLATES, SCENARIOS, MODEL_PROVIDERS, METRICS)

_added: dict[str, dict[str, str]] = {}


def targets(group: str) -> dict[str, str]:
    """``{name: "package.module:attr"}`` for every declaration of ``group``, installed or added
    in this process (an added declaration wins over an installed one of the same name)."""
    found = {ep.name: ep.value for ep in entry_points(group=group)}
    found.update(_added.get(group, {}))
    return dict(sorted(found.items()))


def added(group: str) -> dict[str, str]:
    """Only the declarations of ``group`` added in this process (:func:`add_entry_points`)."""
    return dict(_added.get(group, {}))


def load_target(target: str) -> Any:
    """The object ``package.module:attr`` names (the module itself when there is no ``:attr``)."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def config_command(data: Mapping[str, Any], file: str) -> str | None:
    """What a scenario says of a config that is not a run config but one of its own commands'
    (which command runs it), or None when no scenario claims it."""
    for name, target in targets(SCENARIOS).items():
        try:
            claim = getattr(load_target(target), "config_command", None)
            said = claim(data, file) if claim is not None else None
        except Exception as exc:
            warnings.warn(f"scenario plugin {name!r} ({target}) failed to read a config: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        if said:
            return str(said)
    return None


def add_entry_points(declarations: Mapping[str, Mapping[str, str]]) -> None:
    """Declare entry points in this process: ``{group: {name: "package.module:attr"}}``."""
    for group, names in declarations.items():
        _added.setdefault(group, {}).update(names)


def remove_entry_points(declarations: Mapping[str, Mapping[str, str]]) -> None:
    for group, names in declarations.items():
        for name in names:
            _added.get(group, {}).pop(name, None)


@contextmanager
def entry_points_added(declarations: Mapping[str, Mapping[str, str]]) -> Iterator[None]:
    """:func:`add_entry_points` for the duration of a ``with`` block."""
    add_entry_points(declarations)
    try:
        yield
    finally:
        remove_entry_points(declarations)
