"""Whether write-side scoring's screen (``may_hold``: a fact's words looked for in an item's
characters before the item is parsed) ever turns away an item that holds the fact.

For every scope of each dataset, every key fact of its questions is read against every episode
of the scope twice: as the whole episode (a memory that lists raw sessions) and line by line (a
memory that lists short notes). Each pair is decided by :func:`item_holds` on the parsed item and
by the screen; a pair the screen turns away that the item holds is a fault, printed, and the
command exits 1. Also prints how many pairs the screen settles and the CPU seconds of both.

    python -m bench.write_side_screen DATASET.json [DATASET.json ...] [--scopes N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench.common import machine_line
from lens.data.dataset_load import load_dataset_dropping
from lens.scoring.measures.write_side import item_holds, may_hold
from lens.scoring.text.facts import AnswerText, fact_subjects, screen_text


def check(path: Path, scopes: int | None) -> tuple[int, int, int, float, float]:
    """(pairs, pairs screened out, faults, parse seconds, screen seconds) of one dataset."""
    dataset = load_dataset_dropping(path, drop_invalid=True)[0]
    pairs = screened_out = faults = 0
    parse_s = screen_s = 0.0
    for scope in dataset.scopes[:scopes]:
        facts = list(dict.fromkeys(f for q in dataset.questions if q.scope_id == scope.scope_id
                                   for f in q.ground_truth.key_facts))
        rivals = tuple(fact_subjects(facts))
        full = dataset.full_scope(scope.scope_id)
        texts = [e.text for e in full.episodes]
        items = list(dict.fromkeys([*texts, *(ln for t in texts for ln in t.splitlines()
                                              if ln.strip())]))
        for item in items:
            t0 = time.process_time()
            screened = screen_text(item)
            passes = [may_hold(f, screened) for f in facts]
            t1 = time.process_time()
            prepared = AnswerText(item)
            held = [item_holds(f, prepared, item, rivals) for f in facts]
            t2 = time.process_time()
            screen_s += t1 - t0
            parse_s += t2 - t1
            for fact, ok, hold in zip(facts, passes, held, strict=True):
                pairs += 1
                screened_out += not ok
                if hold and not ok:
                    faults += 1
                    print(f"FAULT {path.name} {scope.scope_id}: {fact!r} in {item[:120]!r}")
    return pairs, screened_out, faults, parse_s, screen_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", type=Path, nargs="+")
    parser.add_argument("--scopes", type=int, default=None, help="the first N scopes of each")
    args = parser.parse_args()
    print(machine_line())
    total_faults = 0
    for path in args.datasets:
        pairs, out, faults, parse_s, screen_s = check(path, args.scopes)
        total_faults += faults
        print(f"{path.name}: {pairs} (fact, item) pairs; the screen settles {out} "
              f"({out / max(pairs, 1):.1%}); faults {faults}; CPU parse+match {parse_s:.1f} s, "
              f"screen {screen_s:.2f} s")
    return 1 if total_faults else 0


if __name__ == "__main__":
    sys.exit(main())
