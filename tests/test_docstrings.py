"""Docstrings rendered as readable text, linear on any input."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doc_index.indexer.docstrings import cleandoc, reduce_xrefs, render_docstring

REST = '''Make a URL.

    :param endpoint: The endpoint,
        with more words.
    :type endpoint: str
    :param int count: How many.
    :keyword strict: Be strict.
    :returns: The URL.
    :rtype: str
    :raises ValueError: If it fails.
    :meta private:

    .. versionadded:: 2.0
    '''

GOOGLE = '''Summary.

    Args:
        x (int): The x.
            More about x.
        *args: Extra.
        **kwargs (dict[str, int]): Options: many.

    Returns:
        dict[str, int]: A mapping.

    Yields:
        The items.

    Raises:
        ValueError: If bad.

    Example:
        >>> f(1)
        2
    '''

NUMPY = '''Summary.

    Parameters
    ----------
    x : int
        The x.
    y
        Untyped.

    Returns
    -------
    int
        The result.

    See Also
    --------
    other : Another.
    '''


@pytest.mark.parametrize(("doc", "expected"), [
    (REST, "Make a URL.\n\nParameters:\n- endpoint (str): The endpoint,\n  with more words."
           "\n- count (int): How many.\n\nKeyword Arguments:\n- strict: Be strict.\n\n"
           "Returns:\n- str: The URL.\n\nRaises:\n- ValueError: If it fails.\n\n"
           ".. versionadded:: 2.0"),
    (GOOGLE, "Summary.\n\nParameters:\n- x (int): The x.\n  More about x.\n- *args: Extra.\n"
             "- **kwargs (dict[str, int]): Options: many.\n\nReturns:\n"
             "- dict[str, int]: A mapping.\n\nYields:\n- The items.\n\nRaises:\n"
             "- ValueError: If bad.\n\nExample:\n  >>> f(1)\n  2"),
    (NUMPY, "Summary.\n\nParameters:\n- x (int): The x.\n- y: Untyped.\n\nReturns:\n"
            "- int: The result.\n\nSee Also:\n  other : Another."),
    ("", ""), (None, ""), ("   One line.   ", "One line."),
    ("Title\n\n    Not a section::\n\n        Args:\n", "Title\n\nNot a section::\n\n    Args:"),
])
def test_render(doc: str | None, expected: str) -> None:
    assert render_docstring(doc) == expected


@pytest.mark.parametrize(("text", "expected"), [
    (":meth:`~flask.Flask.route`", "`route`"),
    (":meth:`flask.Flask.route`", "`flask.Flask.route`"),
    (":class:`Foo <a.b.Foo>`", "`Foo`"),
    (":py:func:`!nolink`", "`nolink`"),
    (":ref:`the guide <guide>`", "the guide"),
    (":doc:`install`", "install"),
    (":pep:`8`", "PEP 8"),
    ("see :data:`x` and ``:not:`a role``` here", "see `x` and ``:not:`a role``` here"),
    ("[`Foo`][a.Foo] and [text][a.b.c] and [a.b][] and [link](http://x)",
     "`Foo` and text and a.b and [link](http://x)"),
    ("word:role:`x`", "word:role:`x`"),
    ("unclosed :meth:`x", "unclosed :meth:`x"),
])
def test_xrefs(text: str, expected: str) -> None:
    assert reduce_xrefs(text) == expected


@given(st.text(alphabet=" \t\nab:", max_size=60))
def test_cleandoc_is_inspects(text: str) -> None:
    assert cleandoc(text) == inspect.cleandoc(text)


# Sized so that a quadratic scan would run for many minutes (each is 0.4-1 MB); the only
# time limit is the suite's safety net.
HOSTILE = [
    ":a" * 200_000 + "`x`",
    "`" * 400_000,
    "``" + "x" * 400_000,
    "[" * 400_000 + "][]",
    "[a" * 200_000 + "][x]",
    ":" * 400_000,
    " " * 400_000 + ":param x:",
    ":param x:\n" * 60_000,
    "Args:\n" + "    x: y\n" * 60_000,
    "Parameters\n----------\n" * 30_000,
    "Args:\n\n" * 60_000,
    "x" + " " * 300_000 + "(",
    ":a:`" * 100_000,
]


@pytest.mark.parametrize("index", range(len(HOSTILE)))
def test_hostile_docstrings_render(index: int) -> None:
    text = HOSTILE[index]
    rendered = render_docstring(text)
    assert isinstance(rendered, str)
    assert len(rendered) <= 4 * len(text) + 100
