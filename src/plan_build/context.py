"""The explicit context every step receives instead of reading globals."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from plan_build.interact import Interaction, TerminalInteraction
from plan_build.resources import Resources, locate
from plan_build.ui import Console


@dataclass
class Session:
    cwd: Path
    env: dict[str, str]
    console: Console
    ui: Interaction
    resources: Resources
    stdin: TextIO | None = field(default=None)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home())

    @classmethod
    def from_process(cls) -> Session:
        env = dict(os.environ)
        resources = locate(env)
        if resources.release_path is not None:
            # Bound once: children (and Claude Code, exec'd later) keep this exact release.
            from plan_build.runrelease import ENV, hold

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
