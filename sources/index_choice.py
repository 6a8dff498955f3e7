"""Which index each pinned package is fetched from: the user's, never the project's on its
own say-so (docs/security.md, "Where packages come from").

A project names indexes in its lockfiles (uv.lock ``source.registry``, poetry's ``legacy``
sources, Pipfile.lock's sources, pylock's ``index``, requirements' ``-i``/
``--extra-index-url``/``-f``, npm ``resolved`` URLs) and in its configuration files
(``[tool.uv]`` and ``uv.toml``, ``[[tool.pdm.source]]``, ``.npmrc``, ``.yarnrc.yml``,
``.yarnrc``). Here they are read as names only: never a credential, never a ``${VAR}``
expanded, never a file the user's configuration is taken from.

- A name that is the public default (PyPI's ``https://pypi.org/simple``, npm's registry and
  yarn's alias of it: npm itself replaces that host by the configured registry), or a
  location the user's own configuration names, is fetched through the user's
  configuration (a named one asked first: the project was locked against it).
- Any other is refused for that package, one line, unless the person running ``sync`` by
  hand gave ``trust=True`` (``sync --trust-project-index``; the hook never does): then that
  index is asked first, http(s) only, and only the credentials the user configured for
  its host (pip) or path (npm) may go there; a project's own credentials never do.

Which project-wide names apply to which pin: a lockfile's own record wins (uv.lock,
poetry.lock, Pipfile.lock, pylock.toml record each package's index); a pin with no record
of its own (pdm.lock, requirements files, pnpm and yarn berry locks) takes the project's
configuration files' names (for npm, its scope's registry, else the project's default).

A ``NAME@VERSION`` cache is reused only where its recorded index is one this pin is
fetched from and its recorded archive digest agrees with a hash the lockfile lists
(``rebuild_reason``); otherwise sync rebuilds it, replacing it under the same name.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from ..foundation.errors import DocIndexError
from ..foundation.printable import printable
from .package_fetch import digest_from_hex, digests_from_sri, shown, split_credentials

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TRUST_OPTION = "--trust-project-index"
MAX_CONFIG_BYTES = 1 << 20
# The public defaults a project may name without naming "another index": the user's
# configuration replaces them (npm does so itself for its registry in lockfiles).
_PYPI_DEFAULTS = frozenset({"https://pypi.org/simple", "https://pypi.python.org/simple"})
_NPM_DEFAULT_HOSTS = frozenset({"registry.npmjs.org", "registry.yarnpkg.com"})


class Named(NamedTuple):
    """A location a project names: the URL without any credential, whether it is a
    find-links location (``flat``), and the project's file(s) naming it."""

    url: str
    where: str
    flat: bool = False


class Choice(NamedTuple):
    """How one pin is fetched: ``config`` (a ``PypiConfig``/``NpmConfig`` for
    ``package.fetch_archive``), the ``places`` a cache of it may come from, and for the
    summary ``note`` (a project's index used); or ``refusal`` (its one line)."""

    config: Any
    places: frozenset[str]
    note: str | None = None
    refusal: str | None = None


def place(url: str) -> str:
    """One spelling per location, for comparing: no credentials, query or fragment,
    scheme and host lower-case, default port dropped, no trailing ``/``."""
    try:
        parts = urlsplit(shown(url))
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return url.strip().rstrip("/")
    scheme = parts.scheme.lower()
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), "", ""))


def _is_default(ecosystem: str, url: str) -> bool:
    where = place(url)
    if ecosystem == "pypi":
        return where in _PYPI_DEFAULTS
    parts = urlsplit(where)
    return parts.hostname in _NPM_DEFAULT_HOSTS and parts.path in ("", "/")


def _web(url: str) -> bool:
    return urlsplit(url).scheme.lower() in ("http", "https") and bool(urlsplit(url).netloc)


def _clean(url: str, flat: bool = False) -> str:
    """A project's URL without credentials; an index URL ends with ``/``."""
    url = split_credentials(url.strip())[0] if "://" in url else url.strip()
    return url if flat or url.endswith("/") else url + "/"


# --- what the project's configuration files name -----------------------------------------


def _read(path: Path) -> str | None:
    """A small project file's text: a regular file, not a link (a repository's symlink
    could point anywhere), opened non-blocking (a FIFO never hangs the read); None when
    absent, anything else, unreadable or over the cap."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(MAX_CONFIG_BYTES + 1)
    return None if len(data) > MAX_CONFIG_BYTES else data.decode("utf-8", "replace")


def _toml(path: Path) -> dict[str, Any]:
    text = _read(path)
    try:
        found = tomllib.loads(text) if text else {}
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else [value] if isinstance(value, str) else []


def _uv_names(table: Any, where: str) -> list[Named]:
    """The locations a uv settings table names for every package (``explicit`` indexes
    serve only packages pinned to them, which uv.lock records)."""
    if not isinstance(table, dict):
        return []
    found = []
    for entry in map(_dict, _list(table.get("index"))):
        if isinstance(entry.get("url"), str) and entry.get("explicit") is not True:
            found.append(Named(entry["url"], where, entry.get("format") == "flat"))
    for key, flat in (("index-url", False), ("extra-index-url", False), ("find-links", True)):
        found += [Named(url, where, flat) for url in _list(table.get(key))
                  if isinstance(url, str)]
    return found


def python_names(project: Path) -> list[Named]:
    """The Python indexes the project's configuration names for every package."""
    tool = _dict(_toml(project / "pyproject.toml").get("tool"))
    found = _uv_names(tool.get("uv"), "pyproject.toml [tool.uv]")
    found += _uv_names(_toml(project / "uv.toml"), "uv.toml")
    sources = map(_dict, _list(_dict(tool.get("pdm")).get("source")))
    found += [Named(s["url"], "pyproject.toml [[tool.pdm.source]]", s.get("type") == "find_links")
              for s in sources if isinstance(s.get("url"), str)]
    return found


def npm_names(project: Path) -> dict[str, Named]:
    """The registries the project's ``.npmrc``/``.yarnrc``/``.yarnrc.yml`` name: scope
    (``""``: the default) -> name. Values are taken as written: ``${VAR}`` is not expanded
    (a URL holding one is no web address and is refused, never fetched)."""
    found: dict[str, Named] = {}
    text = _read(project / ".yarnrc")
    for line in (text or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key.strip('"') == "registry" and value.strip():
            found[""] = Named(value.strip().strip('"'), ".yarnrc")
    found.update(_yarnrc_yml(project))
    text = _read(project / ".npmrc")
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        key, value = key.strip(), value.strip().strip("\"'")
        if not sep or not value or key[:1] in (";", "#"):
            continue
        if key == "registry":
            found[""] = Named(value, ".npmrc")
        elif key.startswith("@") and key.endswith(":registry"):
            found[key[: -len(":registry")]] = Named(value, ".npmrc")
    return found


def _yarnrc_yml(project: Path) -> dict[str, Named]:
    text = _read(project / ".yarnrc.yml")
    if not text:
        return {}
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, RecursionError):
        return {}
    if not isinstance(doc, dict):
        return {}
    found = {}
    if isinstance(doc.get("npmRegistryServer"), str):
        found[""] = Named(doc["npmRegistryServer"], ".yarnrc.yml")
    for scope, entry in _dict(doc.get("npmScopes")).items():
        if isinstance(_dict(entry).get("npmRegistryServer"), str):
            found[f"@{scope}"] = Named(entry["npmRegistryServer"], ".yarnrc.yml")
    return found


# --- the choice ---------------------------------------------------------------------------


class IndexChoice:
    """The user's configurations (read once, lazily; a configuration that does not read
    is that ecosystem's pins' failure) and the project's names, for ``sync``."""

    def __init__(self, project: Path, *, trust: bool = False,
                 env: Mapping[str, str] | None = None) -> None:
        self.project, self.trust = project, trust
        self.env = os.environ if env is None else env
        self._configs: dict[str, Any] = {}
        self._names: dict[str, Any] = {}

    def config(self, ecosystem: str) -> Any:
        """The user's ``PypiConfig``/``NpmConfig`` (no file of the project read);
        DocIndexError when it does not read."""
        if ecosystem not in self._configs:
            try:
                if ecosystem == "pypi":
                    from .package_index import pypi_config

                    self._configs[ecosystem] = pypi_config(self.env, project=self.project)
                else:
                    from .npm_registry import npm_config

                    self._configs[ecosystem] = npm_config(self.project, self.env)
            except DocIndexError as exc:
                self._configs[ecosystem] = exc
        found = self._configs[ecosystem]
        if isinstance(found, DocIndexError):
            raise found
        return found

    def _project_names(self, ecosystem: str) -> Any:
        if ecosystem not in self._names:
            self._names[ecosystem] = (python_names(self.project) if ecosystem == "pypi"
                                      else npm_names(self.project))
        return self._names[ecosystem]

    def named(self, pin: Any, config: Any = None) -> list[Named]:
        """The non-default locations the project names for ``pin``. ``config``: the
        user's npm configuration, whose scope registry for a scoped pin wins over a
        project's default registry (as in npm, where a scope's entry wins)."""
        where = ", ".join(pin.sources)
        if pin.ecosystem == "pypi":
            found = [Named(u, where) for u in pin.indexes]
            found += [Named(u, where, True) for u in pin.find_links]
            if not found:
                found = list(self._project_names("pypi"))
        else:
            found = [Named(pin.index, where)] if pin.index else []
            if not found or _is_default("npm", pin.index):
                scopes = self._project_names("npm")
                scope = pin.name.split("/", 1)[0] if pin.name.startswith("@") else ""
                mine = {s for s, _ in config.scopes} if config is not None else set()
                chosen = scopes.get(scope) or (None if scope in mine else scopes.get(""))
                found = [chosen] if chosen else []
        return [n._replace(url=_clean(n.url, n.flat)) for n in found
                if not _is_default(pin.ecosystem, n.url)]

    def for_pin(self, pin: Any) -> Choice:
        """How ``pin`` is fetched (``Choice``); DocIndexError when the user's
        configuration does not read."""
        config = self.config(pin.ecosystem)
        named = self.named(pin, config)
        if pin.ecosystem == "pypi":
            return self._pypi(config, named)
        return self._npm(config, pin.name, named)

    def _pypi(self, config: Any, named: list[Named]) -> Choice:
        mine = {place(loc.url) for loc in config.locations}
        known = {place(n.url) for n in named if place(n.url) in mine}
        unknown = [n for n in named if place(n.url) not in mine]
        first = [loc for loc in config.locations if place(loc.url) in known]
        locations = first + [loc for loc in config.locations if loc not in first]
        note = None
        if unknown:
            refusal = self._refusal(unknown[0], "index", f"your {config.installer} "
                                    "configuration does not name", config.locations)
            if refusal:
                return Choice(None, frozenset(), refusal=refusal)
            from .package_index import IndexLocation

            added = [IndexLocation(n.url, n.where, n.flat, from_project=True) for n in unknown]
            locations = added + locations
            note = (f"from the project's index {', '.join(shown(n.url) for n in unknown)} "
                    f"({TRUST_OPTION})")
        chosen = config._replace(locations=tuple(locations))
        return Choice(chosen, frozenset(place(loc.url) for loc in locations), note)

    def _npm(self, config: Any, name: str, named: list[Named]) -> Choice:
        registry = config.registry_for(name)
        if not named or place(named[0].url) == place(registry):
            return Choice(config, frozenset({place(registry)}))
        refusal = self._refusal(named[0], "registry", "your npm configuration does not use "
                                f"for it ({shown(registry)})", ())
        if refusal:
            return Choice(None, frozenset(), refusal=refusal)
        url = named[0].url
        scope = name.split("/", 1)[0] if name.startswith("@") and "/" in name else None
        scopes = tuple((s, url if s == scope else u) for s, u in config.scopes)
        chosen = config._replace(registry=url, scopes=scopes,
                                 origin=f"the project's ({named[0].where}), accepted by hand")
        note = f"from the project's registry {shown(url)} ({TRUST_OPTION})"
        return Choice(chosen, frozenset({place(url)}), note)

    def _refusal(self, named: Named, what: str, why: str, locations: Any) -> str | None:
        """The refusal of a project's location (None: accepted by hand)."""
        if self.trust and _web(named.url):
            return None
        mine = ", ".join(shown(loc.url) for loc in locations)
        shown_url = printable(shown(named.url))
        head = f"{printable(named.where)} names the {what} {shown_url}, which {why}"
        head += f" ({mine})" if mine else ""
        if self.trust:  # (a local path or another scheme: never read for a project)
            return f"{head}: not fetched; a project's {what} is read over http(s) only"
        return (f"{head}: not fetched; to accept the project's {what}, run doc-index sync "
                f"{TRUST_OPTION} by hand")

    def lines(self, ecosystems: set[str]) -> list[str]:
        """The summary's lines: where each ecosystem's packages come from, and why that
        installer (``PypiConfig.why``)."""
        lines = []
        for ecosystem in sorted(ecosystems):
            try:
                config = self.config(ecosystem)
            except DocIndexError as exc:
                lines.append(f"{ecosystem} packages: your configuration does not read: "
                             f"{exc.message}")
                continue
            if ecosystem == "pypi":
                where = ", ".join(shown(loc.url) for loc in config.locations) or "nowhere"
                origins = ", ".join(dict.fromkeys(loc.origin for loc in config.locations))
                lines.append(f"pypi packages from {where} ({config.installer}'s "
                             f"configuration, {origins}: {config.why})")
            else:
                scopes = "".join(f"; {s} from {shown(u)}" for s, u in config.scopes)
                why = (config.origin if config.origin == "npm's default registry"
                       else f"npm's configuration: {config.origin}")
                lines.append(f"npm packages from {shown(config.registry)} ({why}){scopes}")
        return [printable(line) for line in lines]


def rebuild_reason(record: Mapping[str, Any], choice: Choice, pin: Any) -> str | None:
    """Why the cache whose source record is ``record`` may not be kept for ``pin``
    (None: it may): its index is not one this pin is fetched from, or its archive is not
    one the lockfile lists."""
    index = record.get("index")
    index = index if isinstance(index, str) else ""
    if place(index) not in choice.places:
        return (f"cached from {printable(index) or 'an unrecorded index'}, not from an index "
                "your configuration names: rebuilt from yours")
    if not pin.hashes:
        return None
    recorded = {}
    for field in ("archive_hash", "archive_sha256"):
        text = record.get(field)
        if isinstance(text, str) and text:
            algorithm, _, value = text.rpartition(":")
            digest = digest_from_hex(algorithm or "sha256", value)
            if digest is not None:
                recorded[digest.algorithm] = digest.hex
    for text in pin.hashes:
        algorithm, sep, value = text.partition(":")
        digests = [digest_from_hex(algorithm, value)] if sep else digests_from_sri(text)
        if any(d is not None and recorded.get(d.algorithm) == d.hex for d in digests):
            return None
    sha = record.get("archive_sha256")
    what = f"sha256 {sha[:12]}" if isinstance(sha, str) and sha else "no recorded hash"
    return (f"the cache's archive ({printable(what)}) is not the one "
            f"{printable(', '.join(pin.sources))} lists: rebuilt")


__all__ = ["Choice", "IndexChoice", "Named", "TRUST_OPTION", "npm_names", "place",
           "python_names", "rebuild_reason"]
