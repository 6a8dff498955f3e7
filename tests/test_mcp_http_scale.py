"""One read-only root, several ``serve --http`` replicas, caches rebuilt under them.

A CI job builds the root; servers only read it (docs/deployment.md). Replicas answer any
request (stateless HTTP, no sticky sessions), write nothing to a root they cannot write,
and a cache rebuilt while it is being read is answered from the old generation or the
new one, never a mix of the two.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from conftest import SAFETY_TIMEOUT, run_cli, unprivileged_prefix, write_tree
from http_support import HttpServer, RoundRobin, only_text, sdk_session
from mcp_support import context_cli
from test_mcp_http import TOKEN, check_tools, token_file

REPO = Path(__file__).resolve().parents[1]


def tree_state(top: Path) -> list[tuple[str, int, int, int]]:
    """Every entry under ``top``: path, mode, size, mtime (a write changes one of them)."""
    out = []
    for path in sorted([top, *top.rglob("*")]):
        st = path.lstat()
        out.append((path.relative_to(top).as_posix(), st.st_mode, st.st_size, st.st_mtime_ns))
    return out


@pytest.fixture
def read_only_root(tmp_path: Path) -> Iterator[Path]:
    """A root holding the mdkit cache, every folder 0555 and file 0444 (as a read-only
    mount is to the servers, which run without root's permission bypass)."""
    root = tmp_path / "root"
    done = run_cli("build", str(REPO / "sample_repos" / "mdkit-docs"), "--name", "mdkit",
                   "--root", str(root))
    assert done.returncode == 0, done.stderr
    paths = sorted([root, *root.rglob("*")], key=lambda p: -len(p.parts))
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    yield root
    for path in reversed(paths):
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_replicas_on_a_read_only_root(read_only_root: Path, tmp_path: Path) -> None:
    """Two replicas on a root they cannot write, and a client whose every HTTP request goes
    to the other one: each answers whatever it is sent, the CLI's bytes, and the root is
    left as it was (no lock, no temporary file)."""
    root = read_only_root
    before = tree_state(root)
    path = token_file(tmp_path, TOKEN)
    prefix = unprivileged_prefix()
    with HttpServer(root, "--token-file", str(path), prefix=prefix) as a, \
            HttpServer(root, "--token-file", str(path), prefix=prefix) as b:
        ports = [int(s.url.split(":")[2].split("/")[0]) for s in (a, b)]
        balancer = RoundRobin(ports)

        async def main() -> None:
            async with sdk_session(a.url, TOKEN, transport=balancer) as session:
                await check_tools(session, root, ["context.resolve", "context.list_caches",
                                                  "context.inspect_cache"])

        anyio.run(main)
        assert min(balancer.sent.values()) >= 5, balancer.sent
        assert a.stop() == 0 and b.stop() == 0
    assert a.said_only_its_start() and b.said_only_its_start(), (a.err_lines, b.err_lines)
    assert tree_state(root) == before


def generation(g: str) -> dict[str, str]:
    """The docs at generation ``g``: two files change, one does not (a rebuild moves it
    from the previous generation). ``steps.md`` has many sections that all match "retry",
    so one answer reads many of them: a long window for a rebuild to land in."""
    steps = "".join(f"## Step {n}\n\nRetry step {n} after a timeout ({g}).\n\n"
                    for n in range(SECTIONS))
    return {
        "guide.md": f"# Guide\n\nIntro of generation {g}.\n\n## Retry\n\nRetry a request "
                    f"after a timeout: generation {g} waits {len(g) * 3} seconds.\n",
        "setup.md": f"# Setup\n\nInstall generation {g}, then set the timeout in the "
                    f"config file ({g}).\n" + ("\n## Extra\n\nOnly in B: retry extra.\n"
                                               if g == "B" else ""),
        "steps.md": f"# Steps\n\n{steps}",
        "same.md": "# Same\n\nThis page never changes: retry, timeout, install.\n",
    }


SECTIONS = 150
QUERIES = [("retry step after a timeout", 100000), ("install setup", 60)]
REBUILDS = 4
CLIENTS = 4


def answers_of(root: Path) -> tuple[str, ...]:
    texts = []
    for query, budget in QUERIES:
        done = context_cli("resolve", "--cache", str(root / "gen"), "--query", query,
                           "--budget", str(budget))
        assert done.returncode == 0, done.stderr
        texts.append(done.stdout.decode())
    return tuple(texts)


class Wanted:
    """The generation the rebuild loop waits to see answered, and whether it is over."""

    def __init__(self) -> None:
        self.g = "A"
        self.event = threading.Event()
        self.done = False


def build_generation(src: Path, root: Path, g: str) -> None:
    write_tree(src, generation(g))
    done = run_cli("build", str(src), "--name", "gen", "--root", str(root))
    assert done.returncode == 0, done.stderr


def test_rebuild_mid_read_is_one_generation(tmp_path: Path) -> None:
    """Clients resolve without pause while the cache is rebuilt again and again with
    alternating content: every answer is exactly the CLI's answer of one generation; the
    next rebuild starts once an answer of the new generation came back (so both are seen,
    and the server noticed each rebuild)."""
    src, root = tmp_path / "docs", tmp_path / "root"
    expected_of = {}
    for g in ("B", "A"):  # the answers of each generation, by the CLI; A is live at start
        build_generation(src, root, g)
        expected_of[g] = answers_of(root)
    assert all(a != b for a, b in zip(expected_of["A"], expected_of["B"]))
    seen: list[tuple[int, str]] = []
    want = Wanted()
    failures: list[BaseException] = []

    def rebuild_loop() -> None:
        try:
            for i in range(REBUILDS):
                assert want.event.wait(SAFETY_TIMEOUT), "no answer of the new generation"
                g = "B" if i % 2 == 0 else "A"
                want.g, want.event = g, threading.Event()
                build_generation(src, root, g)
            assert want.event.wait(SAFETY_TIMEOUT), "no answer of the last generation"
        except BaseException as exc:  # (re-raised in the test's thread below)
            failures.append(exc)
        finally:
            want.done = True

    async def client(url: str, i: int) -> None:
        async with sdk_session(url) as session:
            k = i
            while not want.done:
                query, budget = QUERIES[k % len(QUERIES)]
                result = await session.call_tool(
                    "context.resolve", {"cache": "gen", "query": query, "budget": budget})
                text = only_text(result)
                seen.append((k % len(QUERIES), text))
                if text == expected_of[want.g][k % len(QUERIES)]:
                    want.event.set()
                k += 1

    with HttpServer(root) as server:
        builder = threading.Thread(target=rebuild_loop)
        builder.start()

        async def main() -> None:
            async with anyio.create_task_group() as group:
                for i in range(CLIENTS):
                    group.start_soon(client, server.url, i)

        anyio.run(main)
        builder.join(SAFETY_TIMEOUT)
        assert server.stop() == 0
    assert not failures, failures
    mixed = [(k, text[:300]) for k, text in seen
             if text not in (expected_of["A"][k], expected_of["B"][k])]
    assert not mixed, mixed[:3]
    generations = {g for k, text in seen for g in "AB" if text == expected_of[g][k]}
    assert generations == {"A", "B"} and len(seen) > REBUILDS
