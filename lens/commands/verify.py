"""``lens verify BUNDLE [--digest HEX]``: is a results bundle whole and untouched? Exit 0 when
it is, 1 with every problem named when it is not."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lens.core.errors import MAX_MESSAGE_CHARS, MAX_PROBLEMS_SHOWN, bounded
from lens.core.visible import visible
from lens.flow.bundle.claims_bundle import ClaimsVerification, verify_claims_bundle
from lens.flow.bundle.verify import verify_bundle


def register(sub: Any) -> None:
    p = sub.add_parser("verify", help="check a results bundle (lens export, or lens claims check "
                                      "--bundle): content hashes, completeness, the dataset's "
                                      "hash")
    p.add_argument("bundle", type=Path, metavar="BUNDLE", help="a .tar.gz or .zip bundle")
    p.add_argument("--digest", metavar="HEX", default=None,
                   help="the digest published with the result: the bundle must carry it")
    p.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    claims = verify_claims_bundle(args.bundle, args.digest)
    if claims is not None:
        return _claims_verdict(args.bundle, claims)
    result = verify_bundle(args.bundle, args.digest)
    m = result.manifest
    if result.ok and m is not None:
        judges = ", ".join(f"{_shown(j)} ({result.verdicts.get(j, 0)} verdicts)"
                           for j in m.judges) or "none"
        print(f"bundle OK: run {_shown(m.run_id)}, {len(m.files)} files, {result.records} "
              f"question records, dataset hash {(m.dataset_hash or 'unknown')[:16]}…, "
              f"judges: {judges}")
        print(f"digest: {m.digest}")
        for warning in result.warnings:
            print(f"warning: {_shown(warning, MAX_MESSAGE_CHARS)}")
        return 0
    print(f"bundle FAILED: {len(result.problems)} problem(s) in {_shown(str(args.bundle))}")
    for problem in result.problems[:MAX_PROBLEMS_SHOWN]:
        print(f"  {_shown(problem, MAX_MESSAGE_CHARS)}")
    if len(result.problems) > MAX_PROBLEMS_SHOWN:
        print(f"  … and {len(result.problems) - MAX_PROBLEMS_SHOWN} more")
    return 1


def _claims_verdict(path: Path, result: ClaimsVerification) -> int:
    m = result.manifest
    if result.ok and m is not None:
        print(f"claims bundle OK: reader {_shown(m.reader)}, {len(m.files)} files; the bundled "
              f"inputs give the recorded figure ({result.recomputed})")
        print(f"digest: {m.digest}")
        return 0
    print(f"claims bundle FAILED: {len(result.problems)} problem(s) in {_shown(str(path))}")
    for problem in result.problems[:MAX_PROBLEMS_SHOWN]:
        print(f"  {_shown(problem, MAX_MESSAGE_CHARS)}")
    return 1


def _shown(text: str, limit: int = 200) -> str:
    # Everything printed comes from the archive: a control character is shown, a 20 MB run id
    # is cut in the middle.
    return visible(bounded(text, limit))
