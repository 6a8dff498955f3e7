"""sources/npm_registry.py: npm's registry configuration read as data and a tarball fetched from
a real local registry, verified by its integrity field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from package_servers import NpmRegistry, npm_tarball, sri

from doc_index.foundation.errors import BadSource, PackageError
from doc_index.sources.npm_registry import (
    NPM_REGISTRY,
    NpmConfig,
    clean_version,
    find_npm_tarball,
    npm_config,
    packument_url,
    parse_npmrc,
    tarball_digest,
    valid_npm_name,
)
from doc_index.sources.package_fetch import Digest, Fetcher, digests_from_sri, download


def test_parse_npmrc() -> None:
    text = """; comment
# another
registry = "https://r.example/npm/"
@corp:registry=https://corp.example/
//corp.example/:_authToken=${CORP_TOKEN}
escaped=\\${HOME}
optional=${MISSING?}x
missing=${MISSING}
[section]
no equals sign
"""
    assert parse_npmrc(text, {"CORP_TOKEN": "abc", "HOME": "/h"}) == {
        "registry": "https://r.example/npm/", "@corp:registry": "https://corp.example/",
        "//corp.example/:_authToken": "abc", "escaped": "${HOME}", "optional": "x",
        "missing": "${MISSING}"}


def test_npm_config_precedence_scopes_and_auth(tmp_path: Path) -> None:
    (tmp_path / "global").write_text("registry=https://global.example/\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "home/.npmrc").write_text(
        "registry=https://user.example\n@corp:registry=https://corp.example/npm/\n"
        "//corp.example/npm/:_authToken=tok\n//corp.example/:_auth=dXNlcjpwYXNz\n"
        "//other.example/:username=me\n//other.example/:_password=c2VjcmV0\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj/.npmrc").write_text("registry=https://project.example/\n")
    config = npm_config(tmp_path / "proj", {}, home=tmp_path / "home",
                        global_config=tmp_path / "global")
    # the project's .npmrc is never read: the user's registry, from the user's file
    assert config == NpmConfig(
        "https://user.example/", (("@corp", "https://corp.example/npm/"),),
        (("//corp.example/", "Basic dXNlcjpwYXNz"), ("//corp.example/npm/", "Bearer tok"),
         ("//other.example/", "Basic bWU6c2VjcmV0")), None, str(tmp_path / "home/.npmrc"))
    assert config.registry_for("@corp/x") == "https://corp.example/npm/"
    assert config.registry_for("@other/x") == config.registry_for("x") == config.registry
    assert config.authorize("https://corp.example/npm/@corp%2fx") == "Bearer tok"
    assert config.authorize("https://corp.example/other") == "Basic dXNlcjpwYXNz"
    assert config.authorize("https://project.example/x") is None
    # a user configuration file named into the project folder is the project's: not read
    inner = npm_config(tmp_path / "proj", {"NPM_CONFIG_USERCONFIG": str(tmp_path / "proj/.npmrc")},
                       home=tmp_path / "home", global_config=tmp_path / "global")
    assert (inner.registry, inner.origin) == ("https://global.example/",
                                              str(tmp_path / "global"))
    env = {"NPM_CONFIG_REGISTRY": "https://env.example", "npm_config_@corp:registry": "https://c2/"}
    from_env = npm_config(tmp_path / "proj", env, home=tmp_path / "home",
                          global_config=tmp_path / "global")
    assert (from_env.registry, from_env.scopes, from_env.origin) == (
        "https://env.example/", (("@corp", "https://c2/"),), "NPM_CONFIG_REGISTRY")
    assert npm_config(None, {}, home=tmp_path / "nohome",
                      global_config=tmp_path / "none").registry == NPM_REGISTRY


def test_names_urls_versions_and_digests() -> None:
    assert packument_url("https://r.example/", "@scope/pkg") == "https://r.example/@scope%2fpkg"
    assert packument_url("https://r.example", "left-pad") == "https://r.example/left-pad"
    assert packument_url("file:///srv/reg", "@s/p") == "file:///srv/reg/%40s/p/package.json"
    assert [valid_npm_name(n) for n in ("JSONStream", "@s/p", "../x", "a/b", ".x", "")] == [
        True, True, False, False, False, False]
    with pytest.raises(BadSource, match="'../etc' is not an npm package name"):
        packument_url("https://r.example/", "../etc")
    assert clean_version(" v1.2.3 ") == clean_version("=1.2.3") == "1.2.3"
    data = b"tarball"
    assert tarball_digest({"integrity": f"sha1-AAAA {sri(data, 'sha256')} {sri(data)}",
                           "shasum": "00"}).algorithm == "sha512"
    assert tarball_digest({"shasum": "a" * 40}) == Digest("sha1", "a" * 40)
    # an integrity field with nothing usable does not fall back to sha1
    assert tarball_digest({"integrity": "md5-AAAA", "shasum": "a" * 40}) is None
    assert digests_from_sri("sha512-!!! sha256-" + sri(data, "sha256")[7:]) == [
        Digest("sha256", __import__("hashlib").sha256(data).hexdigest())]


def test_fetch_scoped_tarball_with_scope_registry_and_token() -> None:
    data = npm_tarball({"package.json": '{"name": "@corp/ui"}', "README.md": "# UI\n"})
    with NpmRegistry() as public, NpmRegistry() as corp:
        corp.required_auth = "Bearer sekret"
        corp.add("@corp/ui", "2.0.0", data)
        host = corp.url.split("://", 1)[1]
        config = NpmConfig(public.url + "/", (("@corp", corp.url + "/"),),
                           ((f"//{host}/", "Bearer sekret"),))
        fetcher = Fetcher(authorize=config.authorize)
        artifact = find_npm_tarball(config, "@corp/ui", "v2.0.0", fetcher)
        assert (artifact.name, artifact.version, artifact.filename) == (
            "@corp/ui", "2.0.0", "ui-2.0.0.tgz")
        assert artifact.digest.algorithm == "sha512"
        assert download(artifact, fetcher) == data
        assert [r.path for r in corp.requests] == ["/@corp%2fui", "/@corp/ui/-/ui-2.0.0.tgz"]
        assert public.requests == []
        assert "sekret" not in json.dumps(artifact.record("x"))
        corp.required_auth = "Bearer other"
        with pytest.raises(PackageError) as raised:
            download(artifact, fetcher)
        assert str(raised.value) == f"{corp.url}/%40corp/ui/-/ui-2.0.0.tgz: HTTP 401 Unauthorized"


def test_shasum_only_wrong_integrity_missing_version_deprecated() -> None:
    data = npm_tarball({"README.md": "old"})
    with NpmRegistry() as registry:
        registry.add("old", "0.1.0", data, integrity="shasum")
        registry.add("bad", "1.0.0", data, integrity="wrong")
        registry.add("dep", "1.0.0", data, deprecated="use new-dep")
        config = NpmConfig(registry.url + "/")
        fetcher = Fetcher()
        old = find_npm_tarball(config, "old", "0.1.0", fetcher)
        assert old.digest.algorithm == "sha1"
        assert download(old, fetcher) == data
        bad = find_npm_tarball(config, "bad", "1.0.0", fetcher)
        with pytest.raises(PackageError, match="sha512 .* is not the published"):
            download(bad, fetcher)
        with pytest.raises(BadSource) as raised:
            find_npm_tarball(config, "old", "9.9.9", fetcher)
        assert str(raised.value) == f"no version 9.9.9 of old on {registry.url}/ (latest is 0.1.0)"
        with pytest.raises(BadSource, match="no package nope on"):
            find_npm_tarball(config, "nope", "1.0.0", fetcher)
        assert find_npm_tarball(config, "dep", "1.0.0", fetcher).warnings == (
            "dep@1.0.0 is deprecated: use new-dep",)


def test_file_registry(tmp_path: Path) -> None:
    data = npm_tarball({"README.md": "# local\n"})
    folder = tmp_path / "reg/@s/p"
    folder.mkdir(parents=True)
    (folder / "p-1.0.0.tgz").write_bytes(data)
    (folder / "package.json").write_text(json.dumps({"name": "@s/p", "versions": {"1.0.0": {
        "dist": {"tarball": "p-1.0.0.tgz", "integrity": sri(data)}}}}))
    config = NpmConfig((tmp_path / "reg").as_uri())
    fetcher = Fetcher()
    artifact = find_npm_tarball(config, "@s/p", "1.0.0", fetcher)
    assert artifact.url == (folder / "p-1.0.0.tgz").as_uri()
    assert download(artifact, fetcher) == data
