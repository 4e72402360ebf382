"""Install the pinned real CLIs (tests/contract/versions.toml) with npm, once, outside the repo.

The install lands in `<cache root>/<key>/`, where the cache root is `$PLAN_BUILD_CONTRACT_CACHE`,
else `$XDG_CACHE_HOME/plan-build-contract`, else `~/.cache/plan-build-contract`, and the key is
a hash of the pinned packages and the platform. A finished install is marked by
`installed.json` and reused by later runs; each run still checks that every binary prints its
pinned `--version` line. Anything wrong (no npm, npm failing, a wrong version) raises
`InstallError`: the suite fails, it never skips.

Run `python -m tests.contract.clis` to install (or find) them and print where they are.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("versions.toml")
NPM_TIMEOUT = 900.0
VERSION_TIMEOUT = 30.0

# The environment as the test run started, before any fixture swaps HOME or XDG_CACHE_HOME
# for a private one: the cache must survive between runs.
ENV_AT_START: Mapping[str, str] = dict(os.environ)


class InstallError(RuntimeError):
    """The pinned CLIs could not be installed or do not answer with their pinned version."""


@dataclass(frozen=True)
class Pin:
    name: str
    package: str
    version: str
    bin: str
    version_line: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


@dataclass(frozen=True)
class Installed:
    directory: Path
    pins: tuple[Pin, ...]
    reused: bool
    seconds: float
    version_lines: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.directory / "node_modules" / ".bin"

    def path(self, name: str) -> Path:
        return self.bin / name

    def summary(self) -> str:
        how = "reused" if self.reused else f"installed in {self.seconds:.0f}s"
        tools = ", ".join(f"{name}: {line!r}" for name, line in self.version_lines.items())
        return f"{tools} ({how}, {self.directory})"


def pins() -> tuple[Pin, ...]:
    data = tomllib.loads(VERSIONS_FILE.read_text(encoding="utf-8"))
    return tuple(
        Pin(name, str(t["package"]), str(t["version"]), str(t["bin"]), str(t["version_line"]))
        for name, t in data.items()
    )


def describe(selected: tuple[Pin, ...] | None = None) -> str:
    return ", ".join(f"{p.name} {p.version} ({p.spec})" for p in selected or pins())


def cache_root(env: Mapping[str, str] = ENV_AT_START) -> Path:
    if env.get("PLAN_BUILD_CONTRACT_CACHE"):
        return Path(env["PLAN_BUILD_CONTRACT_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME", "~"), ".cache")
    return Path(base).expanduser() / "plan-build-contract"


def cache_key(selected: tuple[Pin, ...]) -> str:
    text = "\n".join(sorted(p.spec for p in selected))
    text += f"\n{sys.platform}-{platform.machine()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_dir(env: Mapping[str, str] = ENV_AT_START) -> Path:
    return cache_root(env) / cache_key(pins())


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # a second run waits for the first install
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _npm_env(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    npm_env = dict(env)
    npm_env.update(
        {
            # npm's own cache and logs stay inside the contract cache, away from ~/.npm
            "npm_config_cache": str(root / "npm-cache"),
            "npm_config_logs_dir": str(root / "npm-logs"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
    )
    return npm_env


def version_lines(directory: Path, selected: tuple[Pin, ...]) -> dict[str, str]:
    """`--version` of each installed binary; InstallError when one differs from its pin."""
    lines = {}
    for pin in selected:
        exe = directory / "node_modules" / ".bin" / pin.bin
        if not exe.exists():
            raise InstallError(f"{pin.spec} installed no `{pin.bin}` at {exe}")
        try:
            r = subprocess.run(
                [str(exe), "--version"],
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InstallError(f"`{exe} --version` failed: {exc}") from exc
        first = (r.stdout.strip() or r.stderr.strip()).splitlines()[:1]
        line = first[0] if first else ""
        if r.returncode != 0 or line != pin.version_line:
            raise InstallError(
                f"`{exe} --version` printed {line!r} (exit {r.returncode}); "
                f"versions.toml pins {pin.version_line!r}. Delete {directory} to reinstall."
            )
        lines[pin.name] = line
    return lines


def install(env: Mapping[str, str] = ENV_AT_START, *, echo: bool = False) -> Installed:
    """The pinned CLIs, installed into the cache if they are not there yet."""
    selected = pins()
    root = cache_root(env)
    target = root / cache_key(selected)
    started = time.monotonic()
    with _locked(root):
        marker = target / "installed.json"
        if marker.is_file():
            lines = version_lines(target, selected)
            return Installed(target, selected, True, time.monotonic() - started, lines)
        npm = shutil.which("npm", path=env.get("PATH"))
        if npm is None:
            raise InstallError("npm is not on PATH: the contract suite needs Node.js and npm")
        for stale in root.glob("*.partial-*"):  # left by an interrupted run (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        staging = root / f"{target.name}.partial-{os.getpid()}"
        staging.mkdir(parents=True)
        try:
            return _install_into(
                staging,
                target=target,
                selected=selected,
                root=root,
                env=env,
                npm=npm,
                echo=echo,
                started=started,
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _install_into(
    staging: Path,
    *,
    target: Path,
    selected: tuple[Pin, ...],
    root: Path,
    env: Mapping[str, str],
    npm: str,
    echo: bool,
    started: float,
) -> Installed:
    """npm install into `staging`, check the versions, then move it to `target`."""
    argv = [npm, "install", "--prefix", str(staging), "--no-save", "--loglevel=error"]
    argv += [p.spec for p in selected]
    if echo:
        print("$ " + " ".join(argv), file=sys.stderr)
    try:
        r = subprocess.run(
            argv,
            cwd=staging,
            env=_npm_env(root, env),
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"npm install did not finish within {NPM_TIMEOUT:g}s") from exc
    if r.returncode != 0:
        tail = "\n".join((r.stderr.strip() or r.stdout.strip()).splitlines()[-20:])
        raise InstallError(f"`{' '.join(argv)}` exited {r.returncode}:\n{tail}")
    lines = version_lines(staging, selected)
    shutil.rmtree(target, ignore_errors=True)  # a broken earlier attempt without a marker
    staging.rename(target)
    (target / "installed.json").write_text(
        json.dumps({"packages": [p.spec for p in selected], "version_lines": lines}, indent=2)
        + "\n",
        encoding="utf-8",
    )
    return Installed(target, selected, False, time.monotonic() - started, lines)


def main() -> int:
    try:
        got = install(echo=True)
    except InstallError as exc:
        print(f"contract CLIs: {exc}", file=sys.stderr)
        return 1
    print(f"contract CLIs: {got.summary()}", file=sys.stderr)
    print(got.bin)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
