"""``lens plan --from RUN``: the baseline rate, the ICC and the questions per scope of a
finished run, read from its summary.json (the numbers its report prints), as inputs to the
sample-size plan. Kept apart from the planning itself: ``lens plan`` only asks for them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.core.errors import UserError


@dataclass(frozen=True)
class FromRun:
    run_dir: Path
    arm: str
    metric: str
    baseline: float
    # None: the run could not estimate it (one scope, or no spread between scopes).
    icc: float | None
    per_scope: int | None
    n: int
    scopes: int

    def describe(self) -> str:
        icc = "unknown" if self.icc is None else f"{self.icc:.3f}"
        per = "unknown" if self.per_scope is None else str(self.per_scope)
        return (f"from {self.run_dir}: arm {self.arm}, {self.metric} {self.baseline:.3f} over "
                f"{self.n} questions in {self.scopes} scope(s); ICC {icc}; {per} questions "
                "per scope")


def _summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "summary.json"
    if not run_dir.is_dir():
        raise UserError(f"--from {run_dir}: not a run directory")
    if not path.is_file():
        raise UserError(f"--from {run_dir}: no summary.json (the run has no report yet); "
                        f"write it with: lens report {run_dir}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not readable as JSON ({exc}); rewrite it with: "
                        f"lens report {run_dir}") from None
    if not isinstance(data, dict) or not isinstance(data.get("adapters"), dict):
        raise UserError(f"{path}: field 'adapters' is missing; rewrite it with: "
                        f"lens report {run_dir}")
    return data


def read_run(run_dir: Path, arm: str | None = None, metric: str | None = None) -> FromRun:
    """The planning inputs of ``arm`` (default the run's first) on ``metric`` (default the
    run's primary metric)."""
    data = _summary(run_dir)
    path = run_dir / "summary.json"
    adapters: dict[str, Any] = data["adapters"]
    if not adapters:
        raise UserError(f"{path}: the run has no arms")
    name = arm if arm is not None else next(iter(adapters))
    if name not in adapters:
        raise UserError(f"--arm {name!r}: the run's arms are {', '.join(adapters)}")
    metrics = adapters[name].get("metrics") or {}
    wanted = metric or data.get("primary_metric")
    if not wanted or wanted not in metrics:
        raise UserError(f"--metric {wanted!r}: not a metric of arm {name}; its metrics are "
                        f"{', '.join(metrics) or 'none'}")
    est = metrics[wanted]
    mean, n, scopes = est.get("mean"), int(est.get("n") or 0), int(est.get("clusters") or 0)
    if mean is None:
        raise UserError(f"{path}: arm {name}'s {wanted} is unknown (no scored question); "
                        "plan from a run that scored its questions")
    if not 0 < mean < 1:
        raise UserError(f"{path}: arm {name}'s {wanted} is {mean:g}, not a rate strictly "
                        "between 0 and 1; choose another arm (--arm) or metric (--metric), "
                        "or give --baseline")
    per_scope = round(n / scopes) if scopes else None
    return FromRun(run_dir=run_dir, arm=name, metric=wanted, baseline=float(mean),
                   icc=est.get("icc"), per_scope=per_scope, n=n, scopes=scopes)
