"""sources/package_index.py and package_fetch.py: the user's Python index configuration read as
data, the PEP 503/691 client against a real local index, hash-checked bounded downloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from package_servers import SimpleIndex, sdist, sha256

from doc_index.foundation.errors import BadSource, PackageError
from doc_index.sources.package_fetch import Digest, Fetcher, download
from doc_index.sources.package_index import (
    PYPI_SIMPLE,
    IndexFile,
    IndexLocation,
    PypiConfig,
    authorizer,
    choose_sdist,
    find_sdist,
    parse_simple_html,
    parse_simple_json,
    pip_config,
    pip_config_files,
    pypi_config,
    sdist_version,
    uv_config,
)

# --- configuration ---------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_pip_config_files_order(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_DIRS": f"{tmp_path}/xdg1:{tmp_path}/xdg2",
           "XDG_CONFIG_HOME": f"{tmp_path}/config", "VIRTUAL_ENV": f"{tmp_path}/venv"}
    files = pip_config_files(env, tmp_path / "home", "linux", Path("/etc"))
    assert [(k, str(p.relative_to(tmp_path)) if p.is_relative_to(tmp_path) else str(p))
            for k, p in files] == [
        ("global", "xdg1/pip/pip.conf"), ("global", "xdg2/pip/pip.conf"),
        ("global", "/etc/pip.conf"), ("user", "home/.pip/pip.conf"),
        ("user", "config/pip/pip.conf"), ("site", "venv/pip.conf")]
    env_file = _write(tmp_path / "env.conf", "")
    with_env = pip_config_files({**env, "PIP_CONFIG_FILE": str(env_file)}, tmp_path, "linux")
    assert [k for k, _ in with_env] == ["global", "global", "global", "site", "PIP_CONFIG_FILE"]
    assert pip_config_files({"PIP_CONFIG_FILE": os.devnull}, tmp_path, "linux") == []


def test_pip_config_later_places_win_and_env_beats_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write(tmp_path / "xdg/pip/pip.conf",
           "[global]\nindex-url = https://global.example/simple\n"
           "extra-index-url = https://g1.example/simple\n")
    _write(home / ".config/pip/pip.conf",
           "[global]\nindex_url = https://user.example/simple\n"
           "[install]\n--extra-index-url =\n  https://e1.example/simple\n  file:///srv/idx\n"
           "find-links = /srv/wheels\n")
    env = {"XDG_CONFIG_DIRS": str(tmp_path / "xdg"), "XDG_CONFIG_HOME": str(home / ".config")}
    user_conf = str(home / ".config/pip/pip.conf")
    assert pip_config(env, home=home, platform="linux", etc=tmp_path) == PypiConfig("pip", (
        IndexLocation("https://user.example/simple", user_conf),
        IndexLocation("https://e1.example/simple", user_conf),
        IndexLocation("file:///srv/idx", user_conf),
        IndexLocation("file:///srv/wheels", user_conf, flat=True)))
    assert pip_config({**env, "PIP_CERT": "/ca.pem"}, home=home, etc=tmp_path).cafile == "/ca.pem"
    env["PIP_INDEX_URL"] = "https://me:s3cret@private.example/simple/"
    env["PIP_EXTRA_INDEX_URL"] = ""
    assert pip_config(env, home=home, platform="linux", etc=tmp_path).locations[:2] == (
        IndexLocation("https://me:s3cret@private.example/simple/", "PIP_INDEX_URL"),
        IndexLocation("file:///srv/wheels", user_conf, flat=True))
    env["PIP_NO_INDEX"] = "yes"
    assert pip_config(env, home=home, platform="linux", etc=tmp_path).locations == (
        IndexLocation("file:///srv/wheels", user_conf, flat=True),)


def test_pip_config_defaults_and_errors(tmp_path: Path) -> None:
    assert pip_config({"PIP_CONFIG_FILE": os.devnull}, home=tmp_path, etc=tmp_path).locations == (
        IndexLocation(PYPI_SIMPLE, "default"),)
    bad = _write(tmp_path / "bad.conf", "[global]\nindex-url = a\nindex-url = b\n")
    with pytest.raises(BadSource, match="pip configuration .*bad.conf does not parse"):
        pip_config({"PIP_CONFIG_FILE": str(bad)}, home=tmp_path, etc=tmp_path)


def test_uv_config_env_and_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    user_file = _write(home / ".config/uv/uv.toml", """
extra-index-url = ["https://extra.example/simple"]
[[index]]
name = "internal"
url = "https://internal.example/simple"
[[index]]
url = "https://pinned-only.example/simple"
explicit = true
[[index]]
url = "https://mirror.example/simple"
default = true
[[index]]
url = "/srv/flat"
format = "flat"
""")
    # The project's own uv settings are never the user's: neither is read.
    _write(project / "pyproject.toml", '[tool.uv]\nindex-url = "https://evil.example/simple"\n')
    _write(project / "uv.toml", 'index-url = "https://evil.example/simple"\n')
    origin = str(user_file)
    env = {"XDG_CONFIG_HOME": str(home / ".config"), "XDG_CONFIG_DIRS": str(tmp_path / "none")}
    assert uv_config(env, home=home, project=project, etc=tmp_path) == PypiConfig("uv", (
        IndexLocation("https://internal.example/simple", origin),
        IndexLocation("https://extra.example/simple", origin),
        IndexLocation("https://mirror.example/simple", origin),
        IndexLocation("file:///srv/flat", origin, flat=True)))
    env.update(UV_INDEX="corp=https://corp.example/simple https://two.example/simple",
               UV_EXTRA_INDEX_URL="https://old.example/simple",
               UV_INDEX_URL="https://legacy-default.example/simple",
               UV_DEFAULT_INDEX="https://default.example/simple",
               UV_FIND_LINKS="/srv/a,/srv/b")
    found = uv_config(env, home=home, project=project, etc=tmp_path).locations
    assert [(loc.url, loc.origin) for loc in found] == [
        ("https://corp.example/simple", "UV_INDEX"), ("https://two.example/simple", "UV_INDEX"),
        ("https://old.example/simple", "UV_EXTRA_INDEX_URL"),
        ("https://internal.example/simple", origin), ("https://extra.example/simple", origin),
        ("https://default.example/simple", "UV_DEFAULT_INDEX"),
        ("file:///srv/a", "UV_FIND_LINKS"), ("file:///srv/b", "UV_FIND_LINKS"),
        ("file:///srv/flat", origin)]
    assert uv_config({"UV_NO_CONFIG": "1"}, home=home, project=project, etc=tmp_path).locations == (
        IndexLocation(PYPI_SIMPLE, "default"),)
    # A configuration file inside the project being synced is the project's, whoever
    # names it: not read.
    inner = {"UV_CONFIG_FILE": str(project / "uv.toml")}
    assert uv_config(inner, home=home, project=project, etc=tmp_path).locations == (
        IndexLocation(PYPI_SIMPLE, "default"),)
    assert pip_config({"VIRTUAL_ENV": str(project), "PIP_CONFIG_FILE": os.devnull},
                      home=home, etc=tmp_path, project=project).locations == (
        IndexLocation(PYPI_SIMPLE, "default"),)


def test_auto_installer(tmp_path: Path) -> None:
    """Which installer's configuration is read: the one the user configured; with both,
    the environment's over files', pip on a tie. A project's uv.lock, uv.toml or
    [tool.uv] never changes the answer."""
    home = tmp_path / "home"
    project = _write(tmp_path / "proj/uv.lock", "version = 1\n").parent
    _write(project / "uv.toml", 'index-url = "https://evil.example/simple"\n')
    _write(project / "pyproject.toml", '[tool.uv]\nindex-url = "https://evil.example/simple"\n')
    base = {"PIP_CONFIG_FILE": os.devnull, "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CONFIG_DIRS": str(tmp_path / "none")}

    def chosen(env: dict[str, str]) -> tuple[str, tuple[str, ...], str]:
        config = pypi_config({**base, **env}, project=project, home=home, etc=tmp_path)
        return config.installer, tuple(loc.url for loc in config.locations), config.why

    assert chosen({}) == ("pip", (PYPI_SIMPLE,), "neither pip nor uv names an index: PyPI")
    assert chosen({"UV_INDEX_URL": "https://uv.example/simple"}) == (
        "uv", ("https://uv.example/simple",), "the only installer configured")
    pip_env = {"PIP_INDEX_URL": "https://pip.example/simple"}
    assert chosen(pip_env) == ("pip", ("https://pip.example/simple",),
                               "the only installer configured")
    assert chosen({**pip_env, "UV_DEFAULT_INDEX": "https://uv.example/simple"}) == (
        "pip", ("https://pip.example/simple",),
        "pip and uv both name an index in the environment; pip's wins a tie")
    _write(home / ".config/uv/uv.toml", 'index-url = "https://uv-file.example/simple"\n')
    assert chosen(pip_env)[::2] == (
        "pip", "pip's setting in the environment wins over uv's in its files")
    pip_file = _write(tmp_path / "pip.conf", "[global]\nindex-url = https://pip-file.example/s\n")
    assert chosen({"PIP_CONFIG_FILE": str(pip_file)})[::2] == (
        "pip", "pip and uv both name an index in their files; pip's wins a tie")
    assert chosen({"PIP_CONFIG_FILE": str(pip_file), "UV_INDEX": "https://uv.example/simple"}
                  )[::2] == ("uv", "uv's setting in the environment wins over pip's in its files")
    assert pypi_config(base, installer="uv", home=home, etc=tmp_path).why == "asked for"
    with pytest.raises(BadSource, match="unknown installer 'conda'"):
        pypi_config(base, installer="conda")


# --- the simple API --------------------------------------------------------------------


def test_parse_simple_html() -> None:
    page = """<html><head><base href="https://files.example/base/"></head><body>
<a href="../f/demo-1.0.tar.gz#sha256=%s">demo-1.0.tar.gz</a>
<a href="demo-1.0-py3-none-any.whl#md5=0123" data-yanked="">demo-1.0-py3-none-any.whl</a>
<a href="/abs/demo-0.9.zip" data-yanked="bad &amp; broken">demo-0.9.zip</a>
<a>no href</a></body></html>""" % ("a" * 64)
    assert parse_simple_html(page, "https://idx.example/simple/demo/") == [
        IndexFile("demo-1.0.tar.gz", "https://files.example/f/demo-1.0.tar.gz",
                  (Digest("sha256", "a" * 64),)),
        IndexFile("demo-1.0-py3-none-any.whl",
                  "https://files.example/base/demo-1.0-py3-none-any.whl", (), ""),
        IndexFile("demo-0.9.zip", "https://files.example/abs/demo-0.9.zip", (), "bad & broken"),
    ]


def test_parse_simple_json() -> None:
    body = b"""{"meta": {"api-version": "1.1"}, "files": [
      {"filename": "demo-1.0.tar.gz", "url": "../../f/demo-1.0.tar.gz",
       "hashes": {"sha256": "%s", "md5": "short"}, "yanked": "oops"},
      {"filename": "demo-1.1.tar.gz", "url": "https://cdn.example/demo-1.1.tar.gz",
       "hashes": {}}]}""" % (b"b" * 64)
    assert parse_simple_json(body, "https://idx.example/simple/demo/") == [
        IndexFile("demo-1.0.tar.gz", "https://idx.example/f/demo-1.0.tar.gz",
                  (Digest("sha256", "b" * 64),), "oops"),
        IndexFile("demo-1.1.tar.gz", "https://cdn.example/demo-1.1.tar.gz", ())]
    with pytest.raises(PackageError, match="simple API version 2.0 is not 1.x"):
        parse_simple_json(b'{"meta": {"api-version": "2.0"}, "files": []}', "u")


@pytest.mark.parametrize("filename,name,expected", [
    ("flask-3.1.0.tar.gz", "Flask", "3.1.0"),
    ("Flask-3.1.0.tar.gz", "flask", "3.1.0"),
    ("python-dateutil-2.9.0.zip", "python_dateutil", "2.9.0"),
    ("zope.interface-6.0.tar.gz", "zope-interface", "6.0"),
    ("flask-3.1.0-py3-none-any.whl", "flask", None),
    ("flask-extra-1.0.tar.gz", "flask", "extra-1.0"),
    ("other-1.0.tar.gz", "flask", None),
])
def test_sdist_version(filename: str, name: str, expected: str | None) -> None:
    assert sdist_version(filename, name) == expected


def test_choose_sdist_preferences() -> None:
    files = [IndexFile(n, "u/" + n, (), y) for n, y in (
        ("demo-1.0.zip", None), ("demo-1.0.tar.gz", "bad"), ("demo-1.0.0.tar.gz", None),
        ("demo-1.0-py3-none-any.whl", None), ("demo-1.1.tar.gz", None))]
    assert choose_sdist(files, "demo", "1.0").filename == "demo-1.0.zip"  # not yanked first
    assert choose_sdist(files[1:], "demo", "1.0").filename == "demo-1.0.tar.gz"
    assert choose_sdist(files[2:], "demo", "1.0").filename == "demo-1.0.0.tar.gz"  # padded
    assert choose_sdist(files, "demo", "2.0") is None


# --- against a real local index --------------------------------------------------------


def _config(*urls: str, flat: bool = False) -> PypiConfig:
    return PypiConfig("pip", tuple(IndexLocation(u, "test", flat) for u in urls))


@pytest.mark.parametrize("json_api", [True, False])
def test_find_and_download_verified_sdist(json_api: bool) -> None:
    data = sdist("demo_pkg", "1.2.0", {"docs/index.md": "# Demo\n"})
    with SimpleIndex(json_api=json_api) as index:
        index.add("demo-pkg", "demo_pkg-1.2.0.tar.gz", data)
        index.add("demo-pkg", "demo_pkg-1.2.0-py3-none-any.whl", b"wheel")
        fetcher = Fetcher()
        artifact = find_sdist(_config(index.index_url), "Demo.Pkg", "1.2.0", fetcher)
        assert artifact._replace(url="", index="") == (
            "pypi", "demo-pkg", "1.2.0", "demo_pkg-1.2.0.tar.gz", "", "",
            Digest("sha256", sha256(data)), ())
        assert artifact.url == f"{index.url}/files/demo_pkg-1.2.0.tar.gz"
        assert download(artifact, fetcher) == data
        accept = index.requests[0].headers["Accept"]
        assert accept.startswith("application/vnd.pypi.simple.v1+json")
        assert artifact.record(sha256(data)) == {
            "kind": "pypi", "package": "demo-pkg", "version": "1.2.0",
            "index": index.index_url, "archive": "demo_pkg-1.2.0.tar.gz",
            "archive_url": artifact.url, "archive_hash": f"sha256:{sha256(data)}",
            "archive_sha256": sha256(data)}


def test_wrong_hash_is_refused_before_anything_reads_the_bytes() -> None:
    data = sdist("demo", "1.0", {})
    with SimpleIndex() as index:
        index.add("demo", "demo-1.0.tar.gz", data, digest="wrong")
        fetcher = Fetcher()
        artifact = find_sdist(_config(index.index_url), "demo", "1.0", fetcher)
        with pytest.raises(PackageError, match=f"sha256 {sha256(data)} is not the published"):
            download(artifact, fetcher)


def test_remote_file_without_hash_is_refused() -> None:
    with SimpleIndex() as index:
        index.add("demo", "demo-1.0.tar.gz", b"x", digest=None)
        fetcher = Fetcher()
        artifact = find_sdist(_config(index.index_url), "demo", "1.0", fetcher)
        assert artifact.digest is None
        with pytest.raises(PackageError, match="publishes no usable hash for demo-1.0.tar.gz"):
            download(artifact, fetcher)
        assert [r.path for r in index.requests] == ["/simple/demo/"]  # never downloaded


def test_yanked_pin_is_used_with_a_warning() -> None:
    with SimpleIndex() as index:
        index.add("demo", "demo-1.0.tar.gz", b"x", yanked="broken metadata")
        artifact = find_sdist(_config(index.index_url), "demo", "1.0", Fetcher())
        assert artifact.warnings == (
            "demo-1.0.tar.gz is yanked from its index (broken metadata); used as pinned",)


def test_each_location_says_why_when_none_has_the_sdist() -> None:
    with SimpleIndex() as first, SimpleIndex() as second:
        second.add("demo", "demo-1.0-py3-none-any.whl", b"w")
        second.add("demo", "demo-0.9.tar.gz", b"s")
        with pytest.raises(BadSource) as raised:
            find_sdist(_config(first.index_url, second.index_url), "demo", "1.0", Fetcher())
        assert str(raised.value) == (
            f"no source distribution of demo==1.0: {first.index_url}: no project demo; "
            f"{second.index_url}: only built distributions (wheels) of 1.0")
        assert raised.value.code == "usage"
        with pytest.raises(BadSource) as raised:
            find_sdist(_config(second.index_url), "demo", "2.0", Fetcher())
        assert str(raised.value) == (f"no source distribution of demo==2.0: "
                                     f"{second.index_url}: no release 2.0")


def test_first_location_with_the_sdist_wins_and_a_broken_one_is_passed() -> None:
    with SimpleIndex() as broken, SimpleIndex() as good:
        broken.redirects["/simple/demo/"] = (302, "file:///etc/passwd")
        good.add("demo", "demo-1.0.tar.gz", b"s")
        artifact = find_sdist(_config(broken.index_url, good.index_url), "demo", "1.0",
                              Fetcher())
        assert artifact.index == good.index_url


def test_file_index_and_flat_directory(tmp_path: Path) -> None:
    data = sdist("demo", "1.0", {"README.md": "r"})
    (tmp_path / "files").mkdir()
    (tmp_path / "files/demo-1.0.tar.gz").write_bytes(data)
    _write(tmp_path / "simple/demo/index.html",
           f'<a href="../../files/demo-1.0.tar.gz#sha256={sha256(data)}">demo-1.0.tar.gz</a>')
    fetcher = Fetcher()
    simple = find_sdist(_config((tmp_path / "simple").as_uri()), "demo", "1.0", fetcher)
    assert simple.url == (tmp_path / "files/demo-1.0.tar.gz").as_uri()
    assert download(simple, fetcher) == data
    flat = find_sdist(_config((tmp_path / "files").as_uri(), flat=True), "demo", "1.0", fetcher)
    assert flat.digest is None  # a local directory publishes no hash: read as it is
    assert download(flat, fetcher) == data


def test_http_index_cannot_point_at_local_files(tmp_path: Path) -> None:
    secret = tmp_path / "demo-1.0.tar.gz"
    secret.write_bytes(b"local")
    with SimpleIndex() as index:
        index.add("demo", "demo-1.0.tar.gz", b"local")
        artifact = find_sdist(_config(index.index_url), "demo", "1.0", Fetcher())
        local = artifact._replace(url=secret.as_uri())
        with pytest.raises(PackageError, match="refusing to fetch file://"):
            download(local, Fetcher())


def test_credentials_go_to_the_index_host_only_and_are_never_shown() -> None:
    data = b"archive"
    with SimpleIndex() as index, SimpleIndex() as cdn:
        cdn.add("demo", "demo-1.0.tar.gz", data)
        index.add("demo", "demo-1.0.tar.gz", data)
        index.redirects["/files/demo-1.0.tar.gz"] = (302, f"{cdn.url}/files/demo-1.0.tar.gz")
        url = index.index_url.replace("http://", "http://me:t0ken@")
        config = _config(url)
        fetcher = Fetcher(authorize=authorizer(config))
        artifact = find_sdist(config, "demo", "1.0", fetcher)
        assert download(artifact, fetcher) == data
        assert index.requests[0].headers["Authorization"] == "Basic bWU6dDBrZW4="
        assert "Authorization" not in cdn.requests[0].headers
        assert "t0ken" not in str(artifact.record(sha256(data)))
        index.redirects["/simple/demo/"] = (302, "ftp://me:t0ken@elsewhere/")
        with pytest.raises(PackageError) as raised:
            find_sdist(config, "demo", "1.0", fetcher)
        assert "t0ken" not in str(raised.value)
        assert "redirects to a ftp URL" in str(raised.value)


def test_size_cap_and_timeout() -> None:
    with SimpleIndex() as index:
        index.add("demo", "demo-1.0.tar.gz", b"x" * 5000)
        artifact = find_sdist(_config(index.index_url), "demo", "1.0", Fetcher())
        with pytest.raises(PackageError, match="5000 bytes, over the 4096-byte cap"):
            download(artifact, Fetcher(), max_bytes=4096)
        index.stalled.add("/files/demo-1.0.tar.gz")
        with pytest.raises(PackageError, match="no answer within 0.2 s"):
            download(artifact, Fetcher(timeout=0.2))
