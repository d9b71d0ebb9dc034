"""The model-provider registry: the ``provider`` of a model string (``openai/gpt-4o-mini``) names
a factory that builds the bare backend for a :class:`~lens.data.config.ModelConfig`.

The contract of a provider, built in or from another package:

- a callable ``(ModelConfig) -> ModelClient`` (a class whose ``__init__`` takes the config is
  one); it reads ``config.name``, ``config.options``, ``config.base_url`` … as it needs and
  raises :class:`~lens.core.errors.ConfigError` for a setting it cannot use;
- the client it returns has ``provider`` and ``model`` attributes and the async ``complete`` and
  ``aclose`` methods of :class:`~lens.models.base.ModelClient`;
- the client may declare, as attributes, what the stack around it should not do:
  ``cache_replies = False`` keeps its replies out of the model cache (deterministic or free
  backends, whose cached copies would only fill the user's cache), ``wall_clock_timeout = False``
  lets a call run past the config's ``timeout_s`` (local backends that bound their own time
  through ``max_tokens``). Both default to True. ``tool_choice_required = True`` says the
  backend honours ``tool_choice: "required"`` (the agent's ``min_tool_rounds`` relies on it,
  and answers with a reminder turn where it is False, the default).

Another package declares a provider in its ``pyproject.toml``::

    [project.entry-points."lens.model_providers"]
    myllm = "my_pkg.client:MyLLMClient"

Built-ins are named by ``module:attr`` and imported only when used, so a missing optional
dependency of one provider never breaks another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lens.core import plugins
from lens.core.errors import ConfigError
from lens.data.config import ModelConfig
from lens.models.base import ModelClient

ProviderFactory = Callable[[ModelConfig], ModelClient]

BUILTIN_PROVIDERS: dict[str, str] = {
    "openai": "lens.models.openai_backend:OpenAIClient",
    "litellm": "lens.models.litellm_backend:LiteLLMClient",
    "llama_cpp": "lens.models.llama_backend:LlamaCppClient",
    "scripted": "lens.models.scripted:ScriptedClient.from_config",
}


def provider_targets() -> dict[str, str]:
    """``{provider: "module:attr"}`` for every provider lens knows; a built-in name cannot be
    taken over by a plugin (a run's condition names the provider, so it must mean one thing)."""
    found = plugins.targets(plugins.MODEL_PROVIDERS)
    found.update(BUILTIN_PROVIDERS)
    return dict(sorted(found.items()))


def provider_names() -> list[str]:
    return list(provider_targets())


def unknown_provider(provider: str) -> str | None:
    """The message for a provider lens does not know, None when it knows it."""
    known = provider_targets()
    if provider in known:
        return None
    return (f"unknown provider {provider!r}; known: {', '.join(known)} (a provider from another "
            f"package is known once the package declaring its {plugins.MODEL_PROVIDERS!r} "
            "entry point is installed)")


def resolve_provider(provider: str) -> ProviderFactory:
    """The factory registered for ``provider``."""
    problem = unknown_provider(provider)
    if problem is not None:
        raise ConfigError(problem)
    target = provider_targets()[provider]
    try:
        factory: Any = plugins.load_target(target)
    except (ImportError, AttributeError) as exc:
        fix = ("reinstall lens" if provider in BUILTIN_PROVIDERS
               else "reinstall the package that declares it")
        raise ConfigError(f"provider {provider!r}: {target!r} cannot be loaded "
                          f"({type(exc).__name__}: {exc}); {fix}") from None
    if not callable(factory):
        raise ConfigError(f"provider {provider!r}: {target!r} is not callable; it must name a "
                          "class or function taking the ModelConfig and returning a client")
    checked: ProviderFactory = factory
    return checked


def create_backend(config: ModelConfig) -> ModelClient:
    """The bare backend for ``config.provider``, without retry, limits, cache or metering."""
    try:
        factory = resolve_provider(config.provider)
    except ConfigError as exc:
        raise ConfigError(f"model {config.model!r}: {exc.args[0]}") from None
    client = factory(config)
    if not isinstance(client, ModelClient):
        raise ConfigError(f"model {config.model!r}: provider {config.provider!r} returned "
                          f"{type(client).__name__}, which is not a model client (it needs "
                          "provider and model attributes and async complete and aclose)")
    return client


def caches_replies(backend: ModelClient) -> bool:
    return bool(getattr(backend, "cache_replies", True))


def has_wall_clock_timeout(backend: ModelClient) -> bool:
    return bool(getattr(backend, "wall_clock_timeout", True))


def honours_tool_choice_required(client: ModelClient) -> bool:
    """Whether ``tool_choice: "required"`` makes this client's model call a tool."""
    return bool(getattr(client, "tool_choice_required", False))
