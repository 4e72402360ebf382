"""The release commands as plain steps over a Store: activate, rollback, gc, list, status."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from plan_build.release import (
    check_root,
    checkpoint,
    disk,
    fetch,
    invalid,
    manifest,
    unavailable,
)
from plan_build.release.binding import leases
from plan_build.release.store import ReleaseInfo, Store, os_error
from plan_build.release.validate import validate

if TYPE_CHECKING:
    from plan_build.core.ui import Console
    from plan_build.release.bundle import Built


@dataclass(frozen=True)
class Activation:
    id: str
    digest: str
    version: str
    previous: str | None
    installed: bool  # False when an identical release was already there
    reaped: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "digest": self.digest,
            "version": self.version,
            "previous": self.previous,
            "installed": self.installed,
            "reaped": list(self.reaped),
        }


def activate(store: Store, source: fetch.Source, pin: str | None) -> Activation:
    """Stage, validate, publish and switch to `source`, all under the writers' lock.

    Any failure or interruption before the switch leaves `current` as it was; what was staged
    is removed now, or by the next run if this process was killed.
    """
    check_root(store.root)
    store.current_id()  # a copied install in place of `current` is refused before any write
    store.ensure()
    try:
        with store.locked():
            return _activate_locked(store, source, pin)
    except OSError as exc:  # ENOSPC, EROFS, EACCES … while staging or switching
        raise os_error(exc, store.root, "activate the release") from None


def _activate_locked(store: Store, source: fetch.Source, pin: str | None) -> Activation:
    store.current_id()  # again under the lock: the switch will need a link it can replace
    reaped = tuple(store.reap())
    checkpoint("reaped")
    stage = fetch.stage(source, store.releases, pin)
    checkpoint("staged")
    try:
        checked = validate(stage, where=source.text)
        checkpoint("validated")
        if pin is not None and checked.manifest.digest != pin:
            raise invalid(
                f"digest mismatch for {source.text}: pinned {pin}, got {checked.manifest.digest}",
                "nothing was activated; check the source or the pin",
            )
        installed = store.publish(stage, checked.manifest)
    except BaseException:
        disk.remove_tree(stage)
        raise
    previous = store.switch(checked.manifest.id, action="activate", source=source.text)
    return Activation(
        id=checked.manifest.id,
        digest=checked.manifest.digest,
        version=checked.version,
        previous=previous,
        installed=installed,
        reaped=reaped,
    )


def activate_built(store: Store, built: Built) -> Activation:
    """Activate a bundle just built, pinned to its own digest (`release.build --activate`)."""
    return activate(
        store, fetch.Source("dir", str(built.directory), path=built.directory), built.digest
    )


def running_source() -> tuple[str, Path]:
    """What this plan-build can activate of itself: ("release", its bundle directory) when it
    runs from one, else ("checkout", the checkout) or ("wheel", the installed package) to build."""
    from plan_build.core.resources import CHECKOUT_ROOT, PACKAGE_DIR
    from plan_build.core.runrelease import running_bundle
    from plan_build.release import TEMPLATES, bundle

    own = running_bundle(PACKAGE_DIR)
    if own is not None:
        return "release", own
    if (PACKAGE_DIR / "_data" / TEMPLATES).is_dir() or not bundle.is_checkout(CHECKOUT_ROOT):
        return "wheel", PACKAGE_DIR
    return "checkout", CHECKOUT_ROOT


def activate_running(root: Path, console: Console) -> Activation:
    """Make this plan-build the active release (`setup` on a machine with none): its own
    bundle, or a bundle built from the installed package or checkout in a temporary directory,
    through the same staging, validation and atomic switch as `release.activate`."""
    import tempfile

    store = Store(root, console)
    kind, where = running_source()
    if kind == "release":
        return activate(store, fetch.Source("dir", str(where), path=where), None)
    with tempfile.TemporaryDirectory(prefix="plan-build-build-") as work:
        return activate_built(store, build_installed(Path(work)))


def build_installed(out: Path) -> Built:
    """A bundle of the plan-build this process runs: an installed wheel (its package, skills
    and templates under `_data/`), or the checkout an editable install runs from."""
    from importlib import metadata

    from plan_build.core.resources import CHECKOUT_ROOT, PACKAGE_DIR
    from plan_build.release import TEMPLATES, bundle

    data = PACKAGE_DIR / "_data"
    if not (data / TEMPLATES).is_dir():
        return bundle.build(CHECKOUT_ROOT, out)
    try:
        requirements = metadata.requires("plan-build") or []
    except metadata.PackageNotFoundError:
        raise unavailable(
            f"{PACKAGE_DIR} has no installed plan-build metadata to take dependencies from",
            "reinstall plan-build (pip install plan-build), then rerun",
        ) from None
    tree = bundle.Tree(data, PACKAGE_DIR, list(requirements), frozenset({"_data"}))
    return bundle.build_tree(tree, out)


@dataclass(frozen=True)
class Rollback:
    id: str
    previous: str | None

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "previous": self.previous}


def rollback(store: Store, to: str | None) -> Rollback:
    """Switch back to the previous release (or `to`), re-validating it first."""
    store.ensure()
    with store.locked():
        store.reap()
        current = store.current_id()
        if to is None:
            target = store.previous_id()
            if target is None:
                raise invalid(
                    "there is no earlier release to roll back to",
                    "see plan-build release.list, or activate a bundle",
                )
        else:
            target = store.resolve_id(to)
        if target == current:
            return Rollback(target, current)
        store.verify(target)
        validate(store.releases / target, where=f"release {target}")
        previous = store.switch(target, action="rollback")
    return Rollback(target, previous)


@dataclass
class Collected:
    removed: list[str] = field(default_factory=list)
    freed: int = 0
    kept: dict[str, str] = field(default_factory=dict)  # id → why

    def as_json(self) -> dict[str, object]:
        return {"removed": self.removed, "freed": self.freed, "kept": self.kept}


def gc(store: Store, keep: int) -> Collected:
    """Remove old releases, keeping the current one, every bound one and the `keep` most
    recently active others."""
    if keep < 0:
        from plan_build.core import errors

        raise errors.usage(
            f"--keep must be 0 or more (got {keep})",
            "give a number of releases to keep, e.g. --keep 3; --keep 0 keeps only the current "
            "one and those running plan-builds are bound to",
        )
    store.ensure()
    result = Collected()
    trash: list[Path] = []
    with store.locked():
        store.reap()
        ordered = store.infos({})  # most recently active first
        with store.bind_locked():
            bound = leases(store.root, reap=True)
            current = store.current_id()
            others = [i for i in ordered if i.id != current and i.id not in bound]
            recent = {i.id for i in others[:keep]}
            for info in ordered:
                if info.id == current:
                    result.kept[info.id] = "current"
                elif info.id in bound:
                    pids = ", ".join(str(p) for p in sorted(bound[info.id]))
                    result.kept[info.id] = f"bound by pid {pids}"
                elif info.id in recent:
                    result.kept[info.id] = "recent"
                else:
                    try:
                        trash.append(store.trash(info.id))
                    except OSError as exc:
                        raise os_error(exc, store.releases, "remove old releases") from None
                    result.removed.append(info.id)
                    result.freed += info.size
        for path in trash:  # outside the bind lock: starting runs need not wait for rm -r
            disk.remove_tree(path)
        store.trim_history()
    return result


def listing(store: Store) -> list[ReleaseInfo]:
    check_root(store.root)
    return store.infos(leases(store.root))


@dataclass(frozen=True)
class Status:
    root: Path
    current: ReleaseInfo | None
    releases: int
    size: int

    def as_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "current": self.current.as_json() if self.current else None,
            "releases": self.releases,
            "size": self.size,
        }


def status(store: Store) -> Status:
    check_root(store.root)
    infos = listing(store) if store.releases.is_dir() else []
    current = next((i for i in infos if i.current), None)
    return Status(store.root, current, len(infos), sum(i.size for i in infos))


def check_digest(value: str | None) -> str | None:
    if value is None:
        return None
    digest = manifest.parse_digest(value)
    if digest is None:
        from plan_build.core import errors

        raise errors.usage(
            f"--sha256 must be the 64-hex release digest (got {value!r})",
            "copy the digest printed by plan-build release.build (or release.list --json)",
        )
    return digest


__all__ = [
    "activate",
    "activate_built",
    "activate_running",
    "build_installed",
    "check_digest",
    "gc",
    "listing",
    "rollback",
    "running_source",
    "status",
    "unavailable",
]
