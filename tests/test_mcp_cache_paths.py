"""resolve_cache_name: a cache is a directory strictly inside the root, nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from doc_index.foundation.errors import ContextError
from doc_index.server import spec_texts as tools
from doc_index.store.cache_paths import resolve_cache_name


@pytest.fixture()
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """root/ with caches ``good`` and ``other``; ``outside/`` next to it holds a secret."""
    root = tmp_path / "root"
    (root / "good" / "documents").mkdir(parents=True)
    (root / "good" / "manifest.json").write_text("{}")
    (root / "good" / "documents" / "a.json").write_text("{}")
    (root / "other").mkdir()
    (root / "good.lock").write_text("")
    outside = tmp_path / "outside"
    (outside / "cache").mkdir(parents=True)
    (outside / "cache" / "manifest.json").write_text('{"secret": true}')
    (outside / "secret.txt").write_text("secret")
    return root, outside


def code_of(root: Path, name: object) -> str:
    with pytest.raises(ContextError) as info:
        resolve_cache_name(root, name)  # type: ignore[arg-type]
    return info.value.code


def test_a_cache_name_gives_its_real_directory(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    assert resolve_cache_name(root, "good") == Path(os.path.realpath(root / "good"))


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        "../outside",
        "../outside/cache",
        "good/../good",
        "good/documents",
        "good/",
        "/etc",
        "/",
        "\\good",
        "good\\..\\..",
        "..\\outside",
        "good\x00",
        "\x00",
        "go\nod",
        "good\t",
        "good\x7f",
        "good\x85",
        "\ud800",
        "missing",
        "good.lock",
    ],
)
def test_names_that_are_not_a_cache_under_the_root(layout: tuple[Path, Path], name: str) -> None:
    root, _ = layout
    assert code_of(root, name) == "cache_missing"


def test_absolute_paths_are_refused_even_inside_the_root(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    assert code_of(root, str(root / "good")) == "cache_missing"
    assert code_of(root, str(outside / "cache")) == "cache_missing"


@pytest.mark.parametrize("name", [None, 3, ["good"], {"good": 1}, b"good"])
def test_non_string_names(layout: tuple[Path, Path], name: object) -> None:
    root, _ = layout
    assert code_of(root, name) == "cache_missing"


def test_symlink_out_of_the_root(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "escape").symlink_to(outside / "cache")
    (root / "relative-escape").symlink_to(Path("..") / "outside" / "cache")
    (root / "dangling").symlink_to(outside / "nothing")
    for name in ("escape", "relative-escape", "dangling"):
        assert code_of(root, name) == "cache_missing"


def test_symlink_loop(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "loop").symlink_to(root / "loop")
    assert code_of(root, "loop") == "cache_missing"


def test_symlink_to_another_cache_inside_the_root(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "alias").symlink_to(root / "good")
    assert resolve_cache_name(root, "alias") == Path(os.path.realpath(root / "good"))


def test_symlinked_root_is_followed(layout: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = layout
    link = tmp_path / "root-link"
    link.symlink_to(root)
    assert resolve_cache_name(link, "good") == Path(os.path.realpath(root / "good"))


def test_symlink_inside_the_cache_tree_pointing_out(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "good" / "documents" / "b.json").symlink_to(outside / "secret.txt")
    assert code_of(root, "good") == "cache_missing"
    assert resolve_cache_name(root, "good", verify_tree=False).name == "good"


def test_symlinked_manifest_pointing_out(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "other" / "manifest.json").symlink_to(outside / "cache" / "manifest.json")
    assert code_of(root, "other") == "cache_missing"


def test_symlinked_subdirectory_pointing_out(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "other" / "documents").symlink_to(outside / "cache")
    assert code_of(root, "other") == "cache_missing"


def test_symlink_inside_the_cache_tree_pointing_inside_the_root(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "other" / "manifest.json").symlink_to(root / "good" / "manifest.json")
    (root / "other" / "documents").symlink_to(root / "good" / "documents")
    assert resolve_cache_name(root, "other").name == "other"


def test_symlink_inside_pointing_to_a_directory_that_escapes(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "good" / "documents" / "out").symlink_to(outside)
    (root / "other" / "documents").symlink_to(root / "good" / "documents")
    assert code_of(root, "other") == "cache_missing"


@pytest.mark.needs_root
def test_hard_link_to_another_owners_file_outside_the_root(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    foreign = outside / "cache" / "manifest.json"
    os.chown(foreign, 65534, 65534)
    os.link(foreign, root / "other" / "manifest.json")
    assert code_of(root, "other") == "cache_missing"


def test_hard_links_of_the_roots_owner_are_refused_too(layout: tuple[Path, Path]) -> None:
    """A second link may be anywhere: the store never hard-links, so none is trusted."""
    root, _ = layout
    previous = root / ".doc-index-tmp" / "good.old"
    previous.mkdir(parents=True)
    os.link(root / "good" / "documents" / "a.json", previous / "a.json")
    assert code_of(root, "good") == "cache_missing"


def test_hard_link_in_the_root_to_a_file_outside(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.link(outside / "secret.txt", root / "linked")
    assert code_of(root, "linked") == "cache_missing"


def test_missing_root(tmp_path: Path) -> None:
    assert code_of(tmp_path / "nowhere", "good") == "cache_missing"
    (tmp_path / "file").write_text("")
    assert code_of(tmp_path / "file", "good") == "cache_missing"


def test_root_itself_is_not_a_cache(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "self").symlink_to(root)
    assert code_of(root, "self") == "cache_missing"


@pytest.mark.unprivileged
def test_unreadable_cache_is_an_io_error(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "good").chmod(0)
    try:
        assert code_of(root, "good") == "io_error"
    finally:
        (root / "good").chmod(0o755)


def test_special_file_in_the_cache_is_refused_unread(layout: tuple[Path, Path]) -> None:
    """The name resolves (the tree walk judges links, not file types); the read refuses
    the FIFO each time it would open it (cache_files.open_regular), and never blocks."""
    root, _ = layout
    os.mkfifo(root / "other" / "manifest.json")
    cache = resolve_cache_name(root, "other")
    with pytest.raises(ContextError) as info:
        tools.resolve(cache, "x", 10)
    assert info.value.code == "io_error"
    assert json.loads(tools.inspect_cache(cache))["valid"] is False
