"""The wheel installs under one import package and both commands run from a fresh venv."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from conftest import REPO


def test_wheel_installs_into_fresh_venv(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(wheels), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = wheels.glob("doc_index-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names}
    assert "doc_index" in top_level
    assert not top_level & {"server", "store", "indexer", "tests", "bench"}
    assert "doc_index/indexer/document.py" in names
    assert "doc_index/search/native_selection.py" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # Dependencies come from PyPI (pip's cache makes this quick after the first run).
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    for command in ("doc-index", "context"):
        out = subprocess.run([str(env_dir / "bin" / command), "--help"], capture_output=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        assert b"usage:" in out.stdout
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(py), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()
    installed = {p.name for p in Path(site).iterdir()}
    assert "doc_index" in installed
    assert not installed & {"server", "store", "indexer"}
