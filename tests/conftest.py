"""Shared fixtures: write small documentation trees and build caches from them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from doc_index.sources.identity import directory_source
from doc_index.sources.walk import scan_directory
from doc_index.store.index_store import BuildReport, IndexStore
from doc_index.store.native_cache import NativeCache, load_native_cache

REPO = Path(__file__).resolve().parent.parent
SAMPLE_REPOS = REPO / "sample_repos"

# CI runs on a shared, busy machine: a test waits for an event (an answer, a file, a log
# line, a process exit), never for a span of time. Every timeout is only a safety net
# against a hang, this long so that load never trips it on a healthy run.
SAFETY_TIMEOUT = 300.0
# Answers by meaning only where a test asks for them (tests/test_semantic_integration.py
# sets DOC_INDEX_SEMANTIC itself): a model the user fetched into ~/.cache must not make
# every build of the suite embed, nor change its summaries and answers.
os.environ["DOC_INDEX_SEMANTIC"] = "off"


@pytest.fixture(autouse=True, scope="session")
def _tests_own_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite's own user cache folder: loading the model saves its optimized graph in
    the user cache (``embedding.optimized``), and no test writes the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
        yield


# Hypothesis fails an example slower than 200 ms by default: a margin that load eats.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


# Linux capability bits (capability.h) that let root ignore file modes and owners.
_PERMISSION_BYPASS = {"dac_override": 1, "dac_read_search": 2, "fowner": 3}
_UNPRIVILEGED_CHILD = "DOC_INDEX_TEST_UNPRIVILEGED_CHILD"


def bypasses_permissions() -> bool:
    """True where this process ignores file modes (root with its usual capabilities)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return os.geteuid() == 0
    effective = next(int(line.split()[1], 16) for line in status.splitlines()
                     if line.startswith("CapEff:"))
    return any(effective >> bit & 1 for bit in _PERMISSION_BYPASS.values())


def unprivileged_prefix() -> list[str]:
    """An argv prefix that runs a command subject to file modes: nothing for a normal user;
    for root, setpriv(1) without the bypass capabilities. The child keeps root's uid, so it
    still reads the clone and the venv (a fresh clone may sit in a 0700 ``mktemp -d``
    folder that ``nobody`` cannot enter), but a 0555 folder refuses it as it refuses a user."""
    if not bypasses_permissions():
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv(1) (util-linux): cannot drop the "
                    "permission bypass for the unprivileged side of this test")
    drop = ",".join(f"-{name}" for name in _PERMISSION_BYPASS)
    return [setpriv, "--inh-caps=-all", f"--bounding-set={drop}"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (chown to another user, mount)")
    for item in items:
        if item.get_closest_marker("needs_root") is not None:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An ``unprivileged`` test, when this process bypasses file modes, runs in a pytest
    child that does not; the child must pass (not skip)."""
    if pyfuncitem.get_closest_marker("unprivileged") is None or not bypasses_permissions():
        return None
    if os.environ.get(_UNPRIVILEGED_CHILD):
        pytest.fail("the unprivileged child still bypasses file modes")
    done = subprocess.run(
        [*unprivileged_prefix(), sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-m", "unprivileged", pyfuncitem.nodeid],
        cwd=pyfuncitem.config.rootpath, env={**os.environ, _UNPRIVILEGED_CHILD: "1"},
        capture_output=True, timeout=SAFETY_TIMEOUT)
    report = done.stdout.decode(errors="replace")
    assert done.returncode == 0 and "1 passed" in report, report[-3000:]
    return True


def wait_for(ready: Callable[[], object], what: str, timeout: float = SAFETY_TIMEOUT) -> None:
    """Poll ``ready()`` until it is true; fail naming ``what`` after the safety net."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f} s")
        time.sleep(0.02)


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``files`` (path -> text or bytes) under ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


def build(source: Path, root: Path, *, full: bool = False, name: str | None = None) -> BuildReport:
    """Build ``source`` into ``local-<name>`` (default: its folder's name), recording its
    source as ``doc-index build`` does; any other source of that cache is replaced."""
    identity = directory_source(source.resolve())
    return IndexStore(root).update_index(
        f"local-{name or source.name}", identity.owner, identity.name, scan_directory(source),
        full=full, source=identity, replace=True)


def manifest(cache_dir: Path) -> dict:
    return json.loads((cache_dir / "manifest.json").read_bytes())


def cache_files(cache_dir: Path) -> dict[str, bytes]:
    """Every file of a cache directory, by relative path (for byte comparisons)."""
    out = {}
    for path in sorted(cache_dir.rglob("*")):
        if path.is_file():
            out[path.relative_to(cache_dir).as_posix()] = path.read_bytes()
    return out


def without_indexed_at(files: dict[str, bytes]) -> dict[str, bytes]:
    data = dict(files)
    man = json.loads(data["manifest.json"])
    man["indexed_at"] = "X"
    data["manifest.json"] = json.dumps(man).encode()
    return data


def run_cli(*args: str, env: dict[str, str] | None = None, input: bytes | None = None,
            module: str = "doc_index.cli") -> subprocess.CompletedProcess[bytes]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          env=full_env, input=input, timeout=SAFETY_TIMEOUT)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The cache of the test module's ``DOCS`` (a folder named ``docs``), built once per
    module; a module may define its own ``cache_dir`` instead."""
    src = write_tree(tmp_path_factory.mktemp("src") / "docs", request.module.DOCS)
    root = tmp_path_factory.mktemp("root")
    build(src, root, full=True)
    return root / "local-docs"


@pytest.fixture(scope="module")
def cache(cache_dir: Path) -> Iterator[NativeCache]:
    """``cache_dir`` loaded for resolve."""
    loaded = load_native_cache(cache_dir)
    yield loaded
    loaded.close()


class CountingPattern:
    """A compiled pattern that counts its ``finditer`` calls."""

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern
        self.calls = 0

    def finditer(self, text: str) -> Any:
        self.calls += 1
        return self.pattern.finditer(text)


def v0_cache_from(tmp_path: Path, files: dict[str, str]) -> Path:
    """A Context Engine v0 cache built by ``context build`` from ``files``."""
    src = write_tree(tmp_path / "v0-src", files)
    cache = tmp_path / "v0-cache"
    done = run_cli("build", "--sources", str(src), "--cache", str(cache),
                   module="doc_index.server.context_cli")
    assert done.returncode == 0, done.stderr
    return cache


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return tmp_path / "docs-src"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "cache-root"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated HOME, XDG cache, cache root and git identity (git tests)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DOC_INDEX_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("DOC_INDEX_HOOK", raising=False)
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(var, raising=False)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    return tmp_path


def store_leftovers(root: Path) -> list[str]:
    """What builds left in the root's store area (``.doc-index-tmp``) beyond what the store
    keeps there between builds (each cache's spare generation and mark, the parse cache):
    empty when every build ended, however it ended."""
    area = root / ".doc-index-tmp"
    if not area.is_dir():
        return []
    return sorted(f"{key}/{name}" for key in os.listdir(area)
                  for name in os.listdir(area / key)
                  if name not in (("parsed", "vectors") if key == ".doc-index-tmp"
                                 else ("spare", "cache")))


def caches_only(root: Path) -> list[str]:
    """The root's entries but the store's area (spares and parse cache stay there)."""
    return sorted(name for name in os.listdir(root) if name != ".doc-index-tmp")
