"""The one way doc-index runs git: a clean environment and repository options disabled.

Every git command of the product (the work-tree queries of a directory walk, the clone
area of git sources, the hooks) goes through :func:`run_git` or :func:`start_git`.

Why not GitPython: its ``Git.execute`` starts git with ``os.environ`` plus what it is
given and cannot remove a variable, so an inherited ``GIT_DIR`` (inside a git hook, under
``git rebase -x``) or ``GIT_CONFIG_PARAMETERS`` still points git at another repository or
configuration; its default object database reads blobs through a ``git cat-file`` started
the same way, and its pure-Python ``GitDB`` backend is deprecated by GitPython itself. So
plumbing runs here, directly, and ``git_source`` reads blobs with one ``cat-file --batch``
started here (which also saves the 130 ms GitPython import: tests/test_import_rules.py).

What each call gets:

- the environment without any inherited ``GIT_*`` variable (``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_INDEX_FILE``, ``GIT_CONFIG_*``, ``GIT_EXEC_PATH``, ``GIT_EXTERNAL_DIFF``, ...),
  except the user's ssh choice (``GIT_SSH_COMMAND``, ``GIT_SSH``, ``GIT_SSH_VARIANT``); then
  ``GIT_TERMINAL_PROMPT=0`` (never prompt) and the C locale (messages are classified);
- ``--no-pager`` and ``-c`` options that override, for this call, the options with which a
  repository's own ``.git/config`` could make git run a command: ``core.fsmonitor``
  (``ls-files`` runs it), ``core.hooksPath=/dev/null`` (no hook runs for our own calls;
  only ``hook install`` reads the configured value),
  ``core.pager``, ``protocol.ext.allow`` (``ext::`` URLs run commands),
  ``safe.bareRepository=explicit`` (a bare repository planted inside a walked directory
  is not discovered). ``-c`` values reach the git processes git itself starts
  (``upload-pack`` of a local source) through ``GIT_CONFIG_PARAMETERS``.
  ``diff.external`` and textconv filters cannot be switched off with ``-c``; doc-index
  never runs a command that diffs, so they are not reachable. ``uploadpack.packObjectsHook``
  is honoured by git only from the user's own (system, global, command line) config.
- ``core.sshCommand``: only the clone area fetches, from a bare clone whose config doc-index
  wrote; ``git_source`` puts ssh in batch mode unless the user chose an ssh command.
- no transport at all, unless the call is one of those fetches (``network=True``): a local
  repository that is a partial clone fetches a missing object from its "promisor" remote
  (``ls-files`` expanding a sparse index does), which runs ``remote.<name>.uploadpack``,
  ``core.sshCommand`` or a credential helper from that repository's config.
  ``GIT_ALLOW_PROTOCOL=`` (empty: no protocol) beats every ``protocol.<name>.allow`` of any
  config, remote helpers included (``-c protocol.allow=never`` would not: a repository's
  ``protocol.file.allow=always`` wins over it); ``GIT_NO_LAZY_FETCH=1`` (git >= 2.44) stops
  the lazy fetch before it starts.
- a deadline on every local call (``DOC_INDEX_GIT_TIMEOUT`` seconds, default 300): git
  blocks forever opening a FIFO planted as ``.gitignore`` or ``info/exclude``; past the
  deadline git is killed and :class:`GitTimeout` raised (``io_error``), never a silent
  answer of "no git".
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..foundation.errors import GitTimeout, UsageError

# The user's own choice of ssh program, kept: everything else named GIT_* is dropped.
_KEPT_GIT_ENV = frozenset({"GIT_SSH_COMMAND", "GIT_SSH", "GIT_SSH_VARIANT"})

_NO_HOOKS = "core.hooksPath=/dev/null"
SAFE_OPTIONS: tuple[str, ...] = (
    "core.fsmonitor=false",
    "core.pager=cat",
    "protocol.ext.allow=never",
    "safe.bareRepository=explicit",
)

# Every call but a fetch of a git source's own clone: no transport, no lazy fetch.
_LOCAL_ENV = {"GIT_ALLOW_PROTOCOL": "", "GIT_NO_LAZY_FETCH": "1"}

GIT_TIMEOUT_ENV = "DOC_INDEX_GIT_TIMEOUT"
DEFAULT_GIT_TIMEOUT = 300.0

# What every fetch of a git source's clone adds. No fsck: git does not check fetched objects
# by default, and doc-index does not force it. Long-lived repositories hold legacy objects
# that fsck rejects (zero-padded tree modes, odd timezones, malformed e-mail fields: Flask's
# history stopped the README's first example), and the checks that matter for doc-index
# are about names, which it checks itself: nothing is ever checked out, and every tree
# entry name goes through ``safe_paths.path_problem`` (``..``, absolute, NUL, backslash)
# and ``.git`` components are refused by ``git_source.scan_commit`` before any join.
# Keeping fsck with the cosmetic checks ignored was the other choice: their list grows with
# git releases (a new check would stop real repositories again) and a check name that the
# installed git does not know prints a warning on every fetch. A user who sets
# ``transfer.fsckObjects`` in their own git config still gets it.
FETCH_OPTIONS: tuple[str, ...] = (
    "fetch.recurseSubmodules=false",
)





def git_timeout() -> float:
    """The deadline of one git call: ``DOC_INDEX_GIT_TIMEOUT`` seconds (> 0), else 300."""
    text = os.environ.get(GIT_TIMEOUT_ENV)
    if text is None:
        return DEFAULT_GIT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise UsageError(f"invalid {GIT_TIMEOUT_ENV}={text!r}: give a number of seconds "
                         "greater than 0, or unset it (300)")
    return value


def wait_git(proc: subprocess.Popen[bytes], what: str,
             input: bytes | None = None) -> tuple[bytes, bytes]:
    """``proc.communicate(input)`` within the deadline; past it git is killed and
    :class:`GitTimeout` names ``what`` (the repository asked)."""
    timeout = git_timeout()
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise GitTimeout(
            f"git did not answer within {timeout:g} s for {what} (killed); a FIFO or a "
            f"stalled file system under it? Fix it, or raise {GIT_TIMEOUT_ENV}") from None
    return out, err or b""


class GitResult(NamedTuple):
    status: int
    out: bytes
    err: str


def git_env(extra: Mapping[str, str] | None = None, *,
            network: bool = False) -> dict[str, str]:
    """The environment of every git call: the user's, without what points git elsewhere;
    without any transport unless ``network`` (a fetch of a git source's clone)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or k in _KEPT_GIT_ENV}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never",
                "LANGUAGE": "C", "LC_ALL": "C"})
    if not network:
        env.update(_LOCAL_ENV)
    if extra:
        env.update(extra)
    return env


def git_command(args: Sequence[str], *, cwd: str | Path | None = None,
                git_dir: str | Path | None = None, options: Sequence[str] = (),
                read_hooks_path: bool = False) -> list[str]:
    """``git --no-pager -c ... [-C cwd] [--git-dir=...] <args>``. ``read_hooks_path``:
    leave ``core.hooksPath`` as configured (``hook install`` asks where hooks live)."""
    command = ["git", "--no-pager"]
    hooks = () if read_hooks_path else (_NO_HOOKS,)
    for option in (*SAFE_OPTIONS, *hooks, *options):
        command += ["-c", option]
    if cwd is not None:
        command += ["-C", os.fspath(cwd)]
    if git_dir is not None:
        command.append(f"--git-dir={os.fspath(git_dir)}")
    return [*command, *args]


def start_git(args: Sequence[str], *, cwd: str | Path | None = None,
              git_dir: str | Path | None = None, options: Sequence[str] = (),
              env: Mapping[str, str] | None = None, read_hooks_path: bool = False,
              network: bool = False, stdin: int = subprocess.DEVNULL,
              stderr: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """Start git (stdout piped). Raises OSError when git cannot be started."""
    return subprocess.Popen(
        git_command(args, cwd=cwd, git_dir=git_dir, options=options,
                    read_hooks_path=read_hooks_path),
        stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, env=git_env(env, network=network),
    )


def run_git(args: Sequence[str], *, cwd: str | Path | None = None,
            git_dir: str | Path | None = None, options: Sequence[str] = (),
            env: Mapping[str, str] | None = None, read_hooks_path: bool = False,
            network: bool = False, input: bytes | None = None) -> GitResult:
    """Run git to the end (``input``: its stdin); never raises for git's exit status
    (OSError: no git; GitTimeout: a local call did not answer within the deadline; a
    fetch has none, a big repository's first clone may take long)."""
    proc = start_git(args, cwd=cwd, git_dir=git_dir, options=options, env=env,
                     read_hooks_path=read_hooks_path, network=network,
                     stdin=subprocess.DEVNULL if input is None else subprocess.PIPE)
    if network:
        out, err = proc.communicate(input)
    else:
        out, err = wait_git(proc, os.fspath(git_dir if git_dir is not None else cwd or "."),
                            input)
    return GitResult(proc.returncode, out, (err or b"").decode("utf-8", "replace"))


__all__ = ["DEFAULT_GIT_TIMEOUT", "FETCH_OPTIONS", "GIT_TIMEOUT_ENV", "SAFE_OPTIONS",
           "GitResult", "GitTimeout", "git_command", "git_env", "git_timeout", "run_git",
           "start_git", "wait_git"]


def read_batch_blob(stdin: Any, stdout: Any, sha: str) -> bytes | None:
    """One blob through a running ``git cat-file --batch`` (its pipes): its bytes, None
    when git says it is missing; OSError when the answer is not a whole blob."""
    try:
        stdin.write(sha.encode("ascii") + b"\n")
        stdin.flush()
    except BrokenPipeError:  # (git stopped at an object it does not have)
        raise OSError(f"cannot read blob {sha}") from None
    header = stdout.readline().split()
    if len(header) == 2 and header[1] == b"missing":
        return None
    if len(header) != 3 or header[1] != b"blob":
        raise OSError(f"cannot read blob {sha}")
    size = int(header[2])
    data = stdout.read(size)
    if len(data) != size or stdout.read(1) != b"\n":
        raise OSError(f"cannot read blob {sha}: short read")
    return data
