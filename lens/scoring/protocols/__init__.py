"""Scoring protocols: lens's own metrics, or a published benchmark's, exactly as published.

``scoring.protocol`` names one of :data:`PROTOCOL_NAMES`; :func:`scoring_protocol` gives the
protocol of a name, and every protocol scores a run on one path
(:func:`lens.scoring.protocols.run.score_protocol`, called by :func:`lens.scoring.scorer.score`).
A protocol's name, version and judge prompts enter the scoring condition, so ``lens compare``
refuses to put numbers of two protocols side by side.
"""

from __future__ import annotations

from pathlib import Path

from lens.core.errors import UserError
from lens.data.scoring_names import PROTOCOL_NAMES
from lens.scoring.protocols import lens as lens_protocol
from lens.scoring.protocols.base import Protocol
from lens.scoring.protocols.beam import BeamProtocol
from lens.scoring.protocols.locomo import LocomoProtocol
from lens.scoring.protocols.longmemeval import LongMemEvalProtocol
from lens.scoring.protocols.longmemeval_v2 import LongMemEvalV2Protocol
from lens.scoring.protocols.memoryagentbench import MemoryAgentBenchProtocol
from lens.scoring.protocols.run import PublishedProtocol, ScoringProtocol, score_protocol

# The published protocols, by the name scoring.protocol gives them; lens's own is the other.
PROTOCOLS: dict[str, type[Protocol]] = {"locomo": LocomoProtocol,
                                        "longmemeval": LongMemEvalProtocol,
                                        "beam": BeamProtocol,
                                        "memoryagentbench": MemoryAgentBenchProtocol,
                                        "longmemeval-v2": LongMemEvalV2Protocol}


def get_protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]()
    except KeyError:
        raise UserError(f"unknown scoring protocol {name!r}; known: "
                        f"{', '.join(PROTOCOL_NAMES)}") from None


def scoring_protocol(name: str, judge_prompt_file: Path | None = None) -> ScoringProtocol:
    """Protocol ``name``: lens's own metrics, or a published protocol (its judge given the
    prompts of ``judge_prompt_file`` when named)."""
    if name == lens_protocol.NAME:
        return lens_protocol.LensProtocol()
    chosen = get_protocol(name)
    if judge_prompt_file is not None:
        chosen = chosen.with_prompt_file(judge_prompt_file)
    return PublishedProtocol(chosen)


__all__ = ["PROTOCOLS", "PROTOCOL_NAMES", "Protocol", "ScoringProtocol", "get_protocol",
           "score_protocol", "scoring_protocol"]
