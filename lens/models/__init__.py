"""Model clients: one protocol, thin backends, and the stack that wraps them.

Public: the names in ``__all__`` are the contract a model provider implements (docs/models.md,
"Adding a provider"); the submodules are internal."""

from lens.models.base import (
    Completion,
    CompletionRequest,
    Message,
    ModelClient,
    ModelError,
    ToolCall,
    ToolSpec,
    Usage,
)
from lens.models.errors import ProviderError

__all__ = [
    "Completion",
    "CompletionRequest",
    "Message",
    "ModelClient",
    "ModelError",
    "ProviderError",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
