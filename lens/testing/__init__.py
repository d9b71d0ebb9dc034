"""Tools for adapter authors: the conformance suite, for pytest and for ``lens adapters check``.

- :class:`AdapterConformance`: subclass it in a pytest module and override ``make_adapter``.
- :func:`run_conformance`: run every check on a factory, get a list of :class:`CheckResult`.
"""

from lens.testing.conformance import (
    CHECKS,
    AdapterFactory,
    CheckResult,
    Skip,
    corpus,
    run_check,
    run_conformance,
)
from lens.testing.suite import AdapterConformance

__all__ = [
    "CHECKS",
    "AdapterConformance",
    "AdapterFactory",
    "CheckResult",
    "Skip",
    "corpus",
    "run_check",
    "run_conformance",
]
