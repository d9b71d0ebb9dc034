"""lens: an async evaluation framework for AI memory systems.

The names below are the public API: what an adapter author or a script writer imports, as
``from lens import MemoryAdapter, load_config, execute``. Everything else lives in modules whose
names may change between versions (docs/architecture.md says which is which). The conformance
suite for adapter authors is :mod:`lens.testing`; the statistics are :mod:`lens.stats`; plugin
declarations are read by :mod:`lens.core.plugins`.

Names load on first use, so ``import lens`` stays cheap and no lens module depends on this one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # Writing an adapter
    "MemoryAdapter": "lens.memory.adapter",
    "SyncMemoryAdapter": "lens.memory.adapter",
    "SearchResult": "lens.memory.adapter",
    "Document": "lens.memory.adapter",
    "CapabilityManifest": "lens.memory.adapter",
    "ExtraTool": "lens.memory.adapter",
    # An adapter that lists what it stores (lens/memory/listing.py)
    "MemoryItem": "lens.memory.listing",
    "MemoryListing": "lens.memory.listing",
    # Memory systems that call models through the run's metering gateway
    "GatewayAccess": "lens.memory.gateway_access",
    "GatewayOptions": "lens.memory.gateway_access",
    # Adapters that build their own model client follow the run's cache section
    "RunCacheOptions": "lens.memory.run_cache",
    "register_adapter": "lens.memory.adapter",
    "create_adapter": "lens.memory.adapter",
    "adapter_names": "lens.memory.adapter",
    # Datasets
    "Dataset": "lens.data.dataset",
    "Scope": "lens.data.dataset",
    "Episode": "lens.data.dataset",
    "Question": "lens.data.dataset",
    "QuestionType": "lens.data.dataset",
    "GroundTruth": "lens.data.dataset",
    "load_dataset": "lens.data.dataset_load",
    # Configs and runs
    "RunConfig": "lens.data.config",
    "ModelConfig": "lens.data.config",
    "load_config": "lens.data.config",
    "execute": "lens.flow.pipeline",
    "RunOutcome": "lens.flow.pipeline",
    "RunStore": "lens.runs.store",
    "QuestionRecord": "lens.runs.records",
    # Scoring
    "score_run": "lens.scoring.scorer",
    "score_run_sync": "lens.scoring.scorer",
    "score_for_config": "lens.scoring.scorer",
    "RunScores": "lens.scoring.types",
    # Reports
    "write_reports": "lens.report",
    "build_summary": "lens.report",
    "compare_runs": "lens.report.run_comparison",
    "Section": "lens.report.sections.registry",
    "register_section_provider": "lens.report.sections.registry",
    # Errors a caller may catch
    "UserError": "lens.core.errors",
    "ConfigError": "lens.core.errors",
    "DatasetError": "lens.core.errors",
    "AdapterNotFound": "lens.core.errors",
}

__all__ = [
    "AdapterNotFound",
    "CapabilityManifest",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "Document",
    "Episode",
    "ExtraTool",
    "GatewayAccess",
    "GatewayOptions",
    "GroundTruth",
    "MemoryAdapter",
    "MemoryItem",
    "MemoryListing",
    "ModelConfig",
    "Question",
    "QuestionRecord",
    "QuestionType",
    "RunCacheOptions",
    "RunConfig",
    "RunOutcome",
    "RunScores",
    "RunStore",
    "Scope",
    "SearchResult",
    "Section",
    "SyncMemoryAdapter",
    "UserError",
    "__version__",
    "adapter_names",
    "build_summary",
    "compare_runs",
    "create_adapter",
    "execute",
    "load_config",
    "load_dataset",
    "register_adapter",
    "register_section_provider",
    "score_for_config",
    "score_run",
    "score_run_sync",
    "write_reports",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # Written once, in pyproject.toml; read from the installed distribution's metadata.
        from lens.core.distribution import version

        globals()[name] = version()
        return globals()[name]
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lens' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    __version__: str
    from lens.core.errors import AdapterNotFound, ConfigError, DatasetError, UserError
    from lens.data.config import ModelConfig, RunConfig, load_config
    from lens.data.dataset import Dataset, Episode, GroundTruth, Question, QuestionType, Scope
    from lens.data.dataset_load import load_dataset
    from lens.flow.pipeline import RunOutcome, execute
    from lens.memory.adapter import (
        CapabilityManifest,
        Document,
        ExtraTool,
        MemoryAdapter,
        SearchResult,
        SyncMemoryAdapter,
        adapter_names,
        create_adapter,
        register_adapter,
    )
    from lens.memory.gateway_access import GatewayAccess, GatewayOptions
    from lens.memory.listing import MemoryItem, MemoryListing
    from lens.memory.run_cache import RunCacheOptions
    from lens.report import build_summary, write_reports
    from lens.report.run_comparison import compare_runs
    from lens.report.sections.registry import Section, register_section_provider
    from lens.runs.records import QuestionRecord
    from lens.runs.store import RunStore
    from lens.scoring.scorer import score_for_config, score_run, score_run_sync
    from lens.scoring.types import RunScores
