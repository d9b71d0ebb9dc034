"""Protocol names and fact-grader names live in one registry (lens/data/scoring_names.py): the
config's fields, the command line's choices, the protocol table and the fact grader read them
from there, and no other module spells two of them out in a list of its own."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from lens.commands.cli import build_parser
from lens.commands.facts import GRADERS as FACTS_COMMAND_GRADERS
from lens.data.config import ScoringConfig
from lens.data.importers import IMPORTERS, STREAMING_IMPORTERS
from lens.data.scoring_names import FACT_GRADERS, JUDGE_GRADERS, PROTOCOL_NAMES
from lens.scoring.grading.fact_grader import GRADERS
from lens.scoring.protocols import PROTOCOLS, ScoringProtocol, scoring_protocol
from lens.scoring.protocols.lens import NAME as LENS
from tests.conftest import ROOT

REGISTRY = ROOT / "lens" / "data" / "scoring_names.py"


def _choices(command: str, flag: str) -> tuple[str, ...]:
    parser = build_parser()
    sub = next(a for a in parser._subparsers._group_actions  # type: ignore[union-attr]
               if a.choices).choices[command]
    action = next(a for a in sub._actions if flag in a.option_strings)
    return tuple(action.choices)


def _literal_args(field: str) -> tuple[str, ...]:
    annotation = ScoringConfig.model_fields[field].annotation
    args = typing.get_args(annotation)
    literal = next((a for a in args if typing.get_origin(a) is typing.Literal), annotation)
    return typing.get_args(literal)


def test_every_protocol_name_has_one_protocol() -> None:
    assert PROTOCOL_NAMES[0] == LENS
    assert set(PROTOCOL_NAMES) == {LENS, *PROTOCOLS} and len(PROTOCOL_NAMES) == len(PROTOCOLS) + 1
    for name in PROTOCOL_NAMES:
        protocol = scoring_protocol(name)
        assert isinstance(protocol, ScoringProtocol) and protocol.name == name
    assert _literal_args("protocol") == PROTOCOL_NAMES
    assert _choices("score", "--protocol") == PROTOCOL_NAMES
    # Each benchmark's data imports under its protocol's name.
    assert {*IMPORTERS, *STREAMING_IMPORTERS} == set(PROTOCOL_NAMES)


def test_every_fact_grader_name_comes_from_the_registry() -> None:
    assert GRADERS == FACT_GRADERS
    assert _literal_args("fact_grader") == FACT_GRADERS
    assert _choices("score", "--fact-grader") == FACT_GRADERS
    assert set(FACTS_COMMAND_GRADERS) <= set(FACT_GRADERS)
    assert set(FACT_GRADERS) >= JUDGE_GRADERS


def _spelled_lists(path: Path, names: set[str]) -> list[str]:
    """Lists, tuples, sets and Literal[...] in ``path`` that spell out two or more of
    ``names``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        elts: list[ast.expr] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elts = list(node.elts)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
            elts = list(node.slice.elts)
        spelled = {e.value for e in elts if isinstance(e, ast.Constant)} & names
        if len(spelled) >= 2:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(spelled)}")
    return found


def test_no_module_keeps_its_own_list_of_names() -> None:
    protocols = set(PROTOCOL_NAMES) - {LENS}
    graders = set(FACT_GRADERS)
    problems = []
    for package in ("lens", "goldevidence"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != REGISTRY:
                problems += _spelled_lists(path, protocols) + _spelled_lists(path, graders)
    assert not problems, "names spelled out beside the registry:\n" + "\n".join(problems)
