"""Git sources: fetch a repository into a bare clone, scan one commit from git.

``doc-index build <git-url>`` keeps a bare clone per remote in the clone area
(``$XDG_CACHE_HOME/doc-index/clones``, default ``~/.cache/doc-index/clones``), outside
the cache root. Each build fetches what the remote HEAD (or ``--ref``) needs (one commit
and its trees, then the blobs of the files it indexes: "the clone area" below), lists
that commit's tree and chooses its documentation (``doc_selection``). Nothing is ever
checked out: file hashes are the git blob SHAs of the tree entries and a file's bytes
come from the object database, so ``core.autocrlf``, smudge filters and local edits
cannot leak into the cache, and an unchanged file (same blob SHA as in the cache) is
neither read nor parsed.

Every git command runs through ``git_run`` (a clean environment, repository options that
run commands disabled); every tree entry name goes through ``safe_paths.path_problem``
before it is used (fetches do not force git's fsck: ``git_run.FETCH_OPTIONS`` says why).
A URL's credentials are never stored in the clone's config (see ``_network_env``).

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
from typing import TYPE_CHECKING, NamedTuple

from ..foundation.errors import BadSource, GitSourceError
from ..foundation.file_lock import BuildLock
from ..foundation.redact import redact  # every message that may quote a URL
from ..foundation.safe_paths import path_problem
from ..indexer.formats import is_doc_path, is_txt_path
from .doc_config import MAX_CONFIG_BYTES
from .docs_folder import (
    ALL,
    DOCS,
    SUBDIR,
    Selection,
    choose,
    classify,
    is_config_name,
)
from .git_run import FETCH_OPTIONS, read_batch_blob, run_git, start_git
from .identity import Source, git_source, place_of, remote_names
from .snapshot import Scan, SourceFile
from .walk import DEFAULT_MAX_BYTES, SKIPPED_DIRS

if TYPE_CHECKING:
    from .expansion import ExpandConfig

HEAD_REF = "refs/doc-index/HEAD"  # where the remote's HEAD is fetched to
WANTED_REF = "refs/doc-index/wanted"  # a --ref fetched by name (refs/pull/1/head, a SHA)
LOCK_NAME = "doc-index.lock"  # inside the bare clone (git ignores unknown files there)
_TMP_PREFIX = ".tmp-"

_MODE_SYMLINK = "120000"
_MODE_SUBMODULE = "160000"





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
        raise BadSource(f"cannot tell the repository name from {redact(source)}")
    url, owner, name = names
    return Remote(url=url, display=redact(source), owner=owner, name=name)


def remote_source(remote: Remote, ref: str | None, scope: str = DOCS,
                  subdir: str | None = None) -> Source:
    """What the manifest records of a git source (``source_identity``): the URL without
    user info or query (never a credential), the ``--ref`` asked for, the selection."""
    return git_source(remote.clean_url, ref, remote.owner, remote.name, scope, subdir)


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
            f"{f' ({detail})' if detail else ''}; your git config asks for fsck on fetch "
            "(transfer.fsckObjects or fetch.fsckObjects): relax that check with "
            "fetch.fsck.<check>=ignore, or turn it off (doc-index checks tree entry names "
            "itself)")
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

# A build fetches what its ref needs: the one commit (``--depth 1``) and its trees, without
# file contents (``--filter=blob:none``, where the server allows filters: GitHub, GitLab,
# a repository with ``uploadpack.allowFilter``); ``scan_commit`` then fetches the blobs of
# the files it indexes (and the docs tools' config files), in one request each, and only
# those the clone does not hold yet. The next build fetches the new commit the same way:
# blobs of unchanged files are already there, and the cache's blob SHAs spare reading them.
_SHALLOW = ("--depth", "1")
_NO_BLOBS = "--filter=blob:none"
_EVERY_REF = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
# git's words when a ref is not there, or a commit is not served by its id
_NOT_SERVED = ("couldn't find remote ref", "not our ref", "unadvertised object",
               "no such remote ref", "invalid refspec")


class Fetched(NamedTuple):
    """A clone holding the commit to index, what the summary says about the fetch, and
    how the commit was fetched (``specs``, ``shallow``: to fetch it whole if need be)."""

    clone: Path
    commit: str
    notes: list[str]
    specs: tuple[str, ...]
    shallow: bool


def _fetch(clone: Path, remote: Remote, specs: list[str] | tuple[str, ...], notes: list[str],
           *, shallow: bool = True, more: tuple[str, ...] = (),
           filtered: bool = True) -> tuple[int, str]:
    """``git fetch`` of ``specs`` from ``origin``, shallow and without blobs unless told;
    (status, stderr). A server that cannot fetch shallow (git's "dumb" http, which cannot
    give objects by id either) is fetched whole, as a complete clone, which ``notes``
    says."""
    args = ["fetch", "--no-tags", "--quiet", *more, "origin", *specs]
    if filtered or shallow:
        status, _, err = _git(clone, [*args[:3], *((_NO_BLOBS,) if filtered else ()),
                                      *(_SHALLOW if shallow else ()), *args[3:]],
                              _network_env(clone, remote), FETCH_OPTIONS, network=True)
        if status == 0 or not any(w in err.lower() for w in ("shallow", "dumb http")):
            return status, err
        notes.append("fetch: the server cannot give one commit alone (git's dumb http): "
                     "fetched the whole history")
        for key in ("remote.origin.promisor", "remote.origin.partialclonefilter"):
            _git(clone, ["config", "--unset-all", key])  # (a partial clone of it would hang)
    status, _, err = _git(clone, args, _network_env(clone, remote), FETCH_OPTIONS,
                          network=True)
    return status, err


def fetch_ref(clone: Path, remote: Remote, ref: str | None) -> Fetched:
    """Fetch what ``ref`` needs into ``clone`` and resolve it. ``ref`` is a branch, tag
    or full ref name (as git resolves it on the remote, tags first), or a commit SHA;
    None is the remote's HEAD. A SHA the server does not give by its id (an older server
    without ``uploadpack.allowReachableSHA1InWant``, or an abbreviated one) is found by
    fetching every branch and tag, without file contents, which a note says."""
    notes: list[str] = []
    if ref is None:
        specs = (f"+HEAD:{HEAD_REF}",)
        status, err = _fetch(clone, remote, specs, notes)
        if status != 0:
            raise fetch_error(remote, err)
        commit = _peel(clone, HEAD_REF) or _missing(remote, "HEAD")
        return Fetched(clone, commit, notes, specs, True)
    if not _REF_TEXT.match(ref) or ".." in ref or ref.endswith((".lock", "/", ".")):
        _missing(remote, ref)
    specs = (f"+{ref}:{WANTED_REF}",)
    status, err = _fetch(clone, remote, specs, notes)
    if status == 0:
        return Fetched(clone, _peel(clone, WANTED_REF) or _missing(remote, ref), notes, specs,
                       True)
    if not any(p in err.lower() for p in _NOT_SERVED):
        raise fetch_error(remote, err)
    if not _SHA.match(ref):
        _missing(remote, ref)
    return _fetch_every_ref(clone, remote, ref)


def _fetch_every_ref(clone: Path, remote: Remote, sha: str) -> Fetched:
    """The fallback for a commit SHA: every branch and tag with their history (no file
    contents), then ``sha`` resolved in the clone."""
    _, shallow, _ = _git(clone, ["rev-parse", "--is-shallow-repository"])
    more = ("--prune", "--unshallow") if shallow.strip() == "true" else ("--prune",)
    notes: list[str] = []
    status, err = _fetch(clone, remote, _EVERY_REF, notes, shallow=False, more=more)
    if status != 0:
        raise fetch_error(remote, err)
    commit = _peel(clone, sha) or _missing(remote, sha)
    why = ("the server does not give a commit by its id "
           "(uploadpack.allowReachableSHA1InWant)" if len(sha) >= 40 else
           "an abbreviated commit id cannot be fetched by itself")
    notes.append(f"fetch: {sha} is no branch or tag and {why}: fetched every branch and "
                 "tag (history without file contents) to find it")
    return Fetched(clone, commit, notes, _EVERY_REF, False)


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


_SHA = re.compile(r"^[0-9a-fA-F]{4,64}$")
# What a ref may hold (git check-ref-format, and no refspec syntax: ``:``, ``*``, ``+``
# at the start, ``^``/``~`` revision syntax, ``-`` at the start: an option).
_REF_TEXT = re.compile(r"^(?![-+/])[^\x00-\x20\x7f:*?\[\\^~]+$")


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
               area: Path | None = None) -> Iterator[Fetched]:
    """Fetch what ``ref`` needs from ``remote`` into its bare clone (creating it if needed)
    and yield the clone, the resolved commit and the fetch's notes, holding the clone's
    lock."""
    area = area if area is not None else clone_area()
    area.mkdir(parents=True, exist_ok=True)
    final = area / remote.clone_dir_name
    _clean_temp_clones(area, remote.clone_dir_name)
    fresh: Fetched | None = None
    if not _usable_clone(final):
        fresh = _first_clone(remote, ref, area, final)
    with BuildLock(final / LOCK_NAME):
        if fresh is None:
            _set_url(final, remote)
            fresh = fetch_ref(final, remote, ref)
        yield fresh._replace(clone=final)


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


def _first_clone(remote: Remote, ref: str | None, area: Path,
                 final: Path) -> Fetched | None:
    """Clone into a temporary directory, resolve the ref, rename into place: the commit
    and notes when this call's clone became the clone (None: another build got there
    first, and fetches again under the lock)."""
    tmp = area / f"{_TMP_PREFIX}{remote.clone_dir_name}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        try:
            done = run_git(["init", "--quiet", "--bare", os.fspath(tmp)])
        except OSError as exc:
            raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
        if done.status != 0:
            raise GitSourceError(f"cannot create a clone in {area}: {_last_message(done.err)}")
        _set_url(tmp, remote)
        resolved = fetch_ref(tmp, remote, ref)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent build won the race
            return None
        return resolved
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
        data = read_batch_blob(stdin, stdout, sha)
        if data is None:
            raise OSError(f"cannot read blob {sha}")
        return data

    def reader(self, sha: str) -> Callable[[], bytes]:
        return lambda: self.read(sha)

    def close(self) -> None:
        if self._proc is not None:
            for pipe in (self._proc.stdin, self._proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(BrokenPipeError):
                        pipe.close()
            self._proc.wait()
            self._proc = None


class _Entry(NamedTuple):
    mode: str
    kind: str
    sha: str
    path: str


BlobFetcher = Callable[[list[str]], None]
# Chooses a commit's selection from its paths and a config reader (``docs_folder.choose``'s
# arguments but the mode's).
Selector = Callable[[list[str], Callable[[str], "bytes | None"]], Selection]


def _local(clone: Path, args: list[str], input: bytes | None = None) -> bytes:
    """stdout of a local git call in the clone; GitSourceError when it fails."""
    try:
        done = run_git(args, git_dir=clone, input=input)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    if done.status != 0:
        raise GitSourceError(f"cannot read the clone {clone}: {_last_message(done.err)}")
    return done.out


def _missing_blobs(clone: Path, commit: str) -> set[str]:
    """The objects of ``commit``'s tree a partial clone does not hold (never fetched
    here: lazy fetching is off for local calls); empty for a complete clone."""
    status, out, _ = _git(clone, ["config", "--get", "remote.origin.promisor"])
    if status != 0 or out.strip() != "true":
        return set()
    listed = _local(clone, ["rev-list", "--objects", "--no-walk", "--missing=print", commit])
    return {line[1:].decode("ascii") for line in listed.splitlines() if line.startswith(b"?")}


def fetch_blobs(fetched: Fetched, remote: Remote, shas: list[str]) -> None:
    """Fetch the blobs ``shas`` into a partial clone in one request (as git's own lazy
    fetch does, with no negotiation): what ``scan_commit`` indexes, nothing else. A server
    that does not give objects by id (protocol v0 without ``allowAnySHA1InWant``) has the
    commit fetched again whole (``--refetch``), which a note says."""
    if not shas:
        return
    clone = fetched.clone
    status, _, err = _git_input(clone, [
        "-c", "fetch.negotiationAlgorithm=noop", "fetch", "--no-tags", "--quiet",
        "--no-write-fetch-head", "--recurse-submodules=no", _NO_BLOBS, "--stdin", "origin",
    ], "".join(f"{sha}\n" for sha in shas).encode("ascii"), _network_env(clone, remote))
    if status == 0:
        return
    if not any(p in err.lower() for p in _NOT_SERVED):
        raise fetch_error(remote, err)
    fetched.notes.append("fetch: the server does not give files by their id: fetched the "
                         "commit again with every file")
    status, err = _fetch(clone, remote, fetched.specs, [], shallow=fetched.shallow,
                         more=("--refetch", "--no-filter"), filtered=False)
    if status != 0:
        raise fetch_error(remote, err)


def _git_input(clone: Path, args: list[str], data: bytes,
               env: dict[str, str]) -> tuple[int, str, str]:
    try:
        done = run_git(args, git_dir=clone, options=FETCH_OPTIONS, env=env, network=True,
                       input=data)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    return done.status, done.out.decode("utf-8", "replace"), done.err


def _sizes(clone: Path, shas: list[str]) -> dict[str, int]:
    """Each present blob's size (``cat-file --batch-check``)."""
    if not shas:
        return {}
    out = _local(clone, ["cat-file", "--batch-check"],
                 "".join(f"{sha}\n" for sha in shas).encode("ascii"))
    sizes: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == b"blob":
            sizes[parts[0].decode("ascii")] = int(parts[2])
    return sizes


def _list_tree(clone: Path, commit: str, scan: Scan) -> list[_Entry]:
    """Every entry of ``commit``'s tree whose name passes the one path check; the others
    are reported in ``scan`` (a documentation file's, or any under a ``.git`` folder)."""
    try:
        done = run_git(["ls-tree", "-r", "-z", "--full-tree", commit], git_dir=clone)
    except OSError as exc:
        raise GitSourceError(f"cannot run git: {exc.strerror or exc}") from None
    if done.status != 0:
        raise GitSourceError(f"cannot list commit {commit}: {_last_message(done.err)}")
    entries: list[_Entry] = []
    records = done.out.split(b"\0")
    # a ``build/`` holding a Sphinx conf.py is that folder's sources (walk._sphinx_source)
    sources = {r.partition(b"\t")[2][:-len(b"/conf.py")].decode("utf-8", "surrogateescape")
               for r in records if r.endswith((b"\tbuild/conf.py", b"/build/conf.py"))}
    for record in records:
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha = meta.decode("ascii").split()
        path = raw_path.decode("utf-8", "surrogateescape")
        problem = path_problem(path)
        if problem is not None:
            shown = raw_path.decode("utf-8", "replace")
            if problem != "file name is not UTF-8" or is_doc_path(shown):
                scan.skipped.append((shown, problem))
            continue
        folders = path.split("/")[:-1]
        if any(part.lower() == ".git" for part in folders):
            scan.skipped.append((path, "inside a folder named .git"))
            continue
        if any(part in SKIPPED_DIRS and not (
                part == "build" and "/".join(folders[:n + 1]) in sources)
                for n, part in enumerate(folders)):
            continue  # as the directory walk does: VCS and build folders
        entries.append(_Entry(mode, kind, sha, path))
    return entries


def _likely(path: str, mode: str, subdir: str | None) -> bool:
    """A file the selection of ``mode`` likely indexes, known before its config files
    are read: documentation (or ``.txt``) in ``subdir``, in ``docs/`` or ``doc/``, or
    README-like; anywhere for ALL."""
    if not (is_doc_path(path) or is_txt_path(path)):
        return False
    if mode == ALL:
        return True
    if mode == SUBDIR:
        return subdir is not None and path.startswith(subdir + "/")
    return path.startswith(("docs/", "doc/")) or ("/" not in path and is_doc_path(path))


def _is_config(path: str) -> bool:
    folder, _, name = path.rpartition("/")
    return is_config_name(name, folder.rpartition("/")[2])


def scan_commit(clone: Path, commit: str, blobs: BlobReader,
                max_bytes: int = DEFAULT_MAX_BYTES, *, mode: str = ALL,
                subdir: str | None = None, subdir_from: str = "--subdir",
                fetch: BlobFetcher | None = None, select: Selector | None = None) -> Scan:
    """The documentation files of ``commit`` that ``mode`` selects (``doc_selection``;
    ``select``, when given, chooses instead: a package's folder in a monorepo),
    sorted by path, digests = blob SHAs; in a partial clone, their blobs (and the docs
    tools' config files) are fetched first with ``fetch``.

    Every entry name goes through ``path_problem`` before anything else looks at it: a
    crafted tree (``..``, ``/abs``, ``a//b``, NUL, a ``.git`` folder) has its bad entries
    skipped and reported, the good ones indexed."""
    scan = Scan(commit_hash=commit)
    entries = _list_tree(clone, commit, scan)
    blob_entries = {e.path: e for e in entries if e.kind == "blob" and e.mode != _MODE_SYMLINK}
    missing = _missing_blobs(clone, commit)
    configs = [e.sha for p, e in blob_entries.items() if _is_config(p)]
    # With the config files, the blobs the selection will likely want (one request where
    # the docs are where they usually are; the rest, if any, after the choice).
    likely = [e.sha for p, e in blob_entries.items()
              if e.sha in missing and _likely(p, mode, subdir)]
    missing = _fetched(clone, commit, sorted({*likely, *(c for c in configs if c in missing)}),
                       missing, fetch)
    config_sizes = _sizes(clone, [sha for sha in configs if sha not in missing])

    def read_config(path: str) -> bytes | None:
        entry = blob_entries.get(path)
        if entry is None or config_sizes.get(entry.sha, MAX_CONFIG_BYTES + 1) > MAX_CONFIG_BYTES:
            return None
        try:
            return blobs.read(entry.sha)
        except OSError:
            return None

    paths = [e.path for e in entries]
    scan.selection = selection = select(paths, read_config) if select is not None else \
        choose(paths, read_config, mode, subdir, subdir_from)
    chosen = [e for e in entries if _chosen(scan, selection, e)]
    missing = _fetched(clone, commit, sorted({e.sha for e in chosen if e.sha in missing}),
                       missing, fetch)
    sizes = _sizes(clone, sorted({e.sha for e in chosen if e.sha not in missing}))
    for e in chosen:
        nbytes = sizes.get(e.sha)
        if nbytes is None:
            scan.skipped.append((e.path, "its blob is not in the clone (not fetched)"))
        elif nbytes > max_bytes:
            scan.skipped.append((e.path, f"over the size cap ({nbytes} > {max_bytes} bytes)"))
        else:
            scan.files.append(SourceFile(e.path, e.sha, nbytes, blobs.reader(e.sha)))
    scan.files.sort(key=lambda f: f.path)
    scan.skipped.sort()
    scan.tree = {p: e.sha for p, e in blob_entries.items() if e.mode != _MODE_SUBMODULE}
    scan.missing = frozenset(missing)
    return scan


def tree_expansion(fetched: Fetched, remote: Remote, scan: Scan,
                   max_bytes: int) -> ExpandConfig:
    """How a commit's pages are expanded: from the blobs of its whole tree (modules and
    included files live beside the docs), fetched on first use in a partial clone."""
    from .expansion import GitTreeReader, configure

    env = _network_env(fetched.clone, remote) if scan.missing else {}
    reader = GitTreeReader(str(fetched.clone), scan.tree, scan.missing, env, max_bytes)
    folders = scan.selection.folders if scan.selection is not None else ()
    return configure(reader, "", [f for f in folders if f])


def _fetched(clone: Path, commit: str, wanted: list[str], missing: set[str],
             fetch: BlobFetcher | None) -> set[str]:
    """``missing`` after fetching ``wanted`` (the blobs still missing)."""
    if not wanted or fetch is None:
        return missing
    fetch(wanted)
    return _missing_blobs(clone, commit)


def _chosen(scan: Scan, selection: Selection, entry: _Entry) -> bool:
    """Whether ``entry`` is a file to index; what is skipped is reported or counted."""
    if entry.mode == _MODE_SUBMODULE:
        if selection.includes(entry.path):
            scan.skipped.append((entry.path, "submodule not indexed"))
        return False
    verdict = classify(selection, entry.path)
    if verdict.kind is not None:
        scan.count_kind(verdict.kind)
    if not verdict.index:
        return False
    if entry.mode == _MODE_SYMLINK:
        scan.skipped.append((entry.path, "symlink not followed"))
        return False
    return entry.kind == "blob"


# --- the build ------------------------------------------------------------------------------

def split_subdir(source: str) -> tuple[str, str | None]:
    """A git URL's ``#P`` (the folder to index) apart from the URL; a path keeps its
    ``#``. Credentials before the host never count (``https://u:p#w@host/...``)."""
    if "#" not in source or not source.lower().startswith(_URL_PREFIXES) and not \
            _SCP_PREFIX.match(source):
        return source, None
    url, _, fragment = source.rpartition("#")
    if "@" in fragment or not url:
        return source, None
    return url, fragment


_URL_PREFIXES = ("http://", "https://", "ssh://", "git://", "file://", "git@")
_SCP_PREFIX = re.compile(r"^[\w.-]+@[\w.-]+:")


__all__ = [
    "BlobReader", "Fetched", "GitSourceError", "Remote", "clone_area",
    "fetch_blobs", "fetch_error", "fetch_ref", "parse_remote", "redact", "remote_source",
    "scan_commit", "split_subdir",
]
