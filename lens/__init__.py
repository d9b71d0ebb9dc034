"""lens: an async evaluation framework for AI memory systems."""

__version__ = "0.1.0"
