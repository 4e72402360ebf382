"""Session tasks: plan, architect, preflight, identity, env."""

from __future__ import annotations

from typing import Any

TASKS: list[Any] = []
