"""Include forms as a registry: one module of this package a form.

A form is a module here that declares ``FORM``, an :class:`~.form.IncludeForm` (the pages
it acts in, the configuration that turns it on, its marks, its directives or its line
handler); the package lists its modules when first imported (``indexer.registry``) and
takes each ``FORM``. The engine that runs them under the bounds is ``indexer.includes``;
the store's expansion asks here which forms a project's configuration turns on and which
pages may need expanding. Importing the forms is cheap: no form imports the engine.
"""

from __future__ import annotations

import re

from ..registry import declared
from .form import IncludeForm

# Line forms are tried in ``order`` (then name) on each line: the first that takes it wins.
INCLUDE_FORMS = tuple(sorted(declared(__name__, __path__, "FORM", IncludeForm),
                             key=lambda form: (form.order, form.name)))
FORMS = frozenset(form.name for form in INCLUDE_FORMS)


def forms_of(syntax: str) -> tuple[IncludeForm, ...]:
    """The forms acting in pages of ``syntax`` (``rst``, ``md``), in order."""
    return tuple(form for form in INCLUDE_FORMS if form.syntax == syntax)


def line_marks(syntax: str) -> re.Pattern[str]:
    """Text a line of ``syntax`` needs for any of its forms to act (a superset)."""
    return re.compile("|".join(form.mark.pattern for form in forms_of(syntax)) or r"(?!)")


def enabled(files: dict[str, bytes | None]) -> frozenset[str]:
    """The forms a project's configuration turns on: ``files`` maps a configuration file
    name (``conf.py``, ``mkdocs.yml``, ``book.toml``) to its bytes, None when there is none."""
    on = set()
    for form in INCLUDE_FORMS:
        if form.enabled_by is None:
            on.add(form.name)
            continue
        name, words = form.enabled_by
        data = files.get(name)
        if data is not None and (not words or any(word in data for word in words)):
            on.add(form.name)
    return frozenset(on)


__all__ = ["FORMS", "INCLUDE_FORMS", "IncludeForm", "enabled", "forms_of", "line_marks"]
