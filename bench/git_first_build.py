"""First build of a git URL against ``git clone --depth 1`` of the same ref (issue 20 item 8).

    python -m bench.git_first_build BARE_REPO [--doc-index CMD] [--runs N]

BARE_REPO is a bare repository on disk (e.g. the one ``fetch github:sphinx-doc/sphinx``
gives); it is copied to a scratch folder as ``<owner>/<name>.git`` with
``uploadpack.allowFilter`` set (as GitHub and GitLab have it) and served by a ``file://``
URL, which runs git's pack protocol as a network remote does (no hard links, no local
shortcuts). Each run starts from an empty clone area and an empty cache root, and the
median of ``--runs`` is printed for: ``git clone --depth 1 --bare``, ``git clone --depth 1``
(with a checkout) and ``doc-index build URL`` (``--doc-index``: the command to time, e.g.
an older installation's ``doc-index``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{shlex.join(command)} failed: {done.stderr.decode(errors='replace')}")
    return seconds


def _pack_bytes(git_dir: Path) -> int:
    return sum(p.stat().st_size for p in (git_dir / "objects" / "pack").glob("*.pack"))


def _packs(scratch: Path, url: str, doc_index: str, env: dict[str, str]) -> dict[str, int]:
    """Bytes of the packs each way fetched (what a network would carry)."""
    for leftover in ("bare", "root", "xdg"):
        shutil.rmtree(scratch / leftover, ignore_errors=True)
    _timed(["git", "clone", "-q", "--depth", "1", "--bare", url, str(scratch / "bare")], env)
    _timed([*shlex.split(doc_index), "build", url, "--root", str(scratch / "root")], env)
    [clone] = (scratch / "xdg" / "doc-index" / "clones").iterdir()
    return {"git clone --depth 1": _pack_bytes(scratch / "bare"),
            "doc-index build": _pack_bytes(clone)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--doc-index", default="doc-index", help="the doc-index command")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="doc-index-git-bench-"))
    try:
        served = scratch / "srv" / "owner" / "repo.git"
        shutil.copytree(args.repo, served, symlinks=True)
        subprocess.run(["git", "--git-dir", str(served), "config", "uploadpack.allowFilter",
                        "true"], check=True)
        url = served.as_uri()
        env = {**os.environ, "XDG_CACHE_HOME": str(scratch / "xdg")}
        results: dict[str, list[float]] = {}
        for run in range(args.runs):
            for label, command in (
                ("git clone --depth 1 --bare", ["git", "clone", "-q", "--depth", "1",
                                                "--bare", url, str(scratch / "bare")]),
                ("git clone --depth 1", ["git", "clone", "-q", "--depth", "1", url,
                                         str(scratch / "checkout")]),
                ("doc-index build", [*shlex.split(args.doc_index), "build", url, "--root",
                                     str(scratch / "root")]),
            ):
                for leftover in ("bare", "checkout", "root", "xdg"):
                    shutil.rmtree(scratch / leftover, ignore_errors=True)
                results.setdefault(label, []).append(_timed(command, env))
            print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s"
                                                 for k, v in results.items()), flush=True)
        base = statistics.median(results["git clone --depth 1"])
        fastest = min(results["git clone --depth 1"])
        for label, times in results.items():
            median = statistics.median(times)
            print(f"{label:28} median {median:6.2f} s ({median / base:.2f}x git clone "
                  f"--depth 1), fastest {min(times):6.2f} s ({min(times) / fastest:.2f}x)")
        print("pack bytes fetched: " + ", ".join(f"{k} {v}" for k, v in _packs(
            scratch, url, args.doc_index, env).items()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
