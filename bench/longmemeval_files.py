"""LongMemEval's real files, assembled from the public repository hussainzs/Memoria, which
carries the cleaned release one item per file (``evaluations/data/lme_jsons/
<n>_<question_id>.json``, n the item's number of haystack sessions: n <= 6 are the oracle items,
up to about 60 the ``_s`` items, several hundred the ``_m`` items).

    python bench/longmemeval_files.py MEMORIA [--out ../thirdparty/longmemeval]

MEMORIA is a checkout of that repository or its git directory (a bare clone, read with
``git show``). Writes ``longmemeval_oracle.json`` and ``longmemeval_s.json`` (and
``longmemeval_m.json`` when the checkout holds ``_m`` items), each a JSON list of the items in
``question_id`` order, as the release's files are; every item is copied byte for byte, one at a
time, so the 260 MB ``_s`` list never sits in memory. Also copies the MIT licence of the
release (``evaluations/LICENSE``). The files belong beside the project, never in it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ITEMS_DIR = "evaluations/data/lme_jsons"
LICENSE = "evaluations/LICENSE"
_NAME = re.compile(r"^(\d+)_(.+)\.json$")
# The release's three haystack sizes, by sessions per item: oracle (evidence only), _s (about
# 50), _m (about 500).
SETS = (("oracle", 0, 6), ("s", 7, 150), ("m", 151, 10_000))


def _reader(memoria: Path) -> tuple[list[str], Callable[[str], bytes]]:
    """The item file names under ITEMS_DIR and a function reading a path of the repository."""
    if (memoria / ITEMS_DIR).is_dir():
        names = sorted(p.name for p in (memoria / ITEMS_DIR).iterdir())
        return names, lambda rel: (memoria / rel).read_bytes()
    listing = subprocess.run(["git", "--git-dir", str(memoria), "ls-tree", "--name-only",
                              f"HEAD:{ITEMS_DIR}"], capture_output=True, text=True)
    if listing.returncode:
        raise SystemExit(f"{memoria}: neither a checkout with {ITEMS_DIR}/ nor a git directory "
                         f"holding it ({listing.stderr.strip()})")

    def show(rel: str) -> bytes:
        out = subprocess.run(["git", "--git-dir", str(memoria), "show", f"HEAD:{rel}"],
                             capture_output=True)
        if out.returncode:
            raise OSError(out.stderr.decode(errors="replace").strip())
        return out.stdout

    return sorted(listing.stdout.split()), show


def assemble(memoria: Path, out: Path) -> dict[str, tuple[int, int]]:
    """Write the lists; returns, per set, (items written, items the checkout lists but lacks)."""
    names, read = _reader(memoria)
    out.mkdir(parents=True, exist_ok=True)
    by_set: dict[str, list[tuple[str, str]]] = {name: [] for name, _, _ in SETS}
    for name in names:
        m = _NAME.match(name)
        if not m:
            continue
        n = int(m.group(1))
        label = next(s for s, low, high in SETS if low <= n <= high)
        by_set[label].append((m.group(2), name))
    counts: dict[str, tuple[int, int]] = {}
    for label, items in by_set.items():
        if not items:
            continue
        target = out / f"longmemeval_{label}.json"
        tmp = target.with_name(target.name + ".tmp")
        written = missing = 0
        with tmp.open("wb") as fh:
            fh.write(b"[\n")
            for qid, name in sorted(items):
                try:
                    raw = read(f"{ITEMS_DIR}/{name}")
                except OSError:
                    # A snapshot may list its largest files without holding them.
                    missing += 1
                    continue
                item = json.loads(raw)
                if not isinstance(item, dict) or item.get("question_id") != qid:
                    raise SystemExit(f"{name}: not the LongMemEval item {qid!r}")
                fh.write((b",\n" if written else b"") + raw.strip())
                written += 1
            fh.write(b"\n]\n")
        if written:
            tmp.replace(target)
        else:
            tmp.unlink()
        counts[label] = (written, missing)
    try:
        (out / "LICENSE").write_bytes(read(LICENSE))
    except OSError:
        print("warning: the release's LICENSE was not found; add it beside the files",
              file=sys.stderr)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("memoria", type=Path, help="a Memoria checkout or its git directory")
    ap.add_argument("--out", type=Path, default=ROOT.parent / "thirdparty" / "longmemeval")
    args = ap.parse_args()
    if shutil.which("git") is None and not (args.memoria / ITEMS_DIR).is_dir():
        raise SystemExit("git is needed to read a git directory")
    for label, (written, missing) in assemble(args.memoria, args.out).items():
        lacking = f" ({missing} listed but absent from the checkout)" if missing else ""
        print(f"{args.out / f'longmemeval_{label}.json'}: {written} items{lacking}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
