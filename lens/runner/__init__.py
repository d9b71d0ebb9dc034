"""Agent-and-orchestrator layer: the tool-calling agent that answers through a memory's tools
(``agent``), the scheduling of units over scopes and checkpoints (``orchestrator``) and the
metering model gateway that memory systems call (``gateway``).

Internal: a run is started with ``lens.execute`` or ``lens run``.
"""
