"""Scoring in three tiers: mechanical, LLM judge, differential; and the composite."""
