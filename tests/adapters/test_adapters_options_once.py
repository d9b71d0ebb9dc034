"""A shipped adapter's options are declared once, in its ``Options`` model, which is also what
its constructor reads: defaults, bounds and the chunked variants' defaults come from the model,
and an author's subclass with an options model of its own still builds the shipped part."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from lens.adapters.in_context import RecencyAdapter
from lens.adapters.sqlite_fts import (
    DEFAULT_CHUNK_CHARS,
    SqliteFtsAdapter,
    SqliteFtsChunkedAdapter,
    SqliteFtsOptions,
)


def test_the_constructor_reads_the_model() -> None:
    a = SqliteFtsAdapter(max_results=5)
    assert isinstance(a.opts, SqliteFtsOptions)
    assert a.opts.max_results == 5 and a.opts.snippet_chars == 600
    assert a.get_capabilities().max_results == 5
    a.close()


def test_the_chunked_variant_takes_its_own_default() -> None:
    a = SqliteFtsChunkedAdapter()
    assert a.opts.chunk_chars == DEFAULT_CHUNK_CHARS
    assert "chunks" in a.get_capabilities().description
    a.close()


def test_direct_construction_is_validated_like_a_config() -> None:
    with pytest.raises(ValidationError, match="max_results"):
        SqliteFtsAdapter(max_results=0)
    with pytest.raises(ValidationError, match="n"):
        RecencyAdapter(n=0, extra_option=1)


class _AuthorsOptions(BaseModel):
    password: str


class _AuthorsAdapter(SqliteFtsAdapter):
    Options = _AuthorsOptions  # type: ignore[assignment]  # an author's model, not the base's

    def __init__(self, password: str) -> None:
        super().__init__()
        self.password = password


def test_an_authors_subclass_with_its_own_options_builds_the_shipped_part() -> None:
    a = _AuthorsAdapter(password="x")
    assert isinstance(a.opts, SqliteFtsOptions) and a.opts.max_results == 10
    a.close()
