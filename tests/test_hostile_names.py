"""Hostile cache names: always cache_missing (or an io_error for an unreadable place inside
the root), never a byte from outside the root, never a write or delete outside it.

Names go through ``doc-index resolve/inspect/delete`` (in-process and as real processes,
including non-UTF-8 argv bytes), the tools layer, and ``doc-index build --name``. A
hypothesis search combines traversal fragments, separators, NUL and control characters.
The MCP server's side is in ``test_fuzz_mcp.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import build, caches_only, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doc_index.cli import command as cli
from doc_index.foundation.errors import ContextError, InvalidCacheKey
from doc_index.server import spec_texts as tools
from doc_index.sources.walk import scan_directory
from doc_index.store.cache_paths import resolve_cache_name
from doc_index.store.index_store import IndexStore

SECRET = "SECRET-OUTSIDE-b41d"
GOOD = "local-src"


def _snapshot(path: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, path)
            if os.path.islink(full):
                out[rel] = "-> " + os.readlink(full)
            elif os.path.isfile(full):
                with open(full, "rb") as fh:
                    out[rel] = fh.read()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_world(tmp_path_factory.mktemp("hostile"))


def make_world(base: Path) -> tuple[Path, Path]:
    """(root, outside): a root with a good cache and hostile entries; a secret outside."""
    # More than a heading and a few words: a one-line stub is never read (search.packing).
    words = "text with several words, not a stub"
    src = write_tree(base / "src", {"a.md": f"# Alpha\n\nzebra {words}\n",
                                    "b.md": "# Beta\n\nmore zebra\n"})
    secret_src = write_tree(base / "secret-src",
                            {"a.md": f"# Alpha\n\nzebra {SECRET} {words}\n"})
    root = base / "root"
    outside = base / "outside"
    build(src, root, name="src")
    build(secret_src, outside, name="src")  # a complete cache outside the root
    cache_out = outside / GOOD
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    os.symlink(cache_out, root / "escape")
    os.symlink(os.path.relpath(cache_out, root), root / "escape-relative")
    os.symlink(GOOD, root / "inner")  # inside the root: fine
    os.symlink("loop", root / "loop")
    os.symlink("/", root / "slash")
    os.symlink(outside / "secret.txt", root / "file-link")
    # Caches whose tree leads out: a symlinked raw file, manifest, subdirectory.
    for name, rel in (("sym-raw", "a.md"), ("sym-manifest", "manifest.json")):
        shutil.copytree(root / GOOD, root / name)
        (root / name / rel).unlink()
        os.symlink(cache_out / rel, root / name / rel)
    shutil.copytree(root / GOOD, root / "sym-subdir")
    os.symlink(outside, root / "sym-subdir" / "sub")
    # A raw file hard-linked to a file outside the root owned by somebody else.
    shutil.copytree(root / GOOD, root / "hl-other")
    (root / "hl-other" / "a.md").unlink()
    foreign = outside / "foreign-a.md"
    shutil.copyfile(cache_out / "a.md", foreign)
    if os.geteuid() == 0:
        os.chown(foreign, 65534, 65534)
    os.link(foreign, root / "hl-other" / "a.md")
    # The same with a file of the root's own owner.
    shutil.copytree(root / GOOD, root / "hl-same")
    (root / "hl-same" / "a.md").unlink()
    os.link(cache_out / "a.md", root / "hl-same" / "a.md")
    return root, outside


def _answer(root: Path, name: str) -> tuple[str, str]:
    """(code or "ok", text) of resolve by name through the tools layer."""
    try:
        text = tools.resolve(resolve_cache_name(root, name), "zebra", 10_000)
    except ContextError as exc:
        return exc.code, ""
    return "ok", text


ESCAPES = ["escape", "escape-relative", "slash", "file-link", "loop", "sym-raw",
           "sym-manifest", "sym-subdir", "hl-other"]
TRAVERSALS = ["..", ".", "", "/", "/etc", "/etc/passwd", "../outside", "../outside/local-src",
              f"{GOOD}/", f"{GOOD}/.", f"./{GOOD}", f"{GOOD}/../{GOOD}", f"..\\{GOOD}",
              f"{GOOD}\x00", f"{GOOD}\x00/../..", "local-\nsrc", "\x1b[31mred", f"{GOOD}\x7f",
              "\u0085", f"{GOOD}\udcff", "x" * 5000, "~", "~root", "$HOME", "*", "%2e%2e",
              f"{GOOD}.lock", ".doc-index-tmp/x", ".doc-index-tmp", "..%2f..", "\u2025",
              "\uff0e\uff0e"]


@pytest.mark.parametrize("name", ESCAPES + TRAVERSALS)
def test_hostile_names_are_cache_missing(world: tuple[Path, Path], name: str) -> None:
    root, _ = world
    code, text = _answer(root, name)
    assert code == "cache_missing", (name, code)
    assert SECRET not in text


def test_absolute_path_of_a_cache_inside_the_root_is_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    assert _answer(root, str(root / GOOD))[0] == "cache_missing"
    assert _answer(root, str(outside / GOOD))[0] == "cache_missing"


def test_the_good_cache_and_a_symlink_inside_the_root_answer(world: tuple[Path, Path]) -> None:
    root, _ = world
    good = _answer(root, GOOD)
    assert good[0] == "ok" and json.loads(good[1])["documents"]
    assert _answer(root, "inner") == good


def test_hard_link_of_the_roots_owner_leading_outside(world: tuple[Path, Path]) -> None:
    root, _ = world
    code, text = _answer(root, "hl-same")
    assert code == "cache_missing" and SECRET not in text


def _cli(capfdbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes, bytes]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capfdbinary.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["resolve", "inspect", "delete"])
def test_cli_commands_refuse_hostile_names(world: tuple[Path, Path], tmp_path: Path,
                                          capfdbinary: pytest.CaptureFixture[bytes],
                                          command: str) -> None:
    """resolve, inspect and delete by name: exit 4, one line, nothing changed anywhere."""
    scratch, outside = make_world(tmp_path) if command == "delete" else world
    outside_before = _snapshot(outside)
    root_before = _snapshot(scratch)
    for name in ESCAPES + TRAVERSALS:
        if "\x00" in name:
            continue  # argv cannot hold NUL (tested in-process above)
        extra = ["zebra"] if command == "resolve" else []
        code, out, err = _cli(capfdbinary, command, name, *extra, "--root", str(scratch))
        assert code == 4, (name, code, err)
        assert out == b"" and err.count(b"\n") == 1, (name, err)
        assert b"Traceback" not in err and SECRET.encode() not in out + err
    assert _snapshot(outside) == outside_before
    assert _snapshot(scratch) == root_before  # nothing deleted, nothing written


def test_delete_through_an_inner_symlink_keeps_its_target(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    scratch, outside = make_world(tmp_path)
    outside_before = _snapshot(outside)
    good_before = _snapshot(scratch / GOOD)
    code, _, err = _cli(capfdbinary, "delete", "inner", "--root", str(scratch))
    # A symlink is no cache doc-index made: refused, the link and its target kept.
    assert code == 1 and err.count(b"\n") == 1 and b"symbolic link" in err, err
    assert os.path.islink(scratch / "inner")
    assert _snapshot(scratch / GOOD) == good_before
    assert _snapshot(outside) == outside_before


def test_real_process_with_non_utf8_and_odd_argv(world: tuple[Path, Path]) -> None:
    root, _ = world
    names = [b"local-src\xff", b"\xc0\xae\xc0\xae", b"..", b"escape", b"-", b"--", b"-h"]
    for raw in names:
        for argv in ([b"resolve", raw, b"zebra"], [b"inspect", raw]):
            proc = subprocess.run(
                [os.fsencode(sys.executable), b"-m", b"doc_index.cli", *argv, b"--root",
                 os.fsencode(root)], capture_output=True, timeout=60)
            assert b"Traceback" not in proc.stderr
            assert SECRET.encode() not in proc.stdout + proc.stderr
            if raw in (b"-h",):
                assert proc.returncode == 0
                continue
            assert proc.returncode in (1, 4), (raw, proc.returncode, proc.stderr)
            assert proc.stdout == b"" and proc.stderr.count(b"\n") == 1


BAD_KEYS = ["local-../x", "../evil", "a/b", "/abs", "..", ".", "", ".doc-index-tmp",
            "local-x\ny", "local-\x00", "local-\x1b", "local-\udcff", "local-x\\..\\y"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_build_refuses_keys_outside_the_root(tmp_path: Path, key: str) -> None:
    src = write_tree(tmp_path / "src", {"a.md": "# A\n\ntext\n"})
    base = tmp_path / "base"
    root = base / "root"
    root.mkdir(parents=True)
    with pytest.raises(InvalidCacheKey):
        IndexStore(root).update_index(key, "local", "x", scan_directory(src))
    assert sorted(os.listdir(base)) == ["root"]
    assert os.listdir(root) == []


@pytest.mark.parametrize("name", ["src/../../escaped", "../x", "a\nb", "x\x1by"])
def test_cli_build_name_outside_the_root(tmp_path: Path, name: str) -> None:
    src = write_tree(tmp_path / "src", {"a.md": "# A\n\ntext\n"})
    root = tmp_path / "root"
    build(src, root, name="src")  # root/local-src exists, so '..' could climb out
    before = sorted(os.listdir(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "doc_index.cli", "build", str(src), "--root",
                           str(root), "--name", name], capture_output=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(b"error: invalid cache name") and proc.stderr.count(b"\n") == 1
    assert sorted(os.listdir(tmp_path)) == before
    assert caches_only(root) == [GOOD]


# --------------------------------------------------------------------------- property


FRAGMENTS = st.sampled_from([
    "..", ".", "/", "\\", "\x00", "\n", "\r", "\t", "\x1b", "\x7f", "\x85", "\udcff",
    GOOD, "local", "-", "src", "escape", "inner", "outside", "sym-raw", "hl-other", "loop",
    "slash", "etc", "passwd", "~", "%2e", "%2f", " ", "\u202e", "\u2215", "\uff0f",
    "manifest.json", ".doc-index-tmp", "\U0001f600", "é", "e\u0301",
])


def _names_property(world: tuple[Path, Path], examples: int) -> int:
    root, _ = world
    root_real = os.path.realpath(root)
    tried = [0]

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(parts=st.lists(FRAGMENTS, min_size=0, max_size=6), noise=st.text(max_size=8))
    def run(parts: list[str], noise: str) -> None:
        tried[0] += 1
        name = "".join(parts) + noise
        try:
            cache_dir = resolve_cache_name(root, name)
        except ContextError as exc:
            assert exc.code in ("cache_missing", "io_error"), (name, exc.code)
            return
        real = os.path.realpath(cache_dir)
        assert real.startswith(root_real + os.sep), (name, real)
        assert "/" not in name and "\x00" not in name and name not in (".", "..")
        for call in (lambda: tools.resolve(cache_dir, "zebra", 10_000),
                     lambda: tools.inspect_cache(cache_dir)):
            try:
                text = call()
            except ContextError as exc:
                assert exc.code in ("cache_missing", "cache_invalid", "invalid_query")
            else:
                assert SECRET not in text

    run()
    return tried[0]


@pytest.mark.slow
def test_hostile_names_property_short(world: tuple[Path, Path]) -> None:
    _names_property(world, examples=400)


@pytest.mark.slow
def test_hostile_names_property_long(world: tuple[Path, Path]) -> None:
    tried = _names_property(world, examples=20_000)
    print(f"hostile cache names tried: {tried}")
