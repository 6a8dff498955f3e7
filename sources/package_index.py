"""Where the user's Python installer finds packages, and the source archive of a pin.

Configuration is read as data, never by running pip or uv (``pip download`` of an sdist
runs its build backend), and only the user's own: no file inside the project being synced
is read (``project``), so a repository can neither choose the index nor switch the
installer (docs/security.md, "Where packages come from"). Two installers, each with its
own rules:

- **pip**: the configuration files in pip's order (global ``$XDG_CONFIG_DIRS/pip/pip.conf``
  then ``/etc/pip.conf``; user ``~/.pip/pip.conf`` then ``$XDG_CONFIG_HOME/pip/pip.conf``,
  skipped when ``PIP_CONFIG_FILE`` names an existing file; site ``$VIRTUAL_ENV/pip.conf``;
  then ``PIP_CONFIG_FILE``; ``PIP_CONFIG_FILE=/dev/null`` reads none), sections
  ``[global]`` then ``[install]``, then the ``PIP_*`` variables; a later place replaces a
  setting of an earlier one, as in pip. Settings: ``index-url``, ``extra-index-url``,
  ``find-links``, ``no-index``.
- **uv**: ``UV_INDEX``, ``UV_EXTRA_INDEX_URL``, ``UV_DEFAULT_INDEX`` (else
  ``UV_INDEX_URL``), ``UV_FIND_LINKS``, ``UV_NO_INDEX``, then the configuration files
  (``UV_CONFIG_FILE``, else the user's and the system's ``uv.toml``; never a project's
  ``uv.toml`` or ``[tool.uv]``; ``UV_NO_CONFIG`` reads none): ``index`` tables,
  ``index-url``, ``extra-index-url``, ``find-links``, ``no-index``. Indexes are searched
  in uv's priority: the variables' indexes, then the files', the default last.

``installer="auto"`` (``choose_installer``) takes the installer the user configured: the
one whose configuration names an index; when both do, the one set in the environment over
one set only in files (both installers rank their variables over their files), and pip on
a tie (its settings are the ones more Python tools share: pip, pip-tools, pipenv, tox);
PyPI through pip when neither does. Locations are searched in order; the first one with a
source distribution of the pinned version gives it.

Indexes speak PEP 503 (HTML) or PEP 691 (JSON, asked first). A ``file://`` index is a
directory laid out as a simple index (``<index>/<name>/index.html``); a find-links
location (pip's ``find-links``, uv's ``format = "flat"``) is a directory of archives or
an HTML page of links to them.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urljoin, urlsplit

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..foundation.errors import BadSource, PackageError
from .package_fetch import (
    MAX_SIMPLE_PAGE_BYTES,
    Artifact,
    Digest,
    Fetcher,
    NotFound,
    digest_from_hex,
    file_path,
    host_key,
    inside,
    shown,
    split_credentials,
    strongest,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPI_SIMPLE = "https://pypi.org/simple/"
SIMPLE_ACCEPT = ("application/vnd.pypi.simple.v1+json, "
                 "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01")
_JSON_TYPES = ("application/vnd.pypi.simple.v1+json", "application/vnd.pypi.simple.latest+json")
# Source archive suffixes in the order a pin's files are preferred (PEP 625 says .tar.gz).
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tar")
MAX_CONFIG_BYTES = 1 << 20
_TRUE = ("1", "yes", "true", "on", "y", "t")
_UV_INDEX_VARIABLES = ("UV_INDEX", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL",
                       "UV_FIND_LINKS", "UV_NO_INDEX")
_PIP_INDEX_KEYS = ("index-url", "extra-index-url", "find-links", "no-index")
_UV_INDEX_KEYS = ("index", "index-url", "extra-index-url", "find-links", "no-index")


class IndexLocation(NamedTuple):
    """One place to look: a simple index, or (``flat``) a find-links directory or page.

    ``url`` may carry credentials (``https://user:token@host/simple/``): show it only
    through ``shown()``. ``origin`` says where it was configured; ``from_project``: a
    project's index a person accepted by hand (``sync --trust-project-index``), never
    given any credential (``authorizer``)."""

    url: str
    origin: str
    flat: bool = False
    from_project: bool = False

    def shown(self) -> str:
        return shown(self.url)


class PypiConfig(NamedTuple):
    """The installer whose configuration was read, its locations in search order, the
    CA bundle it verifies HTTPS with (pip's ``cert``, ``SSL_CERT_FILE`` for uv; None: the
    system's), for ``Fetcher(cafile=...)``, and why that installer (``choose_installer``)."""

    installer: str
    locations: tuple[IndexLocation, ...]
    cafile: str | None = None
    why: str = ""


# --- configuration ---------------------------------------------------------------------


def _as_url(value: str) -> str:
    """A configured location as a URL: a local path (pip and uv accept them) as file://."""
    value = value.strip()
    if "://" in value or value.startswith("file:"):
        return value
    return Path(os.path.expanduser(value)).absolute().as_uri()


def _read_text(path: Path, what: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise BadSource(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise BadSource(f"{what} {path} is over {MAX_CONFIG_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def pip_config_files(env: Mapping[str, str], home: Path, platform: str = sys.platform,
                     etc: Path = Path("/etc")) -> list[tuple[str, Path]]:
    """pip's configuration files in the order pip loads them (a later one wins); ``etc``
    is the system folder (a parameter for tests)."""
    env_file = env.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    files: list[tuple[str, Path]] = []
    if platform == "win32":
        program_data = env.get("PROGRAMDATA", r"C:\ProgramData")
        files.append(("global", Path(program_data) / "pip" / "pip.ini"))
        user = [home / "pip" / "pip.ini",
                Path(env.get("APPDATA", str(home / "AppData" / "Roaming"))) / "pip" / "pip.ini"]
        name = "pip.ini"
    else:
        if platform == "darwin":
            files.append(("global", Path("/Library/Application Support/pip/pip.conf")))
        else:
            dirs = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
            files += [("global", Path(d) / "pip" / "pip.conf") for d in dirs.split(":") if d]
        files.append(("global", etc / "pip.conf"))
        config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        user = [home / ".pip" / "pip.conf", config_home / "pip" / "pip.conf"]
        if platform == "darwin":
            user.append(home / "Library" / "Application Support" / "pip" / "pip.conf")
        name = "pip.conf"
    if not (env_file and os.path.exists(env_file)):
        files += [("user", path) for path in user]
    if env.get("VIRTUAL_ENV"):
        files.append(("site", Path(env["VIRTUAL_ENV"]) / name))
    if env_file:
        files.append(("PIP_CONFIG_FILE", Path(env_file)))
    return files


def _pip_key(name: str) -> str:
    name = name.lower().replace("_", "-")
    return name[2:] if name.startswith("--") else name


def _pip_file_settings(path: Path) -> dict[str, str]:
    text = _read_text(path, "pip configuration")
    if text is None:
        return {}
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise BadSource(f"pip configuration {path} does not parse: "
                           f"{str(exc).splitlines()[0]}") from None
    settings: dict[str, str] = {}
    for section in ("global", "install"):
        if parser.has_section(section):
            for key, value in parser.items(section):
                settings[_pip_key(key)] = value
    return settings


def _pip_settings(env: Mapping[str, str], home: Path, platform: str, etc: Path,
                  project: Path | None) -> dict[str, tuple[str, str]]:
    """pip's settings, key -> (value, where it was set), later places winning."""
    settings: dict[str, tuple[str, str]] = {}
    for _kind, path in pip_config_files(env, home, platform, etc):
        if inside(path, project):
            continue
        for key, value in _pip_file_settings(path).items():
            settings[key] = (value, str(path))
    for name, value in env.items():
        if name.startswith("PIP_"):
            settings[_pip_key(name[4:])] = (value, name)
    return settings


def pip_config(env: Mapping[str, str] | None = None, *, home: Path | None = None,
               platform: str = sys.platform, etc: Path = Path("/etc"),
               project: Path | None = None) -> PypiConfig:
    """pip's locations: index-url (default PyPI), extra-index-urls, find-links; no file
    inside ``project`` is read."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    settings = _pip_settings(env, home, platform, etc, project)
    cert = settings.get("cert", ("", ""))[0].strip() or None
    return PypiConfig("pip", _pip_locations(settings), cert)


def _pip_locations(settings: Mapping[str, tuple[str, str]]) -> tuple[IndexLocation, ...]:
    def values(key: str) -> tuple[list[str], str]:
        value, origin = settings.get(key, ("", ""))
        return value.split(), origin

    found: list[IndexLocation] = []
    no_index = settings.get("no-index", ("", ""))[0].strip().lower() in _TRUE
    if not no_index:
        index, origin = values("index-url")
        found.append(IndexLocation(_as_url(index[0]), origin) if index
                     else IndexLocation(PYPI_SIMPLE, "default"))
        extras, origin = values("extra-index-url")
        found += [IndexLocation(_as_url(url), origin) for url in extras]
    links, origin = values("find-links")
    found += [IndexLocation(_as_url(url), origin, flat=True) for url in links]
    return _unique(found)


def _unique(locations: list[IndexLocation]) -> tuple[IndexLocation, ...]:
    seen: set[tuple[str, bool]] = set()
    kept = []
    for location in locations:
        key = (location.url.rstrip("/"), location.flat)
        if key not in seen:
            seen.add(key)
            kept.append(location)
    return tuple(kept)


def _uv_env_index(entry: str) -> str:
    """A ``UV_INDEX`` entry is ``url`` or ``name=url``."""
    name, sep, url = entry.partition("=")
    return url if sep and "://" not in name and "/" not in name else entry


def _uv_config_tables(env: Mapping[str, str], home: Path, etc: Path, project: Path | None,
                      ) -> list[tuple[dict[str, Any], str]]:
    """uv's settings tables, the first one winning: UV_CONFIG_FILE, else the user's and
    the system's files; never a project's ``uv.toml`` or ``[tool.uv]``, nor any file
    inside ``project``."""
    if env.get("UV_NO_CONFIG"):
        return []
    if env.get("UV_CONFIG_FILE"):
        candidates = [Path(env["UV_CONFIG_FILE"])]
    else:
        config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        candidates = [config_home / "uv" / "uv.toml"]
        dirs = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
        candidates += [Path(d) / "uv" / "uv.toml" for d in dirs.split(":") if d]
        candidates.append(etc / "uv" / "uv.toml")
    tables = []
    for path in candidates:
        if inside(path, project):
            continue
        table = _toml_table(path, "uv configuration")
        if isinstance(table, dict) and table:
            tables.append((table, str(path)))
    return tables


def _toml_table(path: Path, what: str) -> dict[str, Any]:
    text = _read_text(path, what)
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise BadSource(f"{what} {path} does not parse: {exc}") from None


def _str_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def uv_config(env: Mapping[str, str] | None = None, *, home: Path | None = None,
              project: Path | None = None, etc: Path = Path("/etc")) -> PypiConfig:
    """uv's locations in uv's priority: explicit indexes first, the default index last;
    no file inside ``project`` is read."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    extra: list[IndexLocation] = []
    flat: list[IndexLocation] = []
    default: IndexLocation | None = None
    for entry in env.get("UV_INDEX", "").split():
        extra.append(IndexLocation(_as_url(_uv_env_index(entry)), "UV_INDEX"))
    for entry in env.get("UV_EXTRA_INDEX_URL", "").split():
        extra.append(IndexLocation(_as_url(entry), "UV_EXTRA_INDEX_URL"))
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if default is None and env.get(name, "").strip():
            default = IndexLocation(_as_url(env[name]), name)
    for entry in env.get("UV_FIND_LINKS", "").split(","):
        if entry.strip():
            flat.append(IndexLocation(_as_url(entry), "UV_FIND_LINKS", flat=True))
    no_index = env.get("UV_NO_INDEX", "").strip().lower() in _TRUE
    for table, origin in _uv_config_tables(env, home, etc, project):
        default = _uv_file_locations(table, origin, extra, flat, default)
        no_index = no_index or table.get("no-index") is True
    cafile = env.get("SSL_CERT_FILE") or None
    if no_index:
        return PypiConfig("uv", _unique(flat), cafile)
    return PypiConfig("uv", _unique([*extra, default or IndexLocation(PYPI_SIMPLE, "default"),
                                     *flat]), cafile)


def _uv_file_locations(table: dict[str, Any], origin: str, extra: list[IndexLocation],
                       flat: list[IndexLocation], default: IndexLocation | None,
                       ) -> IndexLocation | None:
    """Add one uv settings table's locations; the default index it names when none yet."""
    indexes = table.get("index")
    for entry in indexes if isinstance(indexes, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        if entry.get("explicit") is True:  # only for packages pinned to it in tool.uv.sources
            continue
        location = IndexLocation(_as_url(entry["url"]), origin, entry.get("format") == "flat")
        if location.flat:
            flat.append(location)
        elif entry.get("default") is True:
            default = default or location
        else:
            extra.append(location)
    if isinstance(table.get("index-url"), str):
        default = default or IndexLocation(_as_url(table["index-url"]), origin)
    extra += [IndexLocation(_as_url(u), origin) for u in _str_list(table.get("extra-index-url"))]
    flat += [IndexLocation(_as_url(u), origin, True) for u in _str_list(table.get("find-links"))]
    return default


def _configured(settings: Mapping[str, tuple[str, str]], env_names: tuple[str, ...],
                keys: tuple[str, ...]) -> int:
    """2: an index setting comes from the environment, 1: only from files, 0: none."""
    origins = [origin for key, (value, origin) in settings.items() if key in keys and value]
    return 2 if any(o in env_names for o in origins) else 1 if origins else 0


def choose_installer(env: Mapping[str, str], *, home: Path, etc: Path = Path("/etc"),
                     platform: str = sys.platform, project: Path | None = None,
                     ) -> tuple[str, str]:
    """The installer whose configuration is read, and why (see the module text). Only
    the user's configuration counts: nothing in ``project`` changes the answer."""
    pip_env = tuple(n for n in env if n.startswith("PIP_"))
    pip = _configured(_pip_settings(env, home, platform, etc, project), pip_env,
                      _PIP_INDEX_KEYS)
    uv = 2 if any(env.get(name, "").strip() for name in _UV_INDEX_VARIABLES) else 0
    if not uv and any(k in table for table, _ in _uv_config_tables(env, home, etc, project)
                      for k in _UV_INDEX_KEYS):
        uv = 1
    if not pip and not uv:
        return "pip", "neither pip nor uv names an index: PyPI"
    if not (pip and uv):
        return ("pip" if pip else "uv"), "the only installer configured"
    if pip == uv:
        where = "in the environment" if pip == 2 else "in their files"
        return "pip", f"pip and uv both name an index {where}; pip's wins a tie"
    if uv > pip:
        return "uv", "uv's setting in the environment wins over pip's in its files"
    return "pip", "pip's setting in the environment wins over uv's in its files"


def pypi_config(env: Mapping[str, str] | None = None, *, installer: str = "auto",
                project: Path | None = None, home: Path | None = None,
                etc: Path = Path("/etc")) -> PypiConfig:
    """The locations of the user's installer: ``installer`` is ``pip``, ``uv`` or
    ``auto`` (``choose_installer``). ``project``: the folder being synced, none of whose
    files is read."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    why = "asked for"
    if installer == "auto":
        installer, why = choose_installer(env, home=home, etc=etc, project=project)
    if installer == "uv":
        return uv_config(env, home=home, project=project, etc=etc)._replace(why=why)
    if installer == "pip":
        return pip_config(env, home=home, etc=etc, project=project)._replace(why=why)
    raise BadSource(f"unknown installer {installer!r}: pip, uv or auto")


def authorizer(config: PypiConfig):  # type: ignore[no-untyped-def]
    """The fetcher's credential rule: an index URL's ``user:password@`` goes to that
    index's host (as pip does), never to another one; a project's location (accepted by
    hand) gives none."""
    by_host: dict[str, str] = {}
    for location in config.locations:
        if location.from_project:
            continue
        _, authorization = split_credentials(location.url)
        if authorization:
            by_host.setdefault(host_key(location.url), authorization)

    def authorize(url: str) -> str | None:
        return by_host.get(host_key(url))

    return authorize


# --- the simple API --------------------------------------------------------------------


class IndexFile(NamedTuple):
    """One file a project page lists: ``yanked`` is None, or the reason ("" if none)."""

    filename: str
    url: str
    digests: tuple[Digest, ...]
    yanked: str | None = None


def _fragment_digests(fragment: str) -> tuple[Digest, ...]:
    algorithm, _, value = fragment.partition("=")
    digest = digest_from_hex(algorithm, value)
    return (digest,) if digest else ()


def _index_file(href: str, base: str, yanked: str | None) -> IndexFile | None:
    url, _, fragment = urljoin(base, href.strip()).partition("#")
    filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    if not filename:
        return None
    return IndexFile(filename, url, _fragment_digests(fragment), yanked)


def parse_simple_html(text: str, page_url: str) -> list[IndexFile]:
    """The files of a PEP 503 page (anchors; hash in the ``#sha256=`` fragment; PEP 592
    ``data-yanked``), URLs absolute against the page (and its ``<base>``); read in one
    pass (``index_pages.start_tags``: HTMLParser is quadratic on unterminated tags)."""
    from .index_pages import start_tags

    base = page_url
    files: list[IndexFile] = []
    for tag, values in start_tags(text):
        if tag == "base" and values.get("href"):
            base = urljoin(base, values["href"] or "")
        elif tag == "a" and values.get("href"):
            yanked = values.get("data-yanked")
            reason = (yanked or "") if "data-yanked" in values else None
            found = _index_file(values["href"] or "", base, reason)
            if found is not None:
                files.append(found)
    return files


def parse_simple_json(body: bytes, page_url: str) -> list[IndexFile]:
    """The files of a PEP 691 JSON page (``files[].url``, ``hashes``, ``yanked``)."""
    from .index_pages import load_json

    try:
        data = load_json(body, "the page")
    except ValueError as exc:
        raise PackageError(f"{shown(page_url)}: the index's JSON does not parse ({exc})") from None
    meta = data.get("meta") if isinstance(data, dict) else None
    version = str(meta.get("api-version", "")) if isinstance(meta, dict) else ""
    if not version.startswith("1."):
        raise PackageError(f"{shown(page_url)}: simple API version {version or '?'} is not 1.x")
    files = []
    for entry in data.get("files") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        hashes = entry["hashes"] if isinstance(entry.get("hashes"), dict) else {}
        digests = tuple(d for d in (digest_from_hex(k, v) for k, v in hashes.items()) if d)
        yanked = entry.get("yanked", False)
        reason = None if yanked is False else (yanked if isinstance(yanked, str) else "")
        url = urljoin(page_url, entry["url"]).partition("#")[0]
        filename = entry.get("filename")
        if not isinstance(filename, str) or not filename:
            filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        files.append(IndexFile(filename, url, digests, reason))
    return files


def project_page_url(index_url: str, name: str) -> str:
    """``<index>/<normalized name>/`` (PEP 503 normalization)."""
    return index_url.rstrip("/") + "/" + quote(canonicalize_name(name)) + "/"


def list_files(location: IndexLocation, name: str, fetcher: Fetcher) -> list[IndexFile]:
    """The files a location lists for ``name``; ``NotFound`` when it does not know it."""
    local = urlsplit(location.url).scheme.lower() == "file"
    if location.flat:
        if local:
            return _directory_files(location.url)
        page = fetcher.get(location.url, max_bytes=MAX_SIMPLE_PAGE_BYTES)
        return parse_simple_html(page.body.decode("utf-8", "replace"), page.url)
    url = project_page_url(location.url, name)
    page = fetcher.get(url, max_bytes=MAX_SIMPLE_PAGE_BYTES, accept=SIMPLE_ACCEPT, allow_file=local)
    if page.content_type in _JSON_TYPES:
        return parse_simple_json(page.body, page.url)
    return parse_simple_html(page.body.decode("utf-8", "replace"), page.url)


def _directory_files(url: str) -> list[IndexFile]:
    """A local find-links directory: its regular files (not recursive), no hashes."""
    base = url.rstrip("/") + "/"
    path = file_path(url)
    if not os.path.isdir(path):
        return [IndexFile(os.path.basename(path), url, ())] if os.path.isfile(path) else []
    with os.scandir(path) as entries:
        names = sorted(e.name for e in entries if e.is_file())
    return [IndexFile(n, base + quote(n), ()) for n in names]


def _version_key(text: str) -> Version | str:
    try:
        return Version(text)
    except InvalidVersion:
        return text.strip().lower()


def sdist_version(filename: str, name: str) -> str | None:
    """The version of a source archive of ``name`` (``flask-3.1.0.tar.gz``, the legacy
    ``Flask-3.1.0.tar.gz``, ``python-dateutil-2.9.0.zip``), None for anything else."""
    lower = filename.lower()
    suffix = next((s for s in SDIST_SUFFIXES if lower.endswith(s)), None)
    if suffix is None:
        return None
    stem = filename[: -len(suffix)]
    wanted = canonicalize_name(name)
    found = _name_pattern(wanted).match(stem)
    if found is None or canonicalize_name(stem[:found.start(1) - 1]) != wanted:
        return None  # (the second test: a case the pattern folds and ``lower`` does not)
    return found.group(1)


@lru_cache(maxsize=64)
def _name_pattern(wanted: str) -> re.Pattern[str]:
    """``stem`` = a name whose PEP 503 form is ``wanted``, ``-``, then the version: the
    first ``-`` after such a name, as ``canonicalize_name`` of each prefix would find it,
    in one linear match (that loop was quadratic in a hostile page's long file names)."""
    parts = (re.escape(part) for part in wanted.split("-"))
    return re.compile("[-_.]+".join(parts) + "-(.+)", re.IGNORECASE | re.DOTALL)


def choose_sdist(files: list[IndexFile], name: str, version: str) -> IndexFile | None:
    """The source archive of ``name==version``: a version spelled as asked (after PEP 440
    normalization) before one equal only with zero padding (``1.2`` for ``1.2.0``), a file
    not yanked before a yanked one, then ``.tar.gz`` before ``.zip`` and the other
    suffixes, then the file name."""
    wanted = _version_key(version)
    ranked = []
    for entry in files:
        found = sdist_version(entry.filename, name)
        if found is None:
            continue
        key = _version_key(found)
        if type(key) is not type(wanted) or key != wanted:
            continue
        padded = str(key) != str(wanted)
        suffix = next(i for i, s in enumerate(SDIST_SUFFIXES) if entry.filename.lower().endswith(s))
        ranked.append(((padded, entry.yanked is not None, suffix, entry.filename), entry))
    return min(ranked)[1] if ranked else None


def _has_version(files: list[IndexFile], version: str) -> bool:
    """True when some file (a wheel, say) names ``version`` in its name."""
    wanted = _version_key(version)
    for entry in files:
        parts = entry.filename.split("-")
        if len(parts) >= 2 and _version_key(parts[1]) == wanted:
            return True
    return False


def find_sdist(config: PypiConfig, name: str, version: str, fetcher: Fetcher) -> Artifact:
    """The source archive of ``name==version`` on the first location that has one, with
    the hash its index publishes; a ``PackageError`` saying what each location answered
    when none has it."""
    outcomes = []
    for location in config.locations:
        try:
            files = list_files(location, name, fetcher)
        except NotFound:
            outcomes.append(f"{location.shown()}: no project {canonicalize_name(name)}")
            continue
        except PackageError as exc:
            outcomes.append(str(exc))
            continue
        chosen = choose_sdist(files, name, version)
        if chosen is None:
            what = ("only built distributions (wheels) of " if _has_version(files, version)
                    else "no release ")
            outcomes.append(f"{location.shown()}: {what}{version}")
            continue
        return _artifact(location, chosen, name, version)
    where = "; ".join(outcomes) or "no index is configured (no-index)"
    error = BadSource if outcomes and all(": no " in o or ": only " in o for o in outcomes) \
        else PackageError
    raise error(f"no source distribution of {canonicalize_name(name)}=={version}: {where}")


def _artifact(location: IndexLocation, chosen: IndexFile, name: str, version: str) -> Artifact:
    warnings: tuple[str, ...] = ()
    if chosen.yanked is not None:
        reason = f" ({chosen.yanked})" if chosen.yanked else ""
        warnings = (f"{chosen.filename} is yanked from its index{reason}; used as pinned",)
    return Artifact("pypi", canonicalize_name(name), version, chosen.filename, chosen.url,
                    location.url, strongest(chosen.digests), warnings)


__all__ = [
    "IndexFile", "IndexLocation", "PYPI_SIMPLE", "PypiConfig", "authorizer", "choose_installer",
    "choose_sdist", "find_sdist", "list_files", "parse_simple_html",
    "parse_simple_json", "pip_config", "pip_config_files", "project_page_url", "pypi_config",
    "sdist_version", "uv_config",
]
