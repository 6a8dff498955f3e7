"""What an installed git hook runs (``doc_index.hooks`` writes the hooks): ``check``, in the
foreground, says in at most one line on git's stderr why the build would be refused, or
that the last one failed; ``run``, in the background, builds the checkout through the
library and logs the summary. Neither ever fails the git command.

``doc_index.store.git_hooks`` runs this module too, for hooks an earlier doc-index
installed (they name that module).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ..foundation.errors import (
    BadSource,
    DocIndexError,
    GitSourceError,
    OtherSource,
    describe,
    exit_code_of,
)
from ..foundation.file_lock import BuildLock
from ..foundation.printable import printable
from ..hooks import (
    FAILED_NAME,
    LOCK_NAME,
    LOG_KEEP_BYTES,
    LOG_MAX_BYTES,
    LOG_NAME,
    WHEN,
    Checkout,
    HookOptions,
    locate,
    lockfile_fingerprint,
    other_name,
    preflight,
    read_fingerprint,
    suggested_fix,
    write_fingerprint,
)


class SyncFailed(DocIndexError):
    """Some packages of the hook's sync failed (the report in the log lists each)."""


def _trim_log(log: Path) -> None:
    """Keep the hook log small: past LOG_MAX_BYTES only the last LOG_KEEP_BYTES stay."""
    try:
        if log.stat().st_size <= LOG_MAX_BYTES:
            return
        with open(log, "r+b") as fh:
            fh.seek(-LOG_KEEP_BYTES, os.SEEK_END)
            tail = fh.read()
            fh.seek(0)
            fh.write(tail)
            fh.truncate()
    except OSError:
        pass


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def _line(cause: str, fix: str, log: Path) -> str:
    """The one line a hook prints on git's stderr."""
    return printable(f"doc-index hook: {cause}; {fix} (log: {log})")


def check_hook(hook: str, root: Path, checkout_dir: Path, options: HookOptions,
               git_dir: Path | None = None) -> int:
    """Run by an installed hook in the foreground, before the build: 1 (and one line on
    stderr, and in the log) when the build would be refused; else 0, after printing the
    failure of the last background build, if one is not reported yet. Anything unexpected
    lets the build run (and report)."""
    try:
        if git_dir is not None and git_dir.is_absolute():  # (the hook knows both: no git)
            checkout = Checkout(checkout_dir, git_dir, git_dir / "hooks")
        else:
            checkout = locate(checkout_dir)
        log = checkout.git_dir / LOG_NAME
        failed = _take_failure(checkout.git_dir)
        refusal = preflight(checkout, root, options)
    except Exception:
        return 0
    if refusal is not None:
        _append(log, f"[{_stamp()}] {hook}: not started: {printable(refusal.cause)}; "
                     f"{refusal.fix}")
        print(_line(f"{refusal.cause}: not rebuilt", refusal.fix, log), file=sys.stderr,
              flush=True)
        return 1
    if failed:
        print(failed, file=sys.stderr, flush=True)
    return 0


def _take_failure(git_dir: Path) -> str | None:
    """The line the last failed background build left, removed once read."""
    path = git_dir / FAILED_NAME
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(4096)
        path.unlink()
    except OSError:
        return None
    return text.strip() or None


def _append(log: Path, line: str) -> None:
    try:
        with open(log, "a", encoding="utf-8", errors="replace") as fh:
            fh.write(line + "\n")
    except OSError:
        pass


def run_hook(hook: str, root: Path, checkout_dir: Path,
             options: HookOptions | None = None) -> int:
    """Run by an installed hook (in the background, output to the hook log): build the
    checkout git ran the hook in, one build at a time per checkout. git's own variables
    (``GIT_DIR``, ...) never reach the build's git calls: ``git_run`` drops them. A
    failure is also left in ``<git-dir>/doc-index-hook.failed`` for the next hook to
    print."""
    options = options or HookOptions()
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # outlive the terminal
    try:
        checkout = locate(checkout_dir)
    except (GitSourceError, BadSource) as exc:
        print(f"[{_stamp()}] {hook}: error: {describe(exc)}", flush=True)
        return exit_code_of(exc)
    _trim_log(checkout.git_dir / LOG_NAME)
    # Builds of one checkout run one after the other and each scans after taking the
    # lock, so the last hook of a rebase or of quick successive pulls indexes the final tree.
    with BuildLock(checkout.git_dir / LOCK_NAME, timeout=3600.0):
        source = options.source(checkout.top)
        argv = ["build", str(source), "--root", str(root)]
        argv += ["--name", options.name] if options.name is not None else []
        print(f"[{_stamp()}] {hook}: doc-index {printable(shlex.join(argv))}", flush=True)
        rc, error = _build(source, root, options.name)
        if error is None:
            rc, error = _sync_if_changed(checkout, root, hook)
        print(f"[{_stamp()}] {hook}: finished (exit {rc})", flush=True)
        _record(checkout, root, options, hook, error)
    return rc


def _sync_if_changed(checkout: Checkout, root: Path, hook: str) -> tuple[int, Exception | None]:
    """``doc-index sync <checkout>`` when its lockfiles changed since the last sync (the
    fingerprint ``hook install`` recorded first); the report in the log. The new
    fingerprint is kept only when every package synced, so a failure is tried again."""
    from ..library import DocIndex
    from ..render.sync_report import sync_lines

    try:
        fingerprint = lockfile_fingerprint(checkout.top)
        before = read_fingerprint(checkout.git_dir)
        if before is None or fingerprint in (before, ""):  # (none: hooks older than sync;
            # "": no lockfile left): nothing to sync, start from here
            if before is None or not fingerprint:
                write_fingerprint(checkout.git_dir, fingerprint)
            return 0, None
        print(f"[{_stamp()}] {hook}: lockfiles changed: doc-index "
              f"{printable(shlex.join(['sync', str(checkout.top), '--root', str(root)]))}",
              flush=True)
        # (never ``trust_project_index``: a pull never chooses where packages come from)
        report = DocIndex(root).sync(checkout.top)
    except Exception as exc:  # the log says what happened; the hook never fails git
        print(f"error: {describe(exc)}", flush=True)
        return exit_code_of(exc), exc
    for line in sync_lines(report):
        print(line, flush=True)
    if report.failures:
        first = report.failures[0]
        return first.exit_code or 1, SyncFailed(
            f"dependency sync: {len(report.failures)} of {len(report.items)} packages "
            f"not synced, first {first.spec}: {first.outcome}: {first.message}")
    write_fingerprint(checkout.git_dir, fingerprint)
    return 0, None


def _record(checkout: Checkout, root: Path, options: HookOptions, hook: str,
            error: BaseException | None) -> None:
    """Leave the line the next hook prints for a failed build; clear it after a good one."""
    path = checkout.git_dir / FAILED_NAME
    if error is None:
        try:
            path.unlink()
        except OSError:
            pass
        return
    if isinstance(error, OtherSource):  # (another build took the name since the check)
        from ..sources.identity import directory_source

        key = options.name or directory_source(options.source(checkout.top).resolve()).key
        fix = suggested_fix(checkout, root, options, name=other_name(key, checkout.top))
    elif isinstance(error, SyncFailed):
        retry = ["doc-index", "sync", str(checkout.top), "--root", str(root)]
        fix = f"to see it again: {printable(shlex.join(retry))}"
    else:
        retry = ["doc-index", "build", str(options.source(checkout.top)), "--root", str(root)]
        retry += ["--name", options.name] if options.name is not None else []
        fix = f"to see it again: {printable(shlex.join(retry))}"
    cause = (f"the cache rebuild after the last {WHEN.get(hook, hook)} ({_stamp()}) "
             f"failed: {describe(error)}")
    line = _line(cause, fix, checkout.git_dir / LOG_NAME)
    try:
        tmp = path.with_name(f"{FAILED_NAME}.{os.getpid()}")
        tmp.write_text(line + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def _build(source: Path, root: Path, name: str | None) -> tuple[int, BaseException | None]:
    """The incremental build of the checkout's folder ``source``, through the library
    (never the CLI), as ``doc-index build <source> --root <root> [--name N]``: the summary
    or one ``error:`` line in the log; the exit code ``build`` would give, and the error."""
    from ..library import DocIndex
    from ..render.build_summary import summary_lines

    started = time.perf_counter()
    try:
        report = DocIndex(root).build(source, name=name)
    except Exception as exc:  # the log says what happened; the hook never fails git
        print(f"error: {describe(exc)}", flush=True)
        return exit_code_of(exc), exc
    for line in summary_lines(report, time.perf_counter() - started):
        print(line, flush=True)
    return 0, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m doc_index.cli.hook_runner")
    sub = parser.add_subparsers(dest="command", required=True)
    for command, text in (("run", "what an installed hook runs in the background"),
                          ("check", "what an installed hook runs first, in the foreground")):
        one = sub.add_parser(command, help=text)
        one.add_argument("--hook", default="hook")
        one.add_argument("--root", type=Path, required=True)
        one.add_argument("--name", default=None)
        one.add_argument("--subdir", default=None)
        one.add_argument("--checkout", type=Path, default=None,
                         help="the work tree git ran the hook in (default: the current "
                              "directory)")
        one.add_argument("--git-dir", default="", help="its git directory, if known")
    args: Any = parser.parse_args(argv)
    options = HookOptions(args.name, args.subdir)
    checkout = args.checkout or Path.cwd()
    if args.command == "check":
        git_dir = Path(args.git_dir) if args.git_dir else None
        return check_hook(args.hook, args.root, checkout, options, git_dir)
    return run_hook(args.hook, args.root, checkout, options)


if __name__ == "__main__":
    sys.exit(main())
