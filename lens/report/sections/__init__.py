"""The report's extra sections: the registry that scenarios and plugins add to
(registry) and lens's own: memory cost and latency, retrieval quality, what the memory wrote."""
