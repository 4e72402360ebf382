"""The explicit context every step receives instead of reading globals.

The repository and its `.plan-build.yaml` are found once per run, on first use (a command
outside a repository never pays for git), and every step after that gets the same answer.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from plan_build.core.interact import Interaction, TerminalInteraction
from plan_build.core.resources import Resources, locate
from plan_build.core.ui import Console

if TYPE_CHECKING:
    from plan_build.core.config import Config
    from plan_build.core.gitrepo import Repo


@dataclass
class Session:
    cwd: Path
    env: dict[str, str]
    console: Console
    ui: Interaction
    resources: Resources
    stdin: TextIO | None = field(default=None)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    _repos: dict[Path, Repo] = field(default_factory=dict, init=False, repr=False)
    _configs: dict[Path, Config] = field(default_factory=dict, init=False, repr=False)

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home())

    @property
    def repo(self) -> Repo:
        """The work tree containing `cwd`, discovered once (a PlanBuildError when there is
        none: not cached, so a repository created by this run is found afterwards)."""
        if self.cwd not in self._repos:
            from plan_build.core.gitrepo import discover

            self._repos[self.cwd] = discover(self.cwd, self.env)
        return self._repos[self.cwd]

    @property
    def config(self) -> Config:
        """The repository's `.plan-build.yaml`, loaded and validated once."""
        root = self.repo.root
        if root not in self._configs:
            from plan_build.core import config

            self._configs[root] = config.load(root)
        return self._configs[root]

    @classmethod
    def from_process(cls) -> Session:
        env = dict(os.environ)
        resources = locate(env)
        if resources.release_path is not None:
            # Bound once: children (and Claude Code, exec'd later) keep this exact release.
            from plan_build.core.runrelease import ENV, hold

            env[ENV] = os.environ[ENV] = str(resources.release_path)
            hold(resources.release_path)
        return cls(
            cwd=Path.cwd(),
            env=env,
            console=Console(),
            ui=TerminalInteraction(),
            resources=resources,
            stdin=sys.stdin,
            stdout=sys.stdout,
        )
