"""The numbers a report states: estimates with their intervals (estimates, and the
group statistics' in groupstats), paired comparisons of arms and their verdicts (arm_comparison,
verdicts), judge sensitivity (judges), the sequential verdict read back (sequential), the frontier,
each arm between floor and ceiling, the estimate beside the spend (plan_spend) and latency measured
with warm caches (latency_warmth)."""
