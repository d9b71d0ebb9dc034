"""A package's rooms as docs/architecture.md's tables give them and as the tree holds them: the
shared reading of the rooms tests of lens/scoring/ and lens/report/."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

# A table row: the room (`lens/scoring/`, `text/`), what it holds, then its modules in backticks.
ROW = re.compile(r"^\| `(?P<room>[\w/]+)/` \|.*\| (?P<modules>[^|]*) \|$")


def docs_section(mark: str) -> str:
    """The part of docs/architecture.md between ``<!-- mark -->`` and ``<!-- /mark -->``."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split(f"<!-- {mark} -->", 1)[1].split(f"<!-- /{mark} -->", 1)[0]


def documented_rooms(section: str) -> dict[str, set[str]]:
    """Each room of a section's table with the modules it names."""
    rooms = {}
    for line in section.splitlines():
        if m := ROW.match(line):
            rooms[m.group("room")] = set(re.findall(r"`(\w+)`", m.group("modules")))
    return rooms


def rooms_tree(package: Path) -> dict[str, set[str]]:
    """Each room of ``package`` (the package itself, as ``lens/scoring``, and each sub-package
    by its name) with its modules, ``__init__`` left out."""
    top = package.relative_to(ROOT).as_posix()
    tree: dict[str, set[str]] = {top: set()}
    for path in [*package.glob("*.py"), *package.glob("*/*.py")]:
        room = top if path.parent == package else path.parent.name
        tree.setdefault(room, set())
        if path.stem != "__init__":
            tree[room].add(path.stem)
    return tree
