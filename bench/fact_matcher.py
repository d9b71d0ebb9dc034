"""Fact matcher quality on the labelled corpus: precision and recall per class.

The corpus (tests/scoring/data/fact_matcher_corpus.jsonl) holds (fact, answer, expected) cases
built from the shipped datasets and the generator's storylines. A case expected to match is a
paraphrase the matcher must accept; one expected not to match is a near-miss it must reject
(another id, date, figure, unit, entity, a denial or the opposite direction). The ``agent``
class holds answers written the way agents write: a finding restated in other words over
several sentences. Cases of the ``holdout`` batch were written after the matcher and not used
to tune it.

    python -m bench.fact_matcher [--batch development|holdout] [--corpus PATH]

This measures quality, not time.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from bench.common import ROOT, md_table
from lens.scoring.text.facts import AnswerText, match_fact

CORPUS = ROOT / "tests" / "scoring" / "data" / "fact_matcher_corpus.jsonl"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def counts(rows: list[dict]) -> dict[str, int]:
    """tp/fn over paraphrases, tn/fp over near-misses."""
    c = {"tp": 0, "fn": 0, "tn": 0, "fp": 0}
    for r in rows:
        got = match_fact(r["fact"], AnswerText(r["answer"])).matched
        if r["expected"]:
            c["tp" if got else "fn"] += 1
        else:
            c["fp" if got else "tn"] += 1
    return c


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.3f} ({num}/{den})" if den else "n/a"


def row(name: str, c: dict[str, int]) -> list[str]:
    return [name, str(sum(c.values())),
            _ratio(c["tp"], c["tp"] + c["fn"]),  # recall: paraphrases accepted
            _ratio(c["tn"], c["tn"] + c["fp"]),  # near-misses rejected
            _ratio(c["tp"], c["tp"] + c["fp"])]  # precision


def report(rows: list[dict]) -> str:
    by_class: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_class[r["class"]].append(r)
    table = [row(name, counts(rs)) for name, rs in sorted(by_class.items())]
    table.append(row("**all**", counts(rows)))
    for batch in sorted({r.get("batch", "") for r in rows} - {""}):
        table.append(row(f"all, {batch} batch", counts([r for r in rows
                                                         if r.get("batch") == batch])))
    header = ["class", "cases", "recall (paraphrases accepted)", "near-misses rejected",
              "precision"]
    return md_table(header, table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--batch", choices=["development", "holdout"], default=None)
    args = ap.parse_args()
    rows = load(args.corpus)
    if args.batch:
        rows = [r for r in rows if r.get("batch") == args.batch]
    print(report(rows))


if __name__ == "__main__":
    main()
