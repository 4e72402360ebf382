"""Architect mode's Codex executor: TASKS.md, the fixed recipe, scope, telemetry."""
