"""indexer/tokens.py: the deterministic token estimate stored per section."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from doc_index.indexer import tokens
from doc_index.indexer.tokens import estimate_tokens

PROSE = (
    "When you need to send data from a client (let's say, a browser) to your API, you send "
    "it as a request body. A request body is data sent by the client to your API. A response "
    "body is the data your API sends to the client. Your API almost always has to send a "
    "response body, but clients don't necessarily need to send request bodies all the time.\n"
)

CODE = """```python
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException

app = FastAPI()


async def common_parameters(q: str | None = None, skip: int = 0, limit: int = 100):
    return {"q": q, "skip": skip, "limit": limit}


@app.get("/items/{item_id}", response_model=ItemRead, status_code=200)
async def read_item(item_id: int, commons: Annotated[dict, Depends(common_parameters)]):
    if item_id not in fake_items_db:
        raise HTTPException(status_code=404, detail="Item not found")
    return {"item_id": item_id, **commons, "tags": [t.lower() for t in ("A", "B")]}
```
"""

JSON_TEXT = json.dumps(
    {
        "openapi": "3.1.0",
        "paths": {
            "/items/{item_id}": {
                "get": {
                    "operationId": "read_item_items__item_id__get",
                    "parameters": [{"name": "item_id", "in": "path", "required": True}],
                    "responses": {"200": {"description": "Successful Response"}},
                }
            }
        },
        "x-limits": [100, 3600, 0.25, 12345678],
    },
    indent=2,
)

CJK = (
    "FastAPI 是一个用于构建 API 的现代、快速（高性能）的 Web 框架，使用 Python "
    "并基于标准的 Python 类型提示。关键特性：快速：可与 NodeJS 和 Go 并肩的极高性能。"
    "高效编码：提高功能开发速度约百分之二百至百分之三百。"
)

CYRILLIC = (
    "FastAPI — это современный, быстрый (высокопроизводительный) веб-фреймворк для создания "
    "API на Python, основанный на стандартных аннотациях типов Python. Ключевые особенности: "
    "скорость, быстрота разработки, меньше ошибок, интуитивность и простота."
)

EMOJI = (
    "* ✨ Add support for scopes. PR [#1234](https://github.com/fastapi/fastapi/pull/1234).\n"
    "* 🐛 Fix form data handling 😅🎉🚀. PR [#1235](https://github.com/fastapi/fastapi/pull/1235).\n"
    "* ⬆️ Bump ruff from 0.6.4 to 0.6.9 👀👍\n"
)

URLS = (
    "- https://fastapi.tiangolo.com/advanced/security/oauth2-scopes/?utm_source=docs#scopes\n"
    "- https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/Access-Control-Allow-Origin\n"
    "- https://github.com/encode/uvicorn/blob/master/uvicorn/protocols/http/h11_impl.py#L42\n"
    "- https://datatracker.ietf.org/doc/html/rfc6749#section-4.1.2.1\n"
)

TABLE = (
    "| Parameter | Type | Default | Description |\n"
    "| --- | --- | ---: | --- |\n"
    "| `status_code` | `int | None` | `None` | The default status code. |\n"
    "| `response_model` | `Any` | `Default(None)` | The type to use for the response. |\n"
    "| `tags` | `list[str | Enum] | None` | `None` | A list of tags for OpenAPI. |\n"
)

MINIFIED = (
    '{"users":[{"id":1,"login":"user_1","email":"user1@example.com","roles":["reader"],'
    '"active":true,"score":7.25},{"id":2,"login":"user_2","email":"user2@example.com",'
    '"roles":["reader","writer"],"active":false,"score":14.5}]}'
    "function f(a,b){return a.map(function(x){return x*b+1}).filter(Boolean).join(',')}"
)

SAMPLES = {
    "prose": PROSE,
    "code": CODE,
    "json": JSON_TEXT,
    "cjk": CJK,
    "cyrillic": CYRILLIC,
    "emoji": EMOJI,
    "urls": URLS,
    "table": TABLE,
    "minified": MINIFIED,
}


def _bytes4(text: str) -> int:
    return (len(text.encode("utf-8")) + 3) // 4


def test_empty_is_zero() -> None:
    assert estimate_tokens("") == 0


def test_any_text_is_at_least_one_token() -> None:
    for text in ("a", " ", "\n", "é", "中", "🍪", "\x00", "\ud800"):
        assert estimate_tokens(text) >= 1, repr(text)


def test_returns_int() -> None:
    for text in SAMPLES.values():
        assert type(estimate_tokens(text)) is int


# Caches store these numbers: a change of method or weights must be deliberate.
PINNED = {"prose": 83, "code": 172, "json": 127, "cjk": 111, "cyrillic": 121, "emoji": 99,
          "urls": 121, "table": 89, "minified": 100}


def test_deterministic_within_process() -> None:
    """The pinned estimate, on the first call and on a repeat (memos warm), and for an equal
    text that is another object."""
    assert set(PINNED) == set(SAMPLES)
    for name, text in SAMPLES.items():
        copy = text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
        assert copy is not text
        assert [estimate_tokens(text), estimate_tokens(copy), estimate_tokens(text)] == \
            [PINNED[name]] * 3, name


def test_deterministic_across_processes() -> None:
    # The estimate must not depend on hash randomisation or any other process state.
    code = (
        "import json, sys\n"
        "from doc_index.indexer.tokens import estimate_tokens\n"
        "texts = json.load(sys.stdin)\n"
        "print(json.dumps([estimate_tokens(t) for t in texts]))\n"
    )
    texts = list(SAMPLES.values())
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert json.loads(out) == [PINNED[name] for name in SAMPLES]


def test_pinned_values() -> None:
    assert estimate_tokens("hello world") == 4
    assert {name: estimate_tokens(text) for name, text in SAMPLES.items()} == PINNED


def test_appending_never_lowers_the_estimate() -> None:
    for text in SAMPLES.values():
        previous = 0
        for end in range(0, len(text) + 1, 7):
            current = estimate_tokens(text[:end])
            assert current >= previous, (text[:end],)
            previous = current


def test_grows_about_linearly_with_repetition() -> None:
    for name, text in SAMPLES.items():
        one = estimate_tokens(text)
        four = estimate_tokens(text * 4)
        assert 3.5 * one <= four <= 4 * one + 1, name


def test_concatenation_is_close_to_the_sum() -> None:
    names = list(SAMPLES)
    for a, b in zip(names, names[1:]):
        joined = estimate_tokens(SAMPLES[a] + "\n" + SAMPLES[b])
        parts = estimate_tokens(SAMPLES[a]) + estimate_tokens(SAMPLES[b])
        assert 0.9 * parts <= joined <= 1.05 * parts + 2, (a, b)


def test_code_costs_more_than_prose_of_the_same_size() -> None:
    prose = (PROSE * 4)[: len(CODE)]
    assert estimate_tokens(CODE) > estimate_tokens(prose)
    # ... and more than the byte heuristic, which under-counts code.
    assert estimate_tokens(CODE) > _bytes4(CODE)
    assert estimate_tokens(MINIFIED) > _bytes4(MINIFIED)


def test_prose_is_near_four_bytes_a_token() -> None:
    assert 0.9 * _bytes4(PROSE) <= estimate_tokens(PROSE) <= 1.4 * _bytes4(PROSE)


def test_cjk_costs_at_least_one_token_per_ideograph() -> None:
    ideographs = sum(1 for ch in CJK if "\u4e00" <= ch <= "\u9fff")
    assert estimate_tokens(CJK) >= ideographs
    assert estimate_tokens(CJK) > 1.5 * _bytes4(CJK)


def test_non_latin_scripts_and_emoji() -> None:
    assert estimate_tokens(CYRILLIC) >= _bytes4(CYRILLIC)
    assert estimate_tokens("🍪🚀🎉🔥👀") >= 10  # 2-3 tokens each
    assert estimate_tokens("Ωμέγα") > estimate_tokens("omega")


def test_long_identifiers_cost_more_than_short_words() -> None:
    assert estimate_tokens("HTTPAuthorizationCredentials") > estimate_tokens("the")
    assert estimate_tokens("x" * 64) > estimate_tokens("x" * 8)
    assert estimate_tokens("3f2a9c0d8e7b6a5f4e3d2c1b0a9f8e7d") >= 10


def test_digits_count_in_groups() -> None:
    assert estimate_tokens("1234567890" * 3) > estimate_tokens("1234")


def test_indentation_and_space_runs_count() -> None:
    flat = "a\nb\nc\nd\n"
    indented = "a\n        b\n        c\n        d\n"
    assert estimate_tokens(indented) > estimate_tokens(flat)


def test_texts_longer_than_the_cached_masks(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {name: estimate_tokens(text) for name, text in SAMPLES.items()}
    monkeypatch.setattr(tokens, "_CAP", 16)  # force the per-call mask path
    assert {name: estimate_tokens(text) for name, text in SAMPLES.items()} == expected


def test_features_and_weights_agree() -> None:
    assert len(tokens.FEATURES) == len(tokens.token_features("x"))
    for text in SAMPLES.values():
        total = sum(w * f for w, f in zip(tokens.FEATURE_WEIGHTS, tokens.token_features(text)))
        assert estimate_tokens(text) == -(-total // tokens.WEIGHT_SCALE)


def test_never_under_counts_real_tokenizers_by_more_than_a_quarter() -> None:
    bpe_openai = pytest.importorskip("bpe_openai")
    for name in ("cl100k_base", "o200k_base"):
        enc = bpe_openai.get_encoding(name)
        for sample, text in SAMPLES.items():
            real = len(enc.encode_ordinary(text))
            estimate = estimate_tokens(text)
            assert estimate >= 0.75 * real, (name, sample, estimate, real)
            if sample not in ("cjk", "cyrillic"):  # o200k needs far fewer tokens there
                assert estimate <= 1.5 * real, (name, sample, estimate, real)
