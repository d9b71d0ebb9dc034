"""Config and data layer: the run config a user writes, the LENS dataset format, the agent's
prompts, standing context, the dataset generator (``datagen``) and the importers of published
benchmarks (``importers``).

Internal: users reach ``RunConfig``, ``load_config``, ``Dataset`` and ``load_dataset`` through
``lens`` itself.
"""
