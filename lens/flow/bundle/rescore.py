"""``lens score BUNDLE --judge MODEL``: re-judge a results bundle without its memory.

The bundle is verified first (a bundle that fails is not scored) and never changed: its run
directory and dataset are unpacked into the output folder (default: beside the bundle,
``<bundle name>.rescored/``), scored there as ``lens score`` scores a run, and reported.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from lens.core.errors import UserError
from lens.flow.bundle.verify import verify_bundle


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


def rescore_bundle(bundle: Path, args: argparse.Namespace,
                   score: Callable[[argparse.Namespace], int]) -> int:
    checked = verify_bundle(bundle)
    if not checked.ok or checked.manifest is None:
        raise UserError(f"{bundle}: the bundle does not verify, so it is not re-judged:\n  "
                        + "\n  ".join(checked.problems))
    out = Path(args.out) if args.out is not None else default_out(bundle)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out}: already exists and is not empty; remove it or name another "
                        "folder with --out DIR")
    out.mkdir(parents=True, exist_ok=True)
    unpack(checked.files, out)
    m = checked.manifest
    run_dir = out / "run"
    dataset = out / m.dataset_file
    errata = sorted((out / "dataset" / "errata").glob("*"))
    rescored = argparse.Namespace(**{**vars(args), "run_dir": run_dir, "dataset": dataset,
                                     "out": None,
                                     "errata": args.errata or (errata[0] if errata else None)})
    status = score(rescored)
    from lens.report import write_reports

    paths = write_reports(run_dir)
    print(f"re-judged copy of {bundle.name} (the bundle is unchanged): {run_dir}")
    print(f"report: {paths.html}")
    print(f"score it with another judge: lens score {run_dir} --judge MODEL --dataset {dataset}")
    return status
