"""v0 selection semantics: f32 scores and their text, the White_Space split, budgeting."""

from __future__ import annotations

import json
import math
import struct
from fractions import Fraction

import pytest
from compat_support import CACHES
from hypothesis import given
from hypothesis import strategies as st

from doc_index.foundation.errors import ContextError
from doc_index.render.spec_json import render_v0 as render
from doc_index.search.v0_selection import (
    F32,
    WHITE_SPACE,
    format_f32,
    select_v0,
    split_white_space,
    to_f32,
)
from doc_index.server import spec_texts as tools
from doc_index.store.v0_cache import V0Document


def ratio(matches: int, words: int) -> float:
    return to_f32(to_f32(matches) / to_f32(words))


# --- f32 score text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (0.5, "0.5"),
        (0.75, "0.75"),
        (1.0, "1.0"),
        (1.5, "1.5"),
        (ratio(1, 3), "0.33333334"),
        (ratio(1, 12), "0.083333336"),
        (to_f32(0.000001), "0.000001"),
        (to_f32(5e-7), "5e-7"),
        (ratio(1, 3_000_000), "3.3333333e-7"),
    ],
)
def test_format_f32_spec_examples(value: float, text: str) -> None:
    assert format_f32(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (ratio(2, 3), "0.6666667"),
        (to_f32(0.1), "0.1"),
        (123.25, "123.25"),
        (2.0, "2.0"),
        (to_f32(1e12), "1000000000000.0"),
        (to_f32(1e13), "1e13"),
        (to_f32(1.5e13), "1.5e13"),
        (to_f32(1.5e-7), "1.5e-7"),
        (ratio(7, 3), "2.3333333"),
        # Exact ties between the two nearest shortest decimals: the reference (Rust) rounds
        # up, whatever the parity of the last digit.
        (ratio(257, 256), "1.0039063"),
        (ratio(259, 256), "1.0117188"),
        (to_f32(475.921875), "475.92188"),
    ],
)
def test_format_f32_layout_edges(value: float, text: str) -> None:
    """Fixed notation iff the first digit's decimal exponent is in [-6, 12]."""
    assert format_f32(value) == text


def shortest_closest(value: float) -> tuple[int, int]:
    """Exact oracle (as Ryu): the fewest digits inside the f32 rounding interval, closest to
    ``value``; returns ``(digits, exponent of the last digit)``."""
    pack = struct.Struct("<f")
    bits = struct.unpack("<I", pack.pack(value))[0]
    below = Fraction(pack.unpack(struct.pack("<I", bits - 1))[0])
    above = Fraction(pack.unpack(struct.pack("<I", bits + 1))[0])
    exact = Fraction(value)
    low, high = (below + exact) / 2, (exact + above) / 2
    inclusive = bits % 2 == 0

    def inside(candidate: Fraction) -> bool:
        return low <= candidate <= high if inclusive else low < candidate < high

    first = math.floor(math.log10(value))
    for precision in range(1, 10):
        for last in (first - precision + 1, first - precision + 2):
            scale = Fraction(10) ** last
            options = [
                n
                for n in (math.floor(exact / scale), math.ceil(exact / scale))
                if len(str(n)) == precision and inside(n * scale)
            ]
            if options:
                # the closest; of two equally close, the upper one (as Rust prints)
                return min(options, key=lambda n: (abs(n * scale - exact), -n)), last
    raise AssertionError(value)


@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_format_f32_is_shortest_round_trip(matches: int, words: int) -> None:
    value = ratio(matches, words)
    text = format_f32(value)
    assert to_f32(float(text)) == value
    digits, last = shortest_closest(value)
    assert Fraction(text) == digits * Fraction(10) ** last


def test_render_prints_f32_and_keeps_non_ascii() -> None:
    value = {"a": [F32(ratio(1, 3)), "é\n\x01"], "b": {}, "c": [], "d": True, "e": None}
    assert render(value) == '{"a":[0.33333334,"é\\n\\u0001"],"b":{},"c":[],"d":true,"e":null}\n'
    assert render(value, pretty=True) == (
        '{\n  "a": [\n    0.33333334,\n    "é\\n\\u0001"\n  ],\n'
        '  "b": {},\n  "c": [],\n  "d": true,\n  "e": null\n}\n'
    )
    plain = {"a": ["é\n\x01"], "b": {}, "c": [], "d": 3}
    assert render(plain, pretty=True) == json.dumps(plain, indent=2, ensure_ascii=False) + "\n"


def test_render_refuses_plain_floats() -> None:
    with pytest.raises(TypeError):
        render({"score": 0.5})


# --- White_Space -------------------------------------------------------------------------

SPEC_WHITE_SPACE = {
    *range(0x09, 0x0E),
    0x20,
    0x85,
    0xA0,
    0x1680,
    *range(0x2000, 0x200B),
    0x2028,
    0x2029,
    0x202F,
    0x205F,
    0x3000,
}


def test_white_space_is_exactly_the_spec_set() -> None:
    assert {ord(ch) for ch in WHITE_SPACE} == SPEC_WHITE_SPACE
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    kept = "".join(ch for ch in every if ord(ch) not in SPEC_WHITE_SPACE)
    assert "".join(split_white_space(every)) == kept


@pytest.mark.parametrize("code", sorted(SPEC_WHITE_SPACE))
def test_white_space_splits(code: int) -> None:
    assert split_white_space(f"a{chr(code)}b{chr(code)}{chr(code)}") == ["a", "b"]


@pytest.mark.parametrize("code", [0x1C, 0x1D, 0x1E, 0x1F, 0x200B, 0x180E, 0xFEFF])
def test_not_white_space_does_not_split(code: int) -> None:
    text = f"a{chr(code)}b"
    assert split_white_space(text) == [text]


def test_python_str_split_would_be_wrong() -> None:
    text = "a\x1cb"
    assert text.split() == ["a", "b"]
    assert split_white_space(text) == [text]


# --- selection ---------------------------------------------------------------------------


def docs(*contents: str) -> list[V0Document]:
    return [V0Document(f"d{i}.md", f"v{i}", text) for i, text in enumerate(contents)]


def test_terms_are_lowercased_kept_in_order_with_duplicates_and_punctuation() -> None:
    result = select_v0(docs("Dog dog. DOG cat"), "DOG dog. Dog", 100)
    why = result["documents"][0]["why"]
    assert why == {"query_terms": ["dog", "dog.", "dog"], "term_matches": 5, "total_words": 4}
    assert result["documents"][0]["score"] == 1.25
    assert result["selection"]["query"] == "DOG dog. Dog"


def test_repeated_query_terms_can_score_above_one() -> None:
    out = json.loads(tools.resolve(CACHES / "realistic", "deployment deployment", 4000))
    assert out["documents"][0]["score"] == 1.5
    assert out["documents"][0]["why"]["term_matches"] == 6


def test_empty_query_is_valid_and_selects_everything_that_fits() -> None:
    out = json.loads(tools.resolve(CACHES / "realistic", "", 4000))
    assert [d["id"] for d in out["documents"]] == ["deployment.md", "empty.md", "security.md"]
    assert all(d["score"] == 0.0 and d["why"]["query_terms"] == [] for d in out["documents"])


def test_greedy_budget_skips_what_does_not_fit() -> None:
    out = json.loads(tools.resolve(CACHES / "realistic", "deployment", 10))
    assert [d["id"] for d in out["documents"]] == ["deployment.md", "empty.md"]
    assert out["selection"] == {
        "query": "deployment",
        "budget": 10,
        "tokens_used": 10,
        "documents_considered": 3,
        "documents_selected": 2,
        "documents_excluded_by_budget": 1,
    }


def test_zero_budget_still_selects_zero_token_documents() -> None:
    out = json.loads(tools.resolve(CACHES / "realistic", "deployment", 0))
    assert [d["id"] for d in out["documents"]] == ["empty.md"]
    assert out["selection"]["documents_excluded_by_budget"] == 2


def test_later_smaller_documents_still_fill_the_budget() -> None:
    result = select_v0(docs("x " * 40, "x", "y y"), "x", 3)
    assert [d["id"] for d in result["documents"]] == ["d1.md", "d2.md"]
    assert result["selection"]["documents_excluded_by_budget"] == 1


def test_tokens_are_utf8_bytes_over_four_rounded_up() -> None:
    result = select_v0(docs("", "a", "abcd", "abcde", "café", "日本語"), "", 100)
    assert [d["tokens"] for d in result["documents"]] == [0, 1, 1, 2, 2, 3]


def test_order_is_score_descending_then_id_in_byte_order() -> None:
    documents = [
        V0Document("é.md", "v", "x"),
        V0Document("z.md", "v", "x"),
        V0Document("a.md", "v", "x y"),
        V0Document("b.md", "v", "x"),
    ]
    result = select_v0(documents, "x", 100)
    assert [d["id"] for d in result["documents"]] == ["b.md", "z.md", "é.md", "a.md"]


def test_unicode_words_are_lowercased() -> None:
    result = select_v0(docs("ÉCOLE École école"), "école", 100)
    assert result["documents"][0]["why"]["term_matches"] == 3


def test_query_that_is_not_unicode_text_is_invalid() -> None:
    with pytest.raises(ContextError) as caught:
        select_v0(docs("x"), "bad \udcff", 100)
    assert caught.value.code == "invalid_query"
