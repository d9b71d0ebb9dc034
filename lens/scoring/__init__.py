"""Scoring in three tiers: mechanical, LLM judge, differential; and the composite.

Entry points: :func:`score_run` (async) and :func:`score_run_sync`; the CLI is ``lens score``.
"""

from lens.scoring.scorer import SCORES_FILE, score_for_config, score_run, score_run_sync

__all__ = ["SCORES_FILE", "score_for_config", "score_run", "score_run_sync"]
