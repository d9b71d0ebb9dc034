"""Run-pipeline layer: ``lens run`` from config to report (``pipeline``), certification runs
(``certify``) and results bundles (``bundle``: ``lens export``, ``lens verify``).

Internal: users call ``lens.execute`` or the CLI.
"""
