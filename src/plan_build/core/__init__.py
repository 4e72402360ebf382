"""core: one home for each shared job (processes, errors, files, locks, signals,
questions, output, time, git, snapshots, tool probes, check commands). It imports
nothing above it (docs/ARCHITECTURE.md "Layers")."""
