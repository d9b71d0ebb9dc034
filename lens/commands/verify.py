"""``lens verify BUNDLE [--digest HEX]``: is a results bundle whole and untouched? Exit 0 when
it is, 1 with every problem named when it is not."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lens.core.visible import visible
from lens.flow.bundle.verify import verify_bundle


def register(sub: Any) -> None:
    p = sub.add_parser("verify", help="check a results bundle (lens export): content hashes, "
                                      "completeness, the dataset's hash")
    p.add_argument("bundle", type=Path, metavar="BUNDLE", help="a .tar.gz or .zip bundle")
    p.add_argument("--digest", metavar="HEX", default=None,
                   help="the digest published with the result: the bundle must carry it")
    p.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    result = verify_bundle(args.bundle, args.digest)
    m = result.manifest
    if result.ok and m is not None:
        print(f"bundle OK: run {visible(m.run_id)}, {len(m.files)} files, dataset hash "
              f"{(m.dataset_hash or 'unknown')[:16]}…, judges: "
              f"{', '.join(visible(j) for j in m.judges) or 'none'}")
        print(f"digest: {m.digest}")
        return 0
    print(f"bundle FAILED: {len(result.problems)} problem(s) in {visible(str(args.bundle))}")
    for problem in result.problems:
        print(f"  {visible(problem)}")
    return 1
