"""Jinja rendering for prompts: strict (an undefined name is an error), no autoescape,
trailing newlines kept. Jinja is imported here only, when a step renders."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError


def fence(text: str, info: str = "text") -> str:
    """`text` inside a backtick fence longer than any backtick run in it, byte for byte."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def render(templates: Path, name: str, context: Mapping[str, Any]) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # noqa: S701 - prompts are Markdown for an agent, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fence"] = fence
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise PlanBuildError(
            f"template {name} is missing from {templates}",
            "reinstall plan-build or activate a complete release (plan-build release.activate)",
            code=ExitCode.PREFLIGHT,
        ) from exc
