"""What a check leaves in its output folder: ``report.md`` and ``report.html`` (the same blocks),
and ``claims.json``: every figure with the hashes of its inputs and the condition it was scored
under, each scorer's value per answer, and every disagreement."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lens.claims.check import CheckResult
from lens.claims.leniency import Leniency
from lens.claims.rerun import Rerun
from lens.claims.rescore import Scored
from lens.claims.table import blocks
from lens.core.distribution import version as lens_version
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.report.documents.document import to_html, to_markdown
from lens.report.documents.html import CSP, CSS
from lens.runs.store import atomic_write_text

FORMAT = "lens.claims/1"


def _scorer_json(s: Scored) -> dict[str, Any]:
    return {"name": s.name, "condition": s.condition, "estimate": s.estimate.as_dict(),
            "agreement": None if s.agreement is None else asdict(s.agreement),
            "disagreements": [{"id": i, "publisher": p, "lens": v}
                              for i, p, v in s.disagreements],
            "values": dict(zip(s.ids, s.values, strict=True)), "notes": list(s.notes)}


def _rerun_json(r: Rerun) -> dict[str, Any]:
    return {"name": r.run.name, "path": r.run.path, "adapter": r.run.adapter,
            "condition_hash": r.run.condition_hash,
            "matched": len(r.matched), "unmatched_publisher": r.unmatched_publisher,
            "unmatched_run": r.unmatched_run, "not_scored": r.not_scored,
            "pairs": {i: f"{a.scope}/{a.question_id}" for i, a in r.matched.items()},
            "scorers": [_scorer_json(s) for s in r.scorers],
            "notes": list(r.run.notes) + r.notes}


def _published_json(r: CheckResult) -> dict[str, Any] | None:
    if r.published is None:
        return None
    return {"source": r.published.source, "row": r.published_name,
            "figures": r.published_row, "notes": r.published.notes}


def _reproduced_json(r: CheckResult) -> dict[str, Any]:
    f = r.figure
    return {
        "arithmetic": asdict(f.arithmetic), "chosen": r.how,
        "overall": asdict(f.overall) | {"percent": f.overall.percent},
        "categories": {k: asdict(s) | {"percent": s.percent,
                                       "publisher_columns": [c for c, ks in
                                                             r.columns.items() if k in ks],
                                       "publisher_label": r.claims.labels.get(k)}
                       for k, s in f.categories.items()},
        "gaps": {k: asdict(g) for k, g in r.gaps.items()}}


def _leniency_json(x: Leniency) -> dict[str, Any]:
    return {"scorer": x.scorer, "overall": x.overall.as_dict(), "unknown": x.unknown,
            "by_kind": {k: e.as_dict() for k, e in x.by_kind.items()},
            "accepted": [{"id": i, "kind": k, "answer": a} for i, k, a in x.accepted]}


def as_json(r: CheckResult) -> dict[str, Any]:
    return {
        "format": FORMAT, "lens_version": lens_version(), "reader": r.claims.reader,
        "benchmark": r.claims.benchmark,
        "inputs": [asdict(i) for i in r.claims.inputs],
        "mapping": None if r.claims.mapping is None else asdict(r.claims.mapping),
        "items": len(r.claims.items), "judge_runs": r.claims.runs,
        "published": _published_json(r),
        "reproduced": _reproduced_json(r),
        "sample": [i.id for i in r.sampled],
        "scorers": [_scorer_json(s)
                    for s in ([r.publisher_on_sample] if r.publisher_on_sample else [])
                    + r.scored],
        "reruns": [_rerun_json(x) for x in r.reruns],
        "leniency": [_leniency_json(x) for x in r.leniency],
        "wrong_answers": r.wrong_answers,
        "notes": list(r.claims.notes) + r.notes,
    }


def is_claims_dir(path: Path) -> bool:
    """A folder ``lens claims check --out`` wrote (not a run directory)."""
    return (path / "claims.json").is_file() and not (path / "manifest.json").exists()


def claims_condition(path: Path) -> str:
    """What a claims folder's figures were scored under, in one line."""
    try:
        data = loads_guarded((path / "claims.json").read_bytes(), what="claims.json")
    except (OSError, JsonRefused):
        return "its claims.json is unreadable"
    inputs = ", ".join(f"{Path(i['path']).name} (sha256 {i['sha256'][:12]})"
                       for i in data.get("inputs", []))
    scorers = "; ".join(f"{s['name']}" for s in data.get("scorers", []))
    return f"reader {data.get('reader')} on {inputs}, scored by {scorers}"


def html_page(r: CheckResult) -> str:
    return "\n".join(["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
                      f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
                      f"<title>lens claims</title><style>{CSS}</style></head><body>",
                      to_html(blocks(r)), "</body></html>"])


def write(r: CheckResult, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {out / "report.md": to_markdown(blocks(r)), out / "report.html": html_page(r),
             out / "claims.json": json.dumps(as_json(r), indent=1, ensure_ascii=False)}
    for path, text in files.items():
        atomic_write_text(path, text)
    return list(files)
