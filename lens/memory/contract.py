"""The shapes an adapter's results must have, checked where the adapter runs.

An adapter in lens's own process hands back Python objects; one in a process of its own (or on a
Ray actor) hands back JSON, where a plain dict and a ``Document`` look alike. So the check runs on
the Python objects themselves, in the worker before they are encoded and in lens's process when
there is no worker, and a breach is the same failed call with the same message under every
isolation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lens.memory.adapter import CapabilityManifest, Document, SearchResult
from lens.memory.listing import MemoryListing

# Methods whose result lens reads; the rest (reset, ingest, prepare, aclose) return nothing it
# uses, and model_usage is read leniently (an unreadable usage is an event, not a failure).
CHECKED = frozenset({"search", "retrieve", "get_capabilities", "standing_context",
                     "list_memory"})


class ContractBreach(Exception):
    """An adapter's result of the wrong shape: a failed call, never a lost worker."""


def _kind(value: object) -> str:
    """The type's name with its article: "a dict", "an int"."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


# What each method but search promises: (its result is well formed, what a malformed one is
# called, what was expected).
_PROMISES: dict[str, tuple[Callable[[object], bool], str, str]] = {
    "retrieve": (lambda v: v is None or isinstance(v, Document), "a malformed document",
                 "a Document or None"),
    "get_capabilities": (lambda v: isinstance(v, CapabilityManifest), "malformed capabilities",
                         "a CapabilityManifest"),
    "standing_context": (lambda v: v is None or isinstance(v, str),
                         "a malformed standing context", "str or None"),
    "list_memory": (lambda v: v is None or isinstance(v, MemoryListing),
                    "a malformed memory listing", "a MemoryListing or None"),
}


def check_result(method: str, value: Any) -> Any:
    """``value`` unchanged when it is what ``method`` promises, else :class:`ContractBreach`
    naming the method, what came back and what was expected."""
    if method == "search":
        _check_search(value)
    elif method in _PROMISES:
        well_formed, malformed, expected = _PROMISES[method]
        if not well_formed(value):
            raise ContractBreach(
                f"the memory system returned {malformed}: {method} returned {_kind(value)}, "
                f"not {expected}")
    return value


def _check_search(value: object) -> None:
    """A list of SearchResult, else :class:`ContractBreach` naming the first item that is not."""
    if not isinstance(value, list):
        raise ContractBreach(
            "the memory system returned malformed search results (not a list): search "
            f"returned {_kind(value)}, not a list of SearchResult")
    for i, item in enumerate(value):
        if not isinstance(item, SearchResult):
            raise ContractBreach(
                f"the memory system returned a malformed search result: item {i} of search's "
                f"list is {_kind(item)}, not a SearchResult")
