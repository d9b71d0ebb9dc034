"""The old name of :mod:`lens.report.run_comparison`, kept for scripts that import
``compare_runs`` from here; new code uses ``from lens import compare_runs``."""

from lens.report.run_comparison import CompareResult, CompareSummary, compare_runs

__all__ = ["CompareResult", "CompareSummary", "compare_runs"]
