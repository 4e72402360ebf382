"""`.plan-build.yaml`: optional project configuration.

Loaded with `yaml.safe_load` semantics; every key must be known (an unknown or mistyped key
is an error naming its line). Sections are declared in SCHEMA: a dict is a mapping of known
keys, a one-element list is a sequence of that shape, a type is a leaf (float accepts int;
Seconds is a finite timeout within bounds; no string may hold a NUL byte).

The file is bounded before it can cost anything: at most MAX_BYTES read, and while composing
at most MAX_DEPTH levels of nesting and MAX_NODES values, an alias counting as every value it
stands for - so alias amplification is refused long before the document is walked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plan_build.core.errors import ExitCode, PlanBuildError

FILENAME = ".plan-build.yaml"
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 10_000
MAX_SECONDS = 86_400  # one day: any longer timeout is a typo or "never", which is refused


class Seconds(float):
    """A timeout in the schema: a number (YAML int or float), finite, 0 < s <= MAX_SECONDS."""


SCHEMA: dict[str, Any] = {
    "verify": {
        "commands": [{"name": str, "argv": [str], "timeout": Seconds}],
    },
    "enhance": {"timeout": Seconds},
    "review": {"codex_timeout": Seconds, "coderabbit_timeout": Seconds, "codex_model": str},
    "setup": {"marketplaces": {"agentmemory": str, "mattpocock": str}, "memory_wait": Seconds},
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


def _bad(path: Path, line: int, what: str, fix: str | None = None) -> PlanBuildError:
    return PlanBuildError(
        f"{path}:{line}: {what}",
        fix or f"fix that line of {FILENAME} (see docs/USER_MANUAL.md#configuration)",
        code=ExitCode.USAGE,
    )


_LIMITS_FIX = (
    f"{FILENAME} holds a few settings: remove what is not one of them, and write lists out "
    "instead of repeating large YAML aliases (see docs/verify.md#limits)"
)


class _TooBig(Exception):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(what)
        self.line = line
        self.what = what


def _bounded_compose(text: str) -> Any:
    """`yaml.compose` that counts depth and values while composing (aliases counted with every
    value they stand for) and stops at MAX_DEPTH / MAX_NODES with _TooBig."""
    import yaml

    class Loader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0
            self.total = 0
            self.sizes: dict[int, int] = {}  # id(node) -> values in its subtree

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            line = event.start_mark.line + 1
            if self.depth >= MAX_DEPTH:
                raise _TooBig(line, f"nested deeper than {MAX_DEPTH} levels")
            before = self.total
            self.depth += 1
            try:
                node = super().compose_node(parent, index)
            finally:
                self.depth -= 1
            if isinstance(event, yaml.AliasEvent):
                self.total += self.sizes.get(id(node), 1)
            else:
                self.total += 1
                self.sizes[id(node)] = self.total - before
            if self.total > MAX_NODES:
                raise _TooBig(line, f"more than {MAX_NODES:,} values (aliases counted)")
            return node

    loader = Loader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _value(node: Any) -> Any:
    """The Python value of one scalar node, as safe_load would build it."""
    import yaml

    return yaml.constructor.SafeConstructor().construct_object(node)


def _check(node: Any, schema: Any, path: Path, where: str) -> None:
    import yaml

    line = node.start_mark.line + 1
    if isinstance(schema, dict):
        if not isinstance(node, yaml.MappingNode):
            raise _bad(path, line, f"{where or 'the file'} must be a mapping")
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _bad(path, key_node.start_mark.line + 1, f"{where or 'a'} key must be a name")
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
        _check_leaf(node, schema, path, where)


def _check_leaf(node: Any, schema: Any, path: Path, where: str) -> None:
    import yaml

    line = node.start_mark.line + 1
    kind = float if schema is Seconds else schema
    if not isinstance(node, yaml.ScalarNode):
        raise _bad(path, line, f"{where} must be a {kind.__name__}")
    value = _value(node)
    ok = isinstance(value, kind) or (kind is float and isinstance(value, int))
    if isinstance(value, bool) and kind is not bool:
        ok = False
    if not ok:
        raise _bad(path, line, f"{where} must be a {kind.__name__}, not {value!r}")
    if schema is Seconds and not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise _bad(
            path, line, f"{where} must be between 0 and {MAX_SECONDS} seconds, not {value!r}"
        )
    if isinstance(value, str) and "\0" in value:
        raise _bad(path, line, f"{where} must not contain a NUL byte (\\0)")


def load(root: Path) -> Config:
    path = root / FILENAME
    if not path.is_file():
        return Config(None, {})
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            line = raw.count(b"\n") + 1
            size = f"{MAX_BYTES // (1024 * 1024)} MiB"
            raise _bad(path, line, f"the file is larger than {size}", _LIMITS_FIX)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanBuildError(
            f"cannot read {path}: {exc}",
            "fix the file's permissions or encoding",
            code=ExitCode.USAGE,
        ) from exc
    return from_text(text, path)


def from_text(text: str, path: Path) -> Config:
    """The configuration in `text`, checked as `load` checks the file (`path` names it in
    messages): verify reads the one committed at the session's baseline this way."""
    import yaml

    try:
        node = _bounded_compose(text)
    except _TooBig as exc:
        raise _bad(path, exc.line, f"the configuration is {exc.what}", _LIMITS_FIX) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise _bad(path, line, f"not valid YAML ({getattr(exc, 'problem', exc)})") from exc
    if node is None:
        return Config(path, {})
    _check(node, SCHEMA, path, "")
    data = yaml.constructor.SafeConstructor().construct_document(node) or {}
    return Config(path, data)
