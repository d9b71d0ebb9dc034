"""Results bundles: one archive with what a third party needs to audit and re-judge a run
without running the memory again (``lens export``, ``lens verify``, ``lens score BUNDLE``)."""
