"""plan-build: the deterministic part of a multi-agent coding session."""

__version__ = "0.1.0"
