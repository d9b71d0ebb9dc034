"""What each arm's adapter was: its distribution and version, a digest of its source files and
the versions of the libraries it imports, recorded in the manifest as
``arms.<label>.adapter_identity``; ``--resume`` compares them with the code it would run now.

The source files are the adapter's own package (every ``.py`` file under the folder of its
top-level package, or its single module), except for lens's shipped adapters, whose source is the
module that defines the class: lens's version already names the rest. The libraries are the
top-level imports of those files that an installed distribution provides, standard library and
the adapter's own distribution left out.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from lens.core import plugins
from lens.core.distribution import DISTRIBUTION
from lens.core.distribution import version as lens_version
from lens.core.errors import AdapterNotFound, UserError
from lens.data.config import RunConfig
from lens.memory.adapter import BUILTIN_ADAPTERS, AdapterClass, resolve_adapter

KEY = "adapter_identity"
# A package this large is not one adapter's code (a site-packages folder, a home directory):
# the digest then covers the defining module alone.
MAX_FILES = 2000


class AdapterIdentity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The class, as ``module:Class``.
    target: str
    # The installed distribution that provides it (None: imported from a folder on the path).
    distribution: str | None = None
    version: str | None = None
    # sha256 over the source files' relative paths and bytes, and how many there were.
    source_digest: str
    source_files: int
    # ``{distribution: version}`` of the libraries those files import.
    libraries: dict[str, str]

    def brief(self) -> str:
        """One line: ``dist 1.2 (source 3f2a9c1b, chromadb 0.5.3, numpy 2.1)``."""
        who = (f"{self.distribution} {self.version}" if self.distribution
               else f"{self.target} (no installed distribution)")
        libs = "".join(f", {n} {v}" for n, v in sorted(self.libraries.items()))
        return f"{who} (source {self.source_digest[:8]}{libs})"


@cache
def _distributions_of() -> Mapping[str, list[str]]:
    return packages_distributions()


def _dist_version(name: str) -> str | None:
    try:
        return distribution(name).version
    except PackageNotFoundError:
        return None


def _entry_point_dist(name: str) -> str | None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=plugins.ADAPTERS):
        if ep.name == name and ep.dist is not None:
            return str(ep.dist.name)
    return None


def _source_files(cls: AdapterClass, builtin: bool, packaged: bool
                  ) -> tuple[Path | None, list[Path]]:
    """The folder the files are named relative to, and the files: the top-level package of an
    installed distribution, the defining module's own package folder otherwise (a folder on
    the path holds more than one project), the defining module alone for lens's adapters."""
    try:
        module_file = Path(inspect.getfile(cls)).resolve()
    except (TypeError, OSError):
        return None, []
    if builtin or "." not in cls.__module__:
        return module_file.parent, [module_file]
    package = cls.__module__.split(".", 1)[0] if packaged else cls.__module__.rsplit(".", 1)[0]
    package_file = getattr(sys.modules.get(package), "__file__", None)
    if package_file is None:
        return module_file.parent, [module_file]
    root = Path(package_file).resolve().parent
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    if len(files) > MAX_FILES or module_file not in files:
        return module_file.parent, [module_file]
    return root, files


def _digest(root: Path | None, files: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        rel = path.relative_to(root).as_posix() if root is not None else path.name
        h.update(rel.encode("utf-8") + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _imports(files: Iterable[Path]) -> set[str]:
    names: set[str] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".", 1)[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".", 1)[0])
    return names


def identify(name: str) -> AdapterIdentity:
    """The identity of the adapter ``name`` names, as the code on this machine is now."""
    cls = resolve_adapter(name)
    builtin = name in BUILTIN_ADAPTERS
    top = cls.__module__.split(".", 1)[0]
    dists = _distributions_of()
    own = (DISTRIBUTION if builtin or top == "lens"
           else _entry_point_dist(name) or next(iter(dists.get(top, [])), None))
    root, files = _source_files(cls, builtin, packaged=own is not None)
    version = lens_version() if own == DISTRIBUTION else (_dist_version(own) if own else None)
    libraries: dict[str, str] = {}
    for imported in sorted(_imports(files) - set(sys.stdlib_module_names) - {top, "lens"}):
        for dist in dists.get(imported, []):
            found = _dist_version(dist)
            if dist != own and found is not None:
                libraries[dist] = found
    return AdapterIdentity(target=f"{cls.__module__}:{cls.__qualname__}", distribution=own,
                           version=version, source_digest=_digest(root, files),
                           source_files=len(files), libraries=libraries)


def arm_identities(config: RunConfig) -> dict[str, dict[str, Any]]:
    """``{label: {"adapter_identity": {...}}}`` for every arm of ``config``: the manifest's
    ``arms`` block. An adapter that cannot be imported here (checked before, so rare) has none."""
    out: dict[str, dict[str, Any]] = {}
    for arm in config.adapters:
        try:
            out[arm.display] = {KEY: identify(arm.name).model_dump(mode="json")}
        except AdapterNotFound:
            continue
    return out


def recorded(manifest: Mapping[str, Any]) -> dict[str, AdapterIdentity]:
    """The identities a run's manifest records, by arm (an arm without one is left out)."""
    out: dict[str, AdapterIdentity] = {}
    for label, arm in (manifest.get("arms") or {}).items():
        raw = arm.get(KEY) if isinstance(arm, dict) else None
        if isinstance(raw, dict):
            try:
                out[str(label)] = AdapterIdentity.model_validate(raw)
            except ValueError:
                continue
    return out


def changes(before: AdapterIdentity, now: AdapterIdentity) -> list[str]:
    """What differs, in words: ``version 0.1 -> 0.2``, ``source files changed``, ``chromadb
    0.5.3 -> 0.5.4``."""
    out: list[str] = []
    if before.target != now.target:
        out.append(f"class {before.target} -> {now.target}")
    if (before.distribution, before.version) != (now.distribution, now.version):
        out.append(f"{before.distribution or 'no distribution'} {before.version or ''}".strip()
                   + f" -> {now.distribution or 'no distribution'} {now.version or ''}".rstrip())
    if before.source_digest != now.source_digest:
        out.append(f"source files changed ({before.source_digest[:8]} -> "
                   f"{now.source_digest[:8]})")
    return out + _library_changes(before.libraries, now.libraries)


def _library_changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """Each library whose version differs, by name: ``chromadb 0.5.3 -> 0.5.4``."""
    out: list[str] = []
    for lib in sorted(set(before) | set(now)):
        old, new = before.get(lib), now.get(lib)
        if old != new:
            out.append(f"{lib} {old or 'absent'} -> {new or 'absent'}")
    return out


ACCEPT_FLAG = "--accept-adapter-change"
ACCEPTED_EVENT = "adapter_change_accepted"


def resume_check(manifest: dict[str, Any], config: RunConfig, run_dir: Path,
                 accept: bool) -> dict[str, list[str]]:
    """Compare the arms' adapters with what the run recorded before resuming it. A changed arm
    is refused (one arm answering with two versions of its code is two conditions), unless
    ``accept``: then ``manifest`` records the new identity beside the earlier ones and the
    changes are returned, by arm, for the events. An arm the run recorded no identity for
    (a run from before lens recorded them) gets the current one."""
    before = recorded(manifest)
    now = arm_identities(config)
    arms: dict[str, Any] = manifest.setdefault("arms", {})
    changed: dict[str, list[str]] = {}
    for label, entry in now.items():
        current = AdapterIdentity.model_validate(entry[KEY])
        old = before.get(label)
        diff = changes(old, current) if old is not None else []
        if diff:
            changed[label] = diff
        if old is None or (diff and accept):
            arm = arms.setdefault(label, {})
            if old is not None:
                arm.setdefault(f"{KEY}_before", []).append(old.model_dump(mode="json"))
            arm[KEY] = entry[KEY]
    if changed and not accept:
        raise _refusal(run_dir, changed)
    return changed


def _refusal(run_dir: Path, changed: dict[str, list[str]]) -> UserError:
    """Why a run whose arms' adapters changed is not resumed, and how to resume it anyway."""
    lines = "; ".join(f"{label}: {', '.join(d)}" for label, d in sorted(changed.items()))
    return UserError(
        f"{run_dir}: cannot resume: the adapter of {len(changed)} arm(s) changed since the "
        f"run started ({lines}); its answers would mix two versions of the code. Start a new "
        f"run, or resume with {ACCEPT_FLAG} to accept the change (the run records it)")
