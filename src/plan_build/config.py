"""`.plan-build.yaml`: optional project configuration.

Loaded with `yaml.safe_load` semantics; every key must be known (an unknown or mistyped key
is an error naming its line). Sections are declared in SCHEMA: a dict is a mapping of known
keys, a one-element list is a sequence of that shape, a type is a leaf (float accepts int).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_build.errors import ExitCode, PlanBuildError

FILENAME = ".plan-build.yaml"

SCHEMA: dict[str, Any] = {
    "verify": {
        "commands": [{"name": str, "argv": [str], "timeout": float}],
    },
    "enhance": {"timeout": float},
    "review": {"codex_timeout": float, "coderabbit_timeout": float, "codex_model": str},
    "dispatch": {"byproducts": [str]},
}


@dataclass(frozen=True)
class Config:
    path: Path | None
    data: Mapping[str, Any] = field(default_factory=dict)

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node


def _bad(path: Path, line: int, what: str) -> PlanBuildError:
    return PlanBuildError(
        f"{path}:{line}: {what}",
        f"fix that line of {FILENAME} (see docs/USER_MANUAL.md#configuration)",
        code=ExitCode.USAGE,
    )


def _check(node: Any, schema: Any, path: Path, where: str) -> None:
    import yaml

    line = node.start_mark.line + 1
    if isinstance(schema, dict):
        if not isinstance(node, yaml.MappingNode):
            raise _bad(path, line, f"{where or 'the file'} must be a mapping")
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            here = f"{where}.{key}" if where else str(key)
            if key in seen:
                raise _bad(path, key_node.start_mark.line + 1, f"duplicate key {here}")
            seen.add(key)
            if key not in schema:
                known = ", ".join(sorted(schema))
                raise _bad(
                    path, key_node.start_mark.line + 1, f"unknown key {here} (known: {known})"
                )
            _check(value_node, schema[key], path, here)
    elif isinstance(schema, list):
        if not isinstance(node, yaml.SequenceNode):
            raise _bad(path, line, f"{where} must be a list")
        for i, item in enumerate(node.value):
            _check(item, schema[0], path, f"{where}[{i}]")
    else:
        if not isinstance(node, yaml.ScalarNode):
            raise _bad(path, line, f"{where} must be a {schema.__name__}")
        value = yaml.safe_load(yaml.serialize(node))
        ok = isinstance(value, schema) or (schema is float and isinstance(value, int))
        if isinstance(value, bool) and schema is not bool:
            ok = False
        if not ok:
            raise _bad(path, line, f"{where} must be a {schema.__name__}, not {value!r}")


def load(root: Path) -> Config:
    path = root / FILENAME
    if not path.is_file():
        return Config(None, {})
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanBuildError(
            f"cannot read {path}: {exc}",
            "fix the file's permissions or encoding",
            code=ExitCode.USAGE,
        ) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise _bad(path, line, f"not valid YAML ({getattr(exc, 'problem', exc)})") from exc
    if node is None:
        return Config(path, {})
    _check(node, SCHEMA, path, "")
    data = yaml.safe_load(text) or {}
    return Config(path, data)
