"""What the metric specs compute: per question, per group, and an arm's aggregates."""
