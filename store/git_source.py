"""Git sources: fetch a repository into a bare clone, scan one commit from git.

``doc-index build <git-url>`` keeps a bare clone per remote in the clone area
(``$XDG_CACHE_HOME/doc-index/clones``, default ``~/.cache/doc-index/clones``), outside
the cache root. Each build fetches, resolves the remote HEAD (or ``--ref``) to a commit
and lists that commit's tree. Nothing is ever checked out: file hashes are the git blob
SHAs of the tree entries and a file's bytes come from the object database, so
``core.autocrlf``, smudge filters and local edits cannot leak into the cache, and an
unchanged file (same blob SHA as in the cache) is neither read nor parsed.

Every git command runs through ``git_run`` (a clean environment, repository options that
run commands disabled); fetches run git's fsck on what they receive, and every tree entry
name goes through ``safe_paths.path_problem`` before it is used. A URL's credentials are
never stored in the clone's config (see ``_network_env``).

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
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import DocIndexError
from ..indexer.formats import is_doc_path
from ..redact import redact  # every message that may quote a URL
from .git_run import FETCH_OPTIONS, run_git, start_git
from .index_store import BuildReport, IndexStore, Progress, warm_worker
from .lock import BuildLock
from .safe_paths import path_problem
from .source_identity import Source, git_source, place_of, remote_names
from .sources import DEFAULT_MAX_BYTES, SKIPPED_DIRS, Scan, SourceFile

HEAD_REF = "refs/doc-index/HEAD"  # where the remote's HEAD is fetched to
WANTED_REF = "refs/doc-index/wanted"  # a --ref fetched by name (refs/pull/1/head, a SHA)
LOCK_NAME = "doc-index.lock"  # inside the bare clone (git ignores unknown files there)
_TMP_PREFIX = ".tmp-"

_MODE_SYMLINK = "120000"
_MODE_SUBMODULE = "160000"


class GitSourceError(DocIndexError, OSError):
    """A git source failed: one line for the user (no URL credentials) and the code of
    the one table (``io_error`` unless told: exit 6)."""

    def __init__(self, message: str, code: str = "io_error") -> None:
        super().__init__(" ".join(redact(message).split()), code)


# --- remotes and cache keys ---------------------------------------------------------------

@dataclass(frozen=True)
class Remote:
    """Where a git source lives: ``url`` for git, ``display`` for messages, and the cache
    key parts taken from the URL's last two path components."""

    url: str
    display: str
    owner: str
    name: str

    @property
    def clean_url(self) -> str:
        """``url`` without user info: what the clone's config stores (``_network_env``)."""
        return redact(self.url)

    @property
    def clone_dir_name(self) -> str:
        """``<owner>-<name>-<hash>``: one clone per remote, whatever spelling names it
        (``file:///p`` and ``/p``, with or without ``.git`` or credentials)."""
        where = place_of(redact(self.url))
        digest = hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()
        return f"{self.owner}-{self.name}-{digest[:12]}"


def parse_remote(source: str) -> Remote:
    """A git URL (https, ssh, scp-like ``git@host:path``, ``file://``) or a path to a bare
    repository -> its ``Remote``. ``https://github.com/pallets/flask.git`` gives owner
    ``pallets``, name ``flask``; a path gives its last two components
    (``source_identity.remote_names``)."""
    names = remote_names(source)
    if names is None:
        raise GitSourceError(f"cannot tell the repository name from {redact(source)}",
                             "usage")
    url, owner, name = names
    return Remote(url=url, display=redact(source), owner=owner, name=name)


def remote_source(remote: Remote, ref: str | None) -> Source:
    """What the manifest records of a git source (``source_identity``): the URL without
    user info or query (never a credential), the ``--ref`` asked for."""
    return git_source(remote.clean_url, ref, remote.owner, remote.name)


def clone_area() -> Path:
    """``$XDG_CACHE_HOME/doc-index/clones`` (an absolute XDG path only), else ``~/.cache``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "doc-index" / "clones"


# --- running git ----------------------------------------------------------------------------

def _git(clone: Path, args: list[str], env: dict[str, str] | None = None,
         options: tuple[str, ...] = (), network: bool = False) -> tuple[int, str, str]:
    """``git <args>`` in the bare clone, through the one runner; (status, stdout, stderr).
    Only a fetch may use a transport (``network``): every other call is local."""
    try:
        done = run_git(args, git_dir=clone, options=options, env=env, network=network)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    return done.status, done.out.decode("utf-8", "replace"), done.err


def _network_env(clone: Path, remote: Remote) -> dict[str, str]:
    """What a fetch adds to the runner's environment.

    ssh in batch mode (no passphrase or host-key prompt), unless the user chose an ssh
    command (``GIT_SSH_COMMAND``, ``GIT_SSH``, ``core.sshCommand`` in their git config:
    the clone's own config is doc-index's and never sets it).

    Credentials: the clone's config holds the credential-free URL; the one with user info
    reaches git only in this call's environment, as ``url.<full>.insteadOf=<clean>``. An
    environment is readable by its owner only (``/proc/<pid>/environ`` is 0400), while a
    command line (``-c remote.origin.url=...``, a URL argument) is readable by every user."""
    env: dict[str, str] = {}
    if not (os.environ.get("GIT_SSH_COMMAND") or os.environ.get("GIT_SSH")):
        status, out, _ = _git(clone, ["config", "--get", "core.sshCommand"])
        if status != 0 or not out.strip():
            env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    if remote.clean_url != remote.url:
        env.update({"GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": f"url.{remote.url}.insteadOf",
                    "GIT_CONFIG_VALUE_0": remote.clean_url})
    return env


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
    if "fsck error" in lower or "fsck" in lower and "index-pack failed" in lower:
        detail = _line_with(clean, ("error: object",)) if "error: object" in lower else ""
        return GitSourceError(
            f"refused {remote.display}: git's fsck rejects an object it sent"
            f"{f' ({detail})' if detail else ''}; doc-index fetches with "
            "fetch.fsckObjects=true (a check can be relaxed with fetch.fsck.<check>=ignore "
            "in your git config; tree entry names are checked again by doc-index)")
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

def _fetch(clone: Path, remote: Remote, ref: str | None) -> None:
    specs = ["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"]
    if ref is None:
        specs.append(f"+HEAD:{HEAD_REF}")
    status, _, err = _git(
        clone, ["fetch", "--prune", "--no-tags", "--quiet", "origin", *specs],
        _network_env(clone, remote), FETCH_OPTIONS, network=True,
    )
    if status != 0:
        raise fetch_error(remote, err)


def _set_url(clone: Path, remote: Remote) -> None:
    """The clone's ``origin`` is the credential-free URL (a token given in the URL is
    passed per fetch, see ``_network_env``; an older clone's stored token is replaced)."""
    status, current, _ = _git(clone, ["config", "--get", "remote.origin.url"])
    if status == 0 and current.strip() == remote.clean_url:
        return
    verb = ["set-url"] if status == 0 else ["add"]
    status, _, err = _git(clone, ["remote", *verb, "origin", remote.clean_url])
    if status != 0:
        raise GitSourceError(f"cannot configure the clone of {remote.display}: "
                             f"{_last_message(err)}")


_SHA = re.compile(r"^[0-9a-fA-F]{4,40}$")


def resolve_commit(clone: Path, remote: Remote, ref: str | None) -> str:
    """The commit to index: the fetched remote HEAD, or ``ref`` as a branch, tag, full ref
    name or commit SHA (fetched by name when the heads and tags do not have it)."""
    if ref is None:
        return _peel(clone, HEAD_REF) or _missing(remote, "HEAD")
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
        commit = _peel(clone, name)
        if commit:
            return commit
    status, _, _ = _git(
        clone, ["fetch", "--no-tags", "--quiet", "origin", f"+{ref}:{WANTED_REF}"],
        _network_env(clone, remote), FETCH_OPTIONS, network=True,
    )
    if status == 0:
        commit = _peel(clone, WANTED_REF)
        if commit:
            return commit
    return _missing(remote, ref)


def _peel(clone: Path, name: str) -> str:
    status, out, _ = _git(
        clone, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"],
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
def open_clone(remote: Remote, ref: str | None,
               area: Path | None = None) -> Iterator[tuple[Path, str]]:
    """Fetch ``remote`` into its bare clone (creating it if needed) and yield the clone's
    path and the resolved commit, holding the clone's lock."""
    area = area if area is not None else clone_area()
    area.mkdir(parents=True, exist_ok=True)
    final = area / remote.clone_dir_name
    _clean_temp_clones(area, remote.clone_dir_name)
    fresh = False
    if not _usable_clone(final):
        fresh = _first_clone(remote, ref, area, final)
    with BuildLock(final / LOCK_NAME):
        if not fresh:
            _set_url(final, remote)
            _fetch(final, remote, ref)
        yield final, resolve_commit(final, remote, ref)


def _usable_clone(path: Path) -> bool:
    if not os.path.lexists(path):
        return False
    status, out, _ = _git(path, ["rev-parse", "--is-bare-repository"])
    if status == 0 and out.strip() == "true":
        return True
    # damaged or not a repository: set it aside and clone again
    doomed = path.with_name(f"{_TMP_PREFIX}{path.name}.0.damaged.{secrets.token_hex(4)}")
    os.rename(path, doomed)
    shutil.rmtree(doomed, ignore_errors=True)
    return False


def _first_clone(remote: Remote, ref: str | None, area: Path, final: Path) -> bool:
    """Clone into a temporary directory, check the ref, rename into place. True when this
    call's clone became the clone (False: another build got there first)."""
    tmp = area / f"{_TMP_PREFIX}{remote.clone_dir_name}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        try:
            done = run_git(["init", "--quiet", "--bare", os.fspath(tmp)])
        except OSError as exc:
            raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
        if done.status != 0:
            raise GitSourceError(f"cannot create a clone in {area}: {_last_message(done.err)}")
        _set_url(tmp, remote)
        _fetch(tmp, remote, ref)
        resolve_commit(tmp, remote, ref)
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

class BlobReader:
    """Blobs of one clone by SHA, straight from the object database (no filters, no work
    tree), through one ``git cat-file --batch`` started on first use."""

    def __init__(self, clone: Path) -> None:
        self._clone = clone
        self._proc: subprocess.Popen[bytes] | None = None

    def read(self, sha: str) -> bytes:
        if self._proc is None:
            self._proc = start_git(["cat-file", "--batch"], git_dir=self._clone,
                                   stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(sha.encode("ascii") + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            raise OSError(f"cannot read blob {sha}")
        size = int(header[2])
        data = stdout.read(size)
        if len(data) != size or stdout.read(1) != b"\n":
            raise OSError(f"cannot read blob {sha}: short read")
        return data

    def reader(self, sha: str) -> Callable[[], bytes]:
        return lambda: self.read(sha)

    def close(self) -> None:
        if self._proc is not None:
            for pipe in (self._proc.stdin, self._proc.stdout):
                if pipe is not None:
                    pipe.close()
            self._proc.wait()
            self._proc = None


def scan_commit(clone: Path, commit: str, blobs: BlobReader,
                max_bytes: int = DEFAULT_MAX_BYTES) -> Scan:
    """The tracked documentation files of ``commit`` (sorted by path), digests = blob SHAs.

    Every entry name goes through ``path_problem`` before anything else looks at it: a
    crafted tree (``..``, ``/abs``, ``a//b``, NUL) has its bad entries skipped and reported,
    the good ones indexed."""
    try:
        done = run_git(["ls-tree", "-r", "-l", "-z", "--full-tree", commit], git_dir=clone)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    if done.status != 0:
        raise GitSourceError(f"cannot list commit {commit}: {_last_message(done.err)}")
    scan = Scan(commit_hash=commit)
    for record in done.out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha, size = meta.decode("ascii").split()
        path = raw_path.decode("utf-8", "surrogateescape")
        problem = path_problem(path)
        if problem is not None:
            shown = raw_path.decode("utf-8", "replace")
            if problem != "file name is not UTF-8" or is_doc_path(shown):
                scan.skipped.append((shown, problem))
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
        scan.files.append(SourceFile(path, sha, nbytes, blobs.reader(sha)))
    scan.files.sort(key=lambda f: f.path)
    scan.skipped.sort()
    return scan


# --- the build ------------------------------------------------------------------------------

def build_from_git(
    store: IndexStore, source: str, *, name: str | None = None, ref: str | None = None,
    full: bool = False, replace: bool = False, max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress | None = None,
) -> BuildReport:
    """Build or update the cache of a git source (``<owner>-<name>``, ``<owner>-<name>@<ref>``
    for a ``ref``, or exactly ``name``); re-running it is the incremental reindex (fetch,
    resolve, parse only blobs the cache does not have). ``replace``: a cache of that name
    built from another source is replaced, not refused (``source_identity``)."""
    remote = parse_remote(source)
    identity = remote_source(remote, ref)
    key = identity.cache_key(name)
    with (
        warm_worker(store, key, full) as warm,  # imports the parsers while git fetches
        open_clone(remote, ref) as (clone, commit),
    ):
        blobs = BlobReader(clone)
        try:
            scan = scan_commit(clone, commit, blobs, max_bytes)
            return store.update_index(key, remote.owner, remote.name, scan, full=full,
                                      progress=progress, warm=warm, source=identity,
                                      replace=replace)
        finally:
            blobs.close()


__all__ = [
    "BlobReader", "GitSourceError", "Remote", "build_from_git", "clone_area", "fetch_error",
    "parse_remote", "redact", "remote_source", "resolve_commit", "scan_commit",
]
