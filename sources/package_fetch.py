"""Fetching from package indexes: bounded, hash-checked, credentials kept out of sight.

One ``Fetcher`` serves both ecosystems (``package_index`` for PyPI, ``npm_registry``):

- ``http``/``https`` through ``urllib`` with only the handlers needed (no ``ftp:``, no
  ``data:``); a redirect may only go to ``http``/``https`` and never from ``https`` down
  to ``http``; at most ``max_bytes`` are read (a larger ``Content-Length`` is refused
  before reading), each socket operation waits at most ``timeout`` seconds and the whole
  transfer at most ``deadline`` seconds (a server dripping one byte a second stops);
- ``file:`` only when the caller allows it, i.e. when the index itself is a ``file://``
  directory the user configured: a page served over HTTP can never make doc-index read a
  local file. Regular files only (a FIFO cannot block the read), same byte cap;
- an ``Authorization`` header only for the hosts the caller's rule names (the index's own
  host for a PyPI index URL with ``user:password@``, the ``.npmrc`` entries for npm), sent
  as an unredirected header, so a redirect to another host does not carry it;
- with a ``Digest``, the body is returned only when its hash equals the published one:
  nothing else ever sees unverified archive bytes.

Every message quoting a URL goes through ``redact`` (``PackageError`` does it).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import ssl
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit, urlunsplit

from ..foundation.errors import NotFound, PackageError
from ..foundation.redact import redact

DEFAULT_TIMEOUT = 30.0  # seconds one socket operation may wait
DEFAULT_DEADLINE = 600.0  # seconds one whole transfer may take
MAX_PAGE_BYTES = 64 << 20  # an npm packument (next's: 21 MB; index_pages says more)
MAX_SIMPLE_PAGE_BYTES = 16 << 20  # a PyPI simple project page (botocore's: 2 MB)
MAX_ARCHIVE_BYTES = 100 << 20  # a source archive
_CHUNK = 64 << 10
USER_AGENT = "doc-index (package docs; never installs)"

# Hash algorithms a published digest may use, strongest first. md5 is never enough; sha1
# only where an ecosystem has nothing else (npm's ``shasum`` of old packages).
STRONG_ALGORITHMS = ("sha512", "sha384", "sha256", "sha3_512", "sha3_384", "sha3_256",
                     "blake2b", "sha224", "sha3_224", "blake2s")


class Digest(NamedTuple):
    """A published hash: hashlib's algorithm name and the lowercase hex digest."""

    algorithm: str
    hex: str

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.hex}"

    def matches(self, data: bytes) -> bool:
        return hashlib.new(self.algorithm, data).hexdigest() == self.hex


def strongest(digests: Iterable[Digest], allowed: tuple[str, ...] = STRONG_ALGORITHMS,
              ) -> Digest | None:
    """The digest of the strongest algorithm in ``allowed`` (ordered strongest first)."""
    by_algorithm = {d.algorithm: d for d in digests}
    for algorithm in allowed:
        if algorithm in by_algorithm:
            return by_algorithm[algorithm]
    return None


def digest_from_hex(algorithm: str, value: object) -> Digest | None:
    """A ``Digest`` when ``value`` is a hex string of the algorithm's length, else None."""
    algorithm = algorithm.lower().replace("-", "_")
    if algorithm not in hashlib.algorithms_guaranteed or not isinstance(value, str):
        return None
    if algorithm.startswith("shake_"):
        return None
    value = value.strip().lower()
    size = hashlib.new(algorithm).digest_size * 2
    if len(value) != size or not _HEX.fullmatch(value):
        return None
    return Digest(algorithm, value)


_HEX = re.compile(r"[0-9a-f]+")


def digests_from_sri(integrity: object) -> list[Digest]:
    """The digests of a Subresource Integrity string (``sha512-<base64> ...``, npm's
    ``dist.integrity``); entries that do not parse are left out."""
    if not isinstance(integrity, str):
        return []
    found = []
    for token in integrity.split():
        algorithm, _, rest = token.partition("-")
        value = rest.split("?", 1)[0]
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            continue
        digest = digest_from_hex(algorithm, raw.hex())
        if digest is not None:
            found.append(digest)
    return found


def shown(url: str) -> str:
    """``url`` as it may be printed or recorded: no user info, no query or fragment, and
    an ``@`` in its path written ``%40`` (npm's ``/@scope/pkg/-/...``), so that ``redact``
    does not take ``host:port/@scope`` for a password and mangle the host."""
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        url = urlunsplit((parts.scheme, host, parts.path.replace("@", "%40"), "", ""))
    return redact(url)


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and the Basic ``Authorization`` value
    that part stands for (None when there is none)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


def inside(path: str | os.PathLike[str], project: str | os.PathLike[str] | None) -> bool:
    """True when ``path`` lies in the folder ``project`` (links resolved): a configuration
    file there is the project's, never read as the user's (``pypi_config``,
    ``npm_config``)."""
    if project is None:
        return False
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(project))
    except (OSError, ValueError):
        return True


def host_key(url: str) -> str:
    """The ``host[:port]`` a credential is bound to (lowercase, default ports dropped)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return host if port in (None, default) else f"{host}:{port}"





class Fetched(NamedTuple):
    """A body read within the caps: ``url`` is where it came from after redirects,
    ``content_type`` the media type without parameters ("" for a file)."""

    url: str
    content_type: str
    body: bytes


Authorizer = Callable[[str], "str | None"]


def _no_authorization(url: str) -> str | None:
    return None


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects stay on http(s), never downgrade https, and carry only the credentials
    the fetcher's rule gives the new URL (``Authorization`` is an unredirected header)."""

    def __init__(self, authorize: Authorizer) -> None:
        self._authorize = authorize

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        old, new = urlsplit(req.full_url).scheme.lower(), urlsplit(newurl).scheme.lower()
        if new not in ("http", "https"):
            raise PackageError(f"{shown(req.full_url)} redirects to a {new or 'schemeless'} URL; "
                               "only http and https are followed")
        if old == "https" and new == "http":
            raise PackageError(f"{shown(req.full_url)} redirects from https to http: refused")
        request = super().redirect_request(req, fp, code, msg, headers, newurl)
        if request is not None:
            clean, embedded = split_credentials(request.full_url)
            request.full_url = clean
            authorization = self._authorize(clean) or embedded
            if authorization:
                request.add_unredirected_header("Authorization", authorization)
        return request


class Fetcher:
    """Reads index pages and archives with the caps and rules of this module.

    ``authorize(url)`` gives the ``Authorization`` value for a URL, or None: the rule of
    the ecosystem's configuration (credentials never appear in URLs sent or printed)."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT, deadline: float = DEFAULT_DEADLINE,
                 authorize: Authorizer = _no_authorization, cafile: str | None = None) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self._authorize = authorize
        self._opener = urllib.request.OpenerDirector()
        # The installer's own CA bundle (pip's ``cert``, npm's ``cafile``): a private
        # index behind a corporate CA verifies as it does for pip and npm.
        context = ssl.create_default_context(cafile=cafile) if cafile else None
        for handler in (urllib.request.ProxyHandler(), urllib.request.HTTPHandler(),
                        urllib.request.HTTPSHandler(context=context), _Redirects(authorize),
                        urllib.request.HTTPDefaultErrorHandler(),
                        urllib.request.HTTPErrorProcessor()):
            self._opener.add_handler(handler)

    def get(self, url: str, *, max_bytes: int, accept: str | None = None,
            digest: Digest | None = None, allow_file: bool = False) -> Fetched:
        """The body at ``url`` (at most ``max_bytes``), checked against ``digest`` when
        given. ``file:`` URLs only with ``allow_file``; any other scheme is refused."""
        scheme = urlsplit(url).scheme.lower()
        if scheme == "file" and allow_file:
            fetched = Fetched(url, "", _read_file(url, max_bytes))
        elif scheme in ("http", "https"):
            fetched = self._get_http(url, max_bytes, accept)
        else:
            raise PackageError(f"refusing to fetch {shown(url)}: only http(s) URLs"
                               + (" and file URLs of a file index" if allow_file else "")
                               + " are read")
        if digest is not None and not digest.matches(fetched.body):
            actual = hashlib.new(digest.algorithm, fetched.body).hexdigest()
            raise PackageError(f"{shown(url)}: {digest.algorithm} {actual} is not the published "
                               f"{digest.hex}; the archive is not used")
        return fetched

    def _get_http(self, url: str, max_bytes: int, accept: str | None) -> Fetched:
        clean, embedded = split_credentials(url)
        request = urllib.request.Request(clean, headers={"User-Agent": USER_AGENT})
        if accept:
            request.add_header("Accept", accept)
        authorization = self._authorize(clean) or embedded
        if authorization:
            request.add_unredirected_header("Authorization", authorization)
        started = time.monotonic()
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return self._read_response(response, url, max_bytes, started)
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 410):
                raise NotFound(f"{shown(url)}: HTTP {exc.code}") from None
            raise PackageError(f"{shown(url)}: HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise PackageError(f"cannot reach {shown(url)}: {exc.reason}") from None
        except TimeoutError:
            raise PackageError(f"{shown(url)}: no answer within {self.timeout:g} s") from None
        except (OSError, ValueError) as exc:  # http.client errors, a broken connection
            raise PackageError(f"{shown(url)}: {type(exc).__name__}: {exc}") from None

    def _read_response(self, response, url: str, max_bytes: int,  # type: ignore[no-untyped-def]
                       started: float) -> Fetched:
        length = response.headers.get("Content-Length")
        if length and length.strip().isdigit() and int(length) > max_bytes:
            raise PackageError(f"{shown(url)}: {int(length)} bytes, over the {max_bytes}-byte cap")
        chunks, size = [], 0
        while True:
            chunk = response.read(_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise PackageError(f"{shown(url)}: over the {max_bytes}-byte cap")
            if time.monotonic() - started > self.deadline:
                raise PackageError(f"{shown(url)}: not read within {self.deadline:g} s")
            chunks.append(chunk)
        content_type = response.headers.get_content_type() or ""
        return Fetched(response.geturl(), content_type.lower(), b"".join(chunks))


def file_path(url: str) -> str:
    """The local path of a ``file:`` URL (host empty or ``localhost``)."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise PackageError(f"{shown(url)}: a file URL on another host is not read")
    return urllib.request.url2pathname(parts.path)


def _read_file(url: str, max_bytes: int) -> bytes:
    """A regular file's bytes (a directory's ``index.html``, as pip reads a file index)."""
    path = file_path(url)
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise NotFound(f"{shown(url)}: no such file") from None
    except OSError as exc:
        raise PackageError(f"{shown(url)}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PackageError(f"{shown(url)}: not a regular file")
        if info.st_size > max_bytes:
            raise PackageError(f"{shown(url)}: {info.st_size} bytes, over the {max_bytes}-byte cap")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PackageError(f"{shown(url)}: over the {max_bytes}-byte cap")
    return data


class Artifact(NamedTuple):
    """A published archive found on an index, before it is downloaded.

    ``url`` and ``index`` may carry the configuration's credentials: print or record them
    only through ``shown``/``record``. ``digest`` is the hash the index publishes (None
    only for a local file index that publishes none). ``warnings`` are for the summary
    (a yanked file, a deprecated version)."""

    ecosystem: str
    name: str
    version: str
    filename: str
    url: str
    index: str  # type: ignore[assignment]  # a field named like tuple.index
    digest: Digest | None
    warnings: tuple[str, ...] = ()

    def record(self, sha256: str) -> dict[str, str]:
        """The source record of a cache built from this archive (credential-free):
        ``sha256`` is the hash of the bytes actually read."""
        return {
            "kind": self.ecosystem,
            "package": self.name,
            "version": self.version,
            "index": shown(self.index),
            "archive": self.filename,
            "archive_url": shown(self.url),
            "archive_hash": str(self.digest) if self.digest else "",
            "archive_sha256": sha256,
        }


def download(artifact: Artifact, fetcher: Fetcher, *,
             max_bytes: int = MAX_ARCHIVE_BYTES) -> bytes:
    """The archive's bytes, verified against its published hash before they are returned.

    An archive without a published hash is read only from a ``file://`` index (the user's
    own directory); from a remote index it is refused."""
    local = urlsplit(artifact.index).scheme.lower() == "file"
    if artifact.digest is None and not local:
        raise PackageError(f"{shown(artifact.index)} publishes no usable hash for "
                           f"{artifact.filename}; doc-index reads verified archives only")
    return fetcher.get(artifact.url, max_bytes=max_bytes, digest=artifact.digest,
                       allow_file=local).body


__all__ = [
    "Artifact", "Digest", "Fetched", "Fetcher", "MAX_ARCHIVE_BYTES", "MAX_PAGE_BYTES",
    "MAX_SIMPLE_PAGE_BYTES",
    "NotFound", "digest_from_hex", "digests_from_sri", "download", "file_path", "host_key",
    "inside", "shown", "split_credentials", "strongest",
]
