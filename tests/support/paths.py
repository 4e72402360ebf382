"""Where the checkout is, for tests that read its files (docs, templates, sources)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

__all__ = ["ROOT"]
