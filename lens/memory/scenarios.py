"""Scenario plugins: a package's own grading, run when lens has scored a run of that scenario.

A scenario is declared in the ``lens.scenarios`` entry-point group; the object it names has
``applies(manifest) -> bool`` (is this run one of mine?) and ``after_scoring(run_dir) -> None``
(grade the run and write the scenario's files into it). lens calls the hooks after it writes
``scores.json`` (``lens run`` and ``lens score`` alike), so reporting only ever reads.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lens.core import plugins


@runtime_checkable
class Scenario(Protocol):
    def applies(self, manifest: dict[str, Any]) -> bool: ...

    def after_scoring(self, run_dir: Path) -> None: ...


def scenarios() -> dict[str, Scenario]:
    """Every declared scenario by name; a declaration that cannot load is a warning, not a stop."""
    found: dict[str, Scenario] = {}
    for name, target in plugins.targets(plugins.SCENARIOS).items():
        try:
            obj = plugins.load_target(target)
        except Exception as exc:
            warnings.warn(f"scenario plugin {name!r} ({target}) did not load: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        if not isinstance(obj, Scenario):
            warnings.warn(f"scenario plugin {name!r} ({target}) has no applies/after_scoring",
                          RuntimeWarning, stacklevel=2)
            continue
        found[name] = obj
    return found


def after_scoring(run_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """Run the hook of every scenario that claims this run; return the names that ran.

    A failing hook is a warning: the run and its lens scores stand, and the scenario's report
    section says what is missing."""
    ran = []
    for name, scenario in scenarios().items():
        try:
            if not scenario.applies(manifest):
                continue
            scenario.after_scoring(Path(run_dir))
        except Exception as exc:
            warnings.warn(f"scenario {name!r} failed on {run_dir}: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        ran.append(name)
    return ran
