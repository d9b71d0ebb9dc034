"""What the metric specs compute for one question (mechanical, retrieval, the rule from fact
grades to fact_recall) and over a group's questions (differential), and what a memory wrote
(write_side)."""
