"""``lens plan --from RUN``: the baseline rate, the ICC and the questions per scope of a
finished run, read from its summary.json (the numbers its report prints), as inputs to the
sample-size plan. Kept apart from the planning itself: ``lens plan`` only asks for them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lens.core.errors import UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.redact import quoted, shown


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
        return (f"from {self.run_dir}: arm {shown(self.arm)}, {shown(self.metric)} "
                f"{self.baseline:.3f} over "
                f"{self.n} questions in {self.scopes} scope(s); ICC {icc}; {per} questions "
                "per scope")


# A summary.json: a report's numbers, a few megabytes for thousands of arms.
MAX_SUMMARY_BYTES = 64 * 1024 * 1024


def _summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "summary.json"
    if not run_dir.is_dir():
        raise UserError(f"--from {run_dir}: not a run directory")
    if not path.is_file():
        raise UserError(f"--from {run_dir}: no summary.json (the run has no report yet); "
                        f"write it with: lens report {run_dir}")
    try:
        data = loads_guarded(path.read_bytes(), what=str(path), max_bytes=MAX_SUMMARY_BYTES,
                             parse_constant=_no_constant)
    except (OSError, JsonRefused) as exc:
        raise UserError(f"{path}: not readable ({exc}); rewrite it with: "
                        f"lens report {run_dir}") from None
    if not isinstance(data, dict) or not isinstance(data.get("adapters"), dict):
        raise UserError(f"{path}: field 'adapters' is missing; rewrite it with: "
                        f"lens report {run_dir}")
    return data


def _no_constant(name: str) -> float:
    raise JsonRefused(f"{name} is not a number a report writes")


def _number(value: object, path: Path, field: str, *, whole: bool = False) -> float | None:
    """A finite number of the summary (None stays None); a UserError naming the field for
    anything else (a string, a list, a number too large for a float)."""
    if value is None:
        return None
    kind = "a whole number" if whole else "a finite number"
    refused = UserError(f"{path}: field {field} is {quoted(value)}, not {kind}; rewrite the "
                        f"summary with: lens report {path.parent}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refused
    if not math.isfinite(value) or (whole and (value < 0 or value != int(value))):
        raise refused
    return float(value)


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
        raise UserError(f"--arm {quoted(name)}: the run's arms are "
                        f"{', '.join(shown(a) for a in list(adapters)[:50])}")
    entry = adapters[name]
    metrics = entry.get("metrics") if isinstance(entry, dict) else None
    if not isinstance(metrics, dict):
        raise UserError(f"{path}: field adapters.{shown(name)}.metrics is not an object; "
                        f"rewrite the summary with: lens report {run_dir}")
    wanted = metric or data.get("primary_metric")
    if not isinstance(wanted, str) or wanted not in metrics:
        raise UserError(f"--metric {quoted(wanted)}: not a metric of arm {shown(name)}; its "
                        f"metrics are {', '.join(shown(m) for m in list(metrics)[:50]) or 'none'}")
    est = metrics[wanted]
    where = f"adapters.{shown(name)}.metrics.{shown(wanted)}"
    if not isinstance(est, dict):
        raise UserError(f"{path}: field {where} is not an object; rewrite the summary with: "
                        f"lens report {run_dir}")
    mean = _number(est.get("mean"), path, f"{where}.mean")
    n = int(_number(est.get("n"), path, f"{where}.n", whole=True) or 0)
    scopes = int(_number(est.get("clusters"), path, f"{where}.clusters", whole=True) or 0)
    icc = _number(est.get("icc"), path, f"{where}.icc")
    if mean is None:
        raise UserError(f"{path}: arm {shown(name)}'s {shown(wanted)} is unknown (no scored "
                        "question); plan from a run that scored its questions")
    if not 0 < mean < 1:
        raise UserError(f"{path}: arm {shown(name)}'s {shown(wanted)} is {mean:g}, not a rate "
                        "strictly between 0 and 1; choose another arm (--arm) or metric "
                        "(--metric), or give --baseline")
    per_scope = round(n / scopes) if scopes else None
    return FromRun(run_dir=run_dir, arm=name, metric=wanted, baseline=mean,
                   icc=icc, per_scope=per_scope, n=n, scopes=scopes)
