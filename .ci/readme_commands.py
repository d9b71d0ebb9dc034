"""Print the commands of the README's first code block, one per line.

CI runs exactly these in a fresh clone (``.ci/run``), so the README and CI cannot drift apart.
A command is one line of the block; blank lines and ``#`` comments are skipped.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def first_block_commands(readme: str) -> list[str]:
    match = _FENCE.search(readme)
    if match is None:
        raise ValueError("the README has no fenced code block")
    lines = [ln.strip() for ln in match.group(1).splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "README.md"
    for command in first_block_commands(path.read_text(encoding="utf-8")):
        print(command)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
