"""The report's section of what the memory wrote (lens/scoring/measures/write_side.py), beside
how long each arm's memory took to be ready (lens/runner/memory_state.py)."""

from __future__ import annotations

from lens.report.checks.memory_state_check import arm_states, prepare_times, ready_text, times_text
from lens.report.foundations.data import RunData
from lens.report.sections.registry import Section, render_json_section
from lens.scoring.measures.write_side import ArmFigure, WriteSide, read_write_side

SECTION_ID = "write_side"
TITLE = "What the memory wrote"
COLUMNS = [("extraction recall", "extraction_recall", True),
           ("false memories", "false_memory_rate", True),
           ("updates held current", "update_current", True),
           ("items / episode", "items_per_episode", False),
           ("bytes / episode", "bytes_per_episode", False)]


def figure(f: ArmFigure | None, share: bool) -> str:
    """A figure with its interval; "unknown" when it cannot be computed."""
    if f is None or f.mean is None:
        return "unknown"
    if not share:
        return f"{f.mean:,.0f}" if abs(f.mean) >= 100 else f"{f.mean:.3g}"
    text = f"{f.mean:.1%}"
    if f.low is not None and f.high is not None:
        text += f" [{f.low:.1%}, {f.high:.1%}]"
    return text


def kinds_text(kinds: dict[str, int]) -> str:
    """How the superseded figures were held, e.g. "2 current, 1 both"; "none yet" without."""
    shown = [f"{n} {kind}" for kind, n in kinds.items() if n]
    return ", ".join(shown) or "none yet"


def unlisted_ready(prepared: dict[str, list[float]], arm: str) -> str:
    """An arm without a listing is ready when its prepare returns."""
    return f"no memory listing; {times_text(prepared.get(arm, []), 'prepared in')}"


def rows(ws: WriteSide, run: RunData) -> list[list[str]]:
    states = arm_states(run)
    out = []
    for arm, figs in ws.arms.items():
        out.append([arm, *(figure(figs.get(key), share) for _, key, share in COLUMNS),
                    kinds_text(ws.update_kinds.get(arm, {})),
                    ready_text(states.get(arm, []))])
    prepared = prepare_times(run)
    out.extend([arm, *("unknown" for _ in COLUMNS), "unknown", unlisted_ready(prepared, arm)]
               for arm in ws.unlisted)
    return out


def write_side_section(run: RunData) -> Section | None:
    ws = read_write_side(run.root)
    if ws is None:
        return None
    doc = {"title": TITLE, "tables": [{
        "title": "Per arm, the mean over checkpoints (95% interval clustered by scope)",
        "columns": ["adapter", *(c for c, _, _ in COLUMNS), "updates (checkpoint × figure)",
                    "ready after the last ingest"],
        "rows": rows(ws, run)}], "notes": [
        "extraction recall: the key facts of the questions asked so far that one stored item "
        "states (lens's fact matcher, or one line giving the figure beside its subject); "
        "false memories: the share of items stating a figure no episode ingested so far states, "
        "or another entity's figure under the target's name; "
        "size: the listing's items and bytes per episode ingested; updates held current: of "
        "the figures a later episode corrected, the share the memory holds as corrected "
        "(docs/scoring.md)",
        f"updates: {ws.updates}",
        "an arm without a memory listing has every figure unknown, never 0",
    ]}
    base = render_json_section(SECTION_ID, doc)
    return Section(id=SECTION_ID, title=TITLE, markdown=base.markdown, html=base.html,
                   data=ws.model_dump(mode="json", exclude={"checkpoints"}))


def console_lines(run: RunData) -> list[str]:
    """The terminal's lines of what each arm's memory wrote (none when no arm lists)."""
    ws = read_write_side(run.root)
    if ws is None:
        return []
    lines = [f"{TITLE} (per arm, mean over checkpoints):"]
    for row in rows(ws, run):
        arm, *figs, kinds, ready = row
        lines.append(f"  {arm}: " + ", ".join(f"{name} {value}" for (name, _, _), value
                                              in zip(COLUMNS, figs, strict=True))
                     + f"; updates {kinds}; {ready}")
    return lines


def compare_columns() -> list[str]:
    return ["arm", *(c for c, _, _ in COLUMNS), "updates (checkpoint × figure)",
            "ready after the last ingest"]


def arm_row(run: RunData, adapter: str, name: str) -> list[str]:
    """One arm's write-side figures as a row of ``lens compare`` (unknown without a listing)."""
    ws = read_write_side(run.root)
    if ws is not None:
        for row in rows(ws, run):
            if row[0] == adapter:
                return [name, *row[1:]]
    return [name, *("unknown" for _ in COLUMNS), "unknown",
            unlisted_ready(prepare_times(run), adapter)]
