"""Model clients: one protocol, thin backends, and the stack that wraps them."""

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

__all__ = [
    "Completion",
    "CompletionRequest",
    "Message",
    "ModelClient",
    "ModelError",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
