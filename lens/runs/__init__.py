"""Models-and-records layer, the run's records: the run directory (``store``), one record per
question (``records``), the condition a run was made under, the agent's budget, batch-save of
results and certification records.

Internal: users reach ``RunStore`` through ``lens`` and read runs through ``lens.plugin_api``.
"""
