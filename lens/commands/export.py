"""``lens export RUN_DIR [--out FILE]``: one archive to audit and re-judge a run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lens.core.visible import visible
from lens.flow.bundle.export import export_bundle


def register(sub: Any) -> None:
    p = sub.add_parser("export", help="write a run's results bundle (a tar.gz or zip with what "
                                      "a third party needs to audit and re-judge it)")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a scored run directory")
    p.add_argument("--out", type=Path, metavar="FILE", default=None,
                   help="the bundle file, .tar.gz or .zip (default: beside the run, "
                        "<run id>.lens-bundle.tar.gz)")
    p.add_argument("--dataset", type=Path, metavar="PATH", default=None,
                   help="the run's dataset, if it has moved since the run")
    p.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    path, manifest = export_bundle(args.run_dir, args.out, dataset_path=args.dataset)
    print(f"bundle: {visible(str(path))} ({len(manifest.files)} files; judges: "
          f"{', '.join(visible(j) for j in manifest.judges) or 'none'})")
    print(f"digest: {manifest.digest}  (publish it with the result; check with "
          f"lens verify {visible(str(path))} --digest {manifest.digest})")
    return 0
