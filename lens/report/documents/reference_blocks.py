"""The report's context-parity table and its floor / ceiling table."""

from __future__ import annotations

from collections.abc import Sequence

import lens.report.documents.fmt as fmt
from lens.report.documents.document import Block, Heading, Para, Table
from lens.report.foundations.shapes import FloorCeiling, ReportSummary


def _chars(x: float | None) -> str:
    return "unknown" if x is None else f"{x:,.0f}"


def _share(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.0%}"


def context_parity(s: ReportSummary) -> list[Block]:
    rows = [[a, str(c.questions), _chars(c.chars_median), _chars(c.chars_mean),
             _chars(c.tokens_median), _chars(c.tokens_mean), _chars(c.search_chars_mean),
             _chars(c.retrieve_chars_mean), _chars(c.standing_chars_mean),
             _share(c.scope_share_median), _share(c.scope_share_max)]
            for a, ad in s.adapters.items() if (c := ad.context) is not None]
    if not rows:
        return []
    return [Heading("Context parity"), Para(
        "What the memory handed the agent per question: characters of search results, "
        "retrieved documents, extended tools' results and the standing context (lens's error "
        "and budget notices excluded); tokens are lens's rough count (four characters a token, "
        "the same for every arm). Scope share: the episodes a question's searches returned, as "
        "a share of those ingested by its checkpoint.", "meta"),
        Table(["adapter", "questions", "chars/q median", "chars/q mean", "tokens/q median",
               "tokens/q mean", "search chars/q", "retrieve chars/q", "standing chars/q",
               "scope share median", "scope share max"], rows, table_id="context-parity")]


def floor_ceiling(s: ReportSummary) -> list[Block]:
    return floor_ceiling_blocks(s.floor_ceiling)


def floor_ceiling_blocks(fc: FloorCeiling | None, label: Sequence[Block] = ()) -> list[Block]:
    """``label``: blocks set under the heading (lens compare's "not comparable" label)."""
    if fc is None or not fc.rows:
        return []
    arms = list(fc.rows[0].positions)
    missing = [f"{what} arm ({name})" for what, name, arm in (
        ("floor", "null", fc.floor_arm), ("ceiling", "oracle", fc.ceiling_arm)) if arm is None]
    text = (f"Floor: {fc.floor_arm or 'none'}; ceiling: {fc.ceiling_arm or 'none'}"
            + (f"; alternative: {fc.alternative_arm}" if fc.alternative_arm else "")
            + ". Each arm's position is (value − floor) / (ceiling − floor): 0 at the floor, "
            "1 at the ceiling; unknown when an end is missing or the ceiling is not above the "
            "floor." + (f" Missing: the {' and the '.join(missing)}." if missing else ""))
    return [Heading("Floor and ceiling"), *label, Para(text, "meta"),
            Table(["metric", "floor", "ceiling", *arms],
                  [[r.metric, fmt.num(r.floor), fmt.num(r.ceiling),
                    *(_share(r.positions.get(a)) for a in arms)] for r in fc.rows],
                  table_id="floor-ceiling")]
