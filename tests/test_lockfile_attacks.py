"""Hostile lockfiles: every attack ends in bounded time and memory with a clear one-line
warning or refusal, never a traceback, and nothing is read outside the project.

Each case runs a real ``doc-index sync PROJECT --dry-run`` (reading the lockfiles is all
a dry run does: no index is asked) under a launcher that measures its CPU seconds and
peak RSS; the limits are generous (60 s, 1 GiB, far above a healthy run), not wall clock.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_support import measured_cli
from conftest import write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from package_servers import NpmRegistry, SimpleIndex

MB = 1 << 20
SECRET = "flask==0.0.1-SECRET"


def sync_plan(project: Path, root: Path) -> tuple[int, str]:
    """``doc-index sync PROJECT --dry-run``, measured: (exit code, stderr + stdout)."""
    done = measured_cli("sync", str(project), "--dry-run", "--root", str(root))
    out = (done.stderr + done.stdout).decode("utf-8", "replace")
    print(out[-3000:], f"\n{done.cpu_seconds:.1f} s CPU, peak {done.peak_mb:.0f} MB")
    assert "Traceback" not in out, out
    assert done.cpu_seconds < 60 and done.peak_mb < 1024, (done.cpu_seconds, done.peak_mb)
    return done.returncode, out


def test_a_fifo_a_device_and_links_out_are_refused_not_read(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "project", {"requirements.txt": "httpx==0.28.1\n"})
    outside = write_tree(tmp_path / "outside", {"uv.lock": (
        'version = 1\n[[package]]\nname = "leaked"\nversion = "1.0.0"\n'
        'source = { registry = "https://pypi.org/simple" }\n'),
        "reqs.txt": f"{SECRET}\n"})
    os.mkfifo(project / "poetry.lock")  # opened blocking, a FIFO waits for a writer
    os.symlink(outside / "uv.lock", project / "uv.lock")
    os.symlink("/dev/zero", project / "package-lock.json")
    os.symlink(outside / "reqs.txt", project / "requirements-dev.txt")
    code, out = sync_plan(project, tmp_path / "root")
    assert code == 0, out
    assert "poetry.lock: not a regular file, not read" in out
    assert "uv.lock: a link out of the project, not read" in out
    assert "package-lock.json: a link out of the project, not read" in out
    assert "requirements-dev.txt: outside the project, not read" in out
    assert "leaked" not in out and "SECRET" not in out
    assert "httpx@0.28.1" in out


def test_only_refused_lockfiles_say_why(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    os.mkfifo(project / "uv.lock")
    code, out = sync_plan(project, tmp_path / "root")
    assert code == 1, out
    assert out.count("\n") == 1 and out.startswith("error: sync: no lockfile read in "), out
    assert "uv.lock: not a regular file, not read" in out


def test_requirement_includes_loop_and_leave_the_project(tmp_path: Path) -> None:
    write_tree(tmp_path, {"outside.txt/x.txt": f"{SECRET}\n"})
    project = write_tree(tmp_path / "project", {
        "requirements.txt": "-r requirements.txt\n-r loop/a.txt\n-r ../outside.txt/x.txt\n"
                            "-c /etc/passwd\n-r ../../../../../../etc/hostname\n"
                            "flask==3.1.0\n",
        "loop/a.txt": "-r ../requirements.txt\n-r b.txt\nclick==8.1.7\n",
        "loop/b.txt": "-r a.txt\n",
    })
    os.mkfifo(project / "loop" / "fifo.txt")
    (project / "loop" / "b.txt").write_text("-r a.txt\n-r fifo.txt\n")
    code, out = sync_plan(project, tmp_path / "root")
    assert code == 0, out
    assert f"{tmp_path}/outside.txt/x.txt: outside the project, not read" in out
    assert "warning: /etc/passwd: outside the project, not read" in out
    assert "warning: /etc/hostname: outside the project, not read" in out
    assert "SECRET" not in out
    assert "loop/fifo.txt: not a regular file, not read" in out
    assert "flask@3.1.0" in out and "click@8.1.7" in out


@pytest.mark.parametrize(("name", "text"), [
    # the lockfileVersion is a list an alias bomb makes 10^9 strings of, when printed
    ("pnpm-lock.yaml", "a: &a ['x','x','x','x','x','x','x','x','x','x']\n"
                       + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                                 for p, c in zip("abcdefgh", "bcdefghi"))
                       + "lockfileVersion: *i\npackages: {}\n"),
    ("yarn.lock", "__metadata:\n  version: 8\n"
                  "a: &a ['x','x','x','x','x','x','x','x','x','x']\n"
                  + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                            for p, c in zip("abcdefgh", "bcdefghi"))
                  + '"left-pad@npm:1.0.0":\n  resolution: *i\n  dependencies: *i\n'),
])
def test_yaml_alias_bombs_stay_shared(tmp_path: Path, name: str, text: str) -> None:
    project = write_tree(tmp_path / "project", {name: text, "package.json": "{}"})
    code, out = sync_plan(project, tmp_path / "root")
    assert code == 0, out


@pytest.mark.parametrize(("name", "text", "said"), [
    ("uv.lock", "a = [" + "{}," * (20 * MB) + "]\n", "uv.lock: over 16777216 bytes"),
    ("uv.lock", "a = [" + "{}," * (5 * MB) + "]\n", "uv.lock: more than 2000000 values"),
    ("pnpm-lock.yaml", "- {}\n" * (3 * MB), "pnpm-lock.yaml: more than 2000000 values"),
    ("requirements.txt", "ab\n" * (20 * MB), "requirements.txt: over 16777216 bytes"),
    ("requirements.txt", "ab==1\n" * 30_000, "more than 20000 requirement lines"),
    ("package-lock.json", "[" + "{}," * (20 * MB) + "{}]",
     "package-lock.json: more than 4000000 values, not parsed"),
    ("Pipfile.lock", "[" * 200_000, "Pipfile.lock: does not parse"),
    ("poetry.lock", "a = " + "[" * 200_000, "poetry.lock: does not parse"),
    ("pnpm-lock.yaml", "a: " + "[" * 200_000, "pnpm-lock.yaml: does not parse"),
])
def test_huge_and_deep_files_are_refused_in_bounds(tmp_path: Path, name: str, text: str,
                                                   said: str) -> None:
    project = write_tree(tmp_path / "project", {name: text, "requirements-x.txt": "a==1\n"})
    code, out = sync_plan(project, tmp_path / "root")
    assert code == 0 and said in out, out


def test_many_bad_lines_give_a_bounded_list_of_warnings(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "project", {
        "requirements.txt": "".join(f"pkg{i}>=1\n" for i in range(5000)) + "a==1\n",
        "requirements-long.txt": "-e " + "x" * 100_000 + "\n",
    })
    code, out = sync_plan(project, tmp_path / "root")
    assert code == 0, out
    assert "... and 4901 more warnings" in out
    assert max(len(line) for line in out.splitlines()) < 400


HOSTILE_NAMES = ["../../evil", "a/b/../../../x", "x\x1b[31mred", "new\nline", "/abs", "..",
                 "@scope/../../x", "a" * 300, "ok-name"]


def test_hostile_package_names_never_become_paths(tmp_path: Path) -> None:
    """Names holding ``/``, ``..`` or control characters, from uv.lock and package-lock:
    a real sync (against empty indexes on 127.0.0.1) refuses or fails each one on its
    own line, escaped, and writes nothing but the root's own files."""
    uv_packages = "".join(
        f"[[package]]\nname = {json.dumps(name)}\nversion = \"1.0.0\"\n"
        "source = { registry = \"https://pypi.org/simple\" }\n" for name in HOSTILE_NAMES)
    lock = {"packages": {"": {"dependencies": {n: "1.0.0" for n in HOSTILE_NAMES}},
                         **{f"node_modules/{n}": {"version": "1.0.0",
                                                  "resolved": f"https://r/{n}/-/x-1.0.0.tgz"}
                            for n in HOSTILE_NAMES}}}
    project = write_tree(tmp_path / "project", {
        "uv.lock": "version = 1\n" + uv_packages, "package-lock.json": json.dumps(lock)})
    root = tmp_path / "root"
    with SimpleIndex() as index, NpmRegistry() as registry:
        env = {"PIP_INDEX_URL": index.index_url, "PIP_CONFIG_FILE": os.devnull,
               "UV_NO_CONFIG": "1", "UV_DEFAULT_INDEX": index.index_url,
               "NPM_CONFIG_REGISTRY": registry.url + "/", "NPM_CONFIG_USERCONFIG": os.devnull,
               "HOME": str(tmp_path), "http_proxy": "http://127.0.0.1:9",
               "https_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.1"}
        done = measured_cli("sync", str(project), "--all-locked", "--root", str(root),
                            env=env)
    out = (done.stderr + done.stdout).decode("utf-8", "replace")
    print(out)
    assert "Traceback" not in out and "\x1b" not in out, out
    assert done.returncode != 0 and "failed: " in out
    for line in out.splitlines():
        assert line.isprintable(), line
    listed = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert all(p.startswith(("project", "root", ".")) for p in listed), listed
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == [], out


# --------------------------------------------------------------------------- fuzzing

_PIECES = ["[[package]]\n", 'name = "', '"\n', 'version = "1.0.0"\n', "source = {",
           'registry = "https://x/simple"', "}", "[", "]", "{", "=", "\n", "-r ", "-c ",
           "a.txt", "../", "==", "--hash=sha256:", "&a ", "*a", ": ", "- ", "  ", "'", '"',
           "lockfileVersion: '9.0'\n", "packages:\n", "importers:\n", "resolution: ",
           "__metadata:\n", "\x00", "\x1b", "\ud800", "é", "#", "\\\n", "npm:", "@"]


def _fuzz_lockfiles(examples: int, tmp_path: Path) -> None:
    from doc_index.sources.lockfiles import read_project_pins

    counter = [0]

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(name=st.sampled_from(["uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock",
                                 "pylock.toml", "requirements.txt", "package-lock.json",
                                 "pnpm-lock.yaml", "yarn.lock", "pyproject.toml",
                                 "package.json", "Pipfile"]),
           pieces=st.lists(st.sampled_from(_PIECES), max_size=120))
    def run(name: str, pieces: list[str]) -> None:
        counter[0] += 1
        project = tmp_path / f"p{counter[0]}"
        project.mkdir()
        (project / name).write_bytes("".join(pieces).encode("utf-8", "surrogatepass"))
        (project / "a.txt").write_text("-r requirements.txt\nb==1\n")
        pins = read_project_pins(project, all_locked=True)
        for pin in pins.pins:
            assert isinstance(pin.name, str) and isinstance(pin.version, str)
        assert len(pins.warnings) <= 101

    run()


def test_fuzz_lockfiles_short(tmp_path: Path) -> None:
    _fuzz_lockfiles(150, tmp_path)


@pytest.mark.slow
def test_fuzz_lockfiles_long(tmp_path: Path) -> None:
    _fuzz_lockfiles(5000, tmp_path)
