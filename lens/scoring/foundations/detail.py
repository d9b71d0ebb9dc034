"""A question's scoring detail as typed models: what each metric wrote beside its value.

``scores.json`` keeps each question's detail as the scorer wrote it (``QuestionScores.detail``,
one JSON object keyed by metric); :func:`read_detail` reads that object into a
:class:`QuestionDetail`, so a reader writes
``row.scores.details.block("fact_recall", FactRecallDetail).facts[0].grade``. The stored object
is never rewritten from these models, so reading changes no byte of a scores file.

The models are here; which one a metric's block is read with is its spec's ``detail``
(:class:`lens.scoring.metrics.MetricSpec`), a plugin metric's too. The registry sits above this
room, so it hands its models down when it loads (:func:`use_metric_models`); a
:class:`QuestionDetail` itself names only the blocks no metric owns (retrieval, judge, composite,
a protocol's).

Every model keeps the keys it does not name (an older or newer scorer's, a plugin metric's,
a hand-written file's) in ``model_extra``: the viewers show them, and :func:`untyped` lists
them, which a test keeps empty for everything lens's own scoring and the published protocols
write. A block whose values do not fit its model (a file written by hand) is kept whole among
the extras instead of refusing the file: it is shown, never interpreted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, TypeAdapter, ValidationError


class Block(BaseModel):
    """One part of a question's detail. ``reason`` says why a value is unknown or 0, or what
    settled it."""

    model_config = ConfigDict(extra="allow")

    reason: str | None = None


class ClaimsDetail(Block):
    """What the answer claims against what the question needs (``lens.scoring.text.claims``)."""

    claimed_figures: int | None = None
    figure_allowance: int | None = None
    stuffing_factor: float | None = None
    quoted_sentences: int | None = None
    quoted_example: str | None = None
    unasserted_sentences: int | None = None


class FactRow(Block):
    """One key fact: the matcher's verdict (``matched`` and what was missing), or a grader's
    (``grade``: ``present``/``partial``/``absent`` from a judge, 1/0.5/0 from the offline
    grader; ``points`` the credit it earned)."""

    fact: str | None = None
    matched: bool | None = None
    coverage: float | None = None
    words_missing: list[str] = []
    numbers_missing: list[str] = []
    negation_missing: bool | None = None
    grade: str | float | None = None
    points: float | None = None
    method: str | None = None
    p_present: float | None = None
    p_partial: float | None = None
    # The matcher's verdict kept beside a grader's: what it vetoed, whether it matched.
    matcher_veto: str | None = None
    matcher: bool | None = None
    # Why a credited conclusion earned nothing.
    unbacked: str | None = None


class ConclusionDetail(Block):
    """The question's conclusion against the answer's (``lens.scoring.text.conclusion``)."""

    conclusion: str | None = None
    status: str | None = None
    verdicts: list[str] = []
    claim_stated: bool | None = None
    backed: bool | None = None
    cites_evidence: bool | None = None


class FactRecallDetail(ClaimsDetail):
    """``fact_recall``: each key fact's verdict, the conclusion's, and which grader decided
    (``grader`` unset: the matcher)."""

    facts: list[FactRow] = []
    stated: int | None = None
    conclusion: ConclusionDetail | None = None
    grader: str | None = None
    model: str | None = None
    matcher_recall: float | None = None
    # Under grader ``both``: the share of facts where the judge and the matcher agree.
    agreement: float | None = None


class CitationMiss(Block):
    ref: str | None = None


class GroundingDetail(Block):
    """``evidence_grounding``: citations checked against what the agent received."""

    cited: int | None = None
    grounded: int | None = None
    misses: list[CitationMiss] = []
    ignored_tags: list[str] = []
    # Refs past the question's checkpoint, and refs naming nothing the adapter was given.
    future_leak: list[str] = []
    unknown_refs: list[str] = []
    unknown_refs_count: int | None = None


class CitationPrecisionDetail(Block):
    cited: int | None = None
    relevant: int | None = None
    not_relevant: list[str] = []


class CoverageDetail(Block):
    required: int | None = None
    found: int | None = None
    missing: list[str] = []


class BudgetDetail(Block):
    stop_reason: str | None = None
    over: list[str] = []


class InsightDetail(Block):
    relevant_sources: int | None = None
    sources_needed: int | None = None
    fact_credit: float | None = None


class ReasoningDetail(ClaimsDetail):
    supported_share: float | None = None


class PairOutcome(Block):
    """One position-swapped comparison: the winner each way round and the outcome."""

    label: str | None = None
    candidate_as_a: str | None = None
    candidate_as_b: str | None = None
    final: str | None = None


class PairwiseDetail(Block):
    """``answer_quality`` and ``action_quality``: the judge's comparisons."""

    comparisons: list[PairOutcome] = []
    failed_judge_calls: int | None = None
    unreadable_verdicts: int | None = None


class Funnel(Block):
    retrieved: float | None = None
    cited: float | None = None


class RetrievalDetail(Block):
    """The ranking metrics of the question's first and best searches (by name, as
    ``lens.scoring.measures.retrieval.metric_names``) and its evidence funnel."""

    required: int | None = None
    searches: int | None = None
    first: dict[str, float] | None = None
    best: dict[str, float] | None = None
    funnel: Funnel | None = None


class JudgeCounts(Block):
    pairs: int | None = None
    disagreements: int | None = None


class CompositeDetail(Block):
    missing: list[str] = []
    gated: bool | None = None
    renormalised: bool | None = None


class ProtocolInfo(Block):
    name: str | None = None
    group: str | None = None


class ProtocolVerdict(Block):
    """A published protocol's judged metric of one question: the verdict and its prompt."""

    verdict: str | None = None
    prompt: str | None = None


B = TypeVar("B", bound=Block)


class QuestionDetail(BaseModel):
    """A question's detail: each metric's block (read with the model its spec names; see
    :meth:`block`), the retrieval, judge and composite blocks, a published protocol's
    (``protocol``, and its judged metrics in ``judged``), and why the question has no scores
    (``error``, ``errata``, ``reason``). Built by :func:`read_detail`."""

    model_config = ConfigDict(extra="allow")

    retrieval: RetrievalDetail | None = None
    judge: JudgeCounts | None = None
    composite: CompositeDetail | None = None
    protocol: ProtocolInfo | None = None
    error: str | None = None
    errata: str | None = None
    reason: str | None = None
    # A published protocol's judged metrics, by the name each is stored under.
    judged: dict[str, ProtocolVerdict] = {}

    _stored: Mapping[str, Any] = PrivateAttr(default_factory=dict)
    # The metrics' blocks, each read with its spec's model, by metric name.
    _metrics: dict[str, Block | None] = PrivateAttr(default_factory=dict)

    def blocks(self) -> Iterator[tuple[str, Any]]:
        """Every stored key in stored order with its typed value (a model, a string, or the
        stored value itself for a key no model names)."""
        extra = self.model_extra or {}
        for key in self._stored:
            if key in self._metrics:
                yield key, self._metrics[key]
            elif key in self.judged:
                yield key, self.judged[key]
            elif key in extra:
                yield key, extra[key]
            else:
                yield key, getattr(self, key)

    def block(self, key: str, model: type[B]) -> B | None:
        """The block stored under ``key`` as ``model``, the model its metric's spec names
        (``details.block("fact_recall", FactRecallDetail)``); None when the question has none
        or it did not fit the model (it is then kept among the extras). A TypeError when the
        spec names another model: the caller's model is out of date."""
        value = self.of(key)
        if isinstance(value, Block) and not isinstance(value, model):
            raise TypeError(f"detail {key!r} is read as {type(value).__name__}, "
                            f"not {model.__name__}")
        return value if isinstance(value, model) else None

    def of(self, key: str) -> Any:
        """The typed value stored under ``key`` (a metric's name, ``retrieval``, …); None when
        the question has none."""
        return next((v for k, v in self.blocks() if k == key), None)

    def __contains__(self, key: str) -> bool:
        return key in self._stored

    def __len__(self) -> int:
        return len(self._stored)


# One reader per stored key QuestionDetail names, so that each block is read on its own.
_READERS: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(field.annotation) for name, field in QuestionDetail.model_fields.items()
    if name != "judged" and field.annotation is not None}

MetricModels = Callable[[], Mapping[str, type[Block]]]


def _no_models() -> Mapping[str, type[Block]]:
    return {}


# The registry's models by metric name, asked at each read (a plugin may register later); none
# until the registry loads, which importing anything of lens.scoring does first.
_metric_models: MetricModels = _no_models


def use_metric_models(models: MetricModels) -> None:
    """Read each metric's block with the model ``models()`` gives for its name (the metric
    registry's call, when it loads)."""
    global _metric_models
    _metric_models = models


def _is_verdict(value: Any) -> bool:
    # A protocol's judged metric is stored under the metric's own name (any name the protocol
    # chooses: BEAM's rubric items are numbered); its shape tells it apart.
    return isinstance(value, Mapping) and "prompt" in value and "verdict" in value


def read_detail(stored: Mapping[str, Any],
                models: Mapping[str, type[Block]] | None = None) -> QuestionDetail:
    """The typed view of one question's stored detail (see the module's docstring), each
    metric's block read with ``models[name]`` (by default the registry's models)."""
    typed: dict[str, Any] = {}
    metrics: dict[str, Block | None] = {}
    judged: dict[str, ProtocolVerdict] = {}
    extra: dict[str, Any] = {}
    protocol_row = "protocol" in stored
    by_metric = _metric_models() if models is None else models
    for key, value in stored.items():
        try:
            if key in _READERS:
                typed[key] = _READERS[key].validate_python(value)
            elif key in by_metric:
                metrics[key] = None if value is None else by_metric[key].model_validate(value)
            elif protocol_row and _is_verdict(value):
                judged[key] = ProtocolVerdict.model_validate(value)
            else:
                extra[key] = value
        except ValidationError:
            extra[key] = value
    out = QuestionDetail.model_construct(
        _fields_set=set(typed) | ({"judged"} if judged else set()), **typed, judged=judged)
    # Set apart from the constructor: a stored key may be any string, a keyword's name too.
    object.__setattr__(out, "__pydantic_extra__", extra)
    out._stored = stored
    out._metrics = metrics
    return out


def shown(model: BaseModel) -> dict[str, Any]:
    """The fields a block was given (no defaults it was not), then its extra keys: what a
    viewer shows of it."""
    out = {name: getattr(model, name) for name in type(model).model_fields
           if name in model.model_fields_set}
    out.update(model.model_extra or {})
    return out


def untyped(detail: QuestionDetail) -> list[str]:
    """The paths of every stored key no model names, e.g. ``fact_recall.facts[0].note``."""
    found = [key for key in (detail.model_extra or {})]
    for key, value in detail.blocks():
        if key not in found:
            found += _untyped_in(value, key)
    return found


def _untyped_in(value: Any, path: str) -> list[str]:
    if isinstance(value, BaseModel):
        out = [f"{path}.{k}" for k in (value.model_extra or {})]
        for name in value.model_fields_set:
            out += _untyped_in(getattr(value, name), f"{path}.{name}")
        return out
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _untyped_in(v, f"{path}[{i}]")]
    return []
