"""docs/ARCHITECTURE.md names every module's job, and no module grows long without a reason."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "plan_build"
LONG = 420  # "about 400 lines": past this a module says why in its docstring
REASON = "over 400 lines on purpose"


def modules() -> dict[str, set[str]]:
    """Package folder ('' for the top level) -> its module names."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        folder = path.parent.relative_to(PACKAGE).as_posix()
        found.setdefault("" if folder == "." else folder, set()).add(path.name)
    return found


def documented() -> dict[str, set[str]]:
    """The Modules section: each `**label**` block lists `name.py` lines for one folder."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    listed: dict[str, set[str]] = {}
    folder = ""
    for line in section.splitlines():
        label = re.match(r"\*\*([a-z ]+?)/?\*\*", line)
        if label:
            name = label.group(1)
            folder = name if (PACKAGE / name).is_dir() else ""
            continue
        entry = re.match(r"([a-z_]+\.py) ", line)
        if entry:
            listed.setdefault(folder, set()).add(entry.group(1))
    return listed


def test_every_module_is_named_once_in_the_architecture_page_under_its_folder() -> None:
    assert documented() == modules()


def test_a_module_past_about_400_lines_says_why_in_its_docstring() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if REASON not in doc.lower():
            unexplained.append(f"{path.relative_to(PACKAGE)} ({text.count(chr(10))} lines)")
    assert unexplained == []


def test_no_module_reaches_plan_build_by_a_name_the_layer_contract_cannot_see() -> None:
    """An `importlib.import_module("plan_build.…")` is an import the import-linter contract
    never sees; a needed dependency across layers goes in its ignore list with the reason."""
    hidden = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            arg = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(arg, ast.Constant)
                and str(arg.value).startswith("plan_build")
            ):
                hidden.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {arg.value}")
    assert hidden == []


ENTRY = {"main", "program", "outcomes", "__main__"}


def contract_layers() -> list[set[str]]:
    """The names in each layer of the import-linter `layers` contract, top first."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"
    ]
    return [set(re.split(r"\s*[:|]\s*", layer.strip())) for layer in layers]


def test_the_layers_are_the_folders_and_the_entry_modules_lie_at_the_top() -> None:
    """Someone reading the tree sees the layers: every module at the package's top is an entry
    module, every folder is one layer (or one feature of the features layer), and the contract
    names exactly those, so a new module has to choose its folder."""
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    layers = contract_layers()
    assert top == ENTRY
    assert layers[0] == ENTRY
    assert layers[-1] == {"core"}
    assert set().union(*layers[1:]) == folders


def test_tests_take_their_helpers_from_support_and_conftest_holds_fixtures_only() -> None:
    """A helper is imported from tests/support/; conftest.py is pytest's, not a library."""
    tests = ROOT / "tests"
    users = [
        str(path.relative_to(ROOT))
        for path in sorted([*tests.rglob("*.py"), *(ROOT / "bench").rglob("*.py")])
        if re.search(
            r"^\s*(from tests\.conftest import|import tests\.conftest)", path.read_text(), re.M
        )
    ]
    assert users == []
    tree = ast.parse((tests / "conftest.py").read_text())
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        or (
            isinstance(node, ast.FunctionDef)
            and not node.name.startswith("pytest_")
            and not any("fixture" in ast.unparse(d) for d in node.decorator_list)
            and not node.name.startswith("_")
        )
    ]
    assert defined == [], f"helpers defined in conftest.py (move them to tests/support/): {defined}"
