"""The "Retrieval quality" report section: the agent's search rankings against the required
evidence (see lens/scoring/measures/retrieval.py) and, per adapter, the funnel "evidence retrieved →
evidence cited → facts stated" that tells retrieval, selection and synthesis failures apart."""

from __future__ import annotations

from typing import Any

import lens.report.documents.fmt as fmt
from lens.report.foundations.data import QuestionRow, RunData
from lens.report.foundations.shapes import EstimateOut
from lens.report.sections.registry import Section, render_json_section
from lens.scoring.foundations.detail import RetrievalDetail
from lens.scoring.measures.retrieval import metric_names
from lens.stats import estimate

SECTION_ID = "retrieval"
TITLE = "Retrieval quality"
FUNNEL = (("evidence retrieved", "retrieved"), ("evidence cited", "cited"))


def _detail(row: QuestionRow) -> RetrievalDetail | None:
    """The question's retrieval detail, when it has ranking metrics (required evidence)."""
    if row.scores is None or row.record.status != "answered":
        return None
    d = row.detail_block("retrieval").retrieval
    return d if d is not None and d.first is not None else None


def _ranking(row: QuestionRow, which: str, name: str) -> float | None:
    d = _detail(row)
    searches = (d.first if which == "first" else d.best) if d else None
    return searches.get(name) if searches else None


def _funnel(row: QuestionRow, key: str) -> float | None:
    d = _detail(row)
    return getattr(d.funnel, key) if d and d.funnel else None


def _est(rows: list[QuestionRow], value: Any) -> EstimateOut:
    vals: list[float] = []
    clusters: list[str] = []
    for row in rows:
        v = value(row)
        if v is not None:
            vals.append(float(v))
            clusters.append(row.record.scope_id)
    return EstimateOut.of(estimate(vals, clusters))


def retrieval_summary(run: RunData) -> dict[str, dict[str, EstimateOut]]:
    out: dict[str, dict[str, EstimateOut]] = {}
    for label in run.adapters:
        rows = [r for r in run.rows_for(label) if _detail(r) is not None]
        ests: dict[str, EstimateOut] = {}
        for which in ("first", "best"):
            for name in metric_names():
                ests[f"{which} {name}"] = _est(
                    rows, lambda r, w=which, n=name: _ranking(r, w, n))
        for title, key in FUNNEL:
            ests[title] = _est(rows, lambda r, k=key: _funnel(r, k))
        ests["facts stated"] = _est(rows, lambda r: r.metric("fact_recall"))
        out[label] = ests
    return out


def retrieval_section(run: RunData) -> Section | None:
    if run.scores is None:
        return None
    summary = retrieval_summary(run)
    if not any(e.n for ests in summary.values() for e in ests.values()):
        return None
    adapters = list(summary)
    ranking = [k for k in next(iter(summary.values())) if k.startswith(("first", "best"))]
    funnel = [t for t, _ in FUNNEL] + ["facts stated"]
    doc = {"title": TITLE, "tables": [
        {"title": "Search ranking against the required evidence (episodes)",
         "columns": ["metric", *adapters],
         "rows": [[k, *(fmt.est(summary[a][k]) for a in adapters)] for k in ranking]},
        {"title": "Where evidence is lost: retrieved → cited → facts stated",
         "columns": ["adapter", *funnel],
         "rows": [[a, *(fmt.est(summary[a][k]) for k in funnel)] for a in adapters]},
    ], "notes": [
        "first: the question's first search; best: its best search for that metric. A question "
        "with required evidence and no search scores 0; questions without required evidence "
        "are left out",
        "retrieved: share of the required episodes any tool gave the agent; cited: share it "
        "cited; facts stated: fact_recall. A drop from retrieved to cited is a selection "
        "problem, from cited to facts stated a synthesis problem",
    ]}
    base = render_json_section(SECTION_ID, doc)
    data = {a: {k: e.model_dump(mode="json") for k, e in ests.items()}
            for a, ests in summary.items()}
    return Section(id=SECTION_ID, title=TITLE, markdown=base.markdown, html=base.html,
                   data=data)
