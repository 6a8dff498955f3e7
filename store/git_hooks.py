"""``doc-index hook install|uninstall [REPO]``: rebuild a checkout's cache after pull.

Installs ``post-merge`` (``git pull``, ``git merge``), ``post-checkout`` (``git checkout``,
``git switch``) and ``post-rewrite`` (``git rebase``, ``git commit --amend``) into the
hooks directory git uses for the checkout (``core.hooksPath`` respected). Each hook is a
small ``sh`` wrapper that

1. runs the hook that was there before, if any, with the same arguments and stdin (it was
   moved aside to ``<hook>.doc-index-orig``) and keeps its exit status as the hook's;
2. starts, in the background and from ``/``, this installation's Python (absolute path)
   in isolated mode, ``python -I -m doc_index.store.git_hooks run``: the work tree is
   never on ``sys.path`` (``-I`` leaves out the current directory for ``-m`` on every
   supported Python: 3.11+ through ``-P``, which ``-I`` implies; 3.10 because isolated
   mode skips computing ``sys.path[0]``), so a pulled ``argparse.py`` or
   ``doc_index/__init__.py`` is never imported. It takes a per-checkout lock and runs the
   library's incremental local-directory build of the checkout (``local_source``, not the
   CLI), the same build as ``doc-index build <checkout> --root <root>``.
   Output goes to ``<git-dir>/doc-index-hook.log``; nothing it does can fail or slow the
   user's git command. ``DOC_INDEX_HOOK=0`` in the environment skips it.

Installing twice changes nothing; uninstall puts back exactly what was there (the
previous hook file itself, moved back) and removes the log and lock.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import describe, exit_code_of
from ..printable import printable
from .git_run import run_git
from .git_source import GitSourceError
from .lock import BuildLock

HOOKS = ("post-merge", "post-checkout", "post-rewrite")
MARKER = "# doc-index-hook: v1"
ORIG_SUFFIX = ".doc-index-orig"
CREATED_MARK = ".doc-index-created"  # in a hooks directory that install had to create
LOG_NAME = "doc-index-hook.log"
LOCK_NAME = "doc-index-hook.lock"
LOG_MAX_BYTES = 1024 * 1024
LOG_KEEP_BYTES = 256 * 1024

_WHEN = {
    "post-merge": "git pull / git merge",
    "post-checkout": "git checkout / git switch",
    "post-rewrite": "git rebase / git commit --amend",
}
@dataclass(frozen=True)
class Checkout:
    top: Path  # the work tree
    git_dir: Path  # this work tree's git directory (log and lock live here)
    hooks: Path  # where git looks for hooks (core.hooksPath or <common-dir>/hooks)


def _git(cwd: Path, *args: str) -> tuple[int, str, str]:
    try:
        done = run_git(args, cwd=cwd, read_hooks_path=True)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    return done.status, done.out.decode("utf-8", "surrogateescape").strip(), done.err


_NOT_A_CHECKOUT = "{what}: {repo}; give the path of a git work tree"


def locate(repo: Path) -> Checkout:
    """The checkout containing ``repo`` and the hooks directory git uses for it."""
    repo = Path(os.path.abspath(repo.expanduser()))
    # Not a checkout: the user named the wrong path, a usage error (exit 1).
    if not repo.is_dir():
        raise GitSourceError(_NOT_A_CHECKOUT.format(what="not a git repository", repo=repo),
                             "usage")
    status, inside, _ = _git(repo, "rev-parse", "--is-inside-work-tree")
    if status != 0 and _git(repo, f"--git-dir={repo}", "rev-parse")[0] != 0:
        # (the runner does not discover a bare repository: asked by name it is one)
        raise GitSourceError(_NOT_A_CHECKOUT.format(what="not a git repository", repo=repo),
                             "usage")
    if inside != "true":
        raise GitSourceError(_NOT_A_CHECKOUT.format(
            what="not a git checkout (bare repository or git directory)", repo=repo), "usage")
    status, top, err = _git(repo, "rev-parse", "--show-toplevel")
    if status != 0 or not top:
        raise GitSourceError(f"cannot find the work tree of {repo}: {err.strip()}")
    top_path = Path(top)
    status, out, err = _git(top_path, "rev-parse", "--absolute-git-dir", "--git-path", "hooks")
    lines = out.splitlines()
    if status != 0 or len(lines) != 2:
        raise GitSourceError(f"cannot find the hooks directory of {repo}: {err.strip()}")
    hooks = Path(os.path.abspath(top_path / os.path.expanduser(lines[1])))
    return Checkout(top=top_path, git_dir=Path(lines[0]), hooks=hooks)


def hook_script(hook: str, python: str, root: Path) -> str:
    """The wrapper installed as ``hook``: the previous hook first, then the build."""
    q = shlex.quote
    return f"""#!/bin/sh
{MARKER}
# After {_WHEN[hook]}: rebuild this checkout's doc-index cache, in the background.
# Installed by `doc-index hook install`; `doc-index hook uninstall` restores what was
# here before (a previous hook is kept as {hook}{ORIG_SUFFIX} and runs first).
# Log: <git-dir>/{LOG_NAME}. Set DOC_INDEX_HOOK=0 to skip the build.
status=0
previous="$(dirname -- "$0")/{hook}{ORIG_SUFFIX}"
if [ -x "$previous" ]; then
    "$previous" "$@" || status=$?
fi
if [ "${{DOC_INDEX_HOOK:-1}}" != 0 ]; then
    log="$(git rev-parse --absolute-git-dir 2>/dev/null)/{LOG_NAME}" || log=/dev/null
    # Isolated (-I): neither this work tree nor PYTHON* variables reach sys.path, and the
    # build starts from / so no pulled module can shadow doc-index's or the stdlib's.
    checkout="$(pwd -P)"
    (cd / && exec {q(python)} -I -m doc_index.store.git_hooks run --hook {hook} \\
        --root {q(str(root))} --checkout "$checkout" >>"$log" 2>&1 </dev/null) &
fi
exit $status
"""


def is_ours(path: Path) -> bool:
    """True when ``path`` is a hook wrapper written by ``install_hooks``."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return MARKER.encode() in head


def _absolute_root(root: Path | None) -> Path:
    from .roots import default_root

    chosen = root if root is not None else default_root()
    return Path(os.path.abspath(chosen.expanduser()))


def _write_hook(path: Path, text: str, keep_previous_as: Path | None) -> None:
    """Write the wrapper atomically; move the previous hook (if any) to
    ``keep_previous_as`` without a moment where no hook exists."""
    tmp = path.with_name(f".{path.name}.doc-index-tmp.{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o755)
        if keep_previous_as is not None:
            try:
                os.link(path, keep_previous_as, follow_symlinks=False)
            except OSError:
                os.rename(path, keep_previous_as)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def install_hooks(repo: Path, root: Path | None) -> list[str]:
    """Install or refresh the three hooks; the lines to report."""
    checkout = locate(repo)
    python = os.path.abspath(sys.executable)
    text = {hook: hook_script(hook, python, _absolute_root(root)) for hook in HOOKS}
    plan: list[tuple[str, str]] = []
    for hook in HOOKS:  # decide everything first: a conflict must change nothing
        path = checkout.hooks / hook
        orig = checkout.hooks / (hook + ORIG_SUFFIX)
        if is_ours(path):
            same = path.read_text(encoding="utf-8", errors="replace") == text[hook]
            plan.append((hook, "unchanged" if same else "updated"))
        elif os.path.lexists(orig):
            raise GitSourceError(
                f"cannot install {hook}: {orig} is left from an earlier install and {path} "
                "is not doc-index's; move one of them away first"
            )
        elif os.path.lexists(path):
            plan.append((hook, "chained"))
        else:
            plan.append((hook, "installed"))
    if not checkout.hooks.is_dir():
        checkout.hooks.mkdir(parents=True)
        (checkout.hooks / CREATED_MARK).write_text(
            "created by `doc-index hook install`; removed by `doc-index hook uninstall`\n"
        )
    lines = []
    for hook, action in plan:
        path = checkout.hooks / hook
        if action == "updated" or action == "installed":
            _write_hook(path, text[hook], None)
        elif action == "chained":
            _write_hook(path, text[hook], checkout.hooks / (hook + ORIG_SUFFIX))
        detail = f" (previous hook kept as {hook}{ORIG_SUFFIX})" if action == "chained" else ""
        lines.append(f"{hook}: {action}{detail} -> {path}")
    if not _is_inside(checkout.hooks, checkout.top) and not _is_inside(checkout.hooks,
                                                                         checkout.git_dir):
        lines.append(f"note: core.hooksPath {checkout.hooks} is outside this repository; "
                     "every repository using it gets these hooks")
    return lines


def uninstall_hooks(repo: Path) -> list[str]:
    """Remove the hooks, putting back each previous hook exactly as it was."""
    checkout = locate(repo)
    lines = []
    for hook in HOOKS:
        path = checkout.hooks / hook
        orig = checkout.hooks / (hook + ORIG_SUFFIX)
        if is_ours(path):
            if os.path.lexists(orig):
                os.replace(orig, path)
                lines.append(f"{hook}: restored the previous hook -> {path}")
            else:
                path.unlink()
                lines.append(f"{hook}: removed")
        elif os.path.lexists(path) or os.path.lexists(orig):
            lines.append(f"{hook}: left alone (not installed by doc-index)")
        else:
            lines.append(f"{hook}: not installed")
    mark = checkout.hooks / CREATED_MARK
    if mark.is_file() and sorted(os.listdir(checkout.hooks)) == [CREATED_MARK]:
        mark.unlink()
        checkout.hooks.rmdir()
    lock = BuildLock(checkout.git_dir / LOCK_NAME)
    if not lock.held_elsewhere():
        for leftover in (checkout.git_dir / LOCK_NAME, checkout.git_dir / LOG_NAME):
            if leftover.exists():
                leftover.unlink()
    return lines


def _is_inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


# --- what a hook runs -----------------------------------------------------------------------

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


def run_hook(hook: str, root: Path, checkout_dir: Path) -> int:
    """Run by an installed hook (in the background, output to the hook log): build the
    checkout git ran the hook in, one build at a time per checkout. git's own variables
    (``GIT_DIR``, ...) never reach the build's git calls: ``git_run`` drops them."""
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # outlive the terminal
    try:
        checkout = locate(checkout_dir)
    except GitSourceError as exc:
        print(f"[{_stamp()}] {hook}: error: {describe(exc)}", flush=True)
        return exit_code_of(exc)
    _trim_log(checkout.git_dir / LOG_NAME)
    # Builds of one checkout run one after the other and each scans after taking the
    # lock, so the last hook of a rebase or of quick successive pulls indexes the final tree.
    with BuildLock(checkout.git_dir / LOCK_NAME, timeout=3600.0):
        argv = ["build", str(checkout.top), "--root", str(root)]
        print(f"[{_stamp()}] {hook}: doc-index {printable(shlex.join(argv))}", flush=True)
        rc = _build(checkout.top, root)
        print(f"[{_stamp()}] {hook}: finished (exit {rc})", flush=True)
    return rc


def _build(top: Path, root: Path) -> int:
    """The incremental build of the checkout, through the library (never the CLI), as
    ``doc-index build <checkout> --root <root>``: the summary or one ``error:`` line in
    the log, and the exit code ``build`` would give."""
    from .index_store import IndexStore
    from .local_source import build_from_directory, summary_lines

    started = time.perf_counter()
    try:
        report = build_from_directory(IndexStore(root), top)
    except Exception as exc:  # the log says what happened; the hook never fails git
        print(f"error: {describe(exc)}", flush=True)
        return exit_code_of(exc)
    for line in summary_lines(report, time.perf_counter() - started):
        print(line, flush=True)
    return 0


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m doc_index.store.git_hooks")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="what an installed hook runs")
    run.add_argument("--hook", default="hook")
    run.add_argument("--root", type=Path, required=True)
    run.add_argument("--checkout", type=Path, default=None,
                     help="the work tree git ran the hook in (default: the current directory)")
    args: Any = parser.parse_args(argv)
    return run_hook(args.hook, args.root, args.checkout or Path.cwd())


if __name__ == "__main__":
    sys.exit(_main())
