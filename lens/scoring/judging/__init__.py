"""Asking a model for verdicts: the judge, its engine, prompts, panel, batches, calibration."""
