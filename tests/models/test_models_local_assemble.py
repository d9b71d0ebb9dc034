"""Assembling a model from numbered part packages, with the pinned size and sha256 check."""

from __future__ import annotations

import errno
import hashlib
import uuid
from pathlib import Path

import pytest

from lens.core.errors import ConfigError
from lens.models import local_models
from lens.models.local_models import LOCAL_MODELS, LocalModel, assemble, resolve_model_path


def make_parts(root: Path, chunks: list[bytes]) -> tuple[str, str]:
    """Real importable part packages ``<prefix>1..n`` with ``get_part_path()``."""
    prefix = f"lens_test_part_{uuid.uuid4().hex[:8]}_"
    for i, chunk in enumerate(chunks, 1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        (pkg / "__init__.py").write_text(
            "import os\n\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i:02d}.bin')\n"
        )
    return prefix, prefix.replace("_", "-")


def spec_for(prefix: str, pip_prefix: str, chunks: list[bytes], sha: str | None = None
             ) -> LocalModel:
    blob = b"".join(chunks)
    return LocalModel(name="tiny", description="test", module_prefix=prefix,
                      package_prefix=pip_prefix, package_version="1.0", parts=len(chunks),
                      size=len(blob), sha256=sha or hashlib.sha256(blob).hexdigest(),
                      filename="tiny.gguf", extra="tiny-extra")


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, list[bytes]]:
    chunks = [b"GGUF" + bytes(range(200)) * 50, b"middle" * 1000, b"end"]
    prefix, pip_prefix = make_parts(tmp_path / "site", chunks)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return prefix, pip_prefix, chunks


def test_assembles_in_order_and_then_trusts_the_marker(parts: tuple[str, str, list[bytes]],
                                                       tmp_path: Path) -> None:
    prefix, pip_prefix, chunks = parts
    spec = spec_for(prefix, pip_prefix, chunks)
    out = assemble(spec, tmp_path / "models")
    assert out.read_bytes() == b"".join(chunks)
    stamp = out.stat().st_mtime_ns
    assert assemble(spec, tmp_path / "models") == out
    assert out.stat().st_mtime_ns == stamp  # not rewritten
    # A file changed behind lens's back is rebuilt.
    out.write_bytes(b"tampered")
    assert assemble(spec, tmp_path / "models").read_bytes() == b"".join(chunks)
    assert not list((tmp_path / "models").glob("*.part"))


def test_checksum_mismatch_is_refused(parts: tuple[str, str, list[bytes]],
                                      tmp_path: Path) -> None:
    prefix, pip_prefix, chunks = parts
    spec = spec_for(prefix, pip_prefix, chunks, sha="0" * 64)
    with pytest.raises(ConfigError, match="do not match the pinned model") as info:
        assemble(spec, tmp_path / "models")
    assert "--force-reinstall" in str(info.value)
    assert not (tmp_path / "models" / "tiny.gguf").exists()
    assert not list((tmp_path / "models").glob("*.part"))


def test_missing_part_names_the_package(parts: tuple[str, str, list[bytes]],
                                        tmp_path: Path) -> None:
    prefix, pip_prefix, chunks = parts
    spec = spec_for(prefix, pip_prefix, [*chunks, b"absent"])
    with pytest.raises(ConfigError, match=f"pip install {pip_prefix}4==1.0") as info:
        assemble(spec, tmp_path / "models")
    assert "the 'tiny-extra' extra" in str(info.value)


def test_unknown_name_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown local model"):
        resolve_model_path("no-such-model", tmp_path)
    with pytest.raises(ConfigError, match="not found"):
        resolve_model_path(str(tmp_path / "absent.gguf"), tmp_path)
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    path, identity = resolve_model_path(str(gguf), tmp_path)
    assert path == gguf.resolve() and str(gguf.resolve()) in identity


def test_pinned_models_are_consistent() -> None:
    for spec in LOCAL_MODELS.values():
        assert len(spec.sha256) == 64 and spec.size > 100_000_000
        assert spec.pip_command().count("==") == spec.parts


def test_a_full_disk_names_the_folder_and_the_fix(parts: tuple[str, str, list[bytes]],
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    prefix, pip_prefix, chunks = parts
    spec = spec_for(prefix, pip_prefix, chunks)

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(local_models.os, "fsync", full)
    with pytest.raises(ConfigError) as info:
        assemble(spec, tmp_path / "models")
    message = str(info.value)
    assert str(tmp_path / "models") in message and "No space left on device" in message
    assert "LENS_CACHE_DIR" in message
    # Nothing half-written is left for the next run to trust.
    assert not list((tmp_path / "models").iterdir())


def test_a_cache_folder_that_cannot_be_made_names_it(parts: tuple[str, str, list[bytes]],
                                                     tmp_path: Path) -> None:
    prefix, pip_prefix, chunks = parts
    (tmp_path / "models").write_text("a file where the folder should be")
    with pytest.raises(ConfigError, match="cannot write the assembled model") as info:
        assemble(spec_for(prefix, pip_prefix, chunks), tmp_path / "models")
    assert str(tmp_path / "models") in str(info.value)
