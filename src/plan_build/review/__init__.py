"""codex-review-compatible review workflows.

Workflows live under `.claude/codex-review/workflows/<id>/` in exactly the layout the public
codex-review plugin uses, so a user can switch tools mid-workflow. The modules:

- `layout`        paths, workflow ids and the project root
- `workflowfile`  `workflow.json` (load, validate, save)
- `findings`      `[SEVERITY-N]` tags, decisions, review validity
- `ledger`        `decisions.tsv` (byte-preserving upsert, counts)
- `steps`         the derived step of the current round
- `resolution`    which workflow a command acts on
- `plans`         the session's native plan and `artifacts/plan.md` seeding
- `lock`          the per-workflow `.lock/pid` directory
- `codex`, `coderabbit`, `reviewers`  running the reviewers and reading their output
- `prompts`       rendering the Codex prompts
- `rounds`        one review round, start to finish
- `roundfiles`    plan-build's per-round files (how a round was reviewed, its approval)
- `gate`          what stands before a round's approval; the ledger sync
- `transitions`   approve, repeat, done, advance
- `report`        status and summary output
- `doctor`        `review.doctor`
- `approval`      what other steps (commit) ask: is the current change approved?
- `runtime`       the review step context
- `access`        how a command reaches its workflow and holds its lock
- `messages`      what a command says about a round
- `commands`      the steps the `review.*` tasks call
"""
