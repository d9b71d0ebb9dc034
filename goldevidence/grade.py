"""The grader: every GoldEvidenceBench metric, per row and over a set of rows.

Shared metrics follow the original GoldEvidenceBench grader's definitions; where lens departs it
is to fix a flaw, and docs/goldevidence.md lists each departure (``goldevidence.compat`` keeps
the original's behaviour for re-deriving published numbers). A metric that cannot be computed
on the given rows (no citation rows, no twins, no instruction rows, no presence information) is
None, never 0 or 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any, Literal, TypedDict

from goldevidence.grammar import Entry, parse_updates
from goldevidence.predictions import Prediction, norm_value, parse_prediction
from goldevidence.rows import Gold, Row, RowMeta
from goldevidence.state import implied_by

DEFAULT_MAX_SUPPORT_K = 3


@dataclass
class RowGrade:
    id: str
    value_ok: bool
    exact_ok: bool
    requires_citation: bool
    cite_precision: float | None = None
    cite_recall: float | None = None
    cite_f1: float | None = None
    bloat: bool | None = None
    entails: bool | None = None
    gold_cited: bool = False
    gold_present: bool | None = None
    selected: bool | None = None
    errors: list[str] = field(default_factory=list)


def _id_list(v: Any) -> list[str]:
    items = v if isinstance(v, list) else [] if v is None else [v]
    return [s for s in (str(x).strip() for x in items if x is not None) if s]


def gold_support(gold: Gold) -> list[str]:
    """The gold support ids as listed (``support_id`` when the list is absent or empty)."""
    return _id_list(gold.get("support_ids")) or _id_list(gold.get("support_id"))


def _prf(pred: list[str], gold: list[str]) -> tuple[float, float, float]:
    ps, gs = set(pred), set(gold)
    if not ps and not gs:
        # Nothing to cite and nothing cited is a perfect citation.
        return 1.0, 1.0, 1.0
    tp = len(ps & gs)
    p = tp / len(ps) if ps else 0.0
    r = tp / len(gs) if gs else 0.0
    return p, r, (2 * p * r / (p + r)) if p + r else 0.0


def _mode(row: Row) -> str:
    return row.get("meta", {}).get("state_mode") or row.get("state_mode") or "kv"


def _support_k(meta: RowMeta, override: int | None) -> int:
    return override or int(meta.get("max_support_k") or DEFAULT_MAX_SUPPORT_K)


def _requires_citation(meta: RowMeta, citations: str) -> bool:
    return bool(meta.get("requires_citation")) if citations == "auto" else citations == "on"


def _citation_errors(cited: list[str], k: int, entries: dict[str, Entry]) -> list[str]:
    errors = []
    if len(cited) > k:
        errors.append("too_many_support_ids")
    if entries and any(c not in entries for c in cited):
        errors.append("unknown_support_ids")
    return errors


def _entailed(row: Row, pred: Prediction, scored: list[str],
              entries: dict[str, Entry]) -> bool:
    """Replaying only the cited lines (up to the row's as-of step) implies the answer."""
    if pred.value_missing or any(c not in entries for c in scored):
        return False
    implied = implied_by(_mode(row), [entries[c] for c in scored], row.get("meta", {}))
    return norm_value(implied) == pred.value


def _grade_citation(g: RowGrade, row: Row, pred: Prediction, scored: list[str],
                    gold_ids: list[str], entries: dict[str, Entry]) -> None:
    g.cite_precision, g.cite_recall, g.cite_f1 = _prf(scored, gold_ids)
    # The scored list (first k ids, repeats kept) longer than the gold list is bloat.
    g.bloat = bool(gold_ids) and len(scored) > len(gold_ids)
    g.entails = _entailed(row, pred, scored, entries)
    # Ids past k are not scored, but citing them is still over-citation.
    over_k = "too_many_support_ids" in g.errors
    cite_ok = set(gold_ids) <= set(scored) and not g.bloat and not over_k
    g.exact_ok = g.value_ok and cite_ok and g.entails


def grade_row(row: Row, pred: Prediction, *, citations: str = "auto",
              max_support_k: int | None = None,
              entries: dict[str, Entry] | None = None) -> RowGrade:
    meta = row.get("meta", {})
    gold_ids = gold_support(row.get("gold", {}))
    if entries is None:
        entries = log_entries(row.get("document") or "")
    k = _support_k(meta, max_support_k)
    scored = pred.support_ids[:k]
    value_ok = not pred.value_missing and pred.value == norm_value(row.get("gold", {}).get("value"))
    g = RowGrade(id=row["id"], value_ok=value_ok, exact_ok=value_ok,
                 requires_citation=_requires_citation(meta, citations),
                 gold_cited=bool(gold_ids) and set(gold_ids) <= set(scored),
                 errors=[*pred.errors, *_citation_errors(pred.support_ids, k, entries)])
    if g.requires_citation:
        _grade_citation(g, row, pred, scored, gold_ids, entries)
    if pred.presented_ids is not None:
        g.gold_present = set(gold_ids) <= set(pred.presented_ids)
        g.selected = g.gold_cited if gold_ids else not scored
    return g


def log_entries(document: str) -> dict[str, Entry]:
    """Every id-carrying line of a log, NOTE lines included, by id."""
    return {e.uid: e for e in parse_updates(document, include_notes=True)}


def _mean(xs: Iterable[float | bool | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None]
    return fmean(vals) if vals else None


@dataclass
class GradeResult:
    """What a grader measured over a set of rows.

    The fields up to ``state_integrity_rate`` are the ones the original GoldEvidenceBench
    grader defines too (:data:`SHARED_FIELDS`); the rest only lens's grader measures. A result
    of ``grade --compat original`` (``mode`` "compat-original") leaves them unknown and
    :meth:`as_dict` shows only the shared fields, with its mode.
    """

    n: int
    value_acc: float | None
    exact_acc: float | None
    answer_correct_given_selected: float | None
    cite_precision: float | None
    cite_recall: float | None
    cite_f1: float | None
    support_bloat: float | None
    entailment_rate: float | None
    twin_consistency: float | None
    twin_flip_rate: float | None
    instr_acc: float | None
    clean_acc: float | None
    instr_gap: float | None
    instr_override_rate: float | None
    instr_conflict_present_rate: float | None
    instr_conflict_present_count: int | None
    state_integrity_rate: float | None
    gold_present_rate: float | None = None
    selection_rate: float | None = None
    accuracy_when_gold_present: float | None = None
    accuracy: float | None = None
    tokens_per_query: float | None = None
    passes_per_query: float | None = None
    wall_s_per_query: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    rows_with_errors: int = 0
    slices: dict[str, dict[str, float | None]] = field(default_factory=dict)
    mode: str = "lens"

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        mode = d.pop("mode")
        if mode == "lens":
            return d
        return {"mode": mode, **{k: d[k] for k in SHARED_FIELDS}}


# The fields the original grader defines as well; the rest of GradeResult is lens's own.
_FIELDS = list(GradeResult.__dataclass_fields__)
SHARED_FIELDS = tuple(_FIELDS[:_FIELDS.index("state_integrity_rate") + 1])


METRICS = ("value_acc", "exact_acc", "answer_correct_given_selected", "cite_f1",
           "support_bloat", "entailment_rate", "twin_consistency", "twin_flip_rate", "instr_acc",
           "instr_gap", "instr_override_rate", "instr_conflict_present_rate",
           "instr_conflict_present_count", "state_integrity_rate", "gold_present_rate",
           "selection_rate", "accuracy_when_gold_present", "accuracy")


def twin_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """(base, twin) for every (twin_group, q_index) holding exactly two rows, as the original
    pairs them: the row marked base (else the first) and the row marked twin (else the last)."""
    groups: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        m = r.get("meta", {})
        if m.get("twin_group") is not None and m.get("q_index") is not None:
            groups.setdefault((str(m["twin_group"]), int(m["q_index"])), []).append(r)
    pairs = []
    for pair in groups.values():
        if len(pair) != 2:
            continue
        variant = [r.get("meta", {}).get("twin_variant") for r in pair]
        base = pair[variant.index("base")] if "base" in variant else pair[0]
        twin = pair[variant.index("twin")] if "twin" in variant else pair[-1]
        pairs.append((base, twin))
    return pairs


class _TwinMetrics(TypedDict):
    twin_consistency: float | None
    twin_flip_rate: float | None


class _CitationMetrics(TypedDict):
    cite_precision: float | None
    cite_recall: float | None
    cite_f1: float | None
    support_bloat: float | None
    entailment_rate: float | None
    answer_correct_given_selected: float | None


class _InstructionMetrics(TypedDict):
    instr_acc: float | None
    clean_acc: float | None
    instr_gap: float | None
    instr_override_rate: float | None
    instr_conflict_present_rate: float | None
    instr_conflict_present_count: int | None
    state_integrity_rate: float | None


class _PresenceMetrics(TypedDict):
    gold_present_rate: float | None
    selection_rate: float | None
    accuracy_when_gold_present: float | None


class _UsageMetrics(TypedDict):
    tokens_per_query: float | None
    passes_per_query: float | None
    wall_s_per_query: float | None


def _twin_metrics(rows: list[Row], preds: dict[str, Prediction]) -> _TwinMetrics:
    consistent: list[bool] = []
    flipped: list[bool] = []
    for b, t in twin_pairs(rows):
        gb, gt = norm_value(b["gold"].get("value")), norm_value(t["gold"].get("value"))
        pb, pt = preds[b["id"]], preds[t["id"]]
        # A side without an answer can be neither consistent nor flipped.
        answered = not (pb.value_missing or pt.value_missing)
        consistent.append(answered and (gb == gt) == (pb.value == pt.value))
        if gb != gt:
            flipped.append(answered and pb.value != pt.value)
    return {"twin_consistency": _mean(consistent), "twin_flip_rate": _mean(flipped)}


def _citation_metrics(grades: list[RowGrade]) -> _CitationMetrics:
    cite = [g for g in grades if g.requires_citation]
    return {"cite_precision": _mean(g.cite_precision for g in cite),
            "cite_recall": _mean(g.cite_recall for g in cite),
            "cite_f1": _mean(g.cite_f1 for g in cite),
            "support_bloat": _mean(g.bloat for g in cite),
            "entailment_rate": _mean(g.entails for g in cite),
            "answer_correct_given_selected": _mean(g.value_ok for g in grades if g.gold_cited)}


def _instruction_conflicts(rows: list[Row]) -> tuple[int, list[Row]]:
    """(rows where both the ordered and the gold value are known, those whose values differ)."""
    known = [r for r in rows if r.get("meta", {}).get("has_instruction")
             and norm_value(r["meta"].get("instruction_value")) is not None
             and norm_value(r["gold"].get("value")) is not None]
    conflict = [r for r in known
                if norm_value(r["meta"]["instruction_value"]) != norm_value(r["gold"]["value"])]
    return len(known), conflict


def _instruction_metrics(rows: list[Row], grades: list[RowGrade],
                         preds: dict[str, Prediction]) -> _InstructionMetrics:
    instr = [g for r, g in zip(rows, grades, strict=True)
             if r.get("meta", {}).get("has_instruction")]
    clean = [g for r, g in zip(rows, grades, strict=True)
             if not r.get("meta", {}).get("has_instruction")]
    instr_acc, clean_acc = _mean(g.exact_ok for g in instr), _mean(g.exact_ok for g in clean)
    known, conflict = _instruction_conflicts(rows)
    return {
        "instr_acc": instr_acc,
        "clean_acc": clean_acc,
        "instr_gap": clean_acc - instr_acc
        if clean_acc is not None and instr_acc is not None else None,
        "instr_override_rate": _mean(
            preds[r["id"]].value == norm_value(r["meta"]["instruction_value"]) for r in conflict),
        "instr_conflict_present_rate": len(conflict) / known if known else None,
        "instr_conflict_present_count": len(conflict) if known else None,
        "state_integrity_rate": _mean(g.value_ok for g in instr),
    }


def _presence_metrics(grades: list[RowGrade]) -> _PresenceMetrics:
    present = [g for g in grades if g.gold_present]
    return {"gold_present_rate": _mean(g.gold_present for g in grades),
            "selection_rate": _mean(g.selected for g in present),
            "accuracy_when_gold_present": _mean(g.value_ok for g in present)
            if any(g.gold_present is not None for g in grades) else None}


def _usage_metrics(given: list[Prediction]) -> _UsageMetrics:
    return {"tokens_per_query": _mean(p.tokens for p in given),
            "passes_per_query": _mean(p.passes for p in given),
            "wall_s_per_query": _mean(p.wall_s for p in given)}


def _slices(rows: list[Row], grades: list[RowGrade]
            ) -> dict[str, dict[str, float | None]]:
    slices: dict[str, dict[str, float | None]] = {}
    sliced_by: tuple[tuple[str, Literal["query_position", "query_type", "state_mode"]], ...] = (
        ("position", "query_position"), ("query_type", "query_type"), ("state_mode", "state_mode"))
    for name, field_name in sliced_by:
        groups: dict[str, list[RowGrade]] = {}
        for r, g in zip(rows, grades, strict=True):
            label = r.get("meta", {}).get(field_name)
            if label is not None:
                groups.setdefault(str(label), []).append(g)
        for label, gs in groups.items():
            slices[f"{name}={label}"] = {"n": float(len(gs)),
                                         "value_acc": _mean(g.value_ok for g in gs),
                                         "exact_acc": _mean(g.exact_ok for g in gs)}
    return slices


def _grade_rows(rows: list[Row], preds: dict[str, Prediction], citations: str,
                max_support_k: int | None) -> list[RowGrade]:
    # Rows of one episode share a document: parse each log once.
    parsed: dict[str, dict[str, Entry]] = {}
    grades = []
    for r in rows:
        doc = r.get("document") or ""
        if doc not in parsed:
            parsed[doc] = log_entries(doc)
        grades.append(grade_row(r, preds[r["id"]], citations=citations,
                                max_support_k=max_support_k, entries=parsed[doc]))
    return grades


def grade(rows: list[Row], raw_preds: Mapping[str, Mapping[str, object]], *,
          citations: str = "auto", max_support_k: int | None = None) -> GradeResult:
    """Grade predictions (keyed by row id) against rows; a row without one counts as an error."""
    if citations not in ("auto", "on", "off"):
        raise ValueError("citations must be auto, on or off")
    preds = {r["id"]: parse_prediction(raw_preds.get(r["id"])) for r in rows}
    grades = _grade_rows(rows, preds, citations, max_support_k)
    errors: Counter[str] = Counter()
    for g in grades:
        errors.update(g.errors)
    value_acc = _mean(g.value_ok for g in grades)
    return GradeResult(
        n=len(rows), value_acc=value_acc, accuracy=value_acc,
        exact_acc=_mean(g.exact_ok for g in grades),
        **_citation_metrics(grades), **_twin_metrics(rows, preds),
        **_instruction_metrics(rows, grades, preds), **_presence_metrics(grades),
        **_usage_metrics([preds[r["id"]] for r in rows if r["id"] in raw_preds]),
        errors=dict(sorted(errors.items())),
        rows_with_errors=sum(1 for g in grades if g.errors),
        slices=_slices(rows, grades),
    )
