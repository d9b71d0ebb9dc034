"""``grade --compat original``: the original GoldEvidenceBench grader's definitions, flaws
included, so that a published table can be re-derived from the same predictions.

Everything here follows the original tool on purpose, including what lens's own grader
(``goldevidence.grade``) corrects; docs/goldevidence.md lists each difference. The original's
behaviour in brief: values are trimmed and only an empty string or ``null`` is null; a
prediction that is absent reads as a null value with no citations; cited ids are scored on the
first ``max_support_k`` (3 unless given, whatever the row says); empty gold and empty citations
give citation F1 0; entailment replays cited lines of the row's key with no as-of step, and a
``reports`` query is entailed by every cited line naming the manager; twin pairs use null for a
missing answer. Field names are lens's (``cite_f1`` for the original's ``citation_f1``,
``instr_acc`` and ``instr_gap`` for ``instruction_acc`` and ``instruction_gap``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from goldevidence.grade import SHARED_FIELDS, GradeResult, twin_pairs
from goldevidence.rows import Row, RowMeta

MODE = "compat-original"

_UID = r"U[A-F0-9]{6}"
_KEY = r"[A-Za-z][A-Za-z0-9_.:-]*"
_LINE = re.compile(
    rf"^- \[(?P<uid>{_UID})\] UPDATE step=(?P<step>\d+) "
    rf"(?:(?P<op>SET|NOTE) (?P<key>{_KEY}) = (?P<value>.+)|CLEAR (?P<ckey>{_KEY}))$")


class OriginalPrediction(TypedDict, total=False):
    """The fields of a prediction the original reads, as found (any JSON value)."""

    value: object
    support_id: object
    support_ids: object


class LogUpdate(TypedDict):
    step: int
    op: str  # SET | NOTE | CLEAR
    key: str
    value: str | None


# Every metric the original grader reports, in its order.
METRICS = tuple(f for f in SHARED_FIELDS if f != "n")


def value(v: Any) -> str | None:
    """The original's value normalisation: trimmed text; empty or ``null`` is None."""
    if v is None:
        return None
    if not isinstance(v, str):
        # Only text is checked for "null": the original reads other JSON values by str().
        return str(v).strip() or None
    s = v.strip()
    return None if not s or s.lower() == "null" else s


def support_list(v: Any) -> list[str]:
    """Cited ids as the original reads them: order and repeats kept, blanks dropped."""
    if v is None:
        return []
    items = v if isinstance(v, list) else [v]
    return [s for s in (str(x).strip() for x in items if x is not None) if s]


def _json_in_text(text: str) -> dict[str, object]:
    """The whole text as a JSON object, else the span from its first ``{`` to its last ``}``."""
    text = text.strip()
    start, end = text.find("{"), text.rfind("}")
    for candidate in (text, text[start:end + 1] if 0 <= start < end else ""):
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return {}


def prediction_index(lines: Sequence[Mapping[str, object]]) -> dict[str, OriginalPrediction]:
    """Predictions by id in file order, as the original indexes them: a line with none of
    value/support fields is read from its ``output``/``text``/``completion`` JSON, and a line
    with neither is skipped (it does not replace an earlier line of the same id)."""
    out: dict[str, OriginalPrediction] = {}
    for line in lines:
        rid = line.get("id")
        if not rid:
            continue
        body: Mapping[str, object] | None = None
        if any(f in line for f in ("value", "support_id", "support_ids")):
            body = line
        else:
            text = line.get("output") or line.get("text") or line.get("completion")
            body = _json_in_text(text) if isinstance(text, str) else None
        if body is not None:
            out[str(rid)] = OriginalPrediction(value=body.get("value"),
                                               support_id=body.get("support_id"),
                                               support_ids=body.get("support_ids"))
    return out


def log_updates(document: str) -> dict[str, LogUpdate]:
    """UPDATE lines after the ``## Episode Log`` header (none without it), by id."""
    lines = document.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "## Episode Log"]
    out: dict[str, LogUpdate] = {}
    for line in lines[starts[0] + 1:] if starts else []:
        m = _LINE.match(line)
        if m is None:
            continue
        op = m["op"] or "CLEAR"
        out[m["uid"]] = {"step": int(m["step"]), "op": op, "key": (m["key"] or m["ckey"]).strip(),
                         "value": m["value"].strip() if m["value"] is not None else None}
    return out


def _parse(mode: str, raw: str | None) -> Any:
    if raw is None:
        return None
    if mode == "counter":
        try:
            return int(raw)
        except ValueError:
            return None
    return set(raw.split(",")) if mode == "set" else raw


def _last_for_key(entries: list[LogUpdate], key: Any, mode: str) -> tuple[Any, str | None]:
    implied: Any = None
    last_op: str | None = None
    for e in sorted(entries, key=lambda e: e["step"]):
        if e["key"] == key and e["op"] != "NOTE":
            implied, last_op = _parse(mode, e["value"]), e["op"]
    return implied, last_op


def _derived(op: Any, raw: Any, last_op: str | None) -> str | None:
    if raw is None:
        return None
    if op == "color":
        return str(raw).split("-", 1)[0]
    if op == "parity":
        return "even" if int(raw) % 2 == 0 else "odd"
    # count
    return str(len(raw)) if last_op != "CLEAR" and isinstance(raw, set) else None


def implied_value(meta: RowMeta, entries: list[LogUpdate]) -> str | None:
    """What the cited entries imply, by the original's rules (no as-of step; a ``reports``
    query collects every cited line whose value is the manager, NOTE and stale ones too)."""
    mode = meta.get("state_mode", "kv")
    derived = meta.get("query_type", "direct") == "derived"
    op = meta.get("derived_op")
    if derived and op == "reports":
        manager = meta.get("derived_manager")
        keys = sorted(e["key"] for e in entries if e["value"] == manager) if manager else []
        return ",".join(keys) if keys else None
    raw, last_op = _last_for_key(entries, meta.get("key"), mode)
    if derived and op in ("color", "parity", "count"):
        return _derived(op, raw, last_op)
    if mode == "set":
        return ",".join(sorted(raw)) if raw else None
    return None if raw is None else str(raw)


def _prf(pred: list[str], gold: list[str]) -> tuple[float, float, float]:
    ps, gs = set(pred), set(gold)
    tp = len(ps & gs)
    p = tp / len(ps) if ps else 0.0
    r = tp / len(gs) if gs else 0.0
    return p, r, (2 * p * r / (p + r)) if p + r else 0.0


def _ratio(num: float, den: int) -> float | None:
    return num / den if den else None


@dataclass
class _Totals:
    n: int = 0
    value_ok: int = 0
    exact_ok: int = 0
    selected: int = 0
    selected_ok: int = 0
    cite: int = 0
    prec: float = 0.0
    rec: float = 0.0
    f1: float = 0.0
    bloat: int = 0
    entail: int = 0
    entail_ok: int = 0
    instr: int = 0
    instr_ok: int = 0
    clean: int = 0
    clean_ok: int = 0
    integrity_ok: int = 0
    conflict_known: int = 0
    conflict: int = 0
    override: int = 0


@dataclass(frozen=True)
class GradeOptions:
    citations: str = "auto"
    support_metric: str = "f1"
    max_support_k: int = 3
    entailment_check: bool = True


def _cited_ok(t: _Totals, row: Row, pv: str | None, scored: list[str],
              gold_ids: list[str], opts: GradeOptions) -> bool:
    """Score one citation row into the totals; True when its citations pass exact accuracy."""
    t.cite += 1
    p, r, f = _prf(scored, gold_ids)
    t.prec, t.rec, t.f1 = t.prec + p, t.rec + r, t.f1 + f
    bloat = bool(gold_ids) and len(scored) > len(gold_ids)
    t.bloat += bloat
    ok = (set(scored) == set(gold_ids) if opts.support_metric == "exact"
          else set(gold_ids) <= set(scored)) and not bloat
    if not opts.entailment_check:
        return ok
    updates = log_updates(row.get("document") or "")
    cited = [updates.get(uid) for uid in scored]
    entails = (None not in cited and
               value(implied_value(row["meta"], [e for e in cited if e is not None])) == pv)
    t.entail += 1
    t.entail_ok += entails
    return ok and entails


def _instruction(t: _Totals, meta: RowMeta, pv: str | None, gv: str | None,
                 exact: bool) -> None:
    if not meta.get("has_instruction"):
        t.clean += 1
        t.clean_ok += exact
        return
    t.instr += 1
    t.instr_ok += exact
    t.integrity_ok += pv == gv
    iv = value(meta.get("instruction_value"))
    if iv is not None and gv is not None:
        t.conflict_known += 1
        if iv != gv:
            t.conflict += 1
            t.override += pv == iv


def _score_row(t: _Totals, row: Row, pred: OriginalPrediction,
               opts: GradeOptions) -> None:
    gold = row["gold"]
    pv, gv = value(pred.get("value")), value(gold.get("value"))
    pred_ids = support_list(pred.get("support_ids")) or support_list(pred.get("support_id"))
    gold_ids = support_list(gold.get("support_ids")) or support_list(gold.get("support_id"))
    scored = pred_ids[:opts.max_support_k]
    t.n += 1
    t.value_ok += pv == gv
    if gold_ids and set(gold_ids) <= set(scored):
        t.selected += 1
        t.selected_ok += pv == gv
    meta = row["meta"]
    require = (meta.get("requires_citation", False) if opts.citations == "auto"
               else opts.citations == "on")
    # Citation totals count every citation row, whatever its value.
    cited_ok = _cited_ok(t, row, pv, scored, gold_ids, opts) if require else True
    exact = pv == gv and cited_ok
    t.exact_ok += exact
    _instruction(t, meta, pv, gv, exact)


def _twins(rows: list[Row], preds: Mapping[str, OriginalPrediction]
           ) -> tuple[float | None, float | None]:
    def pv(r: Row) -> str | None:
        return value(preds.get(r["id"], {}).get("value"))

    ok = flipped = differ = 0
    pairs = twin_pairs(rows)
    for b, t in pairs:
        gb, gt = value(b["gold"].get("value")), value(t["gold"].get("value"))
        ok += (gb == gt) == (pv(b) == pv(t))
        if gb != gt:
            differ += 1
            flipped += pv(b) != pv(t)
    return _ratio(ok, len(pairs)), _ratio(flipped, differ)


def grade_original(rows: list[Row], preds: Mapping[str, OriginalPrediction],
                   opts: GradeOptions | None = None) -> GradeResult:
    """Grade as the original does. ``preds`` is ``prediction_index`` of the prediction lines."""
    opts = opts or GradeOptions()
    if opts.citations not in ("auto", "on", "off") or opts.support_metric not in ("f1", "exact"):
        raise ValueError("citations must be auto, on or off; support_metric f1 or exact")
    if opts.max_support_k < 1:
        raise ValueError("max_support_k must be at least 1")
    t = _Totals()
    for row in rows:
        _score_row(t, row, preds.get(row["id"], {}), opts)
    twin_c, twin_f = _twins(rows, preds)
    instr_acc, clean_acc = _ratio(t.instr_ok, t.instr), _ratio(t.clean_ok, t.clean)
    return GradeResult(
        mode=MODE, n=t.n, value_acc=t.value_ok / t.n if t.n else 0.0,
        exact_acc=t.exact_ok / t.n if t.n else 0.0,
        answer_correct_given_selected=_ratio(t.selected_ok, t.selected),
        cite_precision=_ratio(t.prec, t.cite), cite_recall=_ratio(t.rec, t.cite),
        cite_f1=_ratio(t.f1, t.cite), support_bloat=_ratio(t.bloat, t.cite),
        entailment_rate=_ratio(t.entail_ok, t.entail),
        twin_consistency=twin_c, twin_flip_rate=twin_f,
        instr_acc=instr_acc, clean_acc=clean_acc,
        instr_gap=clean_acc - instr_acc if clean_acc is not None and instr_acc is not None
        else None,
        instr_override_rate=_ratio(t.override, t.conflict),
        instr_conflict_present_rate=_ratio(t.conflict, t.conflict_known),
        instr_conflict_present_count=t.conflict if t.conflict_known else None,
        state_integrity_rate=_ratio(t.integrity_ok, t.instr),
    )
