"""Every metric lens scores, defined once: the registry that the scorer, the aggregates, the
composite, ``lens score``'s table and the reports all read.

A metric is a :class:`MetricSpec`. lens's own are listed in ``_BUILTIN`` below; a plugin adds
one with :func:`register_metric`, or declares it under the ``lens.metrics`` entry-point group
(the entry point names a MetricSpec, a list of them, or a function returning either)::

    [project.entry-points."lens.metrics"]
    my_metric = "my_pkg.metrics:MY_METRIC"

A plugin metric is computed per answered question by its ``compute`` function, averaged per
group like lens's own, weighted in the composite when ``scoring.weights`` (or its default
weight) gives it a weight, and shown in ``lens score``'s table and the reports.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal

import lens.scoring.measures.mechanical as mechanical
from lens.core import plugins
from lens.core.errors import UserError
from lens.scoring.foundations.detail import (
    Block,
    BudgetDetail,
    CitationPrecisionDetail,
    CoverageDetail,
    FactRecallDetail,
    GroundingDetail,
    InsightDetail,
    PairwiseDetail,
    ReasoningDetail,
    use_metric_models,
)
from lens.scoring.foundations.run_input import ScoringItem
from lens.scoring.foundations.types import QuestionScores
from lens.scoring.measures.differential import (
    longitudinal_advantage,
    longitudinal_advantage_replicates,
)
from lens.scoring.measures.fact_recall import FactCredit, fact_recall_of
from lens.scoring.text.facts import FactMatcherSettings

if TYPE_CHECKING:
    import numpy as np

    from lens.stats.resample import ReplicateWeights

__all__ = ["COMPOSITE", "MetricInput", "MetricSpec", "all_metrics", "get_metric",
           "register_metric", "unregister_metric"]

# The composite is not a metric of the registry (it weighs them) but is shown with them, first.
COMPOSITE = "composite"
ENTRY_POINT_GROUP = plugins.METRICS

Result = tuple[float | None, dict[str, Any]]
# A group statistic's bootstrap replicates: (the group's rows, each per-question metric's column
# of values and of definedness, the replicates' weights) -> one value per replicate.
Replicates = Callable[[Sequence[QuestionScores], Mapping[str, "np.ndarray"],
                       Mapping[str, "np.ndarray"], "ReplicateWeights"], "np.ndarray"]
# The composite's per-question values where the scorer gives them, else what it is made of:
# whose scope correlation stands for the composite's in a group statistic's design effect.
COMPOSITE_DESIGN_PROXY = (COMPOSITE, "fact_recall", "answer_quality")


@dataclass(frozen=True)
class MetricInput:
    """What a metric's ``compute`` function is given for one answered question."""

    item: ScoringItem
    matcher: FactMatcherSettings
    # The answer's claims, worked out once for every metric (lens.scoring.measures.mechanical).
    analysis: mechanical.Analysis
    # The question's metrics computed so far (every earlier metric; with ``after_judge``, the
    # judge's metrics and fact grades too).
    metrics: Mapping[str, float | None]


@dataclass(frozen=True)
class MetricSpec:
    """One metric: how it is computed, aggregated, weighted and shown.

    ``compute(MetricInput) -> (value, detail)`` scores one answered question; value None means
    unknown for this question, never a made-up 0 or 1. None for metrics the scorer's judge
    code sets (answer_quality, action_quality) and for group metrics. ``after_judge`` runs it
    after the judge's verdicts are in (it may read judged metrics from ``MetricInput.metrics``).
    ``aggregation`` is ``mean`` (a group's value is the mean over its answered questions where
    the metric is defined) or ``group`` (``group_compute(rows) -> (value, detail)`` over the
    group's rows; scored when ``tier`` is); ``group_replicates`` computes the same statistic
    under bootstrap weights, for the report's intervals (None: the report gives it none), and
    ``design_proxy`` names the per-question metrics whose scope correlation stands for its
    own (the first one the run has). ``fact_graded``: its value rests on the fact grades, so a
    judge that grades the facts moves it. ``from_grades``: for a metric made of per-item grades,
    the one rule from a question's grades (:class:`lens.scoring.measures.fact_recall.FactCredit`) to
    its value, which ``compute`` applies to the matcher's grades and every fact grader to its own
    (fact_recall's: :func:`lens.scoring.measures.fact_recall.fact_recall_of`). ``weight`` is its
    default weight in the composite; ``unweighted`` (non-empty) says why it may never be weighted.
    ``gate``: the composite is 0 when the metric is below the gate threshold. ``judged``: its
    value rests on an LLM judge, so reports compare differences against the judge's noise
    floor. ``headline``: the terminal shows it after a run. ``title`` heads its column in
    ``lens score``; ``column`` and ``report_order`` place it there and in reports (None: after
    the placed ones, in registration order in the table and alphabetically in reports).
    ``detail`` is the model (a :class:`lens.scoring.foundations.detail.Block`) of the detail it
    writes beside its value, which reports and the viewer read it with (None: shown as stored).
    """

    name: str
    tier: int = 1
    compute: Callable[[MetricInput], Result] | None = None
    after_judge: bool = False
    aggregation: Literal["mean", "group"] = "mean"
    group_compute: Callable[[Sequence[QuestionScores]], Result] | None = None
    group_replicates: Replicates | None = None
    design_proxy: tuple[str, ...] = ()
    fact_graded: bool = False
    from_grades: Callable[[FactCredit], float | None] | None = None
    higher_is_better: bool = True
    weight: float = 0.0
    unweighted: str = ""
    gate: bool = False
    judged: bool = False
    # Among the few metrics the terminal shows after a run (the others are in the report).
    headline: bool = False
    title: str = ""
    column: int | None = None
    report_order: int | None = None
    # The range of its values (a widened interval is clipped to it).
    bounds: tuple[float, float] = (0.0, 1.0)
    description: str = ""
    detail: type[Block] | None = None

    @property
    def column_title(self) -> str:
        return self.title or self.name[:9]


def _problems(spec: MetricSpec) -> list[str]:
    out = []
    if not spec.name.isidentifier() or spec.name == COMPOSITE:
        out.append(f"name {spec.name!r} must be an identifier other than {COMPOSITE!r}")
    if spec.tier not in (1, 2, 3):
        out.append(f"tier must be 1, 2 or 3 (got {spec.tier!r})")
    if spec.aggregation == "mean" and spec.compute is None:
        out.append("a mean metric needs a compute function")
    if spec.aggregation == "group" and spec.group_compute is None:
        out.append("a group metric needs a group_compute function")
    if spec.aggregation not in ("mean", "group"):
        out.append(f"aggregation must be 'mean' or 'group' (got {spec.aggregation!r})")
    if not isinstance(spec.weight, int | float) or spec.weight < 0:
        out.append(f"weight must be a number >= 0 (got {spec.weight!r})")
    if spec.unweighted and spec.weight:
        out.append("an unweighted metric's weight must be 0")
    return out


# -- lens's own metrics -----------------------------------------------------------------------

def _insight(m: MetricInput) -> Result:
    sources, _ = mechanical.relevant_sources(m.item, m.matcher)
    return mechanical.insight_depth(m.item, m.metrics.get("fact_recall"), len(sources))


_BUILTIN = (
    MetricSpec("evidence_grounding", 1, lambda m: mechanical.evidence_grounding(m.item),
               weight=0.10, gate=True, title="grounding", column=1, report_order=3,
               description="share of cited refs the agent received and that exist",
               detail=GroundingDetail),
    MetricSpec("fact_recall", 1,
               lambda m: mechanical.fact_recall(m.item, settings=m.matcher, analysis=m.analysis),
               weight=0.20, headline=True, title="facts", column=2, report_order=2,
               fact_graded=True, from_grades=fact_recall_of,
               description="share of the key facts the answer states as claims",
               detail=FactRecallDetail),
    MetricSpec("citation_precision", 1,
               lambda m: mechanical.citation_precision(m.item, settings=m.matcher),
               weight=0.10, title="cit.prec", column=3,
               description="share of cited refs that are grounded and relevant",
               detail=CitationPrecisionDetail),
    MetricSpec("evidence_coverage", 1, lambda m: mechanical.evidence_coverage(m.item),
               weight=0.10, headline=True, title="coverage", column=4, report_order=4,
               description="share of the required evidence episodes the agent received",
               detail=CoverageDetail),
    MetricSpec("budget_compliance", 1, lambda m: mechanical.budget_compliance(m.item),
               weight=0.05, gate=True, title="budget", column=5, report_order=5,
               description="1 when the agent stayed within its budget, else 0",
               detail=BudgetDetail),
    MetricSpec("answer_quality", 2, weight=0.20, judged=True, headline=True, title="quality",
               column=6, report_order=1,
               description="the judge's pairwise preference against the canonical answer",
               detail=PairwiseDetail),
    MetricSpec("insight_depth", 2, _insight, after_judge=True, weight=0.10, title="depth",
               column=7, report_order=6, fact_graded=True,
               description="fact credit times the share of two relevant sources cited",
               detail=InsightDetail),
    MetricSpec("reasoning_quality", 2,
               lambda m: mechanical.reasoning_quality(m.item, m.analysis),
               weight=0.10, title="reasoning", column=8, report_order=7,
               description="share of the answer's stated figures found in what it received",
               detail=ReasoningDetail),
    MetricSpec("action_quality", 3, weight=0.05, judged=True, title="action", column=10,
               report_order=8,
               description="the judge's pairwise preference on action_recommendation questions",
               detail=PairwiseDetail),
    MetricSpec("longitudinal_advantage", 3, aggregation="group",
               group_compute=longitudinal_advantage,
               group_replicates=longitudinal_advantage_replicates,
               design_proxy=("fact_recall", "answer_quality"), judged=True, title="long.adv",
               column=9,
               bounds=(-1.0, 1.0),
               unweighted="longitudinal_advantage rises when the control questions fail, so it "
                          "cannot be part of the composite: read it beside the composite "
                          "instead, and remove this weight",
               description="synthesis minus null_hypothesis control mean, per group"),
)

_registered: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add a metric to the registry (for this process); returns it, so it can decorate a
    module-level constant. A clear UserError when the spec is incomplete or its name taken."""
    problems = _problems(spec)
    if spec.name in _names(_BUILTIN, _registered.values()):
        problems.append(f"a metric named {spec.name!r} is already registered")
    if problems:
        raise UserError(f"metric {spec.name!r}: " + "; ".join(problems))
    _registered[spec.name] = spec
    return spec


def unregister_metric(name: str) -> None:
    """Remove a metric :func:`register_metric` added (lens's own stay)."""
    _registered.pop(name, None)


def _names(*groups: Iterable[MetricSpec]) -> set[str]:
    return {s.name for g in groups for s in g}


@functools.cache
def _installed() -> dict[str, str]:
    # Read once: installed metadata does not change while lens runs, and this is read often.
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


@functools.lru_cache(maxsize=8)
def _from_entry_points(targets: tuple[tuple[str, str], ...]) -> tuple[MetricSpec, ...]:
    out: list[MetricSpec] = []
    for name, target in targets:
        where = f"entry point {ENTRY_POINT_GROUP}:{name} ({target})"
        try:
            obj = plugins.load_target(target)
            if callable(obj) and not isinstance(obj, MetricSpec):
                obj = obj()
        except Exception as exc:  # a plugin's own failure, named with where it came from
            raise UserError(f"{where}: cannot be loaded: {exc}") from None
        specs = [obj] if isinstance(obj, MetricSpec) else obj
        if not isinstance(specs, list | tuple) or not all(isinstance(s, MetricSpec)
                                                          for s in specs):
            raise UserError(f"{where}: must name a MetricSpec, a list of them or a function "
                            "returning either")
        for s in specs:
            problems = _problems(s)
            if s.name in _names(_BUILTIN, out):
                problems.append(f"a metric named {s.name!r} is already registered")
            if problems:
                raise UserError(f"{where}: metric {s.name!r}: " + "; ".join(problems))
            out.append(s)
    return tuple(out)


def all_metrics() -> tuple[MetricSpec, ...]:
    """Every metric: lens's own, then those registered in this process, then those of entry
    points (by entry-point name)."""
    targets = {**_installed(), **plugins.added(ENTRY_POINT_GROUP)}
    found = _from_entry_points(tuple(sorted(targets.items())))
    own = [*_BUILTIN, *_registered.values()]
    clash = _names(own) & _names(found)
    if clash:
        raise UserError(f"metric(s) {', '.join(sorted(clash))} registered twice (by "
                        f"register_metric and by an entry point of {ENTRY_POINT_GROUP})")
    return (*own, *found)


def get_metric(name: str) -> MetricSpec | None:
    return next((s for s in all_metrics() if s.name == name), None)


def question_metrics() -> tuple[str, ...]:
    """The metrics a question carries and a group averages (aggregation ``mean``)."""
    return tuple(s.name for s in all_metrics() if s.aggregation == "mean")


def group_metrics() -> tuple[MetricSpec, ...]:
    """The metrics computed over a group's rows (aggregation ``group``)."""
    return tuple(s for s in all_metrics() if s.aggregation == "group")


def interval_group_metrics() -> tuple[str, ...]:
    """The statistics computed over a group that the report gives an interval from the group's
    bootstrap: the composite, then every group metric with ``group_replicates``."""
    return (COMPOSITE, *(s.name for s in group_metrics() if s.group_replicates is not None))


def design_proxy(name: str) -> tuple[str, ...]:
    """The per-question metrics whose scope correlation stands for a group statistic's
    (``MetricSpec.design_proxy``; the composite's: :data:`COMPOSITE_DESIGN_PROXY`)."""
    if name == COMPOSITE:
        return COMPOSITE_DESIGN_PROXY
    spec = get_metric(name)
    return spec.design_proxy if spec is not None else ()


def fact_graded_metrics() -> frozenset[str]:
    """The metrics whose value rests on the fact grades (the judge's, when it grades facts)."""
    return frozenset(s.name for s in all_metrics() if s.fact_graded)


def metric_names() -> tuple[str, ...]:
    return tuple(s.name for s in all_metrics())


def default_weights() -> dict[str, float]:
    return {s.name: float(s.weight) for s in all_metrics()}


def gate_metrics() -> tuple[str, ...]:
    return tuple(s.name for s in all_metrics() if s.gate)


def unweighted() -> dict[str, str]:
    """The metrics never weighted, each with the reason."""
    return {s.name: s.unweighted for s in all_metrics() if s.unweighted}


def judged_metrics() -> frozenset[str]:
    """The composite and the metrics whose value rests on an LLM judge."""
    return frozenset({COMPOSITE, *(s.name for s in all_metrics() if s.judged)})


def judge_only_metrics() -> frozenset[str]:
    """Metrics only a judge model grades (no mechanical computation): without a judge they are
    unknown for every question."""
    return frozenset(s.name for s in all_metrics()
                     if s.judged and s.compute is None and s.aggregation == "mean")


def report_order() -> tuple[str, ...]:
    """The composite, then the metrics reports place first, in their order."""
    placed = sorted((s for s in all_metrics() if s.report_order is not None),
                    key=lambda s: s.report_order or 0)
    return (COMPOSITE, *(s.name for s in placed))


def column_titles() -> dict[str, str]:
    """``lens score``'s table columns: the composite, then every metric, by its title."""
    specs = all_metrics()
    placed = sorted((s for s in specs if s.column is not None), key=lambda s: s.column or 0)
    rest = [s for s in specs if s.column is None]
    return {COMPOSITE: COMPOSITE, **{s.name: s.column_title for s in [*placed, *rest]}}


def bounds(name: str) -> tuple[float, float]:
    """The range of a metric's values (the composite's too)."""
    spec = get_metric(name)
    return spec.bounds if spec is not None else (0.0, 1.0)


def difference_bound(name: str) -> float:
    """How far apart two values of a metric (the composite's too) can lie, so what bounds a
    difference between two arms: the width of its range."""
    low, high = bounds(name)
    return high - low


def detail_models() -> dict[str, type[Block]]:
    """The model each metric's detail is read with, by metric name (``MetricSpec.detail``)."""
    return {s.name: s.detail for s in all_metrics() if s.detail is not None}


def headline() -> tuple[str, ...]:
    """The composite, then the metrics the terminal shows after a run."""
    return (COMPOSITE, *(s.name for s in all_metrics() if s.headline))


def computed(tiers: Iterable[int], *, after_judge: bool) -> tuple[MetricSpec, ...]:
    """The per-question metrics with a compute function scored at these tiers, in order."""
    scored = set(tiers)
    return tuple(s for s in all_metrics() if s.compute is not None and s.tier in scored
                 and s.after_judge == after_judge)


# Every question's detail is read with the models the specs name (lens.scoring.foundations.detail
# sits below the registry, so it is handed them).
use_metric_models(detail_models)
