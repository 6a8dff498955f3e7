"""``doc-index model fetch`` (``embedding.fetch``): only the pinned bytes are ever kept.

A real HTTP server on 127.0.0.1 serves small fake files; the download runs in-process and
as a real subprocess (killed mid-download too)."""

from __future__ import annotations

import hashlib
import http.server
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, wait_for

from doc_index.embedding import fetch
from doc_index.foundation.errors import ModelError

GOOD = b"not really a model, but the pinned bytes of this test\n" * 1000
GOOD_SHA = hashlib.sha256(GOOD).hexdigest()


class Server:
    """Paths -> behaviour: 'good', 'bad' (other bytes), 'short' (announces more than it
    sends), 'long' (more than the pinned size), 'stall' (half, then waits), 404 else."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                server.hits.append(self.path)
                kind = self.path.strip("/")
                body = {"good": GOOD, "bad": GOOD[:-1] + b"?", "short": GOOD,
                        "long": GOOD + b"more", "stall": GOOD}.get(kind)
                if body is None:
                    self.send_error(404, "no such file")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if kind == "short":
                    self.wfile.write(body[:len(body) // 2])
                    self.close_connection = True
                    return
                if kind == "stall":
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    server.release.wait(SAFETY_TIMEOUT)
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def get(server: Server, dest: Path, kind: str) -> tuple[Path, bool]:
    return fetch.fetch(dest, f"{server.url}/{kind}", GOOD_SHA, len(GOOD))


def test_the_pinned_bytes_are_kept_under_the_model_name(server: Server, tmp_path: Path) -> None:
    path, downloaded = get(server, tmp_path / "models", "good")
    assert downloaded and path == tmp_path / "models" / fetch.FILE_NAME
    assert path.read_bytes() == GOOD
    assert sorted(p.name for p in path.parent.iterdir()) == [fetch.FILE_NAME]


def test_a_file_already_there_is_not_downloaded_again(server: Server, tmp_path: Path) -> None:
    get(server, tmp_path, "good")
    path, downloaded = get(server, tmp_path, "good")
    assert not downloaded and path.read_bytes() == GOOD
    assert server.hits == ["/good"]


@pytest.mark.parametrize("kind, says", [
    ("bad", "is not the pinned model"),
    ("short", "stopped at 27000 of 54000 bytes"),
    ("long", "larger than the pinned model"),
    ("missing", "HTTP 404"),
])
def test_anything_but_the_pinned_bytes_leaves_nothing(server: Server, tmp_path: Path,
                                                      kind: str, says: str) -> None:
    dest = tmp_path / "models"
    with pytest.raises(ModelError, match=says):
        get(server, dest, kind)
    assert list(dest.iterdir()) == []


def test_a_file_it_did_not_make_is_never_overwritten(server: Server, tmp_path: Path) -> None:
    mine = tmp_path / fetch.FILE_NAME
    mine.write_bytes(b"the user's own file")
    with pytest.raises(ModelError, match="move it away"):
        get(server, tmp_path, "good")
    assert mine.read_bytes() == b"the user's own file"
    assert server.hits == []


def test_only_http_urls(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="only http"):
        fetch.fetch(tmp_path, "file:///etc/passwd", GOOD_SHA, len(GOOD))


# ``python -m doc_index.embedding.fetch`` with Python's own SIGINT handler: Python installs
# it only where SIGINT is not ignored, and a shell ignores SIGINT in what it starts in the
# background (``nohup make test &``), where the interrupt test would see a timeout instead.
_FETCH_WITH_SIGINT = (
    "import runpy, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "sys.argv[0] = 'doc_index.embedding.fetch'\n"
    "runpy.run_module('doc_index.embedding.fetch', run_name='__main__', alter_sys=True)\n"
)


def run_fetch(server: Server, dest: Path, kind: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return subprocess.Popen(
        [sys.executable, "-c", _FETCH_WITH_SIGINT, "--dest", str(dest),
         "--url", f"{server.url}/{kind}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def test_the_command_refuses_a_wrong_file_in_one_line(server: Server, tmp_path: Path) -> None:
    proc = run_fetch(server, tmp_path, "good")  # not the real model's sha256
    out, err = proc.communicate(timeout=SAFETY_TIMEOUT)
    assert proc.returncode == 1
    lines = err.decode().strip().splitlines()
    assert lines[-1].startswith("error: the download of ") and "not kept" in lines[-1]
    assert "Traceback" not in err.decode()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_a_killed_download_leaves_no_model_file(server: Server, tmp_path: Path,
                                                how: signal.Signals) -> None:
    proc = run_fetch(server, tmp_path, "stall")
    wait_for(lambda: any(p.stat().st_size for p in tmp_path.glob(".*.part")),
             "a partial download")
    proc.send_signal(how)
    proc.communicate(timeout=SAFETY_TIMEOUT)
    assert not (tmp_path / fetch.FILE_NAME).exists()
    if how == signal.SIGINT:  # cleaned up; a SIGKILL leaves only a hidden temporary file
        assert list(tmp_path.iterdir()) == []
        assert proc.returncode == 130
