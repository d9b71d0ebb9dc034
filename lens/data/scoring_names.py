"""The names a scoring setting accepts: the one registry of protocol names and of fact-grader
names. The config's fields, the command line's choices, the protocol table
(lens.scoring.protocols) and the fact grader (lens.scoring.grading.fact_grader) read them from
here."""

from __future__ import annotations

from typing import Literal, get_args

# lens's own metrics, or a published benchmark's protocol (docs/datasets.md).
ProtocolName = Literal["lens", "locomo", "longmemeval", "beam", "memoryagentbench",
                       "longmemeval-v2"]
PROTOCOL_NAMES: tuple[str, ...] = get_args(ProtocolName)

# Who decides fact_recall: the phrase matcher, the offline grader (local model), the judge, or
# both (judge grades, matcher kept beside them). lens.scoring.grading.fact_grader says what each
# does.
FactGraderName = Literal["matcher", "local", "judge", "both"]
FACT_GRADERS: tuple[str, ...] = get_args(FactGraderName)
# The graders that ask the judge for each fact's grade (the others need no judge).
JUDGE_GRADERS: frozenset[str] = frozenset({"judge", "both"})
# The fact graders `lens claims check --grader` offers on a publisher's answers (its judges are
# given apart, by --judge), or none.
ClaimsGraderName = Literal["none", "matcher", "local"]
CLAIMS_GRADERS: tuple[str, ...] = get_args(ClaimsGraderName)
