"""The rooms of lens/report/: docs/architecture.md's table of them is the tree, and the rooms
the pipeline stands on import nothing above them."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.test_architecture import import_graph

REPORT = ROOT / "lens" / "report"
ROW = re.compile(r"^\| `(?P<room>[\w/]+)/` \|.*\| (?P<modules>[^|]*) \|$")


def _documented() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("<!-- report rooms -->", 1)[1].split("<!-- /report rooms -->", 1)[0]
    rooms = {}
    for line in section.splitlines():
        if m := ROW.match(line):
            rooms[m.group("room")] = set(re.findall(r"`(\w+)`", m.group("modules")))
    return rooms


def _tree() -> dict[str, set[str]]:
    tree: dict[str, set[str]] = {"lens/report": set()}
    for path in [*REPORT.glob("*.py"), *REPORT.glob("*/*.py")]:
        room = "lens/report" if path.parent == REPORT else path.parent.name
        tree.setdefault(room, set())
        if path.stem != "__init__":
            tree[room].add(path.stem)
    return tree


def test_the_docs_table_of_rooms_is_the_tree() -> None:
    assert _documented() == _tree()


def test_the_foundations_import_no_other_room() -> None:
    outside = {f"{module} -> {target}"
               for module, targets in import_graph().items()
               if module.startswith("lens.report.foundations.")
               for target in targets
               if target.startswith("lens.report")
               and not target.startswith("lens.report.foundations")}
    assert outside == set()


def test_no_room_imports_the_pipeline() -> None:
    top = {f"lens.report.{p.stem}" for p in REPORT.glob("*.py")} - {"lens.report.__init__"}
    upward = {f"{module} -> {target}"
              for module, targets in import_graph().items()
              if module.count(".") == 3 and module.startswith("lens.report.")
              for target in targets & (top | {"lens.report"})}
    assert upward == set()
