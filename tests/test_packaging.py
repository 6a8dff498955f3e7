"""The wheel: one import package holding every module and data file, and both commands run
from a venv it is installed in."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, SAFETY_TIMEOUT

from doc_index.search.ranking.related_words import TABLE_PATH

# What a checkout holds beside the sources: never copied into the build folder.
NOT_SOURCES = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info",
                                     "__pycache__", ".pytest_cache", ".hypothesis",
                                     ".ruff_cache", "bench", "demo-root")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of the checkout: setuptools writes build/ and
    an egg-info beside the sources, which parallel test runs must not share."""
    work = tmp_path_factory.mktemp("wheel")
    source = shutil.copytree(REPO, work / "src", ignore=NOT_SOURCES)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(work / "out"), str(source)],
                   check=True, capture_output=True, timeout=SAFETY_TIMEOUT)
    (built,) = (work / "out").glob("doc_index-*.whl")
    return built


def test_the_wheel_holds_one_import_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names}
    assert "doc_index" in top_level
    assert not top_level & {"server", "store", "indexer", "search", "tests", "bench"}
    assert "doc_index/indexer/document.py" in names
    assert "doc_index/search/native_selection.py" in names
    assert "doc_index/embedding/minilm/tokenizer.json" in names


def test_the_related_words_table_ships_in_the_wheel(wheel: Path) -> None:
    assert TABLE_PATH.parent == REPO / "search" / "ranking"
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("doc_index/search/ranking/related_words.txt") == TABLE_PATH.read_bytes()


def installed_site(env_dir: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(env_dir / "bin" / "python"), "-c", code],
                               capture_output=True, text=True, check=True).stdout.strip())


def check_installed(env_dir: Path) -> None:
    """Both commands run, and ``doc_index`` is the wheel's, under one import package."""
    for command in ("doc-index", "context"):
        out = subprocess.run([str(env_dir / "bin" / command), "--help"], capture_output=True,
                             timeout=SAFETY_TIMEOUT, cwd=env_dir)
        assert out.returncode == 0, out.stderr
        assert b"usage:" in out.stdout
    site = installed_site(env_dir)
    # (outside the checkout: ``python -c`` puts the current folder first on sys.path)
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                            "import doc_index; print(doc_index.__file__)"],
                           capture_output=True, text=True, check=True, cwd=env_dir).stdout.strip()
    assert Path(where).parent == site / "doc_index"
    installed = {p.name for p in site.iterdir()}
    assert not installed & {"server", "store", "indexer", "search"}


def test_the_wheel_runs_from_a_venv_it_is_installed_in(wheel: Path, tmp_path: Path) -> None:
    """Fast: the wheel alone is installed; its dependencies are the test venv's, seen
    through a .pth line (which adds that folder but runs none of its .pth files, so the
    editable checkout stays out of it)."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = installed_site(env_dir)
    (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"),
                    "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=SAFETY_TIMEOUT)
    check_installed(env_dir)


@pytest.mark.slow
def test_wheel_installs_into_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    """The wheel and its declared dependencies, from the package index, into a new venv."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    check_installed(env_dir)
