"""The contract suite: plan-build against the real Claude Code and Codex CLIs (opt in with
`pytest -m contract`)."""
