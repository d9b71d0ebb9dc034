"""Scoring protocols: lens's own metrics, or a published benchmark's, exactly as published.

``scoring.protocol: lens | locomo | longmemeval | beam | memoryagentbench | longmemeval-v2``.
A protocol's name, version and judge prompts enter the scoring condition, so ``lens compare``
refuses to put numbers of two protocols side by side.
"""

from __future__ import annotations

from lens.core.errors import UserError
from lens.scoring.protocols.base import Protocol
from lens.scoring.protocols.beam import BeamProtocol
from lens.scoring.protocols.locomo import LocomoProtocol
from lens.scoring.protocols.longmemeval import LongMemEvalProtocol
from lens.scoring.protocols.longmemeval_v2 import LongMemEvalV2Protocol
from lens.scoring.protocols.memoryagentbench import MemoryAgentBenchProtocol

PROTOCOLS: dict[str, type[Protocol]] = {"locomo": LocomoProtocol,
                                        "longmemeval": LongMemEvalProtocol,
                                        "beam": BeamProtocol,
                                        "memoryagentbench": MemoryAgentBenchProtocol,
                                        "longmemeval-v2": LongMemEvalV2Protocol}
PROTOCOL_NAMES = ("lens", *PROTOCOLS)


def get_protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]()
    except KeyError:
        raise UserError(f"unknown scoring protocol {name!r}; known: "
                        f"{', '.join(PROTOCOL_NAMES)}") from None


__all__ = ["PROTOCOLS", "PROTOCOL_NAMES", "Protocol", "get_protocol"]
