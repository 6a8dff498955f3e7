"""``doc-index sync``: a fixture project with a ``uv.lock`` and a ``requirements.txt``
against a PEP 503/691 index on 127.0.0.1; real ``doc-index`` subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import caches_only, run_cli, write_tree
from package_servers import SimpleIndex, sdist, sha256
from test_package_build import pkg_env  # noqa: F401 (a fixture)


def package(name: str, version: str) -> bytes:
    return sdist(name, version, {"README.md": f"# {name} {version}\n\nAbout {name}.\n",
                                 f"{name}/__init__.py": f'"""{name}."""\n'})


def uv_lock(index_url: str, pins: dict[str, str], hashes: dict[str, str] | None = None) -> str:
    deps = ", ".join(f'{{ name = "{n}" }}' for n in pins)
    text = (f'version = 1\nrequires-python = ">=3.10"\n\n[[package]]\nname = "app"\n'
            f'version = "0.1.0"\nsource = {{ editable = "." }}\ndependencies = [{deps}]\n')
    for name, version in pins.items():
        text += (f'\n[[package]]\nname = "{name}"\nversion = "{version}"\n'
                 f'source = {{ registry = "{index_url.rstrip("/")}" }}\n')
        if hashes and name in hashes:
            text += (f'sdist = {{ url = "{index_url}x/{name}-{version}.tar.gz", '
                     f'hash = "{hashes[name]}", size = 1 }}\n')
    return text


def sync(*args: str) -> tuple[int, str, str]:
    done = run_cli("sync", *args)
    out, err = done.stdout.decode(), done.stderr.decode()
    print(out, err)
    return done.returncode, out, err


@pytest.fixture
def index(pkg_env: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    with SimpleIndex() as served:
        for name, version in [("alpha", "1.0.0"), ("alpha", "1.1.0"), ("beta", "2.0.0"),
                              ("gamma", "0.5.0")]:
            served.add(name, f"{name}-{version}.tar.gz", package(name, version))
        monkeypatch.setenv("PIP_INDEX_URL", served.index_url)
        monkeypatch.setenv("UV_DEFAULT_INDEX", served.index_url)
        yield served


def test_sync_plan_build_keep_change_and_prune(pkg_env: Path, index: SimpleIndex) -> None:  # noqa: F811
    project = write_tree(pkg_env / "proj", {
        "uv.lock": uv_lock(index.index_url, {"alpha": "1.0.0", "beta": "2.0.0"}),
        "requirements.txt": "gamma==0.5.0\nunpinned>=1\n",
    })
    root = pkg_env / "root"
    code, out, _ = sync(str(project), "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == (f"plan {project}: 3 caches from uv.lock, "
                                   "requirements.txt")
    assert "  build      alpha@1.0.0  (not cached)" in out
    assert "  build      gamma@0.5.0  (not cached)" in out
    assert "unpinned" in out  # the lockfile reader's warning
    assert not root.exists() or caches_only(root) == []
    before = len(index.requests)

    code, out, _ = sync(str(project))
    assert code == 0, out
    assert caches_only(root) == ["alpha@1.0.0", "beta@2.0.0", "gamma@0.5.0"]
    assert "done: 3 built" in out
    assert len(index.requests) > before

    before = len(index.requests)
    code, out, _ = sync(str(project))
    assert code == 0 and "done: 3 kept" in out
    assert len(index.requests) == before  # an unchanged pin asks the index nothing

    (project / "uv.lock").write_text(uv_lock(index.index_url, {"alpha": "1.1.0",
                                                              "beta": "2.0.0"}))
    code, out, _ = sync(str(project), "--dry-run")
    assert "  build      alpha@1.1.0  (pin changed; alpha@1.0.0 stays beside it)" in out
    code, out, _ = sync(str(project))
    assert code == 0 and "done: 2 kept, 1 built" in out
    assert caches_only(root) == ["alpha@1.0.0", "alpha@1.1.0", "beta@2.0.0", "gamma@0.5.0"]

    (project / "requirements.txt").write_text("")
    code, out, _ = sync(str(project), "--prune", "--dry-run")
    assert "  prune      alpha@1.0.0  (no project pins it)" in out
    assert "  prune      gamma@0.5.0  (no project pins it)" in out
    code, out, _ = sync(str(project), "--prune")
    assert code == 0 and "done: 2 kept, 2 pruned" in out
    assert caches_only(root) == ["alpha@1.1.0", "beta@2.0.0"]


def test_prune_never_touches_other_caches(pkg_env: Path, index: SimpleIndex) -> None:  # noqa: F811
    """A cache built by hand, a folder's cache and another project's pins all stay."""
    root = pkg_env / "root"
    docs = write_tree(pkg_env / "docs", {"a.md": "# A\n\nText.\n"})
    assert run_cli("build", str(docs)).returncode == 0
    assert run_cli("build", "pypi:gamma==0.5.0").returncode == 0  # by hand
    [folder] = [k for k in caches_only(root) if k.startswith("local-")]
    one = write_tree(pkg_env / "one", {"requirements.txt": "alpha==1.0.0\nbeta==2.0.0\n"})
    two = write_tree(pkg_env / "two", {"requirements.txt": "beta==2.0.0\ngamma==0.5.0\n"})
    assert sync(str(one))[0] == 0 and sync(str(two))[0] == 0
    (one / "requirements.txt").write_text("alpha==1.0.0\n")
    code, out, _ = sync(str(one), "--prune")
    assert code == 0 and "done: 1 kept (1 without a docs folder)\n" in out  # beta: two pins it
    (two / "requirements.txt").write_text("")
    code, out, _ = sync(str(two), "--prune")
    assert code == 0 and "  pruned     beta@2.0.0" in out and "done: 2 pruned" in out
    assert caches_only(root) == sorted([folder, "alpha@1.0.0"])
    # gamma was built by hand, then kept by sync for project two: sync made it its own
    # (pinned then unpinned), so it goes; the folder's cache never is a candidate.


def test_failures_are_listed_and_others_continue(pkg_env: Path, index: SimpleIndex) -> None:  # noqa: F811
    good = index.projects["alpha"][0].data
    project = write_tree(pkg_env / "proj", {
        "uv.lock": uv_lock(index.index_url, {"alpha": "1.0.0", "beta": "2.0.0",
                                             "missing": "9.0"},
                           hashes={"alpha": f"sha256:{sha256(good)}",
                                   "beta": f"sha256:{'0' * 64}"}),
    })
    code, out, err = sync(str(project))
    assert code == 6, (out, err)
    assert err.startswith("error: 2 of 3 packages failed") and err.count("\n") == 1
    lines = out.splitlines()
    assert lines[-2].startswith("failed: pypi:beta==2.0.0: beta-2.0.0.tar.gz does not match "
                                "the hash the lockfile lists")
    assert lines[-1].startswith("failed: pypi:missing==9.0: no source distribution")
    assert "done: 1 built, 2 failed" in out
    assert caches_only(pkg_env / "root") == ["alpha@1.0.0"]
    source = json.loads((pkg_env / "root/alpha@1.0.0/manifest.json").read_text())["source"]
    assert source["archive_sha256"] == sha256(good)


def test_a_folder_without_lockfiles_is_a_usage_error(pkg_env: Path) -> None:  # noqa: F811
    empty = write_tree(pkg_env / "empty", {"README.md": "# Nothing pinned\n"})
    for folder in (empty, pkg_env / "missing"):
        done = run_cli("sync", str(folder))
        err = done.stderr.decode()
        assert done.returncode == 1 and err.startswith("error: sync: ") and \
            err.count("\n") == 1, err
        assert done.stdout == b""
