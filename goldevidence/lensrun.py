"""Running GoldEvidenceBench rows through lens, and grading the run with the scenario grader.

One lens run holds every grid cell: data cells (state mode, profile, seed) are scopes with a
prefix, answerer cells (k, order, rerank, …) are adapters with a label. The run directory is an
ordinary lens run (manifest, events, records, resume); the grades go to
``RUN_DIR/goldevidence/grades.json`` and ``RUN_DIR/goldevidence/summary.csv``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import yaml

from goldevidence.grade import METRICS, grade, grade_row
from goldevidence.policy_client import Policy, SelectionPolicyClient
from goldevidence.predictions import parse_prediction
from goldevidence.rows import CellLabels, PredictionLine, Row
from goldevidence.scenario import (
    Granularity,
    record_to_prediction,
    rows_from_dataset,
    rows_to_dataset,
    uid_index,
)
from lens import Dataset, UserError, load_dataset
from lens.plugin_api import RunStore, atomic_write_text
from lens.stats import wilson

POLICY_PROVIDER = "goldevidence-policy"
CI_METRICS = ("value_acc", "exact_acc")


@dataclass
class LensJob:
    name: str
    cells: dict[str, tuple[CellLabels, list[Row]]]  # prefix -> (labels, rows)
    adapters: list[dict[str, Any]]
    agent: dict[str, Any]
    out: Path
    granularity: Granularity = "line"
    seed: int = 0
    concurrency: dict[str, int] = field(default_factory=lambda: {"units": 4, "questions": 8})

    def dataset(self) -> Dataset:
        scopes, questions = [], []
        for prefix, (_labels, rows) in self.cells.items():
            ds = rows_to_dataset(rows, prefix=prefix, granularity=self.granularity,
                                 cells={prefix: _labels})
            scopes += ds.scopes
            questions += ds.questions
        return Dataset(dataset_id=f"goldevidence-{self.name}", scopes=scopes,
                       questions=questions,
                       meta={"scenario": "goldevidence", "granularity": self.granularity})


def _policy_of(agent: dict[str, Any]) -> SelectionPolicyClient | None:
    model = str(agent.get("model", ""))
    if not model.startswith(POLICY_PROVIDER + "/"):
        return None
    policy = model.split("/", 1)[1]
    if policy not in ("first", "latest_step", "random"):
        raise UserError(f"agent model {model!r}: unknown policy {policy!r}; known: "
                        f"{POLICY_PROVIDER}/first, /latest_step, /random")
    p: Policy = policy  # type: ignore[assignment]  # one of the three names, checked above
    return SelectionPolicyClient(p, seed=int(agent.get("options", {}).get("seed", 0)))


def write_job(job: LensJob) -> Path:
    """Write the dataset and the lens config for ``job``; return the config path."""
    folder = job.out / job.name
    folder.mkdir(parents=True, exist_ok=True)
    ds = job.dataset()
    atomic_write_text(folder / "dataset.json", ds.model_dump_json())
    config = {
        "name": job.name,
        "dataset": {"path": "dataset.json"},
        "adapters": job.adapters,
        "agent": job.agent,
        "seed": job.seed,
        "out_dir": str(job.out.resolve()),
        "concurrency": job.concurrency,
    }
    if _policy_of(job.agent) is not None:
        # A stand-in policy calls no model, so its lens scoring calls none either, as lens does
        # for its own scripted agents: without this the offline grader would run the local
        # model over every fact the phrase matcher leaves open (minutes on CPU), for numbers
        # that describe the harness, not a model.
        config["scoring"] = {"fact_grader": "matcher"}
    path = folder / "config.yaml"
    atomic_write_text(path, yaml.safe_dump(config, sort_keys=False))
    return path


def run_job(job: LensJob, *, resume: Path | None = None, progress: Any = None) -> Path:
    from lens import execute

    config_path = write_job(job) if resume is None else job.out / job.name / "config.yaml"
    client = _policy_of(job.agent)
    outcome = execute(config_path, out=job.out, resume=resume, model=client, progress=progress)
    grade_run(outcome.run_dir)
    return outcome.run_dir


class GroupGrades(TypedDict):
    """The grades of one adapter on one cell of rows (``prefix`` "*" pools every cell)."""

    adapter: str
    adapter_name: str | None
    adapter_options: dict[str, Any]  # the adapter's own options, as configured
    cell: CellLabels
    prefix: str
    repeat: int
    metrics: dict[str, object]  # GradeResult.as_dict()
    intervals: dict[str, tuple[float | None, float | None]]


class GradesReport(TypedDict):
    """``RUN_DIR/goldevidence/grades.json``."""

    run_dir: str
    agent_model: str
    groups: list[GroupGrades]
    pooled: list[GroupGrades]


def _interval(results: list[bool]) -> tuple[float | None, float | None]:
    est = wilson(sum(results), len(results))
    return est.low, est.high


def is_goldevidence_run(manifest: dict[str, Any]) -> bool:
    return str((manifest.get("dataset") or {}).get("id") or "").startswith("goldevidence")


def grade_run(run_dir: Path, *, write: bool = True) -> GradesReport:
    """Grade every (adapter, cell) group of a lens run; with ``write``, into
    ``RUN_DIR/goldevidence/grades.json`` and ``summary.csv``."""
    # Reading for a report must not touch the run: open() repairs a torn events tail.
    store = RunStore.open(Path(run_dir)) if write else RunStore(Path(run_dir))
    manifest = store.manifest()
    ds = load_dataset(manifest.dataset.path or "")
    rows = rows_from_dataset(ds)
    uids = uid_index(ds)
    cell_of = {s.scope_id: s.meta.get("goldevidence", {}) for s in ds.scopes}
    adapter_opts = {a.get("label") or a["name"]: a for a in manifest.config["adapters"]}
    groups: dict[tuple[str, str, int], dict[str, PredictionLine]] = {}
    for rec in store.load_records():
        if rec.question_id not in rows:
            continue
        prefix = str(cell_of.get(rec.scope_id, {}).get("prefix", ""))
        groups.setdefault((rec.adapter, prefix, rec.repeat), {})[rec.question_id] = \
            record_to_prediction(rec, uids[rec.scope_id])
    store.close()
    def entry(adapter: str, prefix: str, repeat: int, preds: dict[str, PredictionLine],
              cell: CellLabels) -> GroupGrades:
        group_rows = [r for qid, r in rows.items() if qid in preds]
        result = grade(group_rows, preds)
        per_row = [grade_row(r, parse_prediction(preds[r["id"]])) for r in group_rows]
        opts = adapter_opts.get(adapter, {})
        return GroupGrades(adapter=adapter, adapter_name=opts.get("name"),
                           adapter_options=opts.get("options", {}), cell=cell, prefix=prefix,
                           repeat=repeat, metrics=result.as_dict(),
                           intervals={"value_acc": _interval([g.value_ok for g in per_row]),
                                      "exact_acc": _interval([g.exact_ok for g in per_row])})

    out_groups = []
    pooled_preds: dict[tuple[str, int], dict[str, PredictionLine]] = {}
    for (adapter, prefix, repeat), preds in sorted(groups.items()):
        scope = rows[next(iter(preds))]["episode_id"]
        cell = {k: v for k, v in cell_of.get(scope, {}).items()
                if k not in ("episode_id", "prefix")}
        out_groups.append(entry(adapter, prefix, repeat, preds, cell))
        pooled_preds.setdefault((adapter, repeat), {}).update(preds)
    pooled = []
    if len({g["prefix"] for g in out_groups}) > 1:
        # Every cell of an adapter together: the row a README table quotes.
        for (adapter, repeat), preds in sorted(pooled_preds.items()):
            pooled.append(entry(adapter, "*", repeat, preds,
                                {"state_mode": "all", "profile": "all", "seed": "all"}))
    report = GradesReport(run_dir=str(run_dir), agent_model=manifest.config["agent"]["model"],
                          groups=out_groups, pooled=pooled)
    if not write:
        return report
    target = Path(run_dir) / "goldevidence"
    target.mkdir(exist_ok=True)
    atomic_write_text(target / "grades.json", json.dumps(report, indent=1, default=str))
    write_summary_csv(report, target / "summary.csv")
    return report


SUMMARY_FIELDS = ("adapter", "agent_model", "k", "order", "rerank", "wrong_type", "state_mode",
                  "profile", "seed", "repeat", "n")


def summary_rows(report: GradesReport) -> list[dict[str, object]]:
    out = []
    for g in [*report.get("pooled", []), *report["groups"]]:
        opts, cell, m = g["adapter_options"], g["cell"], g["metrics"]
        row: dict[str, object] = {
            "adapter": g["adapter"], "agent_model": report["agent_model"],
            "k": opts.get("k"), "order": opts.get("order"), "rerank": opts.get("rerank"),
            "wrong_type": opts.get("wrong_type"), "state_mode": cell.get("state_mode"),
            "profile": cell.get("profile"), "seed": cell.get("seed"), "repeat": g["repeat"],
            "n": m["n"],
        }
        for name in METRICS:
            row[name] = m.get(name)
        for name in CI_METRICS:
            lo, hi = g["intervals"][name]
            row[f"{name}_low"], row[f"{name}_high"] = lo, hi
        row["tokens_per_query"] = m.get("tokens_per_query")
        row["passes_per_query"] = m.get("passes_per_query")
        row["wall_s_per_query"] = m.get("wall_s_per_query")
        row["rows_with_errors"] = m.get("rows_with_errors")
        out.append(row)
    return out


def write_summary_csv(report: GradesReport, path: Path) -> None:
    rows = summary_rows(report)
    fields = [*SUMMARY_FIELDS, *METRICS, *[f"{m}_{b}" for m in CI_METRICS for b in ("low", "high")],
              "tokens_per_query", "passes_per_query", "wall_s_per_query", "rows_with_errors"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if (v := r.get(k)) is None else
                            (round(v, 4) if isinstance(v, float) else v))
                        for k in fields})
