"""Documentation tools' configuration files, read as data: never imported or executed.

A repository's ``conf.py``, ``mkdocs.yml`` and ``book.toml`` say where its documentation
lives (``doc_selection``) and, for Sphinx, which suffixes are reStructuredText. They are
untrusted: ``conf.py`` is parsed with ``ast`` and only literal assignments are read;
``mkdocs.yml`` with PyYAML's safe loader, every tag it does not know (mkdocs.yml often
holds ``!!python/name:`` or ``!ENV``) read as a plain value and never resolved;
``book.toml`` with ``tomllib`` (``tomli`` before Python 3.11). A file over
``MAX_CONFIG_BYTES`` or one that does not parse gives None: the caller falls back to the
tool's default or to the next rule, never fails the build.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

MAX_CONFIG_BYTES = 256 * 1024

_RST_PARSERS = frozenset({"restructuredtext", "rst", "rest"})


def _text(data: bytes | None) -> str | None:
    if data is None or len(data) > MAX_CONFIG_BYTES:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def sphinx_source_suffix(data: bytes | None) -> Any:
    """The literal value of the last top-level ``source_suffix = ...`` of a Sphinx
    ``conf.py`` (a str, list, tuple or dict), or None (absent, not a literal, or the file
    does not parse)."""
    text = _text(data)
    if text is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (invalid escapes: SyntaxWarning on stderr)
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    value: Any = None
    for node in tree.body:
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, expr = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, expr = node.target, node.value
        if isinstance(target, ast.Name) and target.id == "source_suffix":
            try:
                value = ast.literal_eval(expr)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                value = None
    return value


def txt_is_rst(data: bytes | None) -> bool:
    """True when a ``conf.py``'s ``source_suffix`` makes ``.txt`` files reStructuredText:
    ``".txt"``, a list holding it (Sphinx parses every listed suffix as RST), or a dict
    mapping it to ``restructuredtext`` (Django's docs: ``source_suffix = ".txt"``)."""
    value = sphinx_source_suffix(data)
    if isinstance(value, str):
        return value.lower() == ".txt"
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, str) and v.lower() == ".txt" for v in value)
    if isinstance(value, dict):
        parser = value.get(".txt")
        return isinstance(parser, str) and parser.lower() in _RST_PARSERS
    return False


def mkdocs_docs_dir(data: bytes | None) -> str | None:
    """``docs_dir`` of a ``mkdocs.yml`` (``docs`` when it is not set), or None when the
    file is not a readable YAML mapping or ``docs_dir`` is not a string."""
    text = _text(data)
    if text is None:
        return None
    import yaml  # only a build that meets a mkdocs.yml pays for the import

    class _Loader(yaml.SafeLoader):
        """The safe loader, with every unknown tag read as the plain value it tags."""

    def plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        return None  # a tagged sequence or mapping: not a value this module reads

    _Loader.add_multi_constructor("", plain)
    try:
        config = yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except (yaml.YAMLError, RecursionError, MemoryError, ValueError, TypeError):
        return None
    if not isinstance(config, dict):
        return None
    docs_dir = config.get("docs_dir", "docs")
    return docs_dir if isinstance(docs_dir, str) else None


def mdbook_src(data: bytes | None) -> str | None:
    """``[book] src`` of an mdBook ``book.toml`` (``src`` when it is not set), or None when
    the file does not parse or ``src`` is not a string."""
    text = _text(data)
    if text is None:
        return None
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            return "src"  # no TOML reader: mdBook's default
    try:
        config = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError, ValueError):
        return None
    book = config.get("book", {})
    src = book.get("src", "src") if isinstance(book, dict) else "src"
    return src if isinstance(src, str) else None


__all__ = ["MAX_CONFIG_BYTES", "mdbook_src", "mkdocs_docs_dir", "sphinx_source_suffix",
           "txt_is_rst"]
