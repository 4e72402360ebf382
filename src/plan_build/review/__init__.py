"""codex-review-compatible review workflows.

Workflows live under `.claude/codex-review/workflows/<id>/` in exactly the layout the public
codex-review plugin uses, so a user can switch tools mid-workflow. The modules:

- `layout`      paths, workflow ids and the project root
- `workflowfile` `workflow.json` (load, validate, save)
- `findings`    `[SEVERITY-N]` tags, decisions, review validity
- `ledger`      `decisions.tsv` (byte-preserving upsert, counts)
- `steps`       the derived step of the current round
- `resolution`  which workflow a command acts on
- `plans`       the session's native plan and `artifacts/plan.md` seeding
- `lock`        the per-workflow `.lock/pid` directory
- `codex`, `coderabbit`, `reviewers`  running the reviewers and reading their output
- `prompts`     rendering the Codex prompts
- `rounds`      one review round, start to finish
- `transitions` approve, repeat, done, advance
- `report`      status, summary and doctor output
- `roundfiles`  plan-build's per-round files (how a round was reviewed, its approval)
- `approval`    what other steps (commit) ask: is the current change approved?
- `commands`    the steps the `review.*` tasks call
"""
