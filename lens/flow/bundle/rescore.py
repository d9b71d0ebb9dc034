"""A results bundle's copy to re-judge without its memory (``lens score BUNDLE --judge MODEL``).

The bundle is verified first (a bundle that fails is not scored) and never changed: its run
directory and dataset are unpacked into the output folder (default: beside the bundle,
``<bundle name>.rescored/``), where ``lens score`` scores the run as it scores any run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lens.core.errors import UserError
from lens.flow.bundle.verify import verify_bundle


@dataclass(frozen=True)
class RescoreCopy:
    """The unpacked copy: its run directory, its dataset and the bundle's errata file (None
    when the bundle holds none)."""

    run_dir: Path
    dataset: Path
    errata: Path | None


def default_out(bundle: Path) -> Path:
    name = bundle.name
    for suffix in (".tar.gz", ".tgz", ".zip"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return bundle.with_name(name + ".rescored")


def unpack(files: dict[str, bytes], out: Path) -> None:
    for rel, data in files.items():
        if not rel.startswith(("run/", "dataset/")):
            continue
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def unpack_for_rescore(bundle: Path, out: Path | None) -> RescoreCopy:
    """Verify ``bundle`` and unpack its run and dataset into ``out`` (default:
    :func:`default_out`), which must not hold anything yet."""
    checked = verify_bundle(bundle)
    if not checked.ok or checked.manifest is None:
        raise UserError(f"{bundle}: the bundle does not verify, so it is not re-judged:\n  "
                        + "\n  ".join(checked.problems))
    out = Path(out) if out is not None else default_out(bundle)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out}: already exists and is not empty; remove it or name another "
                        "folder with --out DIR")
    out.mkdir(parents=True, exist_ok=True)
    unpack(checked.files, out)
    errata = sorted((out / "dataset" / "errata").glob("*"))
    return RescoreCopy(out / "run", out / checked.manifest.dataset_file,
                       errata[0] if errata else None)
