"""What every room of the report stands on: the run as a report reads it (data) and
the shapes of summary.json (shapes, and the judge panel's part in judge_shapes)."""
