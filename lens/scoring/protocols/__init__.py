"""Scoring protocols: lens's own metrics, or a published benchmark's, exactly as published.

``scoring.protocol`` names one of :data:`PROTOCOL_NAMES`. Each protocol scores a run on one
path (:func:`protocol_scorer`), called by :func:`lens.scoring.scorer.score`. A protocol's name,
version and judge prompts enter the scoring condition, so ``lens compare`` refuses to put
numbers of two protocols side by side.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from lens.core.errors import UserError
from lens.data.scoring_names import PROTOCOL_NAMES
from lens.scoring.errata import Errata
from lens.scoring.plan import ScoringOutcome, ScoringPlan
from lens.scoring.protocols import lens as lens_protocol
from lens.scoring.protocols.base import Protocol
from lens.scoring.protocols.beam import BeamProtocol
from lens.scoring.protocols.locomo import LocomoProtocol
from lens.scoring.protocols.longmemeval import LongMemEvalProtocol
from lens.scoring.protocols.longmemeval_v2 import LongMemEvalV2Protocol
from lens.scoring.protocols.memoryagentbench import MemoryAgentBenchProtocol
from lens.scoring.protocols.run import score_protocol
from lens.scoring.run_input import RunInput

# The published protocols, by the name scoring.protocol gives them; lens's own is the other.
PROTOCOLS: dict[str, type[Protocol]] = {"locomo": LocomoProtocol,
                                        "longmemeval": LongMemEvalProtocol,
                                        "beam": BeamProtocol,
                                        "memoryagentbench": MemoryAgentBenchProtocol,
                                        "longmemeval-v2": LongMemEvalV2Protocol}
ProtocolScorer = Callable[[RunInput, ScoringPlan, Errata | None, Sequence[str]],
                          Awaitable[ScoringOutcome]]


def get_protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]()
    except KeyError:
        raise UserError(f"unknown scoring protocol {name!r}; known: "
                        f"{', '.join(PROTOCOL_NAMES)}") from None


def protocol_scorer(name: str, judge_prompt_file: Path | None = None) -> ProtocolScorer:
    """How protocol ``name`` scores a run: lens's own metrics, or a published protocol (its
    judge given the prompts of ``judge_prompt_file`` when named)."""
    if name == lens_protocol.NAME:
        return lens_protocol.score_lens
    chosen = get_protocol(name)
    if judge_prompt_file is not None:
        chosen = chosen.with_prompt_file(judge_prompt_file)
    return functools.partial(_published, chosen)


async def _published(protocol: Protocol, run: RunInput, plan: ScoringPlan,
                     errata: Errata | None, notes: Sequence[str]) -> ScoringOutcome:
    return await score_protocol(run, protocol, plan, errata, notes)


__all__ = ["PROTOCOLS", "PROTOCOL_NAMES", "Protocol", "get_protocol", "protocol_scorer"]
