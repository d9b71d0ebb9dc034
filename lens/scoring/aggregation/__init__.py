"""A group's scores, read from the metric registry: each metric over the group's
questions (aggregate) and the composite that weighs them behind its gate (composite)."""
