"""What a scenario or report-section plugin may build on, beside :mod:`lens` and :mod:`lens.models`.

A plugin imports lens only through public names (docs/architecture.md names the worked example): the
adapter and dataset types from :mod:`lens`, the model contract from :mod:`lens.models`, the
statistics from :mod:`lens.stats`, and the names below. They are kept stable across versions;
the modules they come from are internal and may move. ``tests/test_public_api.py`` pins this
list and checks that the shipped scenario plugin imports nothing else.

Report sections return a :class:`Section` built of blocks (``Heading``, ``Para``, ``Table``)
that lens renders to Markdown and HTML alike; ``RunStore``, ``QuestionRecord`` and
``is_scored`` read a run directory; ``create_client`` builds a model client from a
``ModelConfig`` with lens's retries, limits and cache; ``run_async`` runs a coroutine on the
event loop lens uses; ``add_entry_points`` declares entry points for a program that cannot
install package metadata.
"""

from __future__ import annotations

from lens.core.eventloop import run as run_async
from lens.core.plugins import add_entry_points
from lens.core.tokens import estimate_tokens
from lens.models.factory import create_client
from lens.report.documents.document import Block, Heading, Para, Table, to_html, to_markdown
from lens.report.foundations.data import RunData
from lens.report.sections.registry import Section
from lens.runs.records import QuestionRecord, is_scored
from lens.runs.store import RunStore, atomic_write_text

__all__ = [
    "Block",
    "Heading",
    "Para",
    "QuestionRecord",
    "RunData",
    "RunStore",
    "Section",
    "Table",
    "add_entry_points",
    "atomic_write_text",
    "create_client",
    "estimate_tokens",
    "is_scored",
    "run_async",
    "to_html",
    "to_markdown",
]
