"""Reproducing a published claim: a publisher's own per-question results read in (``readers``,
``mapping``), their figure recomputed with their arithmetic (``arithmetic``, ``assign`` for a
per-category table's columns), the same answers re-scored by lens (``rescore``), the leniency of
each scorer on wrong answers lens builds (``wrong_answers``, ``leniency``), and one table
(``table``, ``output``).

Internal: users call ``lens claims``.
"""
