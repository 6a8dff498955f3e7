"""Git sources: clone or fetch a repository with GitPython, scan one commit from git.

``doc-index build <git-url>`` keeps a bare clone per remote in the clone area
(``$XDG_CACHE_HOME/doc-index/clones``, default ``~/.cache/doc-index/clones``), outside
the cache root. Each build fetches, resolves the remote HEAD (or ``--ref``) to a commit
and lists that commit's tree. Nothing is ever checked out: file hashes are the git blob
SHAs of the tree entries and a file's bytes come from the object database, so
``core.autocrlf``, smudge filters and local edits cannot leak into the cache, and an
unchanged file (same blob SHA as in the cache) is neither read nor parsed.

A first clone is fetched into a temporary directory and renamed into place only when the
fetch succeeded and the ref resolved, so a failed build leaves no half clone and no cache.
Git never prompts (``GIT_TERMINAL_PROMPT=0``, ssh in batch mode); every failure becomes
one ``GitSourceError`` line with credentials removed from URLs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..indexer.formats import is_doc_path
from .index_store import BuildReport, IndexStore, Progress, warm_worker
from .lock import BuildLock
from .sources import DEFAULT_MAX_BYTES, SKIPPED_DIRS, Scan, SourceFile

if TYPE_CHECKING:
    import git

EXIT_IO = 6
EXIT_USAGE = 1
HEAD_REF = "refs/doc-index/HEAD"  # where the remote's HEAD is fetched to
WANTED_REF = "refs/doc-index/wanted"  # a --ref fetched by name (refs/pull/1/head, a SHA)
LOCK_NAME = "doc-index.lock"  # inside the bare clone (git ignores unknown files there)
_TMP_PREFIX = ".tmp-"

_MODE_SYMLINK = "120000"
_MODE_SUBMODULE = "160000"


class GitSourceError(OSError):
    """A git source failed: one line for the user (no URL credentials), an exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_IO) -> None:
        message = " ".join(redact(message).split())
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


# --- remotes and cache keys ---------------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@")
_SCP_LIKE = re.compile(r"^(?:[^@/:\s]+@)?(?P<host>[^/:\s]+):(?P<path>(?!//).*)$")
_BAD_NAME_CHARS = re.compile(r"[^\w.-]+")


def redact(text: str) -> str:
    """``text`` with the user-info part (user, password, token) of every URL removed."""
    return _USERINFO.sub(r"\g<scheme>", text)


@dataclass(frozen=True)
class Remote:
    """Where a git source lives: ``url`` for git, ``display`` for messages, and the cache
    key parts taken from the URL's last two path components."""

    url: str
    display: str
    owner: str
    name: str

    @property
    def clone_dir_name(self) -> str:
        """``<owner>-<name>-<hash>``: one clone per remote, whatever spelling names it
        (``file:///p`` and ``/p``, with or without ``.git`` or credentials)."""
        where = redact(self.url)
        if where.startswith("file://"):
            where = urlsplit(where).path
        where = where.rstrip("/").removesuffix(".git").rstrip("/")
        digest = hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()
        return f"{self.owner}-{self.name}-{digest[:12]}"


def parse_remote(source: str) -> Remote:
    """A git URL (https, ssh, scp-like ``git@host:path``, ``file://``) or a path to a bare
    repository -> its ``Remote``. ``https://github.com/pallets/flask.git`` gives owner
    ``pallets``, name ``flask``; a path gives its last two components."""
    host = ""
    if _SCHEME.match(source):
        parts = urlsplit(source)
        path, host, url = parts.path, parts.hostname or "", source
    elif (scp := _SCP_LIKE.match(source)) and not os.path.exists(source):
        path, host, url = scp.group("path"), scp.group("host"), source
    else:
        resolved = Path(source).expanduser().resolve()
        path = url = str(resolved)
    components = [c for c in path.replace("\\", "/").split("/") if c]
    if components and components[-1] == ".git":
        components.pop()  # /srv/owner/name/.git -> owner, name
    if not components:
        raise GitSourceError(f"cannot tell the repository name from {redact(source)}",
                             EXIT_USAGE)
    name = _key_part(components[-1].removesuffix(".git")) or "repo"
    owner = _key_part(components[-2]) if len(components) >= 2 else ""
    owner = owner or _key_part(host) or "git"
    return Remote(url=url, display=redact(source), owner=owner, name=name)


def _key_part(text: str) -> str:
    """A safe cache-key component: word characters, ``.``, ``-``; no leading dot."""
    return _BAD_NAME_CHARS.sub("-", text).strip("-").lstrip(".")


def check_name(name: str) -> str:
    """``--name`` must be usable as one path component of a cache key."""
    if (
        not name or name in (".", "..") or name.startswith(".") or "/" in name or "\\" in name
        or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name)
    ):
        raise GitSourceError(f"invalid --name: {name!r}", EXIT_USAGE)
    return name


def clone_area() -> Path:
    """``$XDG_CACHE_HOME/doc-index/clones`` (an absolute XDG path only), else ``~/.cache``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "doc-index" / "clones"


# --- running git ----------------------------------------------------------------------------

def _git_module() -> Any:
    try:
        import git
    except ImportError as exc:  # GitPython refuses to import without a git executable
        raise GitSourceError(f"git is not available: {str(exc).splitlines()[0]}") from None
    return git


def git_env() -> dict[str, str]:
    """Environment for every git call: never prompt for anything."""
    return {"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"}


def _network_env(repo: git.Repo, env: dict[str, str]) -> dict[str, str]:
    """``env`` plus ssh in batch mode (no passphrase or host-key prompt), unless the user
    chose an ssh command (``GIT_SSH_COMMAND``, ``GIT_SSH``, ``core.sshCommand``)."""
    if os.environ.get("GIT_SSH_COMMAND") or os.environ.get("GIT_SSH"):
        return env
    status, out, _ = _run_git(repo.git, ["config", "--get", "core.sshCommand"], env)
    if status == 0 and out.strip():
        return env
    return {**env, "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}


def _run_git(runner: Any, args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``git <args>`` through GitPython; (status, stdout, stderr), never raises for status."""
    try:
        status, out, err = runner.execute(
            ["git", *args], with_extended_output=True, with_exceptions=False, env=env,
        )
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    return int(status or 0), out, err


def _last_message(stderr: str) -> str:
    lines = [ln.strip() for ln in redact(stderr).splitlines() if ln.strip()]
    for line in reversed(lines):
        for prefix in ("fatal:", "error:"):
            if line.lower().startswith(prefix):
                return line[len(prefix):].strip()
    return lines[-1] if lines else "git failed"


_AUTH_PATTERNS = (
    "authentication failed", "could not read username", "could not read password",
    "terminal prompts disabled", "permission denied (publickey", "invalid username or password",
    "http basic: access denied", "requested url returned error: 401",
    "requested url returned error: 403", "host key verification failed",
)
_NOT_REPO_PATTERNS = (
    "does not appear to be a git repository", "not a git repository",
    "repository not found", "requested url returned error: 404", "no such repository",
)
_UNREACHABLE_PATTERNS = (
    "could not resolve host", "unable to access", "connection refused", "timed out",
    "could not connect", "failed to connect", "network is unreachable", "no route to host",
    "connection reset", "ssl", "could not resolve hostname", "unable to look up",
    "connection closed",
)


def fetch_error(remote: Remote, stderr: str) -> GitSourceError:
    """git's stderr of a failed fetch -> one classified, credential-free line."""
    clean = redact(stderr)
    lower = clean.lower()
    if any(p in lower for p in _AUTH_PATTERNS):
        detail = _line_with(clean, _AUTH_PATTERNS)
        return GitSourceError(f"authentication failed for {remote.display}: {detail}")
    if any(p in lower for p in _NOT_REPO_PATTERNS):
        return GitSourceError(f"not a git repository: {remote.display}")
    if "couldn't find remote ref head" in lower:
        return GitSourceError(f"repository has no commits (no remote HEAD): {remote.display}")
    if any(p in lower for p in _UNREACHABLE_PATTERNS):
        detail = _line_with(clean, _UNREACHABLE_PATTERNS)
        return GitSourceError(f"cannot reach {remote.display}: {detail}")
    return GitSourceError(f"cannot fetch {remote.display}: {_last_message(clean)}")


def _line_with(stderr: str, patterns: tuple[str, ...]) -> str:
    """The first stderr line naming the cause, without git's ``fatal:`` prefix."""
    for line in stderr.splitlines():
        if any(p in line.lower() for p in patterns):
            return _last_message(line)
    return _last_message(stderr)


# --- the clone area -------------------------------------------------------------------------

def _fetch(repo: git.Repo, remote: Remote, ref: str | None, env: dict[str, str]) -> None:
    specs = ["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"]
    if ref is None:
        specs.append(f"+HEAD:{HEAD_REF}")
    status, _, err = _run_git(
        repo.git, ["fetch", "--prune", "--no-tags", "--quiet", "origin", *specs],
        _network_env(repo, env),
    )
    if status != 0:
        raise fetch_error(remote, err)


def _set_url(repo: git.Repo, remote: Remote, env: dict[str, str]) -> None:
    status, current, _ = _run_git(repo.git, ["config", "--get", "remote.origin.url"], env)
    if status == 0 and current.strip() == remote.url:
        return
    verb = ["set-url"] if status == 0 else ["add"]
    status, _, err = _run_git(repo.git, ["remote", *verb, "origin", remote.url], env)
    if status != 0:
        raise GitSourceError(f"cannot configure the clone of {remote.display}: "
                             f"{_last_message(err)}")


_SHA = re.compile(r"^[0-9a-fA-F]{4,40}$")


def resolve_commit(repo: git.Repo, remote: Remote, ref: str | None,
                   env: dict[str, str]) -> str:
    """The commit to index: the fetched remote HEAD, or ``ref`` as a branch, tag, full ref
    name or commit SHA (fetched by name when the heads and tags do not have it)."""
    if ref is None:
        return _peel(repo, HEAD_REF, env) or _missing(remote, "HEAD")
    if not ref or ref.startswith("-") or any(ch.isspace() or ord(ch) < 0x20 for ch in ref):
        _missing(remote, ref)
    candidates = [f"refs/remotes/origin/{ref}", f"refs/tags/{ref}"]
    if ref.startswith("refs/heads/"):
        candidates.insert(0, "refs/remotes/origin/" + ref[len("refs/heads/"):])
    elif ref.startswith("refs/tags/"):
        candidates.insert(0, ref)
    if _SHA.match(ref):
        candidates.append(ref)
    for name in candidates:
        commit = _peel(repo, name, env)
        if commit:
            return commit
    status, _, _ = _run_git(
        repo.git, ["fetch", "--no-tags", "--quiet", "origin", f"+{ref}:{WANTED_REF}"],
        _network_env(repo, env),
    )
    if status == 0:
        commit = _peel(repo, WANTED_REF, env)
        if commit:
            return commit
    return _missing(remote, ref)


def _peel(repo: git.Repo, name: str, env: dict[str, str]) -> str:
    status, out, _ = _run_git(
        repo.git, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"],
        env,
    )
    return out.strip() if status == 0 else ""


def _missing(remote: Remote, ref: str) -> str:
    raise GitSourceError(f"ref not found: {ref} in {remote.display}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_temp_clones(area: Path, dir_name: str) -> None:
    """Remove temporary clones that killed builds of this remote left behind."""
    prefix = f"{_TMP_PREFIX}{dir_name}."
    for entry in area.iterdir():
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


@contextlib.contextmanager
def open_clone(remote: Remote, ref: str | None, env: dict[str, str],
               area: Path | None = None) -> Iterator[tuple[git.Repo, str]]:
    """Fetch ``remote`` into its clone (creating it if needed) and yield the repository and
    the resolved commit, holding the clone's lock."""
    git_mod = _git_module()
    area = area if area is not None else clone_area()
    area.mkdir(parents=True, exist_ok=True)
    final = area / remote.clone_dir_name
    _clean_temp_clones(area, remote.clone_dir_name)
    fresh = False
    if not _usable_clone(git_mod, final):
        fresh = _first_clone(git_mod, remote, ref, env, area, final)
    with BuildLock(final / LOCK_NAME):
        repo = git_mod.Repo(final)
        try:
            if not fresh:
                _set_url(repo, remote, env)
                _fetch(repo, remote, ref, env)
            yield repo, resolve_commit(repo, remote, ref, env)
        finally:
            repo.close()


def _usable_clone(git_mod: Any, path: Path) -> bool:
    if not os.path.lexists(path):
        return False
    try:
        git_mod.Repo(path).close()
        return True
    except Exception:  # damaged or not a repository: set it aside and clone again
        doomed = path.with_name(f"{_TMP_PREFIX}{path.name}.0.damaged.{secrets.token_hex(4)}")
        os.rename(path, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        return False


def _first_clone(git_mod: Any, remote: Remote, ref: str | None, env: dict[str, str],
                 area: Path, final: Path) -> bool:
    """Clone into a temporary directory, check the ref, rename into place. True when this
    call's clone became the clone (False: another build got there first)."""
    tmp = area / f"{_TMP_PREFIX}{remote.clone_dir_name}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        repo = git_mod.Repo.init(tmp, bare=True)
        try:
            _set_url(repo, remote, env)
            _fetch(repo, remote, ref, env)
            resolve_commit(repo, remote, ref, env)
        finally:
            repo.close()
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent build won the race
            return False
        return True
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --- scanning a commit ----------------------------------------------------------------------

def _read_blob(repo: git.Repo, binsha: bytes) -> bytes:
    """A blob's bytes, straight from the object database (no filters, no work tree)."""
    try:
        return repo.odb.stream(binsha).read()
    except OSError:
        raise
    except Exception as exc:
        raise OSError(f"cannot read blob {binsha.hex()}: {type(exc).__name__}") from None


def _reader(repo: git.Repo, binsha: bytes) -> Any:
    return lambda: _read_blob(repo, binsha)


def scan_commit(repo: git.Repo, commit: str, max_bytes: int = DEFAULT_MAX_BYTES,
                env: dict[str, str] | None = None) -> Scan:
    """The tracked documentation files of ``commit`` (sorted by path), digests = blob SHAs."""
    status, out, err = _run_git_bytes(
        repo.git, ["ls-tree", "-r", "-l", "-z", "--full-tree", commit], env or {}
    )
    if status != 0:
        raise GitSourceError(f"cannot list commit {commit}: {_last_message(err)}")
    scan = Scan(commit_hash=commit)
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha, size = meta.decode("ascii").split()
        try:
            path = raw_path.decode("utf-8")
        except UnicodeDecodeError:
            shown = raw_path.decode("utf-8", "replace")
            if is_doc_path(shown):
                scan.skipped.append((shown, "file name is not UTF-8"))
            continue
        if any(part in SKIPPED_DIRS for part in path.split("/")[:-1]):
            continue  # as the directory walk does: VCS and build folders
        if mode == _MODE_SUBMODULE:
            scan.skipped.append((path, "submodule not indexed"))
            continue
        if not is_doc_path(path):
            continue
        if mode == _MODE_SYMLINK:
            scan.skipped.append((path, "symlink not followed"))
            continue
        if kind != "blob":
            continue
        nbytes = int(size)
        if nbytes > max_bytes:
            scan.skipped.append((path, f"over the size cap ({nbytes} > {max_bytes} bytes)"))
            continue
        scan.files.append(SourceFile(path, sha, nbytes, _reader(repo, bytes.fromhex(sha))))
    scan.files.sort(key=lambda f: f.path)
    scan.skipped.sort()
    return scan


def _run_git_bytes(runner: Any, args: list[str], env: dict[str, str]) -> tuple[int, bytes, str]:
    try:
        status, out, err = runner.execute(
            ["git", *args], with_extended_output=True, with_exceptions=False, env=env,
            stdout_as_string=False, strip_newline_in_stdout=False,
        )
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    if isinstance(err, bytes):
        err = err.decode("utf-8", "replace")
    return int(status or 0), out, err


# --- the build ------------------------------------------------------------------------------

def build_from_git(
    store: IndexStore, source: str, *, name: str | None = None, ref: str | None = None,
    full: bool = False, max_bytes: int = DEFAULT_MAX_BYTES, progress: Progress | None = None,
) -> BuildReport:
    """Build or update the cache ``<owner>-<name>`` of a git source; re-running it is the
    incremental reindex (fetch, resolve, parse only blobs the cache does not have)."""
    remote = parse_remote(source)
    cache_name = check_name(name) if name is not None else remote.name
    key = f"{remote.owner}-{cache_name}"
    env = git_env()
    warm = warm_worker(store, key, full)  # imports the parsers while git fetches
    try:
        with open_clone(remote, ref, env) as (repo, commit):
            scan = scan_commit(repo, commit, max_bytes, env)
            return store.update_index(key, remote.owner, cache_name, scan, full=full,
                                      progress=progress, warm=warm)
    finally:
        if warm is not None:
            warm.close()


__all__ = [
    "GitSourceError", "Remote", "build_from_git", "clone_area", "fetch_error", "parse_remote",
    "redact", "resolve_commit", "scan_commit",
]
