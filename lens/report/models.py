"""The old name of :mod:`lens.report.shapes`, kept for code that imports the summary shapes
from here (``lens.report.models.ReportSummary``); new code imports from ``lens.report.shapes``."""

from lens.report.shapes import (
    SUMMARY_SCHEMA,
    AdapterSummary,
    Check,
    CheckpointPoint,
    Comparison,
    ComparisonRow,
    EstimateOut,
    JudgeOut,
    ManyArms,
    ReportSummary,
    RoleUsage,
    SectionOut,
    Status,
    Usage,
)

__all__ = ["SUMMARY_SCHEMA", "AdapterSummary", "Check", "CheckpointPoint", "Comparison",
           "ComparisonRow", "EstimateOut", "JudgeOut", "ManyArms", "ReportSummary", "RoleUsage",
           "SectionOut", "Status", "Usage"]
