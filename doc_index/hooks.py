"""``doc-index hook install|uninstall [REPO]``: rebuild a checkout's cache after pull.

Installs ``post-merge`` (``git pull``, ``git merge``), ``post-checkout`` (``git checkout``,
``git switch``) and ``post-rewrite`` (``git rebase``, ``git commit --amend``) into the
hooks directory git uses for the checkout (``core.hooksPath`` respected). Each hook is a
small ``sh`` wrapper that

1. runs the hook that was there before, if any, with the same arguments and stdin (it was
   moved aside to ``<hook>.doc-index-orig``) and keeps its exit status as the hook's;
2. runs, in the foreground, ``python -I -m doc_index.cli.hook_runner check``: the quick
   checks of what the build would refuse (the cache name holds another source's cache,
   the root is no directory, the subfolder is gone: :func:`preflight`, a few git queries
   and one read of the live manifest's header), and whether the last background build
   failed. Either prints ONE line on git's stderr naming the cause, the fix and the log;
   a refused build is not started. The git command never fails;
3. starts, in the background and from ``/``, ``python -I -m doc_index.cli.hook_runner
   run``, which takes a per-checkout lock and runs the library's incremental build of
   the checkout (or its ``--subdir``) into the cache ``--name`` (else the default name):
   the build ``doc-index build <checkout>[/<subdir>] --root <root> [--name N]`` runs.
   Output goes to ``<git-dir>/doc-index-hook.log``; a failure also goes to
   ``<git-dir>/doc-index-hook.failed``, which the next hook's check prints once.
   Then, when the checkout's lockfiles (``lockfiles.read_project_pins``: uv.lock,
   requirements*.txt, package-lock.json, ...) changed since the last hook (or since
   install: their fingerprint is kept in ``<git-dir>/doc-index-hook.locks``), the
   library's ``sync`` of the checkout into the same root: the caches of the dependencies
   at their new pins (``doc-index sync <checkout> --root <root>``).

Both run this installation's Python (absolute path) in isolated mode from ``/``: the work
tree is never on ``sys.path`` (``-I`` leaves out the current directory for ``-m`` on every
supported Python: 3.11+ through ``-P``, which ``-I`` implies; 3.10 because isolated mode
skips computing ``sys.path[0]``), so a pulled ``argparse.py`` or ``doc_index/__init__.py``
is never imported. ``DOC_INDEX_HOOK=0`` in the environment skips both.

``hook install`` runs the same checks and refuses (nothing installed) what the hook
would refuse. Installing twice changes nothing; installing with other options updates
the hooks; uninstall puts back exactly what was there (the previous hook file itself,
moved back) and removes the log, lock and failure record.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, NamedTuple

from .foundation.errors import (
    BadSource,
    GitSourceError,
    UsageError,
)
from .foundation.file_lock import BuildLock
from .foundation.printable import printable
from .sources.git_run import run_git

HOOKS = ("post-merge", "post-checkout", "post-rewrite")
MARKER = "# doc-index-hook: v2"
_MARKER_PREFIX = b"# doc-index-hook: v"  # any version's wrapper is ours (v1 had no checks)
ORIG_SUFFIX = ".doc-index-orig"
CREATED_MARK = ".doc-index-created"  # in a hooks directory that install had to create
LOG_NAME = "doc-index-hook.log"
LOCK_NAME = "doc-index-hook.lock"
FAILED_NAME = "doc-index-hook.failed"
LOCKS_NAME = "doc-index-hook.locks"  # the fingerprint of the lockfiles at the last sync
LOG_MAX_BYTES = 1024 * 1024
LOG_KEEP_BYTES = 256 * 1024

WHEN = {
    "post-merge": "git pull / git merge",
    "post-checkout": "git checkout / git switch",
    "post-rewrite": "git rebase / git commit --amend",
}


class Checkout(NamedTuple):
    top: Path  # the work tree
    git_dir: Path  # this work tree's git directory (log and lock live here)
    hooks: Path  # where git looks for hooks (core.hooksPath or <common-dir>/hooks)


class HookOptions(NamedTuple):
    """What ``hook install`` was told, as ``build``: the cache's ``name`` (None: the
    default name) and the checkout's folder to index, ``subdir`` (a POSIX path relative to
    the top; None: the whole checkout)."""

    name: str | None = None
    subdir: str | None = None

    def argv(self) -> list[str]:
        out = ["--name", self.name] if self.name is not None else []
        return out + (["--subdir", self.subdir] if self.subdir is not None else [])

    def source(self, top: Path) -> Path:
        return top / self.subdir if self.subdir is not None else top


class Refusal(NamedTuple):
    """Why a hook's build would be refused, and the command that fixes it."""

    cause: str
    fix: str



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
        raise BadSource(_NOT_A_CHECKOUT.format(what="not a git repository", repo=repo))
    status, inside, _ = _git(repo, "rev-parse", "--is-inside-work-tree")
    if status != 0 and _git(repo, f"--git-dir={repo}", "rev-parse")[0] != 0:
        # (the runner does not discover a bare repository: asked by name it is one)
        raise BadSource(_NOT_A_CHECKOUT.format(what="not a git repository", repo=repo))
    if inside != "true":
        raise BadSource(_NOT_A_CHECKOUT.format(
            what="not a git checkout (bare repository or git directory)", repo=repo))
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


def checked_subdir(top: Path, subdir: str | None) -> str | None:
    """``--subdir`` as a POSIX path relative to the checkout's ``top``: a path relative to
    the top, or an absolute one inside it; a folder of the checkout (UsageError
    otherwise). ``.`` or the top itself is the whole checkout (None)."""
    if subdir is None:
        return None
    if not subdir:
        raise UsageError("--subdir is empty: give a folder of the checkout")
    given = Path(subdir).expanduser()
    folder = Path(os.path.realpath(given if given.is_absolute() else top / given))
    real_top = Path(os.path.realpath(top))
    if folder != real_top and real_top not in folder.parents:
        raise UsageError(f"--subdir {printable(subdir)} is not a folder inside the checkout "
                         f"{printable(str(top))}")
    if not folder.is_dir():
        raise UsageError(f"--subdir {printable(subdir)}: no such folder in the checkout "
                         f"{printable(str(top))}")
    relative = folder.relative_to(real_top).as_posix()
    return None if relative == "." else relative


def hook_script(hook: str, python: str, root: Path, options: HookOptions | None = None) -> str:
    """The wrapper installed as ``hook``: the previous hook first, then the quick checks
    in the foreground (at most one line on git's stderr), then the build in the
    background."""
    q = shlex.quote
    given = options.argv() if options is not None else []
    args = " ".join(q(arg) for arg in ["--hook", hook, "--root", str(root), *given])
    return f"""#!/bin/sh
{MARKER}
# After {WHEN[hook]}: rebuild this checkout's doc-index cache, in the background.
# Installed by `doc-index hook install`; `doc-index hook uninstall` restores what was
# here before (a previous hook is kept as {hook}{ORIG_SUFFIX} and runs first).
# Log: <git-dir>/{LOG_NAME}. Set DOC_INDEX_HOOK=0 to skip the build.
status=0
previous="$(dirname -- "$0")/{hook}{ORIG_SUFFIX}"
if [ -x "$previous" ]; then
    "$previous" "$@" || status=$?
fi
if [ "${{DOC_INDEX_HOOK:-1}}" != 0 ]; then
    gitdir="$(git rev-parse --absolute-git-dir 2>/dev/null)" || gitdir=
    log=/dev/null
    [ -n "$gitdir" ] && log="$gitdir/{LOG_NAME}"
    # Isolated (-I): neither this work tree nor PYTHON* variables reach sys.path, and
    # doc-index starts from / so no pulled module can shadow doc-index's or the stdlib's.
    checkout="$(pwd -P)"  # (git runs a hook at the top of the work tree)
    # First the quick checks (would the build be refused? did the last one fail?): at
    # most one line on stderr, never a failed git command. Then the build, detached.
    if (cd / && exec {q(python)} -I -m doc_index.cli.hook_runner check {args} \\
        --checkout "$checkout" --git-dir "$gitdir" </dev/null); then
        (cd / && exec {q(python)} -I -m doc_index.cli.hook_runner run {args} \\
            --checkout "$checkout" >>"$log" 2>&1 </dev/null) &
    fi
fi
exit $status
"""


def is_ours(path: Path) -> bool:
    """True when ``path`` is a hook wrapper written by ``install_hooks`` (any version)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return _MARKER_PREFIX in head


def _absolute_root(root: Path | None) -> Path:
    from .store.roots import default_root

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


def install_hooks(repo: Path, root: Path | None, *, name: str | None = None,
                  subdir: str | None = None) -> list[str]:
    """Install or refresh the three hooks; the lines to report. UsageError, with nothing
    installed, when the hook's build would be refused (``preflight``)."""
    from .sources.identity import check_name

    checkout = locate(repo)
    root = _absolute_root(root)
    options = HookOptions(None if name is None else check_name(name),
                          checked_subdir(checkout.top, subdir))
    refusal = preflight(checkout, root, options)
    if refusal is not None:
        raise UsageError(f"{refusal.cause}: the hooks would never rebuild it; "
                         f"{refusal.fix}; nothing was installed")
    python = os.path.abspath(sys.executable)
    text = {hook: hook_script(hook, python, root, options) for hook in HOOKS}
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
    fingerprint = lockfile_fingerprint(checkout.top)
    write_fingerprint(checkout.git_dir, fingerprint)
    if fingerprint:
        lines.append("lockfiles: a pull or checkout that changes them also runs "
                     "doc-index sync of this checkout")
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
        for leftover in (LOCK_NAME, LOG_NAME, FAILED_NAME, LOCKS_NAME):
            if (checkout.git_dir / leftover).exists():
                (checkout.git_dir / leftover).unlink()
    return lines


def lockfile_fingerprint(top: Path) -> str:
    """The sha256 of the checkout's lockfiles (the files ``read_project_pins`` reads, by
    name and bytes); "" when it has none."""
    import hashlib

    from .sources.lockfiles import read_project_pins

    files = read_project_pins(top, all_locked=True).files
    digest = hashlib.sha256()
    for name in sorted(files):
        try:
            data = (top / name).read_bytes()
        except OSError:
            data = b"\0unreadable"
        digest.update(f"{len(name)}:{name}:{len(data)}:".encode("utf-8", "surrogateescape"))
        digest.update(data)
    return digest.hexdigest() if files else ""


def read_fingerprint(git_dir: Path) -> str | None:
    try:
        return (git_dir / LOCKS_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def write_fingerprint(git_dir: Path, fingerprint: str) -> None:
    path = git_dir / LOCKS_NAME
    tmp = path.with_name(f"{LOCKS_NAME}.{os.getpid()}")
    tmp.write_text(fingerprint + "\n", encoding="ascii")
    os.replace(tmp, path)


def _is_inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


# --- what the build would refuse --------------------------------------------------------------

def preflight(checkout: Checkout, root: Path, options: HookOptions) -> Refusal | None:
    """Why the hook's build of ``checkout`` into ``root`` would be refused, or None: the
    folder to index is gone, the cache name is unusable, the root is no directory that
    can be written, or the cache of that name was built from another source (another
    clone of the same repository takes the same default name). A few git queries and the
    live manifest's header: no walk, no parse."""
    from .sources.identity import directory_source

    source_dir = options.source(checkout.top)
    if not source_dir.is_dir():
        return Refusal(f"the folder {printable(str(source_dir))} to index is gone",
                       suggested_fix(checkout, root, options, subdir="PATH"))
    identity = directory_source(source_dir.resolve())
    try:
        key = identity.cache_key(options.name)
    except UsageError as exc:
        return Refusal(str(exc), suggested_fix(checkout, root, options, name="NAME"))
    problem = _root_problem(root)
    if problem is not None:
        return Refusal(problem, suggested_fix(checkout, root, options, root_arg="DIR"))
    held = _held_by_another(root, key, identity)
    if held is not None:
        return Refusal(f"cache {key!r} under {printable(str(root))} holds {held}, not "
                       f"{printable(identity.shown())}",
                       suggested_fix(checkout, root, options, name=other_name(key, checkout.top)))
    return None


def _root_problem(root: Path) -> str | None:
    """Why no cache can be written under ``root``, or None."""
    shown = printable(str(root))
    if os.path.isdir(root):
        return None if os.access(root, os.W_OK | os.X_OK) else \
            f"the cache root {shown} cannot be written"
    if os.path.lexists(root):
        return f"the cache root {shown} is not a directory"
    parent = root.parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    if not os.path.isdir(parent):
        return f"the cache root {shown} cannot be made: {printable(str(parent))} is no directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the cache root {shown} cannot be made in {printable(str(parent))}"
    return None


def _held_by_another(root: Path, key: str, identity: Any) -> str | None:
    """What the cache ``key`` holds when it is not ``identity``'s (the test the build
    makes before writing: ``IndexStore.update_index``), else None."""
    from .sources.identity import header_source_text
    from .store.index_store import IndexStore

    store = IndexStore(root)
    old = store._read_old_head(key)
    if old is not None:
        return None if identity.same_as(old[1]) else header_source_text(old[1])
    from .store.v0_build import is_v0_cache

    return "a Context Engine v0 cache" if is_v0_cache(root / key) else None


def other_name(key: str, top: Path) -> str:
    """A cache name for this checkout that its folder's name sets apart."""
    from .foundation.cache_names import name_problem
    from .sources.identity import key_part

    name = f"{key}-{key_part(top.name) or 'clone'}"
    return name if name_problem(name) is None else "NAME"


def suggested_fix(checkout: Checkout, root: Path, options: HookOptions, *, name: str | None = None,
         subdir: str | None = None, root_arg: str | None = None) -> str:
    """The ``doc-index hook install`` command that keeps the hook's options but the one
    that fixes the refusal."""
    argv = ["doc-index", "hook", "install"]
    chosen_name = name if name is not None else options.name
    chosen_subdir = subdir if subdir is not None else options.subdir
    if chosen_name is not None:
        argv += ["--name", chosen_name]
    if chosen_subdir is not None:
        argv += ["--subdir", chosen_subdir]
    if root_arg is not None:
        argv += ["--root", root_arg]
    elif not _is_default_root(root):
        argv += ["--root", str(root)]
    return "fix: " + printable(shlex.join([*argv, str(checkout.top)]))


def _is_default_root(root: Path) -> bool:
    try:
        return _absolute_root(None) == root
    except Exception:  # (an unusable DOC_INDEX_ROOT, say: name the root in the fix)
        return False
