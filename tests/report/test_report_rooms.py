"""The rooms of lens/report/: docs/architecture.md's table of them is the tree, and the rooms
the pipeline stands on import nothing above them."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.support.rooms import docs_section, documented_rooms, rooms_tree
from tests.test_architecture import import_graph

REPORT = ROOT / "lens" / "report"


def test_the_docs_table_of_rooms_is_the_tree() -> None:
    assert documented_rooms(docs_section("report rooms")) == rooms_tree(REPORT)


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
