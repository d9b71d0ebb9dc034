"""GoldEvidenceBench: long-context state tracking under distractors, as a lens scenario."""
