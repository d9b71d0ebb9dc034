"""The shape of the code: no import cycles, and each lens layer imports only layers below it.

The graph is read from the source with ``ast``: imports at module level and inside functions
count, imports under ``if TYPE_CHECKING:`` do not (they never run). ``from package import name``
is an edge to the package's ``__init__`` (it reads the package's namespace) and, when ``name``
is a submodule, to that submodule too; importing ``a.b.c`` from outside ``a.b`` is also an
edge to ``a.b`` and ``a``, whose ``__init__`` runs first. docs/architecture.md explains the layers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from tests.conftest import ROOT

PACKAGES = ("lens", "goldevidence")

# Lower layers never import higher ones; a layer may import itself and anything below.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("lens", "lens.core", "lens.stats")),
    ("config and data", ("lens.data",)),
    ("models and records", ("lens.models", "lens.runs")),
    ("adapters and executor", ("lens.memory", "lens.testing")),
    # The adapters shipped with lens: lens reaches them only by the names in
    # lens.memory.adapter.BUILTIN_ADAPTERS, never by import.
    ("built-in adapters", ("lens.adapters",)),
    ("agent and orchestrator", ("lens.runner",)),
    ("scoring", ("lens.scoring",)),
    ("report", ("lens.report",)),
    ("claims", ("lens.claims",)),
    ("viewer", ("lens.view",)),
    ("run pipeline", ("lens.flow", "lens.plugin_api")),
    ("interface", ("lens.commands", "lens.__main__")),
]


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield from _import_nodes_of(other)
            continue
        yield from _import_nodes_of(child)


def _import_nodes_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _import_nodes(node)


def _targets(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    names: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
            continue
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        names.add(source)
        names.update(f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known)
    edges = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if not name:
            continue  # outside the three packages
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            target = ".".join(parts[:i])
            inside = module == target or module.startswith(target + ".")
            if target in known and (i == len(parts) or not inside) and target != module:
                edges.add(target)
    return edges


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: _targets(m, p, known) for m, p in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected groups of more than one module (or a module importing itself)."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a in names for b in graph[a]]
    cols = [index[b] for a in names for b in graph[a]]
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, set[str]] = {}
    for name, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), set()).add(name)
    return [g for g in groups.values() if len(g) > 1]


def _describe(group: set[str], graph: dict[str, set[str]]) -> str:
    edges = [f"{a} -> {b}" for a in sorted(group) for b in sorted(graph[a] & group)]
    return "; ".join(edges)


def test_the_graph_sees_each_kind_of_import() -> None:
    graph = import_graph()
    assert "lens.core.plugins" in graph["lens.memory.adapter"]  # from lens.core import plugins
    assert "lens.core.distribution" in graph["lens.runs.condition"]  # from … import version
    # import lens.report.documents.fmt as fmt
    assert "lens.report.documents.fmt" in graph["lens.report.documents.html"]
    assert "lens.data.config" in graph["lens.commands.cache"]  # imported inside a function
    assert "lens.report" in graph["lens.plugin_api"]  # the package runs first
    # A module's own package is not an edge just for being its parent.
    assert "lens.report" not in graph["lens.report.documents.fmt"]


def test_no_module_imports_the_public_api() -> None:
    """``lens/__init__.py`` is for users: a module of lens importing it climbs back up."""
    graph = import_graph()
    assert [m for m, deps in sorted(graph.items()) if m.startswith("lens.") and "lens" in deps] \
        == []


def test_a_planted_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(_describe(g, graph) for g in found)


def test_model_clients_are_built_without_a_cycle() -> None:
    """The runtime builds backends through the provider registry; the factory builds on the
    runtime; nothing imports back."""
    graph = import_graph()
    assert "lens.models.providers" in graph["lens.models.runtime"]
    assert "lens.models.runtime" in graph["lens.models.factory"]
    assert "lens.models.factory" not in graph["lens.models.runtime"]
    assert "lens.models.factory" not in graph["lens.models.providers"]


def _layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or
                                                                len(p) > best[1]):
                best = (rank, len(p))
    return best[0] if best else None


# The only modules directly under lens/: the public API, ``python -m lens`` and the plugin API.
TOP_LEVEL_MODULES = {"__init__.py", "__main__.py", "plugin_api.py"}


def test_the_tree_shows_the_layers() -> None:
    """``ls lens`` is the layer table: every top-level package is one of its packages, and no
    other module sits beside the public ones."""
    top = ROOT / "lens"
    modules = {p.name for p in top.glob("*.py")}
    packages = {p.name for p in top.iterdir() if (p / "__init__.py").is_file()}
    layered = {p.split(".")[1] for _, prefixes in LAYERS for p in prefixes if p.count(".") == 1}
    assert modules == TOP_LEVEL_MODULES
    assert packages == layered - {m.removesuffix(".py") for m in TOP_LEVEL_MODULES}
    for pkg in sorted(packages):
        doc = ast.get_docstring(ast.parse((top / pkg / "__init__.py").read_text("utf-8")))
        assert doc, f"lens/{pkg}/__init__.py says what the package holds and what is public"


def test_every_lens_module_has_a_layer() -> None:
    missing = [m for m in import_graph() if m.startswith("lens") and _layer_of(m) is None]
    assert missing == []


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    upward = []
    for module, targets in graph.items():
        own = _layer_of(module)
        if own is None:
            continue  # goldevidence is a plugin: it may use any of lens
        for target in sorted(targets):
            theirs = _layer_of(target)
            if theirs is None:
                upward.append(f"{module} -> {target} (lens never imports a plugin)")
            elif theirs > own:
                upward.append(f"{module} ({LAYERS[own][0]}) -> {target} ({LAYERS[theirs][0]})")
    return upward


def test_a_planted_upward_import_is_found() -> None:
    graph = {"lens.runs.store": {"lens.report.documents.html"},
             "lens.report.sections.registry": {"goldevidence.report"},
             "lens.report.documents.html": {"lens.runs.store"}}
    assert upward_imports(graph) == [
        "lens.runs.store (models and records) -> lens.report.documents.html (report)",
        "lens.report.sections.registry -> goldevidence.report (lens never imports a plugin)"]


def test_layers_import_only_downwards() -> None:
    assert upward_imports(import_graph()) == []


def test_docs_list_the_same_layers() -> None:
    """docs/architecture.md's table of layers is the one this test enforces."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Who may import whom", 1)[1]
    table = "| layer |" + section.split("| layer |", 1)[1].split("\n\n")[0]
    documented = []
    for line in table.splitlines()[2:]:
        name, modules = (c.strip() for c in line.strip("|").split("|"))
        mods = [m if m == "lens" else f"lens.{m}" for m in re.findall(r"`([\w_]+)`", modules)]
        documented.append((name, tuple(sorted(mods))))
    assert documented == [(name, tuple(sorted(mods))) for name, mods in LAYERS]
