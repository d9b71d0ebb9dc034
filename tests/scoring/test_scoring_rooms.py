"""The rooms of lens/scoring/: docs/architecture.md's table of them is the tree, its drawing of
their order is how the imports run (downward only, so no cycle between rooms), the foundations
import no room but text, and the text room reads answers without reaching into the rest of
scoring (no judge, no model)."""

from __future__ import annotations

from collections.abc import Mapping

from tests.conftest import ROOT
from tests.support.rooms import docs_section, documented_rooms, rooms_tree
from tests.test_architecture import cycles, import_graph

SCORING = ROOT / "lens" / "scoring"
ORDER_MARK = "<!-- docs:test tests/scoring/test_scoring_rooms.py -->"


def _section() -> str:
    return docs_section("scoring rooms")


def _documented() -> dict[str, set[str]]:
    return documented_rooms(_section())


def _drawn() -> list[list[str]]:
    """The drawing of the rooms' order, top line first: each line's rooms and modules."""
    block = _section().split(ORDER_MARK, 1)[1].split("```", 2)[1]
    return [[u.strip() for u in line.split(",")] for line in block.splitlines() if line.strip()]


def _unit(module: str) -> str | None:
    """Where a module of lens/scoring/ sits in the drawing: its room (``judging/``), or the
    module itself when it lies directly in lens/scoring/ (``plan``); None for the package's own
    ``__init__`` and for modules outside scoring."""
    parts = module.split(".")
    if parts[:2] != ["lens", "scoring"] or len(parts) == 2:
        return None
    return f"{parts[2]}/" if (SCORING / parts[2]).is_dir() else parts[2]


def _room_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if (source := _unit(module)) is None:
            continue
        rooms.setdefault(source, set())
        for target in targets:
            if (room := _unit(target)) is not None and room != source:
                rooms[source].add(room)
    return rooms


def _not_downward(rooms: Mapping[str, set[str]], drawn: list[list[str]]) -> list[str]:
    """Every import between rooms that does not go to a lower line of the drawing."""
    height = {unit: len(drawn) - i for i, line in enumerate(drawn) for unit in line}
    return sorted(f"{a} -> {b}" for a, targets in rooms.items() for b in targets
                  if height[a] <= height[b])


def test_the_docs_table_of_rooms_is_the_tree() -> None:
    assert _documented() == rooms_tree(SCORING)


def test_the_drawing_places_every_room_and_pipeline_module_once() -> None:
    placed = [unit for line in _drawn() for unit in line]
    tree = rooms_tree(SCORING)
    expected = {f"{room}/" for room in tree if room != "lens/scoring"} | tree["lens/scoring"]
    assert len(placed) == len(set(placed))
    assert set(placed) == expected


def test_the_scoring_rooms_import_downward_only() -> None:
    rooms = _room_graph(import_graph())
    assert _not_downward(rooms, _drawn()) == []
    assert cycles(rooms) == []


def test_an_upward_or_sideways_import_is_found() -> None:
    drawn = [["scorer"], ["protocols/", "plan"], ["foundations/"]]
    graph = {"lens.scoring.foundations.types": {"lens.scoring.plan"},
             "lens.scoring.protocols.lens": {"lens.scoring.plan",
                                             "lens.scoring.foundations.types"},
             "lens.scoring.scorer": {"lens.scoring.protocols", "lens.scoring"}}
    assert _not_downward(_room_graph(graph), drawn) == [
        "foundations/ -> plan", "protocols/ -> plan"]


def test_the_foundations_import_no_room_but_text() -> None:
    rooms = _room_graph(import_graph())
    assert rooms["foundations/"] <= {"text/"}


def test_the_text_room_imports_nothing_else_of_scoring() -> None:
    outside = {f"{module} -> {target}"
               for module, targets in import_graph().items()
               if module.startswith("lens.scoring.text.")
               for target in targets
               if target.startswith("lens.scoring")
               and not target.startswith("lens.scoring.text")}
    assert outside == set()
