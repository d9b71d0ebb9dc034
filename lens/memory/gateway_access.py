"""How an adapter reaches lens's model gateway: the options it declares and what lens fills in.

An adapter whose memory system makes model calls of its own declares options that subclass one
of two bases, by what the system calls:

- :class:`GatewayOptions` for a system that chats (fact extraction, graph building, summaries)
  and may embed: its options carry ``model`` and ``model_options``, the chat model lens calls
  for it, and the runner fills ``gateway`` with a :class:`GatewayAccess`.
- :class:`EmbeddingGatewayOptions` for a system that only embeds: its options carry nothing
  but ``gateway``, filled with an :class:`EmbeddingGatewayAccess`; the gateway has no chat
  model for such a unit and refuses its chat calls.

An access is the address of lens's OpenAI-compatible endpoint on loopback and a key of that unit's
own. The adapter hands both to its system's OpenAI client (``base_url=access.base_url,
api_key=access.api_key``); every call is then made by lens and metered as that unit's memory
cost. The options travel as JSON, so the same works for an adapter in a process of its own.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lens.data.config import ModelConfig
from lens.models.providers import unknown_provider


class NoGateway(RuntimeError):
    """A gateway adapter was created outside a run, without its gateway access."""


class EmbeddingGatewayAccess(BaseModel):
    """One unit's way to the gateway's embedding model; valid for the run that issued it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="the OpenAI-compatible base URL, http://127.0.0.1:PORT/v1")
    api_key: str = Field(min_length=16, description="this unit's bearer token")
    embedding_model: str = Field(description="the embedding model's name")
    embedding_dim: int = Field(ge=1, description="the length of its vectors")


class GatewayAccess(BaseModel):
    """One unit's way into the gateway, chat and embeddings; valid for the run that issued
    it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="the OpenAI-compatible base URL, http://127.0.0.1:PORT/v1")
    api_key: str = Field(min_length=16, description="this unit's bearer token")
    chat_model: str = Field(description="the model name to send (the key decides the model)")
    embedding_model: str | None = Field(
        default=None, description="the embedding model's name; None when the gateway has none")
    embedding_dim: int | None = Field(default=None, ge=1)


def check_model_name(value: str) -> str:
    """A ``provider/name`` lens speaks, or a ValueError saying how to write one."""
    provider = value.partition("/")[0]
    problem = unknown_provider(provider) if "/" in value else \
        "name the model as provider/name, e.g. llama_cpp/default or openai/gpt-4o-mini"
    if problem is not None:
        raise ValueError(problem)
    return value


def check_model_settings(value: dict[str, Any]) -> dict[str, Any]:
    """Other lens model settings for an adapter's model, checked with the config so a misspelt
    setting stops the run before any work instead of failing a unit at its first call."""
    if "model" in value:
        raise ValueError("name the model in the 'model' option, not in model_options")
    try:
        ModelConfig.model_validate({**value, "model": "scripted/check"})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(x) for x in first["loc"])
        if first["type"] == "extra_forbidden":
            known = ", ".join(sorted(set(ModelConfig.model_fields) - {"model"}))
            raise ValueError(f"unknown model setting '{key}' (known: {known})") from None
        raise ValueError(f"model setting '{key}': {first['msg']}") from None
    return value


class ModelChoice(BaseModel):
    """The options of a memory system that calls a model: which one, and lens's other model
    settings for it, both checked with the config (a shared base of the consolidation baselines'
    options and :class:`GatewayOptions`)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="llama_cpp/default",
                       description="the model the memory system calls, provider/name")
    model_options: dict[str, Any] = Field(
        default_factory=dict, description="other lens model settings for it (base_url, "
        "api_key_env, temperature, options, prices …)")

    @field_validator("model")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        return check_model_name(value)

    @field_validator("model_options")
    @classmethod
    def _model_settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_model_settings(value)


_SET_BY_LENS = "set by lens for each unit; a value in the config is replaced"


def _no_gateway(access_class: str) -> NoGateway:
    return NoGateway("this adapter calls models through lens's model gateway, which lens opens "
                     "for each unit of `lens run` and `lens adapters check`; it was created "
                     f"without one (pass gateway={access_class}(...) to use it on its own)")


class GatewayOptions(ModelChoice):
    """Subclass this for an adapter's ``Options`` to be given the gateway, for a memory system
    that chats (and may embed) with the model named in ``model``."""

    gateway: GatewayAccess | None = Field(default=None, description=_SET_BY_LENS)

    def model_config_for_gateway(self) -> ModelConfig:
        return ModelConfig.model_validate({**self.model_options, "model": self.model})

    def access(self) -> GatewayAccess:
        """The unit's gateway access, or a clear error when the adapter runs outside lens."""
        if self.gateway is None:
            raise _no_gateway("GatewayAccess")
        return self.gateway


class EmbeddingGatewayOptions(BaseModel):
    """Subclass this for an adapter's ``Options`` to be given the gateway's embedding model,
    for a memory system that embeds and never chats: no chat model to name, so no ``model``
    option."""

    model_config = ConfigDict(extra="forbid")

    gateway: EmbeddingGatewayAccess | None = Field(default=None, description=_SET_BY_LENS)

    def access(self) -> EmbeddingGatewayAccess:
        """The unit's gateway access, or a clear error when the adapter runs outside lens."""
        if self.gateway is None:
            raise _no_gateway("EmbeddingGatewayAccess")
        return self.gateway


AnyGatewayOptions = GatewayOptions | EmbeddingGatewayOptions


def wants_gateway(cls: type) -> bool:
    """Whether an adapter class declares gateway options (either kind)."""
    options = getattr(cls, "Options", None)
    return isinstance(options, type) and issubclass(options, (GatewayOptions,
                                                              EmbeddingGatewayOptions))
