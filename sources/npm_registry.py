"""Where the user's npm finds packages, and the tarball of a pin, read as data (npm never
runs).

Configuration is the user's only, a later place winning as in npm: the global ``npmrc``
(``NPM_CONFIG_GLOBALCONFIG``, else ``<prefix>/etc/npmrc``), the user's
(``NPM_CONFIG_USERCONFIG``, else ``~/.npmrc``), then the ``npm_config_*`` variables (any
case). A project's ``.npmrc``, and any file inside the project being synced, is never read
for it: a repository chooses neither the registry nor the credentials
(``index_choice`` reads a project's registry names, as names only). Keys: ``registry``,
``@scope:registry``, and the credentials of a registry path (``//host/path/:_authToken``,
``:_auth``, ``:username``/``:_password``), which are sent only to URLs under that path and
never shown. ``${VAR}`` in a value of the user's own files is the environment's ``VAR``,
as npm expands it.

A package's metadata is ``GET <registry>/<name>`` (``@scope%2fname``), asked in npm's
abbreviated form; the version's ``dist.tarball`` is verified with ``dist.integrity``
(the strongest of its sha512/sha384/sha256 entries) or, only when there is none, the
sha1 ``shasum``. A ``file://`` registry is a directory holding
``<name>/package.json`` (``@scope/name/package.json``), the metadata document; its
tarball URLs may be relative to it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote, urljoin, urlsplit

from ..foundation.errors import BadSource, PackageError
from .package_fetch import (
    MAX_PAGE_BYTES,
    Artifact,
    Digest,
    Fetcher,
    NotFound,
    digest_from_hex,
    digests_from_sri,
    inside,
    shown,
    strongest,
)

NPM_REGISTRY = "https://registry.npmjs.org/"
NPM_ACCEPT = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
SRI_ALGORITHMS = ("sha512", "sha384", "sha256")
MAX_NPMRC_BYTES = 1 << 20
# npm's name rules (validate-npm-package-name), old capitals allowed: what may be put in a
# URL path as is.
_NAME = re.compile(r"^(?:@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*$")
_ENV_REF = re.compile(r"(\\*)\$\{([^${}?]+)(\?)?\}")


class NpmConfig(NamedTuple):
    """The default registry, the scopes' registries, the registry credentials
    (``(nerf dart, Authorization value)``: never printed) and the CA bundle."""

    registry: str
    scopes: tuple[tuple[str, str], ...] = ()
    auth: tuple[tuple[str, str], ...] = ()
    cafile: str | None = None  # npm's ``cafile``, for ``Fetcher(cafile=...)``
    origin: str = "npm's default registry"  # where ``registry`` was set (a file, a variable)

    def registry_for(self, name: str) -> str:
        """The registry of ``name``: its scope's (``@scope:registry``) or the default."""
        if name.startswith("@") and "/" in name:
            scope = name.split("/", 1)[0]
            for known, url in self.scopes:
                if known == scope:
                    return url
        return self.registry

    def authorize(self, url: str) -> str | None:
        """The ``Authorization`` value for ``url``: the credentials of the longest
        configured registry path (``//host/path/``) that ``url`` lies under."""
        parts = urlsplit(url)
        key = f"//{parts.netloc.lower().rpartition('@')[2]}{parts.path}"
        best = None
        for dart, value in self.auth:
            if key.startswith(dart) and (best is None or len(dart) > len(best[0])):
                best = (dart, value)
        return best[1] if best else None


def parse_npmrc(text: str, env: Mapping[str, str]) -> dict[str, str]:
    """An ``.npmrc`` as ``key -> value``: ``key = value`` lines, ``;``/``#`` comments,
    quoted values, ``${VAR}`` (``${VAR?}``: empty when unset) from ``env``."""
    settings: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in ";#" or line.startswith("["):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = _expand(key.strip(), env), _expand(value.strip(), env)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            try:
                value = json.loads(value) if value[0] == '"' else value[1:-1]
            except ValueError:
                value = value[1:-1]
        if key and isinstance(value, str):
            settings[key] = value
    return settings


def _expand(text: str, env: Mapping[str, str]) -> str:
    """npm's rule: ``${VAR}`` is replaced (``${VAR?}`` by "" when unset); an odd number of
    backslashes before ``$`` escapes it, half of them stay."""
    def replace(match: re.Match[str]) -> str:
        slashes, name, optional = match.groups()
        if len(slashes) % 2:
            return match.group(0)[(len(slashes) + 1) // 2:]
        value = env.get(name, "" if optional else "${" + name + "}")
        return slashes[len(slashes) // 2:] + value

    return _ENV_REF.sub(replace, text)


def _read_npmrc(path: Path, env: Mapping[str, str]) -> dict[str, str]:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_NPMRC_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return {}
    except OSError as exc:
        raise BadSource(f"cannot read npm configuration {path}: {exc.strerror}") from None
    if len(data) > MAX_NPMRC_BYTES:
        raise BadSource(f"npm configuration {path} is over {MAX_NPMRC_BYTES} bytes")
    return parse_npmrc(data.decode("utf-8", "replace"), env)


def _global_npmrc(env: Mapping[str, str]) -> Path | None:
    lowered = {k.lower(): v for k, v in env.items()}
    if lowered.get("npm_config_globalconfig"):
        return Path(lowered["npm_config_globalconfig"])
    prefix = lowered.get("npm_config_prefix") or lowered.get("prefix")
    if not prefix:
        node = shutil.which("node", path=env.get("PATH"))
        if node is None:
            return None
        prefix = str(Path(node).resolve().parent.parent)
    return Path(prefix) / "etc" / "npmrc"


def npm_config(project: Path | None = None, env: Mapping[str, str] | None = None, *,
               home: Path | None = None, global_config: Path | None = None) -> NpmConfig:
    """The user's npm registry configuration (see the module text for the order);
    ``project``: the folder being synced, none of whose files is read."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    lowered = {k.lower(): v for k, v in env.items()}
    files = [global_config if global_config is not None else _global_npmrc(env),
             Path(lowered.get("npm_config_userconfig") or home / ".npmrc")]
    settings: dict[str, str] = {}
    origin = "npm's default registry"
    for path in files:
        if path is not None and not inside(path, project):
            found = _read_npmrc(path, env)
            origin = str(path) if found.get("registry") else origin
            settings.update(found)
    for name, value in env.items():
        if name.lower().startswith("npm_config_"):
            key = name[len("npm_config_"):]
            key = key if key.startswith(("@", "//")) else key.lower().replace("_", "-")
            origin = name if key == "registry" and value else origin
            settings[key] = value
    return _config_of(settings)._replace(origin=origin)


def _config_of(settings: Mapping[str, str]) -> NpmConfig:
    registry = _registry_url(settings.get("registry") or NPM_REGISTRY)
    scopes = sorted((key[: -len(":registry")], _registry_url(value))
                    for key, value in settings.items()
                    if key.startswith("@") and key.endswith(":registry") and value.strip())
    auth: dict[str, str] = {}
    for key, value in settings.items():
        if not key.startswith("//") or ":" not in key:
            continue
        dart, _, field = key.rpartition(":")
        dart = dart if dart.endswith("/") else dart + "/"
        if field == "_authToken" and value:
            auth[dart] = f"Bearer {value}"
        elif field == "_auth" and value:
            auth[dart] = f"Basic {value}"
        elif field == "username" and settings.get(f"{key[: -len('username')]}_password"):
            try:
                password = base64.b64decode(settings[f"{key[: -len('username')]}_password"])
            except ValueError:
                continue
            pair = value.encode() + b":" + password
            auth.setdefault(dart, "Basic " + base64.b64encode(pair).decode("ascii"))
    return NpmConfig(registry, tuple(scopes), tuple(sorted(auth.items())),
                     settings.get("cafile") or None)


def _registry_url(url: str) -> str:
    url = url.strip()
    return url if url.endswith("/") else url + "/"


def valid_npm_name(name: str) -> bool:
    """True for a name npm could publish (``pkg``, ``@scope/pkg``), at most 214 bytes."""
    return len(name.encode("utf-8")) <= 214 and bool(_NAME.match(name))


def packument_url(registry: str, name: str) -> str:
    """Where the registry answers for ``name``: ``<registry>/@scope%2fname`` over HTTP;
    ``<dir>/@scope/name/package.json`` in a file:// registry."""
    if not valid_npm_name(name):
        raise BadSource(f"{name!r} is not an npm package name")
    base = _registry_url(registry)
    if urlsplit(base).scheme.lower() == "file":
        return base + quote(name) + "/package.json"
    return base + name.replace("/", "%2f")


def clean_version(version: str) -> str:
    """An npm version as the registry keys it: no leading ``v``/``=`` or blanks."""
    return version.strip().lstrip("=v").strip()


def tarball_digest(dist: Mapping[str, Any]) -> Digest | None:
    """The digest to verify a tarball with: the strongest ``integrity`` entry, else the
    sha1 ``shasum`` (npm's rule for packages published before integrity existed)."""
    chosen = strongest(digests_from_sri(dist.get("integrity")), SRI_ALGORITHMS)
    if chosen is None and not dist.get("integrity"):
        chosen = digest_from_hex("sha1", dist.get("shasum"))
    return chosen


def find_npm_tarball(config: NpmConfig, name: str, version: str, fetcher: Fetcher) -> Artifact:
    """The tarball of ``name@version`` on its registry with the digest it publishes."""
    registry = config.registry_for(name)
    local = urlsplit(registry).scheme.lower() == "file"
    url = packument_url(registry, name)
    try:
        page = fetcher.get(url, max_bytes=MAX_PAGE_BYTES, accept=NPM_ACCEPT, allow_file=local)
    except NotFound:
        raise BadSource(f"no package {name} on {shown(registry)}") from None
    from .index_pages import load_json

    try:
        document = load_json(page.body, "the packument")
    except ValueError as exc:
        raise PackageError(f"{shown(url)}: the registry's JSON does not parse ({exc})") from None
    if not isinstance(document, dict) or document.get("name") not in (None, name):
        raise PackageError(f"{shown(url)}: the registry answered for another package")
    versions = document["versions"] if isinstance(document.get("versions"), dict) else {}
    wanted = clean_version(version)
    entry = versions.get(wanted)
    if not isinstance(entry, dict) or not isinstance(entry.get("dist"), dict):
        tags = document.get("dist-tags")
        latest = tags.get("latest") if isinstance(tags, dict) else None
        hint = f" (latest is {latest})" if isinstance(latest, str) else ""
        raise BadSource(f"no version {wanted} of {name} on {shown(registry)}{hint}")
    dist = entry["dist"]
    tarball = dist.get("tarball")
    if not isinstance(tarball, str) or not tarball:
        raise PackageError(f"{name}@{wanted} on {shown(registry)} names no tarball")
    tarball = urljoin(page.url, tarball)
    warnings: tuple[str, ...] = ()
    if isinstance(entry.get("deprecated"), str) and entry["deprecated"]:
        warnings = (f"{name}@{wanted} is deprecated: {entry['deprecated']}",)
    filename = tarball.rsplit("/", 1)[-1] or f"{name}-{wanted}.tgz"
    return Artifact("npm", name, wanted, filename, tarball, registry, tarball_digest(dist),
                    warnings)


__all__ = [
    "NPM_REGISTRY", "NpmConfig", "clean_version", "find_npm_tarball", "npm_config",
    "packument_url", "parse_npmrc", "tarball_digest", "valid_npm_name",
]
