"""Package indexes on 127.0.0.1 for tests, and the archives they serve, made on the fly.

- ``SimpleIndex``: a PEP 503 (HTML) and PEP 691 (JSON) index at ``<url>/simple/``,
  files at ``<url>/files/<name>``; per file: the published hash (right, wrong or none),
  yanked; per path: a redirect; optional Basic credentials it insists on.
- ``NpmRegistry``: ``GET /<name>`` (``@scope%2fname``) gives the package document,
  tarballs at ``/<name>/-/<file>``; integrity as sha512 SRI, sha1 ``shasum`` only, or
  wrong; an optional bearer token it insists on.
- a stalled path: the server holds the request until the test ends (``release``).

All record every request (method, path and headers) so tests can say what was sent where;
``Recorder`` answers nothing (404 to every request) and only records: a host no request
may reach. ``carrying(servers, secret)`` lists the requests a secret went out in.
Archive builders: ``tar_archive`` (any member kind, hostile names allowed), ``sdist``,
``npm_tarball``, ``zip_archive``, ``gzip_bomb`` (built streaming, never whole in memory).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import io
import json
import os
import tarfile
import threading
import zipfile
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import unquote

# --- archives ----------------------------------------------------------------------------


class Member(NamedTuple):
    """One tar member: ``kind`` is a tarfile type (REGTYPE, SYMTYPE, LNKTYPE, FIFOTYPE,
    CHRTYPE, DIRTYPE); ``link`` the link target."""

    name: str
    data: bytes = b""
    kind: bytes = tarfile.REGTYPE
    link: str = ""


def file(name: str, data: bytes | str = b"") -> Member:
    return Member(name, data.encode() if isinstance(data, str) else data)


def tar_archive(members: Iterable[Member], compression: str = "gz") -> bytes:
    """A tar archive (``gz``, ``bz2``, ``xz`` or ``""``) holding exactly ``members``, in
    order, names as given (``../x``, ``/abs`` included)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=f"w:{compression}" if compression else "w",
                      format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info = tarfile.TarInfo(member.name)
            info.type = member.kind
            info.linkname = member.link
            info.mode = 0o755 if member.kind == tarfile.DIRTYPE else 0o644
            info.mtime = 1_700_000_000
            if member.kind == tarfile.REGTYPE:
                info.size = len(member.data)
                tar.addfile(info, io.BytesIO(member.data))
            else:
                tar.addfile(info)
    return out.getvalue()


def sdist(name: str, version: str, files: dict[str, bytes | str],
          extra: Iterable[Member] = ()) -> bytes:
    """A source distribution: ``<name>-<version>/`` holding a PKG-INFO and ``files``."""
    top = f"{name}-{version}"
    pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    members = [Member(top + "/", kind=tarfile.DIRTYPE), file(f"{top}/PKG-INFO", pkg_info)]
    members += [file(f"{top}/{path}", data) for path, data in files.items()]
    return tar_archive([*members, *extra])


def npm_tarball(files: dict[str, bytes | str], extra: Iterable[Member] = ()) -> bytes:
    """An npm package tarball: everything under ``package/``."""
    return tar_archive([*(file(f"package/{p}", d) for p, d in files.items()), *extra])


def zip_archive(members: Iterable[tuple[str, bytes | str, int]]) -> bytes:
    """A zip of ``(name, data, unix mode)`` members (mode 0: no unix attributes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode:
                info.external_attr = mode << 16
            archive.writestr(info, data.encode() if isinstance(data, str) else data)
    return out.getvalue()


def gzip_bomb(size: int, name: str = "bomb-1.0/docs/bomb.md") -> bytes:
    """A .tar.gz whose one member holds ``size`` zero bytes, written in chunks so the
    test never holds the inflated bytes."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as gz:
        info = tarfile.TarInfo(name)
        info.size = size
        gz.write(info.tobuf(format=tarfile.GNU_FORMAT))
        chunk = bytes(1 << 20)
        left = size
        while left:
            gz.write(chunk[: min(left, len(chunk))])
            left -= min(left, len(chunk))
        gz.write(bytes(-size % 512) + bytes(1024))
    return out.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sri(data: bytes, algorithm: str = "sha512") -> str:
    return f"{algorithm}-" + base64.b64encode(hashlib.new(algorithm, data).digest()).decode()


# --- servers ----------------------------------------------------------------------------


class Request(NamedTuple):
    path: str
    headers: dict[str, str]
    method: str = "GET"


class _Server:
    """A threading HTTP server on 127.0.0.1, an ephemeral port, in a daemon thread."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.redirects: dict[str, tuple[int, str]] = {}
        self.stalled: set[str] = set()
        self.release = threading.Event()
        self.required_auth: str | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                outer._handle(self)

            def _record_only(self) -> None:
                outer.requests.append(Request(self.path, dict(self.headers.items()),
                                              self.command))
                outer._send(self, 405, b"", "text/plain")

            do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _record_only  # noqa: N815

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    def __enter__(self):  # type: ignore[no-untyped-def]
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path
        self.requests.append(Request(path, dict(request.headers.items()), request.command))
        if path in self.stalled:
            self.release.wait()
            return
        if self.required_auth and request.headers.get("Authorization") != self.required_auth:
            self._send(request, 401, b"unauthorized", "text/plain")
            return
        if path in self.redirects:
            code, location = self.redirects[path]
            request.send_response(code)
            request.send_header("Location", location)
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        found = self.route(path, request.headers.get("Accept", ""))
        if found is None:
            self._send(request, 404, b"not found", "text/plain")
        else:
            self._send(request, 200, found[0], found[1])

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, code: int, body: bytes, kind: str) -> None:
        request.send_response(code)
        request.send_header("Content-Type", kind)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def route(self, path: str, accept: str) -> tuple[bytes, str] | None:
        raise NotImplementedError


class IndexFile(NamedTuple):
    filename: str
    data: bytes
    digest: str | None  # "sha256=<hex>" as published, None: no hash
    yanked: str | bool = False


class SimpleIndex(_Server):
    """A PEP 503/691 index: ``add(name, filename, data)``; ``json=False`` answers HTML
    only (an index that predates PEP 691)."""

    def __init__(self, json_api: bool = True) -> None:
        super().__init__()
        self.json_api = json_api
        self.projects: dict[str, list[IndexFile]] = {}

    @property
    def index_url(self) -> str:
        return f"{self.url}/simple/"

    def add(self, name: str, filename: str, data: bytes, *, digest: str | None = "right",
            yanked: str | bool = False) -> None:
        if digest == "right":
            digest = f"sha256={sha256(data)}"
        elif digest == "wrong":
            digest = f"sha256={sha256(data + b'!')}"
        self.projects.setdefault(name, []).append(IndexFile(filename, data, digest, yanked))

    def route(self, path: str, accept: str) -> tuple[bytes, str] | None:
        parts = path.split("?")[0].strip("/").split("/")
        if len(parts) == 2 and parts[0] == "simple" and parts[1] in self.projects:
            files = self.projects[parts[1]]
            if self.json_api and "application/vnd.pypi.simple.v1+json" in accept:
                return self._json(parts[1], files), "application/vnd.pypi.simple.v1+json"
            return self._html(files), "text/html"
        if len(parts) == 2 and parts[0] == "files":
            for files in self.projects.values():
                for entry in files:
                    if entry.filename == unquote(parts[1]):
                        return entry.data, "application/octet-stream"
        return None

    @staticmethod
    def _html(files: list[IndexFile]) -> bytes:
        lines = ["<!DOCTYPE html><html><body>"]
        for entry in files:
            href = f"../../files/{entry.filename}" + (f"#{entry.digest}" if entry.digest else "")
            yanked = ""
            if entry.yanked is not False:
                reason = entry.yanked if isinstance(entry.yanked, str) else ""
                yanked = f' data-yanked="{html.escape(reason)}"'
            lines.append(f'<a href="{html.escape(href)}"{yanked}>{entry.filename}</a><br/>')
        return "\n".join([*lines, "</body></html>"]).encode()

    @staticmethod
    def _json(name: str, files: list[IndexFile]) -> bytes:
        entries = []
        for entry in files:
            hashes = dict([entry.digest.split("=", 1)]) if entry.digest else {}
            entries.append({"filename": entry.filename, "url": f"../../files/{entry.filename}",
                            "hashes": hashes, "yanked": entry.yanked})
        return json.dumps({"meta": {"api-version": "1.1"}, "name": name,
                           "files": entries}).encode()


class NpmRegistry(_Server):
    """An npm registry: ``add(name, version, tarball)`` with ``integrity`` one of
    ``sha512`` (SRI), ``shasum`` (sha1 only), ``wrong`` or ``none``."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: dict[str, dict[str, Any]] = {}
        self.tarballs: dict[str, bytes] = {}

    def add(self, name: str, version: str, data: bytes, *, integrity: str = "sha512",
            deprecated: str | None = None) -> str:
        base = name.rsplit("/", 1)[-1]
        path = f"/{name}/-/{base}-{version}.tgz"
        self.tarballs[path] = data
        dist: dict[str, Any] = {"tarball": self.url + path}
        if integrity == "sha512":
            dist["integrity"] = sri(data)
            dist["shasum"] = hashlib.sha1(data).hexdigest()
        elif integrity == "shasum":
            dist["shasum"] = hashlib.sha1(data).hexdigest()
        elif integrity == "wrong":
            dist["integrity"] = sri(data + b"!")
        entry: dict[str, Any] = {"name": name, "version": version, "dist": dist}
        if deprecated:
            entry["deprecated"] = deprecated
        document = self.documents.setdefault(name, {"name": name, "versions": {},
                                                    "dist-tags": {}})
        document["versions"][version] = entry
        document["dist-tags"]["latest"] = version
        return path

    def route(self, path: str, accept: str) -> tuple[bytes, str] | None:
        if path in self.tarballs:
            return self.tarballs[path], "application/octet-stream"
        name = unquote(path.lstrip("/"))
        if name in self.documents and (name.count("/") == 0 or "%2f" in path.lower()):
            return json.dumps(self.documents[name]).encode(), "application/json"
        return None


class Recorder(_Server):
    """A server that serves nothing and records every request: a host no request may reach."""

    def route(self, path: str, accept: str) -> tuple[bytes, str] | None:
        return None


def carrying(servers: Iterable[_Server], secret: str) -> list[tuple[str, Request]]:
    """Every request any of ``servers`` received whose path or any header holds
    ``secret`` (plain, or inside a Basic credential): (server URL, request)."""
    found = []
    for server in servers:
        for request in server.requests:
            texts = [request.path, *request.headers.values()]
            for value in request.headers.values():
                if value.startswith("Basic "):
                    try:
                        texts.append(base64.b64decode(value[6:]).decode("utf-8", "replace"))
                    except ValueError:
                        pass
            if any(secret in text for text in texts):
                found.append((server.url, request))
    return found


def bulky_sdist(name: str, version: str, files: int, size: int) -> bytes:
    """An sdist of ``files`` Markdown files of ``size`` bytes each under ``docs/``, built
    streaming (gzip level 1) from 16 KiB blocks of random hex each written 8 times: it
    compresses about 16:1, well inside the decompression-ratio cap, like real text."""
    out = io.BytesIO()
    top = f"{name}-{version}"
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        readme = b"# Bulky\n\nA package with a lot of docs.\n"
        for path, data in ((f"{top}/PKG-INFO", f"Name: {name}\nVersion: {version}\n"
                            .encode()), (f"{top}/README.md", readme)):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for n in range(files):
            info = tarfile.TarInfo(f"{top}/docs/page{n:04d}.md")
            info.size = size
            tar.addfile(info, io.BufferedReader(_RepeatedHex(size)))
    return out.getvalue()


class _RepeatedHex(io.RawIOBase):
    """``size`` bytes of Markdown-ish lines of random hex, each 16 KiB block 8 times."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.left = size
        self.block = b""
        self.uses = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        if self.left <= 0:
            return 0
        if self.uses == 0:
            hexed = os.urandom(8192).hex().encode()
            self.block = b"\n".join(hexed[i:i + 63] for i in range(0, len(hexed), 64))
            self.uses = 8
        self.uses -= 1
        n = min(len(buffer), len(self.block), self.left)
        buffer[:n] = self.block[:n]
        self.left -= n
        return n


__all__ = [
    "IndexFile", "Member", "NpmRegistry", "Recorder", "Request", "SimpleIndex", "bulky_sdist",
    "carrying", "file", "gzip_bomb", "npm_tarball", "sdist", "sha256", "sri", "tar_archive",
    "zip_archive",
]
