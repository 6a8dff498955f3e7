"""``doc-index sync [PROJECT]``: one cache per pinned dependency, at its pinned version.

The project's pins come from its lockfiles (``lockfiles.read_project_pins``: direct
dependencies, or every locked package with ``all_locked``). Each pin's cache is
``NAME@VERSION`` (``package.PackageSpec.key``):

- **keep**: a cache of that name already holds that package at that version (its
  manifest's source record says so), from an index this pin is fetched from, with an
  archive hash the lockfile lists if it lists any (``index_choice.rebuild_reason``): no
  network, no work;
- **build**: otherwise (``package.build_from_package`` through the user's configuration,
  ``index_choice``: an index the project locked against and the user configures asked
  first, the lockfile's hashes checked); a changed pin builds the new version beside the
  old one; a cache from another index or archive is rebuilt in place, and the summary
  says so;
- **refuse**: the project names an index the user's configuration does not
  (``index_choice``): one line, nothing fetched, unless ``trust_project_index`` (given
  by a person running ``sync --trust-project-index``, never by the hook);
- **prune** (``prune=True``): a cache sync made for this project earlier, that no project
  synced into this root pins any more, and that still holds a package (its source record's
  kind): deleted through the store's delete (``cache_marks``' rule). Nothing else is ever
  a candidate: caches built by hand, from folders or git, or for other projects stay.

Which caches sync made for which project is kept in the store's own area
(``store.sync_records``). A project whose folder is gone no longer pins anything.

A failure (a package the index does not have, a network or hash problem) is recorded for
its pin and the others go on; the report lists them at the end.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from .foundation.errors import DocIndexError, UsageError, exit_code_of
from .foundation.printable import printable
from .sources.identity import PACKAGE_KINDS, docs_note
from .sources.index_choice import Choice, IndexChoice, rebuild_reason
from .sources.package import PackageSpec
from .store.index_store import IndexStore
from .store.sync_records import made_for, pinned_by_projects, write_record

KEEP, BUILD, PRUNE, REFUSE = "keep", "build", "prune", "refuse"
# (done, total, the cache being worked on): a door draws progress with it
SyncProgress = Callable[[int, int, str], None]


class SyncItem(NamedTuple):
    """One step of the plan: the cache, the package spec (``pypi:flask==3.1.0``), what
    to do and why; after a run, ``outcome`` (``kept``, ``built``, ``up to date``,
    ``pruned``, ``refused``, ``failed``) and ``message`` (a failure's or a refusal's one
    line, a build's counts); ``note``: what the kept or built cache could not get
    (``identity.docs_note``)."""

    key: str
    spec: str
    action: str
    reason: str
    outcome: str | None = None
    message: str | None = None
    exit_code: int = 0
    note: str | None = None


class SyncReport(NamedTuple):
    """What ``sync`` planned (``dry_run``) or did, in plan order, with the lockfiles read,
    their warnings, and where each ecosystem's packages come from (``indexes``, the
    summary's lines: ``IndexChoice.lines``);
    ``meaning``: what embedding the caches did, or why not (set by the library after the
    sync, ``doc_index.meaning_build``)."""

    project: Path
    files: tuple[str, ...]
    warnings: tuple[str, ...]
    items: tuple[SyncItem, ...]
    dry_run: bool
    indexes: tuple[str, ...] = ()
    meaning: str | None = None

    @property
    def failures(self) -> tuple[SyncItem, ...]:
        """The pins not synced: refused (a project's index) or failed."""
        return tuple(item for item in self.items if item.outcome in ("refused", "failed"))

    def count(self, outcome: str) -> int:
        return sum(1 for item in self.items if (item.outcome or item.action) == outcome)


class _Pinned(NamedTuple):
    key: str
    spec: PackageSpec | None
    text: str
    pin: Any  # lockfiles.Pin
    problem: str | None
    choice: Choice | None = None  # how it is fetched (None: ``problem``)
    why: str = "invalid pin"  # what ``problem`` is


def plan_sync(store: IndexStore, project: Path, *, prune: bool = False,
              all_locked: bool = False, trust_project_index: bool = False,
              ) -> tuple[SyncReport, list[_Pinned]]:
    """The plan (nothing fetched, nothing written): keep / build / refuse per pin, prune
    per cache no project pins any more."""
    from .sources.lockfiles import read_project_pins

    pins = read_project_pins(project, all_locked=all_locked)
    if not pins.files and pins.warnings:  # lockfiles there, each refused (a FIFO, a link out)
        more = f" (and {len(pins.warnings) - 1} more)" if len(pins.warnings) > 1 else ""
        raise UsageError(f"sync: no lockfile read in {printable(str(project))}: "
                         f"{printable(pins.warnings[0])}{more}")
    if not pins.files:
        raise UsageError(f"sync: no lockfile or pinned requirements in "
                         f"{printable(str(project))} (uv.lock, poetry.lock, Pipfile.lock, "
                         "pdm.lock, pylock.toml, requirements*.txt, package-lock.json, "
                         "pnpm-lock.yaml, yarn.lock): give the project's folder")
    choices = IndexChoice(project, trust=trust_project_index)
    pinned = [_pinned(pin, choices) for pin in pins.pins if pin.direct or all_locked]
    held = _package_caches(store)
    items: list[SyncItem] = []
    for entry in pinned:
        items.append(_step(entry, held))
    if prune:
        others = {key for key, projects in pinned_by_projects(store.root).items()
                  if any(p != os.fsdecode(project) for p in projects)}
        wanted = {entry.key for entry in pinned} | others
        made = made_for(store.root, project)
        for key in sorted(made - wanted):
            if key in held:
                items.append(SyncItem(key, held[key].spec, PRUNE, "no project pins it"))
    indexes = tuple(choices.lines({entry.pin.ecosystem for entry in pinned}))
    report = SyncReport(project, pins.files, pins.warnings, tuple(items), True, indexes)
    return report, pinned


def _pinned(pin: Any, choices: IndexChoice) -> _Pinned:
    from .sources.package import parse_spec

    sep = "==" if pin.ecosystem == "pypi" else "@"
    text = f"{pin.ecosystem}:{pin.name}{sep}{pin.version}"
    try:
        spec = parse_spec(text)
    except DocIndexError as exc:
        return _Pinned(f"{pin.name}@{pin.version}", None, text, pin, exc.message)
    try:
        choice = choices.for_pin(pin)
    except DocIndexError as exc:  # the user's configuration does not read
        return _Pinned(spec.key, spec, str(spec), pin, exc.message, None, "configuration")
    return _Pinned(spec.key, spec, str(spec), pin, None, choice)


def _step(entry: _Pinned, held: dict[str, _Held]) -> SyncItem:
    if entry.spec is None or entry.choice is None:
        return SyncItem(entry.key, entry.text, BUILD, entry.why, "failed", entry.problem, 1)
    spec, choice = entry.spec, entry.choice
    if choice.refusal is not None:
        return SyncItem(entry.key, str(spec), REFUSE, choice.refusal, "refused",
                        choice.refusal, 1)
    mine = held.get(entry.key)
    if mine is not None and mine[:3] == (str(spec), spec.ecosystem, spec.name):
        why = rebuild_reason(mine.record, choice, entry.pin)
        if why is None:
            return SyncItem(entry.key, str(spec), KEEP, "cached at this version")
        return SyncItem(entry.key, str(spec), BUILD, why)
    others = sorted(k for k, held_one in held.items()
                    if held_one[1:3] == (spec.ecosystem, spec.name) and k != entry.key)
    reason = f"pin changed; {', '.join(others)} stays beside it" if others else "not cached"
    return SyncItem(entry.key, str(spec), BUILD, reason)


class _Held(NamedTuple):
    """A cache holding a package: its spec text, ecosystem, package name, source record."""

    spec: str
    ecosystem: str
    name: str
    record: dict[str, Any]


def _package_caches(store: IndexStore) -> dict[str, _Held]:
    """Each cache holding a package, by name."""
    held: dict[str, _Held] = {}
    for key in store.list_keys():
        record = store.source_record(key)
        if not isinstance(record, dict) or record.get("kind") not in PACKAGE_KINDS:
            continue
        package, version = record.get("package"), record.get("ref")
        if isinstance(package, str) and isinstance(version, str):
            spec = PackageSpec(record["kind"], package, version)
            held[key] = _Held(str(spec), spec.ecosystem, package, record)
    return held


def run_sync(store: IndexStore, project: Path, *, dry_run: bool = False, prune: bool = False,
             all_locked: bool = False, progress: SyncProgress | None = None,
             max_bytes: int | None = None, trust_project_index: bool = False) -> SyncReport:
    """Plan, then (unless ``dry_run``) build and prune; every pin's outcome is in the
    report, a failure or a refusal does not stop the others. ``trust_project_index``:
    accept the indexes the project names (``index_choice``); only for a person running
    ``sync`` by hand, never the hook."""
    project = project.resolve()
    if not project.is_dir():
        raise UsageError(f"sync: {printable(str(project))} is not a folder: give the project "
                         "folder that holds its lockfiles")
    plan, pinned = plan_sync(store, project, prune=prune, all_locked=all_locked,
                             trust_project_index=trust_project_index)
    if dry_run:
        return plan
    by_key = {entry.key: entry for entry in pinned}
    done: list[SyncItem] = []
    for n, item in enumerate(plan.items):
        if progress is not None:
            progress(n, len(plan.items), item.key)
        done.append(_do(store, project, item, by_key.get(item.key), max_bytes))
    if progress is not None:
        progress(len(plan.items), len(plan.items), "")
    _remember(store.root, project, [i for i in done if i.action != PRUNE], done)
    return plan._replace(items=tuple(done), dry_run=False)


def _do(store: IndexStore, project: Path, item: SyncItem, entry: _Pinned | None,
        max_bytes: int | None) -> SyncItem:
    if item.outcome is not None:  # failed in the plan already
        return item
    if item.action == KEEP:
        return item._replace(outcome="kept", note=docs_note(store.source_record(item.key)))
    try:
        if item.action == PRUNE:
            store.delete_index(item.key)
            return item._replace(outcome="pruned")
        assert entry is not None and entry.choice is not None
        from .build import build_from_package
        from .sources.walk import DEFAULT_MAX_BYTES

        report = build_from_package(store, item.spec, config=entry.choice.config,
                                    hashes=entry.pin.hashes,
                                    max_bytes=max_bytes or DEFAULT_MAX_BYTES)
    except DocIndexError as exc:
        return item._replace(outcome="failed", message=exc.message, exit_code=exit_code_of(exc))
    files = len(report.added) + len(report.changed) + len(report.unchanged)
    outcome = "built" if report.written else "up to date"
    notes = [entry.choice.note] if entry.choice.note else []
    if item.reason not in ("not cached",) and not item.reason.startswith("pin changed"):
        notes.append(item.reason)  # a cache from another index or archive, rebuilt
    return item._replace(outcome=outcome, message="; ".join(
        [f"{files} files, {report.sections} sections", *notes]),
        note=docs_note(store.source_record(item.key)))


def _remember(root: Path, project: Path, pinned: list[SyncItem], done: list[SyncItem]) -> None:
    """Record what this project pins now and what sync made for it (``sync_records``)."""
    made = made_for(root, project)
    made |= {i.key for i in pinned if i.outcome in ("kept", "built", "up to date")}
    made -= {i.key for i in done if i.outcome == "pruned"}
    write_record(root, project, {i.key for i in pinned}, made)


__all__ = ["BUILD", "KEEP", "PRUNE", "REFUSE", "SyncItem", "SyncReport", "plan_sync", "run_sync"]
