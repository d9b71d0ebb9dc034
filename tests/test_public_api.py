"""The public API: the names lens and lens.testing export are pinned here, so removing or
renaming one is a deliberate change; the docs import only public names."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import lens
import lens.testing
from tests.conftest import ROOT

LENS_API = [
    "AdapterNotFound", "CapabilityManifest", "ConfigError", "Dataset", "DatasetError",
    "Document", "EmbeddingGatewayAccess", "EmbeddingGatewayOptions", "Episode", "ExtraTool",
    "GatewayAccess", "GatewayOptions", "GroundTruth",
    "MemoryAdapter", "MemoryItem", "MemoryListing", "ModelConfig",
    "Question", "QuestionRecord", "QuestionType", "RunCacheOptions", "RunConfig", "RunOutcome",
    "RunScores",
    "RunStore", "Scope", "SearchResult", "Section", "SyncMemoryAdapter", "UserError",
    "__version__", "adapter_names", "build_summary", "compare_runs", "create_adapter",
    "execute", "load_config", "load_dataset", "register_adapter", "register_section_provider",
    "score_for_config", "score_run", "score_run_sync", "write_reports",
]
TESTING_API = ["CHECKS", "AdapterConformance", "AdapterFactory", "CheckResult", "Skip", "corpus",
               "run_check", "run_conformance"]
MODELS_API = ["Completion", "CompletionRequest", "Message", "ModelClient", "ModelError",
              "ProviderError", "ToolCall", "ToolSpec", "Usage"]
METRICS_API = ["COMPOSITE", "MetricInput", "MetricSpec", "all_metrics", "get_metric",
               "register_metric", "unregister_metric"]
# Modules whose names are public besides lens itself: a doc example may import from these.
PUBLIC_MODULES = {"lens", "lens.testing", "lens.stats", "lens.models", "lens.plugin_api",
                  "lens.scoring.metrics"}
PLUGIN_API = [
    "Block", "Heading", "LocalEmbedder", "Para", "QuestionRecord", "RunData", "RunStore",
    "Section", "Table",
    "add_entry_points",
    "atomic_write_text", "create_client", "estimate_tokens", "is_scored", "run_async", "to_html",
    "to_markdown",
]


def test_the_metric_registry_exports_exactly_the_pinned_names() -> None:
    import lens.scoring.metrics

    assert sorted(lens.scoring.metrics.__all__) == sorted(METRICS_API)


def test_lens_models_exports_the_provider_contract() -> None:
    import lens.models

    assert sorted(lens.models.__all__) == sorted(MODELS_API)
    for name in lens.models.__all__:
        assert getattr(lens.models, name) is not None, name


def test_lens_exports_exactly_the_pinned_names() -> None:
    assert sorted(lens.__all__) == sorted(LENS_API)
    for name in lens.__all__:
        assert getattr(lens, name) is not None, name


def test_lens_testing_exports_exactly_the_pinned_names() -> None:
    assert sorted(lens.testing.__all__) == sorted(TESTING_API)
    for name in lens.testing.__all__:
        assert hasattr(lens.testing, name), name


def test_exports_are_the_objects_of_their_modules() -> None:
    from lens.flow.pipeline import execute
    from lens.memory.adapter import MemoryAdapter
    from lens.runs.store import RunStore

    assert lens.MemoryAdapter is MemoryAdapter
    assert lens.execute is execute and lens.RunStore is RunStore


def test_no_export_shares_its_name_with_a_lens_module() -> None:
    # Importing lens.<name> would replace the exported object with the module of that name.
    clashes = [n for n in lens.__all__ if (ROOT / "lens" / f"{n}.py").exists()
               or (ROOT / "lens" / n / "__init__.py").exists()]
    assert clashes == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Runner'"):
        _ = lens.Runner  # type: ignore[attr-defined]


def test_import_lens_loads_nothing_heavy_and_star_import_gives_every_name() -> None:
    code = ("import sys, lens; heavy = [m for m in ('lens.flow.pipeline', 'lens.models', 'numpy') "
            "if m in sys.modules]; print(heavy); ns = {}; exec('from lens import *', ns); "
            "print(sorted(k for k in ns if not k.startswith('__')) + ['__version__'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.splitlines()
    assert out[0] == "[]"
    assert sorted(eval(out[1])) == sorted(LENS_API)


def test_an_adapter_built_from_public_names_alone_works() -> None:
    import anyio

    class Notes(lens.SyncMemoryAdapter):
        def __init__(self) -> None:
            self.texts: dict[str, str] = {}

        def reset(self, scope_id: str) -> None:
            self.texts.clear()

        def ingest(self, episode: lens.Episode) -> None:
            self.texts[episode.episode_id] = episode.text

        def search(self, query: str, filters: dict | None = None,
                   limit: int | None = None) -> list[lens.SearchResult]:
            words = set(query.lower().split())
            hits = sorted(((len(words & set(v.lower().split())), k) for k, v in self.texts.items()),
                          reverse=True)
            return [lens.SearchResult(ref_id=k, text=self.texts[k], score=float(n))
                    for n, k in hits if n][: limit or 10]

        def retrieve(self, ref_id: str) -> lens.Document | None:
            text = self.texts.get(ref_id)
            return None if text is None else lens.Document(ref_id=ref_id, text=text)

        def get_capabilities(self) -> lens.CapabilityManifest:
            return lens.CapabilityManifest()

    lens.register_adapter("public-notes")(Notes)
    results = anyio.run(lens.testing.run_conformance, lambda: lens.create_adapter("public-notes"))
    failed = [f"{r.name}: {r.detail}" for r in results if r.status == "failed"]
    assert failed == [] and len(results) == len(lens.testing.CHECKS)


def _doc_imports() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        # A section titled "Internals" documents private modules on purpose.
        for part in re.split(r"^## ", text, flags=re.M):
            if part.startswith("Internals"):
                continue
            for module in re.findall(r"^\s*(?:from|import) (lens[\w.]*)", part, re.M):
                found.append((path.name, module))
    return found


def test_docs_import_only_public_modules() -> None:
    found = _doc_imports()
    assert any(m == "lens" for _, m in found)  # the scan sees the examples
    private = [f"{name}: {module}" for name, module in found if module not in PUBLIC_MODULES]
    assert private == []


def test_plugin_api_is_pinned() -> None:
    import lens.plugin_api

    assert sorted(lens.plugin_api.__all__) == sorted(PLUGIN_API)
    for name in PLUGIN_API:
        assert getattr(lens.plugin_api, name) is not None


def test_goldevidence_imports_only_public_names() -> None:
    """The worked-example plugin builds on what any third-party plugin may use."""
    import ast

    found = []
    for path in sorted((ROOT / "goldevidence").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            found += [(path.name, m) for m in modules if m.split(".")[0] == "lens"]
    assert found, "the scan sees goldevidence's imports"
    private = [f"{name}: {module}" for name, module in found if module not in PUBLIC_MODULES]
    assert private == []
