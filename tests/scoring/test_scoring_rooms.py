"""The rooms of lens/scoring/: docs/architecture.md's table of them is the tree, and the text
room reads answers without reaching into the rest of scoring (no judge, no model)."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.test_architecture import import_graph

SCORING = ROOT / "lens" / "scoring"
ROW = re.compile(r"^\| `(?P<room>[\w/]+)/` \|.*\| (?P<modules>[^|]*) \|$")


def _documented() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("<!-- scoring rooms -->", 1)[1].split("<!-- /scoring rooms -->", 1)[0]
    rooms = {}
    for line in section.splitlines():
        if m := ROW.match(line):
            rooms[m.group("room")] = set(re.findall(r"`(\w+)`", m.group("modules")))
    return rooms


def _tree() -> dict[str, set[str]]:
    tree: dict[str, set[str]] = {"lens/scoring": set()}
    for path in [*SCORING.glob("*.py"), *SCORING.glob("*/*.py")]:
        room = "lens/scoring" if path.parent == SCORING else path.parent.name
        tree.setdefault(room, set())
        if path.stem != "__init__":
            tree[room].add(path.stem)
    return tree


def test_the_docs_table_of_rooms_is_the_tree() -> None:
    assert _documented() == _tree()


def test_the_text_room_imports_nothing_else_of_scoring() -> None:
    outside = {f"{module} -> {target}"
               for module, targets in import_graph().items()
               if module.startswith("lens.scoring.text.")
               for target in targets
               if target.startswith("lens.scoring")
               and not target.startswith("lens.scoring.text")}
    assert outside == set()
