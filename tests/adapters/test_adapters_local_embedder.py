"""``lens.plugin_api.LocalEmbedder``: lens's embedding model in the adapter's own process, with
its cache; an adapter built on it passes `lens adapters check` (its aclose releases the cache
file) and reaches no gateway."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lens.plugin_api import LocalEmbedder
from tests.support.cli import Lens, cli_runner
from tests.support.extras import missing_reason

pytestmark = pytest.mark.skipif(missing_reason("vector") is not None,
                                reason=missing_reason("vector") or "")

ADAPTER = "tests.adapters.local_embedding_adapter:LocalVectors"


def test_unit_rows_one_per_text_cached_in_the_file_given(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    first = LocalEmbedder(cache=path)
    try:
        assert first.model == "all-MiniLM-L6-v2" and first.dim == 384
        texts = ["the billing queue stalled", "a lemon soap order", "the billing queue stalled"]
        rows = first.embed(texts)
        assert rows.shape == (3, 384) and rows.dtype == np.float32
        assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
        assert np.array_equal(rows[0], rows[2])
        assert float(rows[0] @ rows[1]) < 0.9
        assert first.embed([]).shape == (0, 384)
    finally:
        first.close()
    assert path.is_file()
    again = LocalEmbedder(cache=path)
    try:
        assert np.array_equal(again.embed(texts[:1])[0], rows[0])
    finally:
        again.close()


def test_no_cache_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "cache"))
    embedder = LocalEmbedder(cache=False)
    try:
        assert embedder.embed(["one text"]).shape == (1, 384)
    finally:
        embedder.close()
    assert not (tmp_path / "cache" / "embeddings.sqlite").exists()


@pytest.fixture
def lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Lens:
    return cli_runner(tmp_path, monkeypatch, capsys)


def test_an_adapter_on_it_passes_the_check_without_a_gateway(lens: Lens, tmp_path: Path) -> None:
    done = lens("adapters", "check", ADAPTER, "--options",
                f'{{"cache": "{tmp_path / "own.sqlite"}"}}')
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "10 passed, 0 failed, 3 skipped" in done.stdout
    assert "model gateway" not in done.stdout
    assert (tmp_path / "own.sqlite").is_file()
