"""Accuracy and speed of ``indexer.tokens.estimate_tokens`` against real tokenizers.

Bench-only dependency: ``bpe-openai`` (offline cl100k_base / o200k_base vocabularies).

Usage::

    .venv/bin/python bench/token_accuracy.py [CORPORA_DIR]

``CORPORA_DIR`` defaults to ``../shared/corpora`` next to the repository. Each file of
``fastapi-docs`` (Markdown, ATX ``#`` headings, ``#`` inside ``` fences ignored) and
``flask-docs`` (reStructuredText, a title line over an underline of repeated punctuation)
is cut at its headings, which is close to how doc-index cuts sections. For each corpus,
for the synthetic texts of :data:`SYNTHETIC` (code, JSON, CJK, Cyrillic, emoji, URLs, a
table, minified text, hashes, other scripts) and for each tokenizer the script prints
the number of sections, the worst under-count and over-count (``estimate/real - 1``),
the median and the total ratio ``estimate/real``, for ``estimate_tokens`` and for the
``ceil(utf8_bytes/4)`` baseline; then one line per synthetic text and the throughput.

``measure(sections)`` returns those numbers as a dict for a later benchmark report.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from indexer.tokens import estimate_tokens  # noqa: E402

TOKENIZERS = ("cl100k_base", "o200k_base")
DEFAULT_CORPORA = REPO.parent / "shared" / "corpora"


# --- synthetic texts -------------------------------------------------------------

PY = """```python
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, status
from pydantic import BaseModel, Field

app = FastAPI(title="Inventory", version="2.3.1")


class ItemCreate(BaseModel):
    name: str = Field(min_length=1, max_length=120)
    price_cents: int = Field(ge=0)
    tags: list[str] = []


class ItemRead(ItemCreate):
    id: int
    is_active: bool = True


_DB: dict[int, ItemRead] = {}


async def get_session() -> AsyncIterator[dict[int, ItemRead]]:
    await asyncio.sleep(0)
    try:
        yield _DB
    finally:
        pass


SessionDep = Annotated[dict[int, ItemRead], Depends(get_session)]


@app.post("/items/", response_model=ItemRead, status_code=status.HTTP_201_CREATED)
async def create_item(item: ItemCreate, db: SessionDep) -> ItemRead:
    new_id = max(db, default=0) + 1
    if any(existing.name == item.name for existing in db.values()):
        raise HTTPException(status_code=409, detail=f"item {item.name!r} exists")
    db[new_id] = ItemRead(id=new_id, **item.model_dump())
    return db[new_id]


@app.get("/items/{item_id}")
async def read_item(item_id: int, db: SessionDep, q: str | None = None) -> dict[str, Any]:
    if item_id not in db:
        raise HTTPException(status_code=404, detail="Item not found")
    result: dict[str, Any] = {"item": db[item_id].model_dump()}
    if q:
        result.update({"q": q, "matches": [t for t in db[item_id].tags if q in t]})
    return result


def _checksum(values: list[int], *, modulus: int = 0xFFFF_FFFB) -> int:
    acc = 0x811C9DC5
    for i, v in enumerate(values):
        acc = ((acc ^ v) * 16777619 + i) % modulus
    return acc


if __name__ == "__main__":
    import uvicorn

    uvicorn.run("main:app", host="127.0.0.1", port=8000, reload=True, log_level="debug")
```
"""


def _json() -> str:
    data = {
        "openapi": "3.1.0",
        "info": {"title": "Inventory", "version": "2.3.1"},
        "paths": {
            f"/items/{{item_id}}/v{i}": {
                "get": {
                    "summary": f"Read Item {i}",
                    "operationId": f"read_item_items__item_id__v{i}_get",
                    "parameters": [
                        {
                            "name": "item_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer", "title": "Item Id"},
                        },
                        {
                            "name": "q",
                            "in": "query",
                            "required": False,
                            "schema": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        },
                    ],
                    "responses": {
                        "200": {"description": "Successful Response"},
                        "422": {"$ref": "#/components/responses/HTTPValidationError"},
                    },
                    "x-rate-limit": [100 * i, 3600, 0.25 * i],
                }
            }
            for i in range(1, 9)
        },
    }
    return json.dumps(data, indent=2)


CJK = (
    "FastAPI 是一个用于构建 API 的现代、快速（高性能）的 Web 框架，"
    "使用 Python 并基于标准的 Python 类型提示。"
    "关键特性：快速：可与 NodeJS 和 Go 并肩的极高性能。"
    "高效编码：提高功能开发速度约百分之二百至百分之三百。"
    "更少的错误：减少约百分之四十的人为（开发者）导致错误。"
    "智能：极佳的编辑器支持，处处皆可自动补全，减少调试时间。\n\n"
    "FastAPI は、Pythonの標準である型ヒントに基づいてPython 以降でAPI を構築するための、"
    "モダンで、高速(高パフォーマンス)な、Web フレームワークです。"
    "主な特徴：高速：NodeJS や Go 並みのとても高いパフォーマンス。"
    "高速なコーディング：開発速度を約二百％〜三百％向上させます。\n\n"
    "FastAPI는 현대적이고, 빠르며(고성능), 파이썬 표준 타입 힌트에 기초한 "
    "파이썬으로 API를 빌드하기 위한 웹 프레임워크입니다. "
    "주요 특징으로: 빠름: NodeJS 및 Go와 대등할 정도로 매우 높은 성능."
)

CYRILLIC = (
    "FastAPI — это современный, быстрый (высокопроизводительный) веб-фреймворк для создания API "
    "на Python, основанный на стандартных аннотациях типов Python.\n\n"
    "Ключевые особенности: Скорость: очень высокая производительность, на уровне NodeJS и Go "
    "(благодаря Starlette и Pydantic). Быстрота разработки: увеличьте скорость разработки примерно "
    "на 200–300%. Меньше ошибок: сократите примерно на 40% количество ошибок, вызванных человеком "
    "(разработчиком). Интуитивность: отличная поддержка редактора. Автозавершение везде. "
    "Меньше времени на отладку. Простота: разработан так, чтобы его было легко использовать и "
    "осваивать. Меньше времени на чтение документации.\n\n"
    "Η FastAPI είναι ένα σύγχρονο, γρήγορο πλαίσιο για τη δημιουργία API με Python, "
    "βασισμένο στις τυπικές υποδείξεις τύπων της Python."
)

_RELEASE_NOTES = [
    ("✨", "Add support for dependencies with scopes"),
    ("🐛", "Fix handling of form data with empty values"),
    ("📝", "Update docs for custom response classes"),
    ("🌐", "Add Portuguese translation for tutorial/body.md"),
    ("⬆️", "Bump ruff from 0.6.4 to 0.6.9"),
    ("♻️", "Refactor internal parameter resolution"),
    ("🔧", "Update sponsors: remove Fern"),
    ("👷", "Update CI workflow to run on Python 3.13"),
    ("🎨", "Format code with the latest formatter 😅🎉🚀🔥"),
    ("✏️", "Fix typos in release notes 👀👍"),
]
EMOJI = (
    "\n".join(
        f"* {e} {msg}. PR [#{1000 + 37 * i}](https://github.com/fastapi/fastapi/pull/"
        f"{1000 + 37 * i}) by [@user{i}](https://github.com/user{i})."
        for i, (e, msg) in enumerate(_RELEASE_NOTES)
    )
    + "\n"
)

_LINKS = [
    ("fastapi.tiangolo.com", "advanced/security/oauth2-scopes/"),
    ("docs.pydantic.dev", "latest/concepts/json_schema/"),
    ("www.starlette.io", "middleware/#corsmiddleware"),
    ("github.com", "encode/uvicorn/blob/master/uvicorn/protocols/http/h11_impl.py"),
    ("developer.mozilla.org", "en-US/docs/Web/HTTP/Headers/Access-Control-Allow-Origin"),
    ("datatracker.ietf.org", "doc/html/rfc6749#section-4.1.2.1"),
    ("swagger.io", "docs/specification/authentication/oauth2/"),
    ("pypi.org", "project/python-multipart/0.0.9/"),
    ("flask.palletsprojects.com", "en/stable/patterns/appfactories/"),
    ("werkzeug.palletsprojects.com", "en/3.0.x/routing/#werkzeug.routing.Rule"),
]
URLS = (
    "\n".join(
        f"- https://{host}/{path}?utm_source=docs&ref={i:04d}#section-{i}"
        for i, (host, path) in enumerate(_LINKS)
    )
    + "\n"
)

_PARAMS = [
    ("status_code", "int | None", "None", "The default status code for the response."),
    ("response_model", "Any", "Default(None)", "The type to use for the response."),
    ("tags", "list[str | Enum] | None", "None", "A list of tags for OpenAPI."),
    ("dependencies", "Sequence[Depends] | None", "None", "Dependencies to apply."),
    ("summary", "str | None", "None", "A short summary."),
    ("deprecated", "bool | None", "None", "Mark the path operation as deprecated."),
    ("operation_id", "str | None", "None", "Custom operation ID."),
    ("include_in_schema", "bool", "True", "Include it in the generated OpenAPI schema."),
    ("response_class", "type[Response]", "JSONResponse", "Response class to use."),
    ("openapi_extra", "dict[str, Any] | None", "None", "Extra OpenAPI metadata."),
]
TABLE = (
    "| Parameter | Type | Default | Description |\n| --- | --- | ---: | --- |\n"
    + "\n".join(f"| `{n}` | `{t}` | `{d}` | {desc} |" for n, t, d, desc in _PARAMS)
    + "\n"
)

MINIFIED = (
    '{"users":['
    + ",".join(
        f'{{"id":{i},"login":"user_{i}","email":"user{i}@example.com","roles":["reader","writer"],'
        f'"active":{str(i % 2 == 0).lower()},"score":{i * 7.25},"tags":["a{i}","b{i * 3}"]}}'
        for i in range(40)
    )
    + "]}"
    + "function f(a,b){return a.map(function(x){return x*b+1}).filter(Boolean).join(',')}"
    "var n=document.querySelectorAll('.nav>li>a');for(var i=0;i<n.length;i++){n[i].onclick=f}"
)

_PINS = ["fastapi", "starlette", "pydantic", "anyio", "uvicorn", "httpx", "jinja2", "click"]
HASHES = (
    "\n".join(
        f"{name}==1.{i}.0 --hash=sha256:"
        + "".join(format((i * 2654435761 + k * 40503) % 65536, "04x") for k in range(16))
        for i, name in enumerate(_PINS)
    )
    + "\n"
)

OTHER_SCRIPTS: dict[str, str] = {
    "hindi": "फास्टएपीआई एक आधुनिक, तेज़ (उच्च प्रदर्शन) वेब फ्रेमवर्क है जो पायथन के "
    "मानक टाइप संकेतों पर आधारित है। इसकी मुख्य विशेषताएं गति, सरलता और मजबूती हैं।",
    "thai": "FastAPI เป็นเว็บเฟรมเวิร์กที่ทันสมัยและรวดเร็วสำหรับการสร้าง API ด้วย Python "
    "โดยอิงตามการระบุชนิดข้อมูลมาตรฐานของ Python",
    "arabic": "فاست إيه بي آي هو إطار عمل ويب حديث وسريع لبناء واجهات برمجة التطبيقات "
    "باستخدام بايثون بناءً على تلميحات الأنواع القياسية.",
    "hebrew": "FastAPI היא מסגרת רשת מודרנית ומהירה לבניית ממשקי תכנות יישומים בפייתון, "
    "המבוססת על רמזי טיפוסים סטנדרטיים.",
    "georgian": "FastAPI არის თანამედროვე, სწრაფი ვებ ფრეიმვორკი API-ების შესაქმნელად პითონზე.",
    "greek": "Το FastAPI είναι ένα σύγχρονο, γρήγορο πλαίσιο ιστού για τη δημιουργία API "
    "με την Python.",
    "vietnamese": "FastAPI là một web framework hiện đại, hiệu năng cao để xây dựng API với Python "
    "dựa trên tiêu chuẩn gợi ý kiểu dữ liệu.",
    "german": "FastAPI ist ein modernes, schnelles (hochperformantes) Webframework zur Erstellung "
    "von APIs mit Python auf Basis von Standard-Python-Typhinweisen. Die wichtigsten Merkmale "
    "sind: Schnell: Sehr hohe Leistung, auf Augenhöhe mit NodeJS und Go. Schnell zu "
    "programmieren: Erhöhen Sie die Geschwindigkeit bei der Entwicklung von Funktionen um etwa "
    "200 % bis 300 %.",
    "french": "FastAPI est un framework web moderne et rapide (haute performance) pour la création "
    "d'API avec Python, basé sur les annotations de type standard de Python. Les principales "
    "caractéristiques sont : Rapidité : de très hautes performances, au niveau de NodeJS et Go.",
    "polish": "FastAPI to nowoczesny, wydajny framework webowy do budowania API z użyciem Pythona, "
    "bazujący na standardowym typowaniu. Kluczowe cechy: Wydajność: bardzo wysoka wydajność, "
    "porównywalna z NodeJS oraz Go. Szybkość kodowania: przyśpiesza szybkość pisania nowych "
    "funkcjonalności.",
    "symbols": "→ ← ⇒ ✓ ✗ ★ ☆ ♥ ∑ ∞ ≤ ≥ ≠ ± × ÷\n"
    "app/\n├── __init__.py\n├── main.py\n└── routers/\n    └── items.py\n",
}

# Name -> text: one per kind of content that byte counting gets wrong.
SYNTHETIC: dict[str, str] = {
    "python_code": PY,
    "json": _json(),
    "cjk": CJK,
    "cyrillic_greek": CYRILLIC,
    "emoji": EMOJI,
    "url_list": URLS,
    "md_table": TABLE,
    "minified": MINIFIED,
    "hashes": HASHES,
    **OTHER_SCRIPTS,
}

_MD_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_MD_FENCE = re.compile(r"\s{0,3}(`{3,}|~{3,})")
_RST_UNDERLINE = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")


def baseline_tokens(text: str) -> int:
    """The peers' estimate: ``ceil(utf8_bytes / 4)``."""
    return (len(text.encode("utf-8")) + 3) // 4


def split_markdown(text: str) -> list[str]:
    """Cut Markdown at ATX headings outside fenced code blocks."""
    sections: list[list[str]] = [[]]
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        m = _MD_FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        elif fence is None and _MD_HEADING.match(line) and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    return [s for s in ("".join(p) for p in sections) if s.strip()]


def split_rst(text: str) -> list[str]:
    """Cut reStructuredText before each title line that has a punctuation underline."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for i in range(1, len(lines)):
        title = lines[i - 1].rstrip()
        under = lines[i].rstrip("\r\n")
        if (
            title
            and not title[0].isspace()
            and _RST_UNDERLINE.fullmatch(under)
            and len(under.rstrip()) >= len(title)
            and i - 1 > starts[-1]
        ):
            starts.append(i - 1)
    starts.append(len(lines))
    parts = ["".join(lines[a:b]) for a, b in zip(starts, starts[1:])]
    return [p for p in parts if p.strip()]


def corpus_sections(corpus_dir: Path) -> list[str]:
    """All sections of one corpus directory, files in sorted order."""
    out: list[str] = []
    for path in sorted(corpus_dir.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".rst":
            out.extend(split_rst(text))
        elif path.suffix in (".md", ".markdown", ".mdx"):
            out.extend(split_markdown(text))
    return out


_ENCODINGS: dict[str, Any] = {}


def real_counts(sections: Iterable[str], tokenizer: str) -> list[int]:
    """Token counts of ``sections`` under ``tokenizer`` (needs ``bpe_openai``)."""
    enc = _ENCODINGS.get(tokenizer)
    if enc is None:
        import bpe_openai

        enc = _ENCODINGS[tokenizer] = bpe_openai.get_encoding(tokenizer)
    return [len(enc.encode_ordinary(s)) for s in sections]


def _stats(estimates: list[int], reals: list[int]) -> dict[str, float]:
    ratios = [e / r for e, r in zip(estimates, reals) if r > 0]
    return {
        "worst_under": min(ratios) - 1.0,
        "worst_over": max(ratios) - 1.0,
        "median_ratio": statistics.median(ratios),
        "total_ratio": sum(estimates) / max(1, sum(reals)),
    }


def measure(
    sections: list[str],
    tokenizers: Iterable[str] = TOKENIZERS,
    estimator: Callable[[str], int] = estimate_tokens,
    repeat: int = 3,
) -> dict[str, Any]:
    """Accuracy of ``estimator`` and of the baseline on ``sections``.

    Returns ``{"sections": n, "bytes": b, "seconds": t, "mb_per_s": x,
    "<tokenizer>": {"estimate": stats, "baseline": stats}, ...}`` where each ``stats``
    holds ``worst_under`` and ``worst_over`` (``min``/``max`` of ``estimate/real - 1``,
    so ``-0.2`` is a 20% under-count), ``median_ratio`` and ``total_ratio``. Empty
    sections are left out; ``seconds`` is the CPU time of the best of ``repeat`` passes
    of ``estimator`` over all sections (CPU time, so that other load on the machine
    does not count).
    """
    sections = [s for s in sections if s]
    nbytes = sum(len(s.encode("utf-8")) for s in sections)
    seconds = float("inf")
    estimates: list[int] = []
    for _ in range(max(1, repeat)):
        t0 = time.process_time()
        estimates = [estimator(s) for s in sections]
        seconds = min(seconds, time.process_time() - t0)
    baselines = [baseline_tokens(s) for s in sections]
    result: dict[str, Any] = {
        "sections": len(sections),
        "bytes": nbytes,
        "seconds": seconds,
        "mb_per_s": nbytes / 1e6 / seconds if seconds > 0 else float("inf"),
    }
    for name in tokenizers:
        reals = real_counts(sections, name)
        result[name] = {
            "estimate": _stats(estimates, reals),
            "baseline": _stats(baselines, reals),
        }
    return result


def _table(rows: list[tuple[str, str, str, int, dict[str, float]]]) -> str:
    head = (
        f"{'corpus':<14}{'tokenizer':<13}{'method':<10}{'sections':>9}"
        f"{'worst under':>13}{'worst over':>12}{'median':>9}{'total':>8}"
    )
    lines = [head, "-" * len(head)]
    for corpus, tok, method, n, st in rows:
        lines.append(
            f"{corpus:<14}{tok:<13}{method:<10}{n:>9}"
            f"{st['worst_under']:>+13.1%}{st['worst_over']:>+12.1%}"
            f"{st['median_ratio']:>9.3f}{st['total_ratio']:>8.3f}"
        )
    return "\n".join(lines)


def _synthetic_table() -> str:
    names = list(SYNTHETIC)
    texts = [SYNTHETIC[n] for n in names]
    reals = {tok: real_counts(texts, tok) for tok in TOKENIZERS}
    head = (
        f"{'synthetic':<16}{'cl100k':>8}{'o200k':>8}{'estimate':>10}"
        f"{'est/cl':>8}{'est/o2':>8}{'bytes/4':>9}{'b4/max':>8}"
    )
    lines = [head, "-" * len(head)]
    for i, name in enumerate(names):
        cl, o2 = reals["cl100k_base"][i], reals["o200k_base"][i]
        est, base = estimate_tokens(texts[i]), baseline_tokens(texts[i])
        lines.append(
            f"{name:<16}{cl:>8}{o2:>8}{est:>10}{est / cl:>8.2f}{est / o2:>8.2f}"
            f"{base:>9}{base / max(cl, o2):>8.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    corpora = Path(argv[1]) if len(argv) > 1 else DEFAULT_CORPORA
    rows: list[tuple[str, str, str, int, dict[str, float]]] = []
    speed: list[str] = []
    sets = [(c, corpus_sections(corpora / c)) for c in ("fastapi-docs", "flask-docs")]
    sets.append(("synthetic", list(SYNTHETIC.values())))
    for name, sections in sets:
        res = measure(sections)
        for tok in TOKENIZERS:
            for method in ("estimate", "baseline"):
                rows.append((name, tok, method, res["sections"], res[tok][method]))
        if name != "synthetic":
            speed.append(
                f"{name} {res['bytes']:,} bytes in {res['seconds'] * 1000:.1f} ms"
                f" = {res['mb_per_s']:.1f} MB/s"
            )
    print(_table(rows))
    print("ratio = estimate/real; worst under/over = lowest/highest ratio - 1;")
    print("baseline = ceil(utf8_bytes / 4)")
    print()
    print(_synthetic_table())
    print()
    print("estimate_tokens throughput (CPU time, best of 3): " + "; ".join(speed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
