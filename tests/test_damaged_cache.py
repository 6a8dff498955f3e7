"""Damaged native caches: inspect, resolve (CLI and in-process) and the repairing rebuild.

Per ``specs/context.inspect_cache.md`` inspect says ``valid: false`` only when the
manifest cannot be read or parsed or lacks ``cache_version``/``document_count``; resolve
says ``cache_invalid`` (exit 5) for a cache that violates its invariants. Nothing
crashes: no traceback, no internal_error. The next plain (incremental) ``doc-index
build`` repairs every damage and gives the bytes of a clean build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import build, cache_files, run_cli, without_indexed_at, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doc_index.foundation.cache_names import MANIFEST_NAME, SEARCH_INDEX_NAME
from doc_index.foundation.errors import ContextError
from doc_index.search.warm_caches import WarmCaches
from doc_index.server import spec_texts as tools

KEY = "local-src"
QUERY = "retry timeout"
TREE = {
    # More than a heading and a few words: a one-line stub is never read (search.packing).
    "docs/retry.md": "# Retry\n\nHow to retry a request after a timeout, with a pause.\n\n"
                     "## Backoff\n\nRetry backoff doubles the timeout after each failed try.\n",
    "docs/other.md": "# Other\n\nNothing about that here, only zebras.\n",
    "guide/setup.rst": "Setup\n=====\n\nSet the retry timeout in the config.\n",
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(source, root) of a good cache; tests copy the root before damaging it."""
    base = tmp_path_factory.mktemp("pristine")
    source = write_tree(base / "src", TREE)
    root = base / "root"
    build(source, root, name="src")
    return source, root


@pytest.fixture
def damaged_root(pristine: tuple[Path, Path], tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(pristine[1], root, symlinks=True)
    return root


def _man(cache: Path) -> dict:
    return json.loads((cache / MANIFEST_NAME).read_bytes())


def _put_man(cache: Path, man: dict) -> None:
    (cache / MANIFEST_NAME).write_text(json.dumps(man))


def truncate_manifest(cache: Path) -> None:
    data = (cache / MANIFEST_NAME).read_bytes()
    (cache / MANIFEST_NAME).write_bytes(data[: len(data) // 2])


def empty_manifest(cache: Path) -> None:
    (cache / MANIFEST_NAME).write_bytes(b"")


def manifest_not_object(cache: Path) -> None:
    (cache / MANIFEST_NAME).write_bytes(b"[1, 2, 3]\n")


def manifest_wrong_types(cache: Path) -> None:
    man = _man(cache)
    man["document_count"] = "three"
    _put_man(cache, man)


def manifest_is_directory(cache: Path) -> None:
    (cache / MANIFEST_NAME).unlink()
    (cache / MANIFEST_NAME).mkdir()


def index_version(value: object) -> Callable[[Path], None]:
    def damage(cache: Path) -> None:
        man = _man(cache)
        man["index_version"] = value
        _put_man(cache, man)

    return damage


def missing_raw(cache: Path) -> None:
    (cache / "docs" / "retry.md").unlink()


def raw_replaced_by_directory(cache: Path) -> None:
    (cache / "docs" / "retry.md").unlink()
    (cache / "docs" / "retry.md").mkdir()


def raw_replaced_by_symlink(cache: Path) -> None:
    target = cache / "docs" / "retry.md"
    (cache / "docs" / "copy.md").write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to("copy.md")


def edited_raw_same_size(cache: Path) -> None:
    path = cache / "docs" / "retry.md"
    path.write_bytes(path.read_bytes().replace(b"timeout", b"TIMEOUT"))


def edited_raw_other_size(cache: Path) -> None:
    path = cache / "docs" / "retry.md"
    path.write_bytes(b"inserted by hand\n" + path.read_bytes())


def truncated_raw(cache: Path) -> None:
    path = cache / "docs" / "retry.md"
    path.write_bytes(path.read_bytes()[:10])


def missing_search_index(cache: Path) -> None:
    (cache / SEARCH_INDEX_NAME).unlink()


def truncated_search_index(cache: Path) -> None:
    data = (cache / SEARCH_INDEX_NAME).read_bytes()
    (cache / SEARCH_INDEX_NAME).write_bytes(data[: len(data) - 7])


def garbage_search_index(cache: Path) -> None:
    (cache / SEARCH_INDEX_NAME).write_bytes(b"\x00\xff" * 100)


def flipped_search_postings(cache: Path) -> None:
    """Same size, header intact: the last bytes (postings) changed."""
    data = bytearray((cache / SEARCH_INDEX_NAME).read_bytes())
    for i in range(1, 33):
        data[-i] ^= 0xFF
    (cache / SEARCH_INDEX_NAME).write_bytes(bytes(data))


def flipped_search_terms(cache: Path) -> None:
    """Same size: a term of the term table renamed, so its postings hang on another key."""
    data = (cache / SEARCH_INDEX_NAME).read_bytes()
    assert b'"retri"' in data or b'"retry"' in data
    data = data.replace(b'"retri"', b'"rxtri"').replace(b'"retry"', b'"rxtry"')
    (cache / SEARCH_INDEX_NAME).write_bytes(data)


def section_offsets_out_of_range(cache: Path) -> None:
    man = _man(cache)
    for s in man["sections"]:
        s["byte_offset"] = 10**12
    _put_man(cache, man)


def section_negative_offsets(cache: Path) -> None:
    man = _man(cache)
    for s in man["sections"]:
        s["byte_offset"] = -5
        s["byte_length"] = -1
    _put_man(cache, man)


def section_fields_missing(cache: Path) -> None:
    man = _man(cache)
    for s in man["sections"]:
        del s["version"]
    _put_man(cache, man)


def section_fields_wrong_types(cache: Path) -> None:
    man = _man(cache)
    for s in man["sections"]:
        s["tokens"] = "many"
        s["file"] = 7
    _put_man(cache, man)


def section_path_escapes(cache: Path) -> None:
    man = _man(cache)
    for s in man["sections"]:
        s["file"] = "../../../etc/passwd"
    _put_man(cache, man)


def doc_files_mismatch(cache: Path) -> None:
    man = _man(cache)
    man["sections"] = man["sections"][:1]
    man["document_count"] = 1
    _put_man(cache, man)


# (damage, inspect's valid, what resolve of QUERY says)
DAMAGES: list[tuple[str, Callable[[Path], None], bool, str]] = [
    ("truncated manifest", truncate_manifest, False, "cache_invalid"),
    ("empty manifest", empty_manifest, False, "cache_invalid"),
    ("manifest not an object", manifest_not_object, False, "cache_invalid"),
    ("manifest wrong types", manifest_wrong_types, False, "cache_invalid"),
    ("manifest is a directory", manifest_is_directory, False, "cache_invalid"),
    ("index_version 0", index_version(0), True, "cache_invalid"),
    ("index_version 99", index_version(99), True, "cache_invalid"),
    ("index_version string", index_version("1"), True, "cache_invalid"),
    ("missing raw file", missing_raw, True, "cache_invalid"),
    ("raw file is a directory", raw_replaced_by_directory, True, "cache_invalid"),
    ("raw file is a symlink", raw_replaced_by_symlink, True, "cache_invalid"),
    ("edited raw file same size", edited_raw_same_size, True, "cache_invalid"),
    ("edited raw file other size", edited_raw_other_size, True, "cache_invalid"),
    ("truncated raw file", truncated_raw, True, "cache_invalid"),
    ("missing search.idx", missing_search_index, True, "cache_invalid"),
    ("truncated search.idx", truncated_search_index, True, "cache_invalid"),
    ("garbage search.idx", garbage_search_index, True, "cache_invalid"),
    ("flipped search.idx postings", flipped_search_postings, True, "cache_invalid"),
    ("renamed search.idx term", flipped_search_terms, True, "cache_invalid"),
    ("section offsets out of range", section_offsets_out_of_range, True, "cache_invalid"),
    ("negative section offsets", section_negative_offsets, True, "cache_invalid"),
    ("section fields missing", section_fields_missing, True, "cache_invalid"),
    ("section fields wrong types", section_fields_wrong_types, True, "cache_invalid"),
    ("section path escapes the cache", section_path_escapes, True, "cache_invalid"),
    ("sections do not cover doc_files", doc_files_mismatch, True, "cache_invalid"),
]

EXIT = {"cache_invalid": 5, "cache_missing": 4}


def _assert_error_line(proc: subprocess.CompletedProcess[bytes], code: str) -> None:
    assert proc.stdout == b"", proc.stdout[:200]
    assert b"Traceback" not in proc.stderr
    assert proc.returncode == EXIT[code], proc.stderr
    assert proc.stderr.count(b"\n") == 1 and proc.stderr.startswith(b"error: ")


@pytest.mark.parametrize("name,damage,valid,code", DAMAGES, ids=[d[0] for d in DAMAGES])
def test_damage_in_process(damaged_root: Path, name: str, damage: Callable[[Path], None],
                           valid: bool, code: str) -> None:
    cache = damaged_root / KEY
    damage(cache)
    info = json.loads(tools.inspect_cache(cache))
    assert info["valid"] is valid, info
    if not valid:
        assert info["cache_version"] == "" or name == "manifest wrong types"
        assert info["document_count"] == 0
    for warm in (None, WarmCaches()):
        with pytest.raises(ContextError) as err:
            tools.resolve(cache, QUERY, 10_000, warm=warm)
        assert err.value.code == code, (err.value.code, err.value.detail)


# The CLI in a real process, for a representative subset (each run costs a start-up).
CLI_SUBSET = ["truncated manifest", "index_version 99", "missing raw file",
              "edited raw file same size", "flipped search.idx postings"]


@pytest.mark.parametrize("name", CLI_SUBSET)
def test_damage_cli_and_repairing_rebuild(
    pristine: tuple[Path, Path], damaged_root: Path, tmp_path: Path, name: str
) -> None:
    source = pristine[0]
    damage, valid, code = next((d, v, c) for n, d, v, c in DAMAGES if n == name)
    cache = damaged_root / KEY
    damage(cache)
    # (a budget that holds a document: the whole answer is charged, server.packing)
    proc = run_cli("resolve", "--cache", str(cache), "--query", QUERY, "--budget", "1000",
                   module="doc_index.server.context_cli")
    _assert_error_line(proc, code)
    proc = run_cli("resolve", KEY, QUERY, "--root", str(damaged_root))
    _assert_error_line(proc, code)
    proc = run_cli("inspect", "--cache", str(cache), module="doc_index.server.context_cli")
    assert proc.returncode == 0 and proc.stderr == b""
    assert json.loads(proc.stdout)["valid"] is valid
    # A plain rebuild (no --full) repairs it.
    proc = run_cli("build", str(source), "--root", str(damaged_root), "--name", "local-src")
    assert proc.returncode == 0, proc.stderr
    clean = tmp_path / "clean"
    build(source, clean, name="src", full=True)
    assert without_indexed_at(cache_files(cache)) == without_indexed_at(
        cache_files(clean / KEY))
    assert json.loads(tools.resolve(cache, QUERY, 10_000))["selection"]["documents_selected"]


@pytest.mark.parametrize("name,damage,valid,code", DAMAGES, ids=[d[0] for d in DAMAGES])
def test_rebuild_repairs_every_damage(
    pristine: tuple[Path, Path], damaged_root: Path, tmp_path: Path, name: str,
    damage: Callable[[Path], None], valid: bool, code: str,
) -> None:
    source = pristine[0]
    cache = damaged_root / KEY
    damage(cache)
    build(source, damaged_root, name="src")
    clean = tmp_path / "clean"
    build(source, clean, name="src", full=True)
    assert without_indexed_at(cache_files(cache)) == without_indexed_at(
        cache_files(clean / KEY))


def test_missing_manifest_is_cache_missing_and_invalid_for_inspect(damaged_root: Path) -> None:
    cache = damaged_root / KEY
    (cache / MANIFEST_NAME).unlink()
    assert json.loads(tools.inspect_cache(cache)) == {
        "cache_version": "", "document_count": 0,
        "total_bytes": json.loads(tools.inspect_cache(cache))["total_bytes"], "valid": False}
    with pytest.raises(ContextError) as err:
        tools.resolve(cache, QUERY, 100)
    assert err.value.code == "cache_missing"


def test_warm_cache_notices_damage_after_a_good_answer(damaged_root: Path) -> None:
    """A warm reader that answered from a good cache reports a later damage, and answers
    again once the cache is rebuilt."""
    cache = damaged_root / KEY
    warm = WarmCaches()
    good = tools.resolve(cache, QUERY, 10_000, warm=warm)
    edited_raw_same_size(cache)
    with pytest.raises(ContextError) as err:
        tools.resolve(cache, QUERY, 10_000, warm=warm)
    assert err.value.code == "cache_invalid"
    truncate_manifest(cache)
    with pytest.raises(ContextError) as err:
        tools.resolve(cache, QUERY, 10_000, warm=warm)
    assert err.value.code == "cache_invalid"
    source = damaged_root.parent / "src2"
    write_tree(source, TREE)
    build(source, damaged_root, name="src")
    assert tools.resolve(cache, QUERY, 10_000, warm=warm) == good


# --------------------------------------------------------------------------- fuzzing


FILES = (MANIFEST_NAME, SEARCH_INDEX_NAME, "docs/retry.md")


def _mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply (kind, position, value) edits: 0 flip a byte, 1 delete, 2 insert, 3 truncate."""
    buf = bytearray(data)
    for kind, pos, value in edits:
        if not buf:
            break
        i = pos % len(buf)
        if kind == 0:
            buf[i] ^= value or 1
        elif kind == 1:
            del buf[i]
        elif kind == 2:
            buf.insert(i, value)
        else:
            del buf[i:]
    return bytes(buf)


edits_strategy = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 1 << 20), st.integers(0, 255)),
    min_size=1, max_size=4,
)


def _fuzz_damage(pristine: tuple[Path, Path], tmp_path: Path, examples: int) -> list[int]:
    root = tmp_path / "fuzz-root"
    cache = root / KEY
    tried = [0]
    good = pristine[1] / KEY
    truth = {}  # section version -> its text, as built
    for section in _man(good)["sections"]:
        raw = (good / section["file"]).read_bytes()
        start = section["byte_offset"]
        truth[section["version"]] = raw[start : start + section["byte_length"]].decode()

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(target=st.sampled_from(FILES), edits=edits_strategy,
           query=st.sampled_from([QUERY, "zebras", "setup config", "a"]))
    def run(target: str, edits: list[tuple[int, int, int]], query: str) -> None:
        tried[0] += 1
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(pristine[1], root, symlinks=True)
        path = cache / target
        path.write_bytes(_mutate(path.read_bytes(), edits))
        info = json.loads(tools.inspect_cache(cache))
        assert list(info) == ["cache_version", "document_count", "total_bytes", "valid"]
        for warm in (None, WarmCaches()):
            try:
                out = tools.resolve(cache, query, 10_000, warm=warm)
            except ContextError as exc:
                assert exc.code in ("cache_invalid", "invalid_query"), (exc.code, exc.detail)
            else:
                result = json.loads(out)
                # Whatever is served is bytes the build wrote, under their version.
                assert result["selection"]["documents_selected"] == len(result["documents"])
                for doc in result["documents"]:
                    assert truth.get(doc["version"]) == doc["content"]

    run()
    return tried


@pytest.mark.slow
def test_fuzz_damaged_bytes_short(pristine: tuple[Path, Path], tmp_path: Path) -> None:
    _fuzz_damage(pristine, tmp_path, examples=200)


@pytest.mark.slow
def test_fuzz_damaged_bytes_long(pristine: tuple[Path, Path], tmp_path: Path) -> None:
    tried = _fuzz_damage(pristine, tmp_path, examples=5000)
    print(f"damaged-cache mutations tried: {tried[0]}")


def test_damaged_cache_subprocess_never_tracebacks(damaged_root: Path) -> None:
    """``doc-index inspect`` and ``list`` on a root full of damaged caches."""
    base = damaged_root / KEY
    for n, (_, damage, _, _) in enumerate(DAMAGES):
        copy = damaged_root / f"local-d{n}"
        shutil.copytree(base, copy, symlinks=True)
        damage(copy)
    proc = run_cli("list", "--root", str(damaged_root), "--json")
    assert proc.returncode == 0 and proc.stderr == b""
    listed = json.loads(proc.stdout)["caches"]
    assert len(listed) == len(DAMAGES) + 1
    script = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from doc_index.server import spec_texts as tools\n"
        "from doc_index.foundation.errors import ContextError\n"
        "root = Path(sys.argv[1])\n"
        "for d in sorted(root.iterdir()):\n"
        "    if not d.is_dir():\n"
        "        continue\n"
        "    json.loads(tools.inspect_cache(d))\n"
        "    try:\n"
        "        tools.resolve(d, 'retry timeout', 1000)\n"
        "    except ContextError as exc:\n"
        "        assert exc.code in ('cache_invalid', 'cache_missing'), (d, exc.code, exc.detail)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(damaged_root)],
                          capture_output=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == 0 and proc.stdout == b"ok\n", proc.stderr.decode()[-2000:]


# --------------------------------------------------------------------------- hostile manifests
# A manifest read back by the readers and the build: invalid, never an internal error.


DOC = {"guide.md": "# Guide\n\nHow to retry a request after a timeout.\n"}


def test_a_manifest_header_nested_too_deeply_is_invalid_not_an_internal_error(
        env: Path) -> None:
    root = env / "root"
    docs = write_tree(env / "docs", DOC)
    assert run_cli("build", str(docs), "--root", str(root), "--name", "n").returncode == 0
    path = root / "n" / "manifest.json"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(path.read_text().replace("{", '{"deep":' + deep + ",", 1))
    done = run_cli("resolve", "n", "retry", "--budget", "500", "--root", str(root))
    assert done.returncode == 5, done.stderr  # cache_invalid
    assert done.stderr.decode().splitlines() == ["error: Cache exists but is invalid"]
    done = run_cli("resolve", "--cache", str(root / "n"), "--query", "retry",
                   "--budget", "500", module="doc_index.server.context_cli")
    assert done.returncode == 5, done.stderr
    # a build over it is a usage error (its source is unknown), not an internal error, and
    # with --replace a build
    done = run_cli("build", str(docs), "--root", str(root), "--name", "n")
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.decode().splitlines()) == 1
    assert b"no readable doc-index manifest" in done.stderr
    done = run_cli("build", str(docs), "--root", str(root), "--name", "n", "--replace")
    assert done.returncode == 0, done.stderr
    done = run_cli("resolve", "n", "retry", "--budget", "500", "--root", str(root))
    assert done.returncode == 0, done.stderr
