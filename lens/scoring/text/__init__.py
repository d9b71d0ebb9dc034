"""Reading an answer's text without a model: facts, figures, dates, claims, refs."""
