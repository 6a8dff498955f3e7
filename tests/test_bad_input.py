"""Bad source input: the build finishes in bounded time and memory, indexes the good files,
reports the skipped ones with a reason, and never reads outside the source tree.

The big build runs in a real process under an audit hook that logs every ``open`` and
directory listing, and under ``wait4`` for its peak RSS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, build, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doc_index.indexer.document import NotIndexable, index_file
from doc_index.indexer.versions import MAX_SECTIONS_PER_FILE
from doc_index.server import spec_texts as tools
from doc_index.sources.walk import scan_directory
from doc_index.store.native_cache import load_native_cache
from doc_index.store.parallel import parse_one

KEY = "local-src"
SECRET = "SECRET-OUTSIDE-7f3a9c"
MB = 1024 * 1024

# A build under an audit hook: every opened path and listed directory goes to a log.
# Runs argv[2:] and writes its exit status, CPU seconds and peak RSS (KiB) to argv[1].
_MEASURED = r"""
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime} {usage.ru_stime} "
             f"{usage.ru_maxrss}")
"""

_AUDITED = r"""
import os, sys
log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
def hook(event, args):
    if event in ("open", "os.listdir", "os.scandir") and args and args[0] is not None:
        path = args[0]
        if isinstance(path, int) or not os.path.isabs(path):
            return  # a handle, or a name opened below a directory handle (the walk)
        os.write(log, os.fsencode(path).replace(b"\\", b"\\\\").replace(b"\n", b"\\n")
                 + b"\n")
sys.addaudithook(hook)
from doc_index.cli.command import main
sys.exit(main(sys.argv[2:]))
"""


def bad_tree(source: Path, outside: Path) -> dict[str, str]:
    """Write the hostile source tree; returns {path: expected skip reason (prefix)}."""
    write_tree(outside, {"secret.md": f"# Secret\n\n{SECRET}\n", "sub/more.md": f"{SECRET}\n"})
    write_tree(source, {
        "good.md": "# Good\n\nThe zebra retry text, more than a one-line stub.\n",
        "with space.md": "# Space\n\nzebra spaced name\n",
        "new\nline.md": "# Newline\n\nzebra newline name\n",
        "héllo wörld.md": "# Unicode name\n\nzebra unicode\n",
        "binary.md": bytes(range(256)) * 40,
        "badutf8.md": b"# T\n\n\xff\xfe bad \xc3\x28\n",
        "utf16.md": "\ufeff# Title\n\nutf16 text\n".encode("utf-16-le"),
        "utf16be.md": "# Title\n\nutf16 text\n".encode("utf-16"),
        "nul.md": b"# T\n\nbefore\x00after\n",
        "bom.md": b"\xef\xbb\xbf# Bom\r\n\r\nzebra with bom\r\n",
        "headings.md": "".join(f"# Heading {i}\n\nbody {i}\n\n" for i in range(20_000)),
        "deep/quote.md": "> " * 5000 + "deep\n\n# After quote\n\nzebra\n",
        "deep/quote-lines.md": "".join(">" * i + " q\n" for i in range(1, 1500)),
        "deep/list.md": "- " * 5000 + "x\n\n# After list\n\nzebra\n",
        "deep/list-lines.md": "".join("  " * i + "- item\n" for i in range(1000)),
        "deep/html.md": "<div>" * 5000 + "\n\n# After html\n",
        "deep/link.md": "# " + "[" * 5000 + "x" + "](y)" * 5000 + "\n",
        "deep/list.rst": "Title\n=====\n\n" + "- " * 5000 + "x\n",
        "deep/enum.rst": "Title\n=====\n\n" + "1. " * 3000 + "x\n",
        "deep/quote.rst": "Title\n=====\n\n" + "".join(" " * i + "para\n\n" for i in range(1200)),
        "fence.md": "# Fenced\n\n```python\n# not a heading\n\n## nor this\n",
        "tilde.md": "~~~\n# inside\n",
        "table.rst": (
            "Tables\n======\n\n+---+---+\n| a | b\n+---+\n| c |   |\n+===+=+\n\n"
            ".. unknown-directive:: x\n   :opt: y\n\n   body\n\n:unknownrole:`x` text\n\n"
            ".. list-table::\n   * - a\n     - b\n   * - c\n\n=====  =====\na      b\n=====\n\n"
            ".. include:: /etc/passwd\n\n.. raw:: html\n   :file: /etc/passwd\n\n"
            "Next\n----\n\nzebra after the broken table\n"
        ),
        "bad-title.rst": "=====\nTitle\n===\n\n====\n\nText\n--\n\nzebra\n",
        "manifest.json/a.md": "# Reserved\n\nname\n",
        "search.idx/b.md": "# Reserved\n\nname\n",
    })
    os.symlink(source / "loop.md", source / "loop.md")
    os.symlink("loopdir", source / "loopdir")
    os.symlink(".", source / "self")
    os.symlink(outside / "secret.md", source / "leak.md")
    os.symlink("../outside/secret.md", source / "leak-relative.md")
    os.symlink(outside, source / "leakdir")
    os.symlink("/dev/zero", source / "zero.md")
    os.symlink("good.md", source / "alias.md")
    os.mkfifo(source / "fifo.md")
    bad_name = os.fsencode(source) + b"/bad\xffname.md"
    with open(bad_name, "wb") as fh:
        fh.write(b"# X\n\ny\n")
    return {
        "binary.md": "binary",
        "badutf8.md": "not UTF-8",
        "utf16.md": "UTF-16",
        "utf16be.md": "UTF-16",
        "nul.md": "binary",
        "leak.md": "symlink leaves the source tree",
        "leak-relative.md": "symlink leaves the source tree",
        "leakdir": "symlinked directory not followed",
        "zero.md": "symlink leaves the source tree",
        "self": "symlinked directory not followed",
        "fifo.md": "not a regular file",
        "loop.md": "unreadable",
        "bad?name.md": "file name is not UTF-8",
        "'new\\nline.md'": "control character in file name",
        "manifest.json/a.md": "name reserved by the cache",
        "search.idx/b.md": "name reserved by the cache",
    }


GOOD = ["good.md", "with space.md", "héllo wörld.md", "bom.md", "alias.md",
        "headings.md", "deep/quote.md", "deep/quote-lines.md", "deep/list.md",
        "deep/list-lines.md", "deep/html.md", "deep/link.md",
        # nested RST bodies are not parsed (indexer.rst_structure): deep ones index too
        "deep/list.rst", "deep/enum.rst", "deep/quote.rst",
        "fence.md", "tilde.md", "table.rst", "bad-title.rst"]


def _skipped(stderr: str) -> dict[str, str]:
    """``skipped PATH: reason`` lines of the summary (a newline in a name is \\n-escaped
    in the report by the caller's comparison)."""
    out = {}
    for line in stderr.split("\n  skipped ")[1:]:
        path, _, reason = line.partition(": ")
        out[path] = reason.split("\n")[0]
    return out


def _run_audited(tmp_path: Path, argv: list[str]) -> tuple[subprocess.CompletedProcess[bytes],
                                                          list[str], float, float]:
    """Run ``doc-index ARGV`` under the audit hook: (process, opened paths, CPU seconds, peak
    MB). CPU time, not wall-clock time: a busy machine does not stretch it."""
    log = tmp_path / "audit.log"
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    usage_path = tmp_path / "usage"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        # Started by a small fresh process: a child's peak RSS counts the memory of the
        # process it was forked (vforked) from, here a pytest worker that may hold a GiB.
        proc = subprocess.Popen([sys.executable, "-c", _MEASURED, str(usage_path),
                                 sys.executable, "-c", _AUDITED, str(log), *argv],
                                stdout=out, stderr=err, cwd=tmp_path)
    proc.wait()
    status, user, system, maxrss = usage_path.read_text().split()
    proc.returncode = int(status)
    seconds = float(user) + float(system)
    opened = [line.decode("utf-8", "surrogateescape").replace("\\n", "\n")
              for line in log.read_bytes().splitlines()]
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out_path.read_bytes(),
                                       err_path.read_bytes())
    return done, opened, seconds, int(maxrss) / 1024


def _allowed_prefixes(*dirs: Path) -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(REPO), "/dev/null",
             "/proc/self", "/etc/localtime", "/usr/lib", "/usr/share/zoneinfo",
             "/dev/urandom", "/sys/devices/system/cpu", *(str(d) for d in dirs)}
    return [os.path.realpath(p) for p in paths]


def test_hostile_sources_build(tmp_path: Path) -> None:
    source = tmp_path / "src"
    outside = tmp_path / "outside"
    expected_skips = bad_tree(source, outside)
    root = tmp_path / "root"
    proc, opened, seconds, peak_mb = _run_audited(
        tmp_path, ["build", str(source), "--root", str(root), "--name", KEY])
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert seconds < 120, seconds
    assert peak_mb < 800, peak_mb
    reasons = _skipped(err)
    assert len(reasons) < 20 and f"{len(reasons)} skipped" in err  # all listed
    for path, reason in expected_skips.items():
        assert path in reasons, (path, sorted(reasons))
        assert reasons[path].startswith(reason), (path, reasons[path])
    man = json.loads((root / KEY / "manifest.json").read_bytes())
    assert sorted(man["doc_files"]) == sorted(GOOD)
    assert set(man["doc_files"]).isdisjoint(reasons)
    # Never a byte from outside the source tree, never opened, never listed.
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    allowed = _allowed_prefixes(source, root, tmp_path / "audit.log")
    outside_real = os.path.realpath(outside)
    for path in opened:
        real = os.path.realpath(os.path.join(tmp_path, path))
        assert not real.startswith(outside_real), f"opened outside the tree: {path!r}"
        assert real in ("/", tmp_path.as_posix()) or any(
            real == p or real.startswith(p + os.sep) for p in allowed
        ), f"unexpected open: {path!r}"
    # The cache is valid and answers; fenced "headings" are not sections.
    cache = load_native_cache(root / KEY)
    try:
        titles = {s["title"] for s in cache.sections}
        for i in range(len(cache.sections)):
            cache.section_text(i)
    finally:
        cache.close()
    assert "nor this" not in titles and "not a heading" not in titles
    # 20,000 headings: the first MAX_SECTIONS_PER_FILE are sections, the rest is in parts.
    assert {"Next", "Tables", f"Heading {MAX_SECTIONS_PER_FILE - 1}", "After quote"} <= titles
    assert sum(1 for t in titles if t.startswith("Heading ")) == MAX_SECTIONS_PER_FILE
    assert f"note headings.md: more than {MAX_SECTIONS_PER_FILE} sections" in err
    result = json.loads(tools.resolve(root / KEY, "zebra", 100_000))
    files = {d["id"].split("#")[0] for d in result["documents"]}
    assert SECRET not in json.dumps(result)
    assert result["documents"] and files
    # Rebuilding the same tree: up to date, same skipped files.
    again = build(source, root, name="src")
    assert not again.written
    assert {p: r for p, r in again.skipped if "\n" not in p} == {
        p: r for p, r in reasons.items() if "\\n" not in p}


def test_size_cap(tmp_path: Path) -> None:
    source = tmp_path / "src"
    line = "zebra words about the size cap and nothing else at all\n"
    write_tree(source, {
        "huge.md": "# Huge\n\n" + line * (30 * MB // len(line)),
        "over.md": "# Over\n\n" + line * ((MB + MB // 2) // len(line)),
        "under.md": "# Under\n\n" + line * (900 * 1024 // len(line)),
    })
    scan = scan_directory(source)
    assert [f.path for f in scan.files] == ["over.md", "under.md"]
    assert dict(scan.skipped)["huge.md"].startswith("over the size cap")
    scan = scan_directory(source, max_bytes=MB)
    assert [f.path for f in scan.files] == ["under.md"]
    assert sorted(p for p, _ in scan.skipped) == ["huge.md", "over.md"]
    proc = subprocess.run([sys.executable, "-m", "doc_index.cli", "build", str(source),
                           "--root", str(tmp_path / "root"), "--max-file-bytes", str(MB)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"skipped huge.md: over the size cap" in proc.stderr
    assert b"skipped over.md: over the size cap" in proc.stderr


@pytest.mark.slow
def test_30_mb_file_with_a_raised_cap(tmp_path: Path) -> None:
    source = tmp_path / "src"
    para = ("The retry policy controls how a client backs off after a timeout; see "
            "`retry_after` and the examples below.\n") * 20
    parts, size, i = [], 0, 0
    while size < 30 * MB:
        chunk = f"## Section {i}\n\n{para}\n"
        parts.append(chunk)
        size += len(chunk)
        i += 1
    write_tree(source, {"big.md": "".join(parts), "small.md": "# Small\n\nzebra\n"})
    proc, _, seconds, peak_mb = _run_audited(
        tmp_path, ["build", str(source), "--root", str(tmp_path / "root"),
                   "--max-file-bytes", str(40 * MB), "--name", KEY])
    assert proc.returncode == 0, proc.stderr
    print(f"30 MB file: {seconds:.1f} s CPU, peak RSS {peak_mb:.0f} MB")
    assert seconds < 300 and peak_mb < 2000
    man = json.loads((tmp_path / "root" / KEY / "manifest.json").read_bytes())
    # big.md's text past the per-file cap is cut into parts (merged into the last kept
    # section, it made one section too big for any budget)
    assert man["doc_files"] == ["big.md", "small.md"]
    assert i > MAX_SECTIONS_PER_FILE and man["document_count"] > MAX_SECTIONS_PER_FILE + 1
    assert max(s["tokens"] for s in man["sections"]) < 5000


# --------------------------------------------------------------------------- fuzzing


MD_ALPHABET = st.sampled_from(list("#>-*+_`~=[](){}<>!|:.\\ \t\n1aZé\u00a0\u2028\r\x0b\x0c")
                              + ["```", "~~~", "---\n", "<div>", "<!--", "-->", "# ",
                                 "\n\n", "    ", "1. ", "- ", "> ", "[x]: /u\n", "&amp;",
                                 "<script>", "\ud7ff", "\U0001f600", "\u0301", "ǅ"])
RST_ALPHABET = st.sampled_from(list("=-~^\"'`*_:.|+\\ \t\n1aZé\r") + [
    "=====\n", "-----\n", ".. ", ":: ", ".. code-block:: python\n", ".. toctree::\n",
    ".. include:: x\n", ".. raw:: html\n", ":ref:`x`", "`a <b>`_", "+--+--+\n", "| a | b |\n",
    "+==+==+\n", "   ", "\n\n", "Title\n", ".. |sub| image:: x\n", "|sub|", "[#]_", ".. [#] n\n",
    ":field: v\n", "* ", "#. ", "::\n\n", ">>> ", ".. _t:\n"])


def _check_parse(path: str, data: bytes, staging: Path) -> None:
    try:
        parsed = index_file(path, data)
    except NotIndexable:
        return
    except RecursionError:
        return
    raw = parsed.raw
    raw.decode("utf-8")
    assert b"\r" not in raw
    end = 0
    for section in parsed.sections:
        assert section.byte_offset == end or section.kind == "part" or section is \
            parsed.sections[0]
        chunk = raw[section.byte_offset: section.byte_offset + section.byte_length]
        assert len(chunk) == section.byte_length > 0
        chunk.decode("utf-8")
        assert isinstance(section.title, str) and section.tokens >= 0
        end = section.byte_offset + section.byte_length
    assert end <= len(raw)
    # The store's wrapper never raises for a file: a result or a skip reason.
    staged = parse_one(path, data, str(staging))
    assert isinstance(staged, str) or staged.path == path


def _fuzz_parse(examples: int, staging: Path) -> int:
    tried = [0]

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(kind=st.sampled_from(["a.md", "b.rst", "c.mdx"]), data=st.data())
    def run(kind: str, data: st.DataObject) -> None:
        tried[0] += 1
        alphabet = RST_ALPHABET if kind.endswith(".rst") else MD_ALPHABET
        pieces = data.draw(st.lists(alphabet, max_size=200))
        text = "".join(pieces)
        raw = text.encode("utf-8", "surrogatepass")
        if data.draw(st.booleans()):
            raw = data.draw(st.binary(max_size=64)) + raw
        _check_parse(kind, raw, staging)

    run()
    return tried[0]


@pytest.mark.slow
def test_fuzz_parsers_short(tmp_path: Path) -> None:
    _fuzz_parse(300, tmp_path)


@pytest.mark.slow
def test_fuzz_parsers_long(tmp_path: Path) -> None:
    tried = _fuzz_parse(20_000, tmp_path)
    print(f"parser inputs tried: {tried}")


def test_a_file_swapped_after_the_scan_is_not_followed_out(tmp_path: Path) -> None:
    """Between the scan and the parse, a file becomes a symlink to a file outside the tree
    and another grows past the size cap: neither is read."""
    source = write_tree(tmp_path / "src", {"a.md": "# A\n\nzebra\n", "b.md": "# B\n\nzebra\n",
                                           "c.md": "# C\n\nzebra\n"})
    outside = write_tree(tmp_path / "outside", {"secret.md": f"# S\n\n{SECRET}\n"})
    scan = scan_directory(source, max_bytes=MB)
    (source / "a.md").unlink()
    os.symlink(outside / "secret.md", source / "a.md")
    (source / "b.md").write_text("# B\n\n" + "zebra grows " * (MB // 6))
    from doc_index.store.index_store import IndexStore

    root = tmp_path / "root"
    report = IndexStore(root).update_index(KEY, "local", "src", scan)
    for path in (root / KEY).rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    reasons = dict(report.skipped)
    assert set(reasons) == {"a.md", "b.md"}, reasons
    assert json.loads((root / KEY / "manifest.json").read_bytes())["doc_files"] == ["c.md"]
