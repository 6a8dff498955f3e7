"""A docstring rendered as the text a reader of the built docs would see.

Docstrings come in three section styles (reST field lists, Google, NumPy) and are full
of cross-references (``:meth:`~flask.Flask.route```, mkdocstrings' ``[`x`][]``). The
rendering here turns each style's parameters, returns and raises into one readable
layout and reduces every cross-reference to its visible text::

    Parameters:
    - endpoint (str): The endpoint name.
      A second line of its description.

    Returns:
    - str: The URL.

Everything is line-based or a single forward scan: linear in the input, whatever it is
(the docstrings are untrusted text).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

MAX_DOCSTRING_CHARS = 256 * 1024
MAX_LINK_TEXT = 200

# Section names as the Google (napoleon) style writes them, and the heading each gets.
_GOOGLE = {
    "args": "Parameters", "arguments": "Parameters", "parameters": "Parameters",
    "params": "Parameters", "keyword args": "Keyword Arguments",
    "keyword arguments": "Keyword Arguments", "kwargs": "Keyword Arguments",
    "other parameters": "Other Parameters", "attributes": "Attributes",
    "returns": "Returns", "return": "Returns", "yields": "Yields", "yield": "Yields",
    "raises": "Raises", "raise": "Raises", "warns": "Warns", "receives": "Receives",
    "example": "Example", "examples": "Examples", "note": "Note", "notes": "Notes",
    "warning": "Warning", "warnings": "Warnings", "see also": "See Also", "todo": "Todo",
    "references": "References", "methods": "Methods", "tip": "Tip", "hint": "Hint",
    "important": "Important", "caution": "Caution", "danger": "Danger", "error": "Error",
    "attention": "Attention",
}
_NUMPY = {k: v for k, v in _GOOGLE.items()
          if k in ("parameters", "other parameters", "attributes", "returns", "yields",
                   "raises", "warns", "receives", "examples", "notes", "warnings",
                   "see also", "references", "methods")}
# Sections whose body is a list of entries (name, type, description).
_ENTRY_SECTIONS = {"Parameters", "Keyword Arguments", "Other Parameters", "Attributes",
                   "Raises", "Warns", "Receives"}
_RETURN_SECTIONS = {"Returns", "Yields"}

# reST fields -> (section, what the field gives).
_FIELDS = {
    "param": ("Parameters", "desc"), "parameter": ("Parameters", "desc"),
    "arg": ("Parameters", "desc"), "argument": ("Parameters", "desc"),
    "key": ("Parameters", "desc"), "type": ("Parameters", "type"),
    "keyword": ("Keyword Arguments", "desc"), "kwarg": ("Keyword Arguments", "desc"),
    "kwparam": ("Keyword Arguments", "desc"), "kwtype": ("Keyword Arguments", "type"),
    "var": ("Attributes", "desc"), "ivar": ("Attributes", "desc"),
    "cvar": ("Attributes", "desc"), "vartype": ("Attributes", "type"),
    "returns": ("Returns", "desc"), "return": ("Returns", "desc"),
    "rtype": ("Returns", "type"), "yields": ("Yields", "desc"), "yield": ("Yields", "desc"),
    "ytype": ("Yields", "type"), "raises": ("Raises", "desc"), "raise": ("Raises", "desc"),
    "except": ("Raises", "desc"), "exception": ("Raises", "desc"),
    "meta": ("", "drop"),
}
_NUMPY_UNDERLINE = re.compile(r"-{3,}[ \t]*")
# mkdocstrings/autorefs cross-references: [title][dotted.id] and [dotted.id][].
_AUTOREF = re.compile(r"\[([^\[\]\n]{1,200})\]\[([\w.]*)\]")  # 200: MAX_LINK_TEXT
_ROLE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+.-:")
# Roles whose text reads as prose, not as code.
_PROSE_ROLES = {"ref", "doc", "term", "abbr", "numref", "download", "guilabel", "dfn",
                "menuselection", "emphasis", "strong", "title-reference", "sub", "sup",
                "keyword", "option"}


def cleandoc(text: str) -> str:
    """``inspect.cleandoc``: tabs expanded, the first line stripped, the common indent
    of the others removed, blank lines at both ends dropped. (A copy, so a parse does
    not import ``inspect``.)"""
    lines = text.expandtabs().split("\n")
    margins = [len(line) - len(line.lstrip()) for line in lines[1:] if line.lstrip()]
    margin = min(margins) if margins else 0
    lines[0] = lines[0].lstrip()
    lines[1:] = [line[margin:] for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start]:
        start += 1
    return "\n".join(lines[start:])


def render_docstring(text: str | None) -> str:
    """The readable text of a docstring (see the module docstring for the layout)."""
    if not text:
        return ""
    if len(text) > MAX_DOCSTRING_CHARS:
        text = text[:MAX_DOCSTRING_CHARS]
    lines = cleandoc(text).split("\n")
    out: list[str] = []
    for block in _blocks(lines):
        if out and out[-1] != "" and block and block[0] != "":
            out.append("")
        out.extend(block)
    while out and not out[-1].strip():
        out.pop()
    return reduce_xrefs("\n".join(line.rstrip() for line in out))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blocks(lines: list[str]) -> Iterator[list[str]]:
    """The docstring cut into plain lines and rendered sections, in order."""
    index = 0
    plain: list[str] = []
    while index < len(lines):
        line = lines[index]
        section, end = _section_at(lines, index)
        if section is None:
            plain.append(line)
            index += 1
            continue
        if plain:
            yield _trim(plain)
            plain = []
        yield section
        index = end
    if plain:
        yield _trim(plain)


def _trim(lines: list[str]) -> list[str]:
    """``lines`` without the blank lines at its end."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end]


def _section_at(lines: list[str], index: int) -> tuple[list[str] | None, int]:
    """A section starting at ``lines[index]``: (its rendered lines, the next index)."""
    line = lines[index]
    if line.startswith(":") and _field(line) is not None:
        return _fields_section(lines, index)
    name = line.strip().lower()
    if (index + 1 < len(lines) and _indent(line) == 0 and name in _NUMPY
            and _NUMPY_UNDERLINE.fullmatch(lines[index + 1])):
        return _numpy_section(lines, index)
    if _indent(line) == 0 and line.endswith(":") and line[:-1].strip().lower() in _GOOGLE:
        body, end = _indented_block(lines, index + 1)
        if body:
            return _google_section(_GOOGLE[line[:-1].strip().lower()], body), end
    return None, index


def _indented_block(lines: list[str], start: int) -> tuple[list[str], int]:
    """The lines from ``start`` that are indented (blank lines inside kept), dedented."""
    end = start
    last = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > 0):
        if lines[end].strip():
            last = end + 1
        end += 1
    block = lines[start:last]
    margins = [_indent(line) for line in block if line.strip()]
    margin = min(margins) if margins else 0
    return [line[margin:] for line in block], last


def _entries(block: list[str]) -> list[tuple[str, list[str]]]:
    """(head line, continuation lines dedented) for each line at indent 0 of ``block``."""
    entries: list[tuple[str, list[str]]] = []
    for line in block:
        if line.strip() and _indent(line) == 0 or not entries:
            entries.append((line.strip(), []))
        else:
            entries[-1][1].append(line)
    cleaned = []
    for head, more in entries:
        more = _trim(more)
        margins = [_indent(line) for line in more if line.strip()]
        margin = min(margins) if margins else 0
        cleaned.append((head, [line[margin:] for line in more]))
    return cleaned


def _split_colon(text: str) -> tuple[str, str] | None:
    """``text`` cut at its first ``:`` that is outside brackets and followed by a space or
    the end: (before, after); None when there is none."""
    depth = 0
    for position, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == ":" and depth == 0 and (position + 1 == len(text)
                                             or text[position + 1] in " \t"):
            return text[:position].strip(), text[position + 1:].strip()
    return None


def _no_space_outside_brackets(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char.isspace() and depth == 0:
            return False
    return bool(text)


class _Entry(NamedTuple):
    name: str
    type: str
    desc: list[str]


def _entry_lines(entry: _Entry) -> list[str]:
    head = entry.name
    if entry.type:
        head = f"{head} ({entry.type})" if head else entry.type
    first = entry.desc[0] if entry.desc else ""
    text = f"- {head}: {first}" if head and first else f"- {head or first}"
    return [text.rstrip()] + [("  " + line).rstrip() for line in entry.desc[1:]]


def _render(title: str, entries: list[_Entry]) -> list[str]:
    out = [title + ":"]
    for entry in entries:
        out += _entry_lines(entry)
    return out


def _google_section(title: str, block: list[str]) -> list[str]:
    if title in _RETURN_SECTIONS:
        first, rest = block[0].strip(), block[1:]
        split = _split_colon(first)
        if split and _no_space_outside_brackets(split[0]):
            lead = [split[1]] if split[1] else []
            return _render(title, [_Entry("", split[0], lead + _dedent(rest))])
        return _render(title, [_Entry("", "", [first, *_dedent(rest)])])
    if title not in _ENTRY_SECTIONS:
        return [title + ":", *[("  " + line).rstrip() for line in block]]
    entries = []
    for head, more in _entries(block):
        split = _split_colon(head)
        name, desc = split if split else (head, "")
        name, kind = _name_and_type(name)
        if title in ("Raises", "Warns") and not kind:
            entries.append(_Entry(name, "", ([desc] if desc else []) + more))
        else:
            entries.append(_Entry(name, kind, ([desc] if desc else []) + more))
    return _render(title, entries)


def _dedent(lines: list[str]) -> list[str]:
    margins = [_indent(line) for line in lines if line.strip()]
    margin = min(margins) if margins else 0
    return [line[margin:] for line in _trim(lines)]


def _name_and_type(text: str) -> tuple[str, str]:
    """``name (type)`` -> (name, type); anything else is all name."""
    if text.endswith(")") and "(" in text:
        opening = text.index("(")
        return text[:opening].strip(), text[opening + 1:-1].strip()
    return text, ""


def _numpy_section(lines: list[str], index: int) -> tuple[list[str], int]:
    title = _NUMPY[lines[index].strip().lower()]
    end = index + 2
    while end < len(lines) and not (
            end + 1 < len(lines) and lines[end].strip().lower() in _NUMPY
            and _indent(lines[end]) == 0 and _NUMPY_UNDERLINE.fullmatch(lines[end + 1])):
        end += 1
    block = _trim(lines[index + 2:end])
    if title not in _ENTRY_SECTIONS | _RETURN_SECTIONS:
        return [title + ":", *[("  " + line).rstrip() for line in block]], end
    entries = []
    for head, more in _entries(block):
        if " : " in head or head.endswith(" :"):
            name, _, kind = head.partition(" :")
            entries.append(_Entry(name.strip(), kind.strip(), more))
        elif title in _RETURN_SECTIONS or title in ("Raises", "Warns"):
            if title in _RETURN_SECTIONS:
                entries.append(_Entry("", head, more))
            else:
                entries.append(_Entry(head, "", more))
        else:
            entries.append(_Entry(head, "", more))
    return _render(title, entries), end


def _field(line: str) -> tuple[str, str, str] | None:
    """``:param int x: text`` -> ("param", "int x", "text"); None when not a field."""
    end = line.find(":", 1)
    if end <= 1:
        return None
    marker = line[1:end]
    rest = line[end + 1:]
    if rest and not rest[0].isspace():
        return None
    kind, _, argument = marker.partition(" ")
    if kind not in _FIELDS:
        return None
    return kind, argument.strip(), rest.strip()


def _fields_section(lines: list[str], index: int) -> tuple[list[str], int]:
    """A run of reST fields, grouped: Parameters, Returns, Raises... in the order each
    group first appears."""
    groups: dict[str, dict[str, list]] = {}
    end = index
    while end < len(lines):
        field = _field(lines[end]) if lines[end].startswith(":") else None
        if field is None:
            if lines[end].strip() == "" and end + 1 < len(lines) \
                    and lines[end + 1].startswith(":") and _field(lines[end + 1]):
                end += 1
                continue
            break
        more, after = _indented_block(lines, end + 1)
        _add_field(groups, field, more)
        end = after
    out: list[str] = []
    for title, entries in groups.items():
        if out:
            out.append("")
        out += _render(title, [_Entry(name, e[0], e[1]) for name, e in entries.items()])
    return out, end


def _add_field(groups: dict[str, dict[str, list]], field: tuple[str, str, str],
               more: list[str]) -> None:
    kind, argument, text = field
    title, gives = _FIELDS[kind]
    if gives == "drop":
        return
    group = groups.setdefault(title, {})
    if title in _RETURN_SECTIONS:
        argument = ""
    elif gives == "desc" and " " in argument:  # :param int x: -> type int, name x
        type_text, _, argument = argument.rpartition(" ")
        group.setdefault(argument, ["", []])[0] = type_text
    entry = group.setdefault(argument, ["", []])
    if gives == "type":
        entry[0] = " ".join([text, *(line.strip() for line in more)]).strip()
    else:
        entry[1] = ([text] if text else []) + more


# -- cross-references ---------------------------------------------------------------------

def reduce_xrefs(text: str) -> str:
    """Roles (``:meth:`~a.B.c``` -> `` `c` ``, ``:class:`Foo <a.b.Foo>``` -> `` `Foo` ``,
    ``:ref:`text <label>``` -> text) and mkdocstrings references (``[`x`][]`` ->
    `` `x` ``, ``[text][a.b.c]`` -> text) reduced to what the built page shows."""
    return _AUTOREF.sub(lambda m: m.group(1), _reduce_roles(text))


def _reduce_roles(text: str) -> str:
    """One forward scan over backtick spans: each ``:role:`content``` is replaced, other
    spans (literals, default-role text) are kept as they are."""
    out: list[str] = []
    done = 0  # text[:done] is in out
    position = 0
    while True:
        tick = text.find("`", position)
        if tick < 0:
            break
        if text.startswith("``", tick):  # an inline literal: kept, roles inside too
            close = text.find("``", tick + 2)
            if close < 0:
                break
            position = close + 2
            continue
        close = text.find("`", tick + 1)
        if close < 0:
            break
        start = _role_start(text, tick, done)
        if start is not None:
            out.append(text[done:start])
            out.append(_role_text(text[start + 1:tick - 1], text[tick + 1:close]))
            done = close + 1
        position = close + 1
    out.append(text[done:])
    return "".join(out)


def _role_start(text: str, tick: int, floor: int) -> int | None:
    """Where the ``:role:`` ending just before ``text[tick]`` starts, or None. Scans
    back at most to ``floor`` (text already consumed), so the whole scan stays linear."""
    if tick == 0 or text[tick - 1] != ":":
        return None
    start = tick - 1
    while start > floor and text[start - 1] in _ROLE_CHARS:
        start -= 1
    first = text.find(":", start, tick - 1)
    if first < 0 or first == tick - 1:
        return None
    if first > 0 and (text[first - 1].isalnum() or text[first - 1] in "_`"):
        return None
    name = text[first + 1:tick - 1]
    if not name or any(not part for part in name.split(":")):
        return None
    return first


def _role_text(role: str, content: str) -> str:
    """What a role shows: ``text <target>`` -> text, ``~a.b.c`` -> c, ``!x`` -> x."""
    name = role.rsplit(":", 1)[-1]
    content = content.strip()
    shown = content
    if content.endswith(">") and "<" in content:
        label = content[: content.rindex("<")].strip()
        shown = label or content[content.rindex("<") + 1:-1]
    elif content.startswith("!"):
        shown = content[1:]
    elif content.startswith("~"):
        shown = content[1:].rsplit(".", 1)[-1]
    if name in ("pep", "rfc"):
        return f"{name.upper()} {shown}"
    if name in _PROSE_ROLES:
        return shown
    return f"`{shown}`"


__all__ = ["MAX_DOCSTRING_CHARS", "cleandoc", "reduce_xrefs", "render_docstring"]
