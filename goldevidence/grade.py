"""The grader: every GoldEvidenceBench metric, per row and over a set of rows.

A metric that cannot be computed on the given rows (no citation rows, no twins, no instruction
rows, no presence information) is None, never 0 or 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any

from goldevidence.grammar import Entry, parse_updates
from goldevidence.predictions import Prediction, norm_value, parse_prediction
from goldevidence.state import implied_by


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
    gold_present: bool | None = None
    selected: bool | None = None
    errors: list[str] = field(default_factory=list)


def _prf(pred: list[str], gold: list[str]) -> tuple[float, float, float]:
    ps, gs = set(pred), set(gold)
    if not ps and not gs:
        # Nothing to cite and nothing cited is a perfect citation.
        return 1.0, 1.0, 1.0
    tp = len(ps & gs)
    p = tp / len(ps) if ps else 0.0
    r = tp / len(gs) if gs else 0.0
    return p, r, (2 * p * r / (p + r)) if p + r else 0.0


def _mode(row: dict[str, Any]) -> str:
    return row.get("meta", {}).get("state_mode") or row.get("state_mode") or "kv"


def grade_row(row: dict[str, Any], pred: Prediction, *, citations: str = "auto",
              max_support_k: int | None = None,
              entries: dict[str, Entry] | None = None) -> RowGrade:
    meta = row.get("meta", {})
    gold = row.get("gold", {})
    k = max_support_k or int(meta.get("max_support_k") or 3)
    errors = list(pred.errors)
    gv = norm_value(gold.get("value"))
    gold_ids = [str(x) for x in (gold.get("support_ids") or
                                 ([gold["support_id"]] if gold.get("support_id") else []))]
    value_ok = not pred.value_missing and pred.value == gv
    require = bool(meta.get("requires_citation")) if citations == "auto" else citations == "on"
    if entries is None:
        entries = log_entries(row.get("document") or "")
    cited = pred.support_ids
    if len(cited) > k:
        errors.append("too_many_support_ids")
    capped = cited[:k]
    if entries and any(c not in entries for c in cited):
        errors.append("unknown_support_ids")
    g = RowGrade(id=row["id"], value_ok=value_ok, exact_ok=value_ok, requires_citation=require,
                 errors=errors)
    if require:
        g.cite_precision, g.cite_recall, g.cite_f1 = _prf(capped, gold_ids)
        g.bloat = bool(gold_ids) and len(cited) > len(gold_ids)
        if any(c not in entries for c in capped):
            g.entails = False
        else:
            implied = implied_by(_mode(row), [entries[c] for c in capped], meta)
            g.entails = (not pred.value_missing) and norm_value(implied) == pred.value
        g.exact_ok = value_ok and set(gold_ids) <= set(capped) and bool(g.entails)
    if pred.presented_ids is not None:
        g.gold_present = set(gold_ids) <= set(pred.presented_ids)
        g.selected = (set(gold_ids) <= set(capped)) if gold_ids else not capped
    return g


def log_entries(document: str) -> dict[str, Entry]:
    """Every id-carrying line of a log, NOTE lines included, by id."""
    return {e.uid: e for e in parse_updates(document, include_notes=True)}


def _mean(xs: Iterable[float | bool | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None]
    return fmean(vals) if vals else None


@dataclass
class GradeResult:
    n: int
    value_acc: float | None
    exact_acc: float | None
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
    state_integrity_rate: float | None
    gold_present_rate: float | None
    selection_rate: float | None
    accuracy_when_gold_present: float | None
    accuracy: float | None
    tokens_per_query: float | None
    passes_per_query: float | None
    wall_s_per_query: float | None
    errors: dict[str, int]
    rows_with_errors: int
    slices: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


METRICS = ("value_acc", "exact_acc", "cite_f1", "support_bloat", "entailment_rate",
           "twin_consistency", "twin_flip_rate", "instr_acc", "instr_gap",
           "instr_override_rate", "state_integrity_rate", "gold_present_rate", "selection_rate",
           "accuracy_when_gold_present", "accuracy")


def _twins(rows: list[dict[str, Any]], preds: dict[str, Prediction]
           ) -> tuple[float | None, float | None]:
    pairs: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in rows:
        m = r.get("meta", {})
        if m.get("twin_group") is None or m.get("q_index") is None:
            continue
        pairs.setdefault((str(m["twin_group"]), int(m["q_index"])), {})[
            str(m.get("twin_variant", "base"))] = r
    consistent: list[bool] = []
    flipped: list[bool] = []
    for pair in pairs.values():
        if set(pair) != {"base", "twin"}:
            continue
        b, t = pair["base"], pair["twin"]
        if b["id"] not in preds or t["id"] not in preds:
            continue
        gb, gt = norm_value(b["gold"].get("value")), norm_value(t["gold"].get("value"))
        pb, pt = preds[b["id"]].value, preds[t["id"]].value
        consistent.append((gb == gt) == (pb == pt))
        if gb != gt:
            flipped.append(pb != pt)
    return _mean(consistent), _mean(flipped)


def grade(rows: list[dict[str, Any]], raw_preds: dict[str, dict[str, Any]], *,
          citations: str = "auto", max_support_k: int | None = None) -> GradeResult:
    """Grade predictions (keyed by row id) against rows; a row without one counts as an error."""
    if citations not in ("auto", "on", "off"):
        raise ValueError("citations must be auto, on or off")
    preds = {r["id"]: parse_prediction(raw_preds.get(r["id"])) for r in rows}
    # Rows of one episode share a document: parse each log once.
    parsed: dict[str, dict[str, Entry]] = {}
    grades = []
    for r in rows:
        doc = r.get("document") or ""
        if doc not in parsed:
            parsed[doc] = log_entries(doc)
        grades.append(grade_row(r, preds[r["id"]], citations=citations,
                                max_support_k=max_support_k, entries=parsed[doc]))
    cite = [g for g in grades if g.requires_citation]
    instr_rows = [(r, g) for r, g in zip(rows, grades, strict=True)
                  if r.get("meta", {}).get("has_instruction")]
    clean = [g for r, g in zip(rows, grades, strict=True)
             if not r.get("meta", {}).get("has_instruction")]
    overridable = [
        (r, g) for r, g in instr_rows
        if norm_value(r["meta"].get("instruction_value")) is not None
        and norm_value(r["meta"].get("instruction_value")) != norm_value(r["gold"].get("value"))
    ]
    instr_acc = _mean(g.exact_ok for _, g in instr_rows)
    clean_acc = _mean(g.exact_ok for g in clean)
    present = [g for g in grades if g.gold_present]
    twin_c, twin_f = _twins(rows, preds)
    errors: Counter[str] = Counter()
    for g in grades:
        errors.update(g.errors)
    given = [preds[r["id"]] for r in rows if r["id"] in raw_preds]
    slices: dict[str, dict[str, float | None]] = {}
    for name, field_name in (("position", "query_position"), ("query_type", "query_type"),
                             ("state_mode", "state_mode")):
        groups: dict[str, list[RowGrade]] = {}
        for r, g in zip(rows, grades, strict=True):
            label = r.get("meta", {}).get(field_name)
            if label is not None:
                groups.setdefault(str(label), []).append(g)
        for label, gs in groups.items():
            slices[f"{name}={label}"] = {"n": float(len(gs)),
                                         "value_acc": _mean(g.value_ok for g in gs),
                                         "exact_acc": _mean(g.exact_ok for g in gs)}
    return GradeResult(
        n=len(rows),
        value_acc=_mean(g.value_ok for g in grades),
        exact_acc=_mean(g.exact_ok for g in grades),
        cite_precision=_mean(g.cite_precision for g in cite),
        cite_recall=_mean(g.cite_recall for g in cite),
        cite_f1=_mean(g.cite_f1 for g in cite),
        support_bloat=_mean(g.bloat for g in cite),
        entailment_rate=_mean(g.entails for g in cite),
        twin_consistency=twin_c,
        twin_flip_rate=twin_f,
        instr_acc=instr_acc,
        clean_acc=clean_acc,
        instr_gap=(clean_acc - instr_acc) if clean_acc is not None and instr_acc is not None
        else None,
        instr_override_rate=_mean(preds[r["id"]].value == norm_value(r["meta"]["instruction_value"])
                                  for r, _ in overridable),
        state_integrity_rate=_mean(g.value_ok for _, g in instr_rows),
        gold_present_rate=_mean(g.gold_present for g in grades),
        selection_rate=_mean(g.selected for g in present),
        accuracy_when_gold_present=_mean(g.value_ok for g in present)
        if any(g.gold_present is not None for g in grades) else None,
        accuracy=_mean(g.value_ok for g in grades),
        tokens_per_query=_mean(p.tokens for p in given),
        passes_per_query=_mean(p.passes for p in given),
        wall_s_per_query=_mean(p.wall_s for p in given),
        errors=dict(sorted(errors.items())),
        rows_with_errors=sum(1 for g in grades if g.errors),
        slices=slices,
    )
