"""Hostile JSON-RPC lines against a running ``doc-index serve``.

One server process takes random JSON, JSON-RPC-shaped requests with ids of every type and
params of every shape, tool calls with wrong types, huge strings, NUL bytes, lone
surrogates and unknown fields, raw bytes that are not UTF-8, deep nesting, batches and
stray responses. After every line a ``ping`` with a fresh id is the sync point. Checked:
every line of stdout is a valid JSON-RPC 2.0 message; each request with a valid id (as
the SDK's JSON parser reads the line) gets exactly one response; tool results are one
text item holding CLI bytes or a spec error text; the server stays up, its memory stays
bounded, and stderr never shows a traceback.
Also: the server answering during a stream of rebuilds (generation A or B, never a mix).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pydantic_core
import pytest
from conftest import SAFETY_TIMEOUT, SAMPLE_REPOS, build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_support import RawServer, initialize, make_root, server_argv, tool_call

from doc_index.foundation.errors import SPEC_MESSAGES
from doc_index.server import spec_texts as tools
from doc_index.server.mcp_transport import MAX_LINE_BYTES

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

CACHES = ["local-md", "local-rst", "minimal", "realistic", "broken", "missing", "..", "",
          "/etc", "local-md\x00", "local-md/../local-md", "escape", "x" * 5000]
TOOLS = ["context.resolve", "context_resolve", "context.inspect_cache", "context_inspect_cache",
         "context.list_caches", "context_list_caches", "context.frob", "", "resolve",
         "CONTEXT.RESOLVE", "context.resolve\x00"]
METHODS = ["tools/call", "tools/list", "ping", "initialize", "notifications/initialized",
           "notifications/cancelled", "resources/list", "prompts/list", "logging/setLevel",
           "completion/complete", "frob", "", "tools/call\x00", "rpc.discover", "$/cancel"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fuzz-mcp")
    root = make_root(base / "root")  # the Context Engine v0 fixture caches
    build(SAMPLE_REPOS / "mdkit-docs", root, name="md")
    build(SAMPLE_REPOS / "rstkit-docs", root, name="rst")
    (root / "broken").mkdir()
    (root / "broken" / "manifest.json").write_bytes(b'{"index_version": 1')
    outside = base / "outside"
    outside.mkdir()
    (outside / "manifest.json").write_text("{}")
    os.symlink(outside, root / "escape")
    return root


# --------------------------------------------------------------------------- strategies

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30),
    st.sampled_from(["", "\x00", "\ud800", "\udfff", "a\x00b", "☕", "\u2028", "x" * 3000]),
)
json_values = st.recursive(
    json_leaf,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12,
)
# Ids of every type, strings with lone surrogates included.
ids = st.one_of(
    st.integers(-(2**31), 2**31), st.integers(2**53, 2**80), st.text(max_size=12),
    st.sampled_from([0, -1, "", "0", 1.0, 1.5, None, True, False, [], {}, [1], {"a": 1},
                     "\x00", "\ud800", "a\udfffb", ["\ud800"], {"\ud800": 1}]),
)
queries = st.one_of(st.text(max_size=40), st.sampled_from(
    ["retry timeout", "install", "", "   ", "!!!", "the", "\x00", "a\x00b", "\ud800 x",
     "w " * 2100, "q" * 70_000, "重试 超时", "ÄÖÜ"]), json_values)
budgets = st.one_of(st.integers(-10, 10_001_000), st.sampled_from(
    [0, 4000, 4000.0, 4000.5, -0.0, 1e308, 10_000_000, 10_000_001, 2**64, True, None, "4000",
     [4000], {"n": 4000}]), json_values)


@st.composite
def tool_arguments(draw: st.DrawFn) -> Any:
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(json_values)  # not an object
    args: dict[str, Any] = {}
    if draw(st.booleans()) or shape > 5:
        args["cache"] = draw(st.one_of(st.sampled_from(CACHES), json_values))
    if draw(st.booleans()) or shape > 5:
        args["query"] = draw(queries)
    if draw(st.booleans()) or shape > 5:
        args["budget"] = draw(budgets)
    if shape == 9:
        args[draw(st.text(max_size=6))] = draw(json_values)  # unknown fields
    return args


@st.composite
def messages(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 11))
    if kind == 0:
        return draw(json_values)
    msg: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        msg["jsonrpc"] = "2.0" if draw(st.integers(0, 5)) else draw(json_leaf)
    if draw(st.integers(0, 7)):
        msg["id"] = draw(ids)
    if kind == 1:
        msg["result"] = draw(json_values)  # a stray response
        return msg
    if kind == 2:
        msg["error"] = draw(json_values)
        return msg
    if kind == 3:
        msg["method"] = draw(st.one_of(st.sampled_from(METHODS), st.text(max_size=10)))
        if draw(st.booleans()):
            msg["params"] = draw(json_values)
        return msg
    if kind == 4:
        return [draw(messages()) for _ in range(draw(st.integers(0, 3)))]  # a batch
    msg["method"] = "tools/call"
    if kind == 5:
        msg["params"] = draw(json_values)
        return msg
    params: dict[str, Any] = {"name": draw(st.one_of(st.sampled_from(TOOLS), json_leaf))}
    if draw(st.integers(0, 5)):
        params["arguments"] = draw(tool_arguments())
    if kind == 6:
        params[draw(st.text(max_size=6))] = draw(json_values)
    if kind == 7:
        params["_meta"] = draw(st.one_of(json_values, st.just({"progressToken": 1})))
    msg["params"] = params
    return msg


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """A raw line without its newline: a message's JSON, or that JSON spoiled."""
    message = draw(messages())
    encoding = draw(st.integers(0, 12))
    text = json.dumps(message, ensure_ascii=draw(st.booleans()))
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate with ensure_ascii off: not UTF-8
        return text.encode("utf-8", "surrogatepass")
    if encoding == 1:
        return raw[: draw(st.integers(0, max(0, len(raw) - 1)))]  # truncated
    if encoding == 2:
        return b"\xef\xbb\xbf" + raw  # a BOM
    if encoding == 3:
        junk = draw(st.sampled_from([b"\xff", b"\x00", b"\xc3", b" garbage", b"}", b"]"]))
        return raw + junk
    if encoding == 4:
        return draw(st.binary(max_size=40)).replace(b"\n", b" ")
    if encoding == 5:
        return raw + b"\r"  # CRLF line ending
    return raw


# --------------------------------------------------------------------------- checking


def as_the_server_reads(raw: bytes) -> Any:
    """The JSON value of one line as the server reads it, or None if it reads none: at
    most MAX_LINE_BYTES of strict UTF-8 (server/mcp_transport.py), then the SDK's JSON
    parser (pydantic-core's: NaN and Infinity are numbers, a duplicate key keeps its
    last value, a lone surrogate or nesting deeper than 200 is an error)."""
    if len(raw) > MAX_LINE_BYTES or not raw.strip():
        return None
    try:
        raw.decode("utf-8")
        return pydantic_core.from_json(raw)
    except ValueError:
        return None


def valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def expected_answer_id(message: Any) -> tuple[bool, object]:
    """(whether exactly one answer with that id is due, the id)."""
    if not isinstance(message, dict) or not valid_id(message.get("id")):
        return False, None
    if "method" not in message and ("result" in message or "error" in message):
        return False, None  # a response from the client: ignored
    return True, message["id"]


def check_frame(line: bytes) -> dict[str, Any]:
    frame = json.loads(line)
    assert isinstance(frame, dict) and frame.get("jsonrpc") == "2.0", frame
    assert ("result" in frame) != ("error" in frame), frame
    if "result" in frame:
        assert valid_id(frame.get("id")), frame
        result = frame["result"]
        if isinstance(result, dict) and "content" in result:
            check_tool_result(result)
    else:
        assert "id" in frame and (frame["id"] is None or valid_id(frame["id"])), frame
        error = frame["error"]
        assert isinstance(error, dict) and isinstance(error.get("message"), str), frame
        assert isinstance(error.get("code"), int) and error["code"] != 0, frame
    return frame


def check_tool_result(result: dict[str, Any]) -> None:
    assert set(result) <= {"content", "isError"}, result
    assert len(result["content"]) == 1
    item = result["content"][0]
    assert item["type"] == "text" and set(item) == {"type", "text"}
    text = item["text"]
    assert text.endswith("\n")
    body = json.loads(text)
    if result.get("isError"):
        assert list(body) == ["error"] and list(body["error"]) == ["code", "message"]
        code = body["error"]["code"]
        assert code != "internal_error", text
        assert body["error"]["message"] == SPEC_MESSAGES[code]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Session:
    """A started server plus the bookkeeping of one fuzz run."""

    def __init__(self, root: Path) -> None:
        self.server = RawServer(server_argv(root))
        self.sync = 0
        self.sent = 0
        self.frames = 0
        self.history: list[bytes] = []
        self.server.request(initialize(0))
        self.server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # Warm up: load the caches once so the memory baseline includes them.
        for cache in ("local-md", "realistic"):
            self.call({"cache": cache, "query": "retry", "budget": 4000})
        self.baseline = rss_mb(self.server.proc.pid)

    def call(self, arguments: Any) -> dict[str, Any]:
        self.sync += 1
        return self.server.request(tool_call(f"call-{self.sync}", "context.resolve", arguments))

    def send_line(self, raw: bytes) -> list[dict[str, Any]]:
        """Send one line, then a ping; the frames that came back before the ping's answer
        (and the due answer, if it comes later)."""
        if self.server.proc.poll() is not None:  # died earlier: report what killed it
            raise AssertionError(f"the server exited ({self.server.proc.returncode}) after "
                                 f"{self.history!r}; stderr: {self.server.stderr[-2000:]!r}")
        self.history = [*self.history[-2:], raw[:500]]
        self.sent += 1
        self.sync += 1
        sync_id = f"sync-{self.sync}-{os.getpid()}"
        message = as_the_server_reads(raw)
        due, due_id = expected_answer_id(message)
        if isinstance(message, list):
            due = False  # batches: no count asserted, only the frames' shape
        self.server.send_raw(raw + b"\n")
        self.server.send({"jsonrpc": "2.0", "id": sync_id, "method": "ping"})
        got: list[dict[str, Any]] = []
        synced = False
        deadline = time.monotonic() + SAFETY_TIMEOUT
        while not synced or (due and not any(f.get("id") == due_id for f in got)):
            assert time.monotonic() < deadline, (raw[:300], got)
            line = self.server.recv_line()
            self.frames += 1
            frame = check_frame(line)
            if frame.get("id") == sync_id:
                assert "result" in frame, frame
                synced = True
            else:
                got.append(frame)
        assert self.server.proc.poll() is None, "the server died"
        if due:
            matching = [f for f in got if f.get("id") == due_id]
            assert len(matching) == 1, (raw[:300], got)
        return got

    def finish(self, root: Path) -> bytes:
        """Check the server still answers right and its memory; close it; its stderr."""
        for cache in ("local-md", "realistic"):
            reply = self.call({"cache": cache, "query": "retry timeout", "budget": 3000})
            expected = tools.resolve(root / cache, "retry timeout", 3000)
            assert reply["result"]["content"][0]["text"] == expected
        grown = rss_mb(self.server.proc.pid) - self.baseline
        assert grown < 200, f"RSS grew by {grown:.0f} MB"
        self.server.close()
        assert self.server.proc.returncode == 0
        return self.server.stderr


def assert_no_traceback(stderr: bytes) -> None:
    at = stderr.find(b"Traceback")
    assert at < 0, stderr[max(0, at - 500): at + 4000].decode("utf-8", "replace")


def _fuzz(root: Path, examples: int) -> Session:
    session = Session(root)
    try:
        @settings(max_examples=examples, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(line=lines())
        def run(line: bytes) -> None:
            session.send_line(line)

        run()
        stderr = session.finish(root)
    finally:
        session.server.kill()
    assert_no_traceback(stderr)
    return session


@pytest.mark.slow
def test_fuzz_mcp_lines_short(root: Path) -> None:
    _fuzz(root, examples=250)


@pytest.mark.slow
def test_fuzz_mcp_lines_long(root: Path) -> None:
    session = _fuzz(root, examples=10_000)
    print(f"MCP lines fuzzed: {session.sent}, frames checked: {session.frames}")


# --------------------------------------------------------------------------- explicit cases


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


EXPLICIT: list[bytes] = [
    b"", b" ", b"\t", b"\x00", b"\x00" * 1000, b"\xff\xfe\xfd", b"{", b"}", b"[]", b"[[]]",
    b"null", b"0", b'"x"', b"NaN", b'{"jsonrpc":"2.0","id":1,"method":"ping","x":NaN}',
    b'{"jsonrpc":"2.0","id":Infinity,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',  # duplicate keys
    b'{"jsonrpc":"2.0","id":3,"method":"ping"}\x00',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":4,"method":"ping"}',
    deep(100).encode(), deep(2000).encode(), deep(100_000).encode(),
    ('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"context.resolve",'
     '"arguments":{"cache":"local-md","query":' + deep(5000) + ',"budget":1}}}').encode(),
    ('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":' + '{"a":' * 900 + "1"
     + "}" * 900 + "}").encode(),
    json.dumps(tool_call(7, "context.resolve", {"cache": "local-md", "query": "q" * 3_000_000,
                                                "budget": 1})).encode(),
    json.dumps(tool_call(8, "context.resolve", {"cache": "x" * 3_000_000, "query": "q",
                                                "budget": 1})).encode(),
    b'{"jsonrpc":"2.0","id":9,"method":"ping"}' + b" " * (5 * 1024 * 1024),  # over the cap
    json.dumps([tool_call(i, "context.list_caches") for i in range(10, 60)]).encode(),
    json.dumps(tool_call(60, "context.resolve", {"cache": "local-md", "query": "retry\ud800",
                                                 "budget": 100})).encode(),
    json.dumps({"jsonrpc": "2.0", "id": 61, "method": "notifications/cancelled",
                "params": {"requestId": "sync-1"}}).encode(),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 62}}).encode(),
    json.dumps({"jsonrpc": "2.0", "id": 63, "method": "initialize",
                "params": initialize()["params"]}).encode(),
]


def test_explicit_hostile_lines(root: Path) -> None:
    session = Session(root)
    try:
        for raw in EXPLICIT:
            session.send_line(raw)
        stderr = session.finish(root)
    finally:
        session.server.kill()
    assert_no_traceback(stderr)


def test_pipelined_burst_every_id_answered_once(root: Path) -> None:
    """500 requests of every kind written at once, then EOF: one answer per id."""
    server = RawServer(server_argv(root))
    try:
        burst = [initialize(0)]
        args = [{"cache": "local-md", "query": "retry", "budget": 500},
                {"cache": "realistic", "query": "cache", "budget": 50},
                {"cache": "..", "query": "x", "budget": 1},
                {"cache": "local-md", "query": "", "budget": 1},
                {"cache": "local-md", "query": "x", "budget": -1}]
        for i in range(1, 500):
            if i % 7 == 0:
                burst.append(tool_call(i, "context.list_caches"))
            elif i % 11 == 0:
                burst.append({"jsonrpc": "2.0", "id": i, "method": "ping"})
            else:
                burst.append(tool_call(i, "context.resolve", args[i % len(args)]))
        server.send(*burst)
        frames = server.close()
    finally:
        server.kill()
    for frame in frames:
        check_frame(json.dumps(frame).encode())
    counts = Counter(frame["id"] for frame in frames)
    assert counts == Counter(range(500)), set(range(500)) ^ set(counts)
    assert_no_traceback(server.stderr)


# --------------------------------------------------------------------------- rebuilds


def test_server_during_rebuilds_sees_a_or_b(tmp_path: Path) -> None:
    """The MCP server answering while a builder swaps generation A and B: every answer is
    exactly A's or B's, never an error."""
    from test_faults import BUDGET, KEY, QUERY, Rebuilder, two_states

    a, b = two_states(tmp_path, files=16)
    root = tmp_path / "root"
    for n, src in enumerate((a, b)):  # reference generations, answered by the same server
        build(src, root, name=f"ref{n}")
    build(a, root, name="src")
    server = RawServer(server_argv(root))
    seen: Counter[int] = Counter()
    bad: list[str] = []
    builder = None
    try:
        server.request(initialize(0))
        answers = {
            server.request(tool_call(f"ref{n}", "context.resolve", {
                "cache": f"local-ref{n}", "query": QUERY, "budget": BUDGET}
            ))["result"]["content"][0]["text"] for n in (0, 1)
        }
        assert len(answers) == 2
        builder = Rebuilder(a, b, root, tmp_path)
        deadline = time.monotonic() + SAFETY_TIMEOUT
        n = 0
        while builder.count() < 3 or n < 10:  # at least 3 swaps while the server answers
            assert time.monotonic() < deadline, (n, builder.rebuilds)
            n += 1
            reply = server.request(tool_call(n, "context.resolve",
                                             {"cache": KEY, "query": QUERY, "budget": BUDGET}))
            text = reply["result"]["content"][0]["text"]
            if text in answers:
                seen[sorted(answers).index(text)] += 1
            elif len(bad) < 5:
                bad.append(text[:300])
    finally:
        status, err = builder.finish() if builder else (None, b"")
        server.kill()
    assert status == 0, err
    assert not bad, (bad, seen)


def test_hostile_cache_names_over_mcp(tmp_path: Path) -> None:
    """The names of test_hostile_names, as MCP arguments: cache_missing, never a secret."""
    from test_hostile_names import ESCAPES, SECRET, TRAVERSALS, make_world

    root, _ = make_world(tmp_path)
    server = RawServer(server_argv(root))
    try:
        server.request(initialize(0))
        n = 0
        for name in ESCAPES + TRAVERSALS:
            for tool, args in (("context.resolve", {"cache": name, "query": "zebra",
                                                    "budget": 1000}),
                               ("context_inspect_cache", {"cache": name})):
                n += 1
                frame = check_frame(json.dumps(server.request(tool_call(n, tool, args)),
                                               ensure_ascii=False).encode())
                if any("\ud800" <= c <= "\udfff" for c in name):  # not Unicode: not JSON
                    assert frame["error"]["code"] == -32700, name  # to the SDK's parser
                    continue
                text = frame["result"]["content"][0]["text"]
                assert frame["result"].get("isError") is True, (name, text)
                assert json.loads(text)["error"]["code"] == "cache_missing", (name, text)
                assert SECRET not in text
        server.close()
    finally:
        server.kill()
    assert_no_traceback(server.stderr)


def test_a_lone_surrogate_id_does_not_kill_the_server(root: Path) -> None:
    method = "ping"  # any method: the id is echoed in every answer
    server = RawServer(server_argv(root))
    try:
        server.request(initialize(0))
        server.send_raw(b'{"jsonrpc":"2.0","id":"\\ud800","method":"' + method.encode()
                        + b'"}\n')
        server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        frames = [check_frame(server.recv_line()) for _ in range(2)]
        assert [f["id"] for f in frames][-1] == 2
        assert server.proc.poll() is None
    finally:
        server.kill()
