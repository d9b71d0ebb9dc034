"""The condition of a run: everything that must match for two results to be comparable."""

from __future__ import annotations

import hashlib
import json
import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from lens.core.distribution import version as lens_version
from lens.data.config import RunConfig
from lens.data.dataset import Dataset
from lens.data.prompts import prompts_hash
from lens.data.reader_prompts import (
    DEFAULT_READING,
    DEFAULT_TOP_K,
    load_reader_prompt,
    reader_cut,
    template_hash,
)

_PACKAGES = ("anyio", "pydantic", "openai", "httpx", "aiohttp", "uvloop", "tenacity",
             "llama_cpp_python", "litellm", "numpy")


def stable_hash(obj: Any) -> str:
    canon = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "lens": lens_version()}
    for name in _PACKAGES:
        try:
            out[name] = version(name.replace("_", "-"))
        except PackageNotFoundError:
            continue
    return out


def answerer(config: RunConfig) -> dict[str, Any] | None:
    """Who answered the questions when it was not the tool-using agent: the fixed reader, its
    top_k and its prompt (None for the agent, whose conditions keep the keys they had)."""
    agent = config.agent
    if agent.mode == "tool_agent":
        return None
    reading = agent.reading or DEFAULT_READING
    out: dict[str, Any] = {"mode": agent.mode, "top_k": agent.top_k or DEFAULT_TOP_K,
                           "reading": reading, "prompt_hash": template_hash(reading)}
    if agent.reader_prompt_file is not None:
        # A publisher's prompt: its text, not lens's wording, is what the reader was asked.
        read = load_reader_prompt(agent.reader_prompt_file)
        out.update(reading="file", prompt_hash=template_hash(template=read.template),
                   prompt_file={"name": read.name, "sha256": read.sha256})
    return out


def condition(config: RunConfig, dataset: Dataset) -> dict[str, Any]:
    agent = config.agent
    cond = {
        "lens_version": lens_version(),
        "dataset_id": dataset.dataset_id,
        "dataset_hash": dataset.content_hash(),
        "adapters": [
            {"name": a.name, "label": a.display, "options_hash": stable_hash(a.options)}
            for a in config.adapters
        ],
        "agent_model": agent.model,
        "agent_settings_hash": stable_hash(
            agent.model_dump(mode="json", exclude={"budget", "api_key_env", "max_concurrency",
                                                   "requests_per_minute", "tokens_per_minute",
                                                   "timeout_s", "max_retries", "mode", "top_k",
                                                   "reading", "reader_prompt_file"})
        ),
        "judge_model": config.judge.model if config.judge else None,
        "prompts_hash": prompts_hash(),
        "budget": agent.budget.model_dump(),
        "seed": config.seed,
        "repeats": config.repeats,
    }
    if config.dataset.limit is not None:
        # A sample of the questions (``--limit``): never comparable with the whole dataset.
        cond["question_limit"] = config.dataset.limit
    reader = answerer(config)
    if reader is not None:
        cond["answerer"] = reader
        # Where the reader's history is cut (the rule and its numbers, not where the window
        # came from): runs cut differently are not comparable. Runs written before it have
        # no such key, so ``lens compare`` names it as a difference against a run that has it.
        cond["reader_cut"] = reader_cut(config.agent).condition()
    if config.stopping is not None:
        # Which questions are answered depends on it; absent, the condition is as before.
        cond["stopping"] = config.stopping.model_dump(mode="json")
    return cond


def condition_hash(cond: dict[str, Any]) -> str:
    return stable_hash(cond)
