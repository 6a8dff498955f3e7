"""docutils' reStructuredText parser, trimmed to the work that decides the sections.

doc-index reads only the sections of the doctree (each title's line and its nesting); titles
and section bytes come from the source. docutils matches section titles only in the
document's own state machine: inside an indented block, a list item, a directive's body or
a table cell (``nested_parse`` without ``match_titles``) a title is an error message, never
a section. So what those constructs hold cannot change the sections; only how many lines
each one takes can, and docutils' state machines, kept here, decide that. The parser
drops the work whose result nothing reads:

- inline markup: text stays one text node (no roles, references or emphasis parsed);
- what is nested in a construct (a list item's or a field's body, a block quote, a
  definition, a footnote): docutils takes its lines by their indentation before it
  parses them, and a title in them is never a section, so they are not parsed (a block
  quote 160 deep was 160 nested parses, each holding its own copy of the lines);
- the doctree itself: a document or section keeps only its sections and titles, any
  other node is dropped when it is attached, with whatever is attached to it later, and
  the document's registries (ids, names, targets, footnotes, substitutions) stay empty.
  docutils kept about 1 KB of nodes per line of a field list; what nothing reads is
  garbage as soon as its construct ends;
- directives: each takes the indented block docutils' ``run_directive`` (or, for a name
  it does not know, ``unknown_directive``) would take, and ends as they do, but none is
  looked up, imported or run (no admonition body parsed, no csv or list table, no code);
- tables: a grid or simple table takes the lines docutils isolates for it; its cells are
  not parsed, nor its grid (docutils' grid parser is slow on a long table);
- nested state machines make their states when first used (docutils makes all 15 for each
  list, directive run or block quote it parses: a third of the parse).

``tests/test_rst_sections.py`` checks the sections against docutils' full parse.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser, states
from docutils.utils import new_reporter


class _States(dict):
    """A state machine's states, each made when first asked for."""

    def __init__(self, machine: Any, classes: Any) -> None:
        super().__init__()
        self._machine = machine
        self._classes = {cls.__name__: cls for cls in classes}
        self.running = False

    def __missing__(self, name: str) -> Any:
        state = self[name] = self._classes[name](self._machine, self._machine.debug)
        if self.running:  # the machine's run already set up the states it had
            state.runtime_init()
        return state


class _NestedStateMachine(states.NestedStateMachine):
    def add_states(self, state_classes: Any) -> None:
        self.states = _States(self, state_classes)

    def runtime_init(self) -> None:
        self.states.running = True
        super().runtime_init()


# docutils' own pattern for a directive's first line. Tried first here, where docutils tries
# it last: the other explicit constructs start with "[", "_" or "|", as no directive name does.
_DIRECTIVE = dict(states.Body.explicit.constructs)[states.Body.directive]


# _Lean is mixed into docutils' state classes (untyped): their attributes are Any to mypy.
_StateBase: Any = object


class _Lean(_StateBase):
    """What every state of the lean parser does instead of docutils' own work."""

    nested_sm = _NestedStateMachine
    nested_sm_cache: list[Any] = []  # docutils' cache of nested machines, for these states

    def __init__(self, state_machine: Any, debug: bool = False) -> None:
        super().__init__(state_machine, debug)
        kwargs = {"state_classes": STATE_CLASSES, "initial_state": "Body"}
        self.nested_sm_kwargs = self.indent_sm_kwargs = self.known_indent_sm_kwargs = kwargs

    def nested_parse(self, block: Any, input_offset: int, node: Any = None,
                     match_titles: bool = False, state_machine_class: Any = None,
                     state_machine_kwargs: Any = None) -> int:
        # Only a nested parse with the default machine over lines already taken (its
        # return value: where a run over all of them ends) is left out; one that decides
        # how many lines it takes (a quoted literal block's) runs.
        if match_titles or state_machine_class is not None or state_machine_kwargs is not None:
            return super().nested_parse(block, input_offset, node, match_titles,
                                        state_machine_class, state_machine_kwargs)
        return input_offset + len(block)

    def explicit_construct(self, match: Any) -> tuple[list[Any], bool]:
        found = _DIRECTIVE.match(match.string)
        if found:
            return self.directive(found)
        return super().explicit_construct(match)

    def directive(self, match: Any, **option_presets: Any) -> tuple[list[Any], bool]:
        # The lines run_directive and unknown_directive take; their blank-finish flag is
        # this one (a block cut by an unindented line ends on a non-blank line).
        sm = self.state_machine
        return [], sm.get_first_known_indented(match.end(), strip_top=0)[3]

    def table(self, isolate_function: Any, parser_class: Any) -> tuple[list[Any], bool]:
        return [], isolate_function()[2]


STATE_CLASSES = tuple(type(cls.__name__, (_Lean, cls), {}) for cls in states.state_classes)


def _plain_text_inliner(settings: Any) -> states.Inliner:
    """docutils' inliner with inline parsing turned off: a text is one text node. Its
    patterns are set up once (a hyperlink target uses one); ``Inliner`` cannot be
    subclassed for this (its set-up reads its own class's attributes only)."""
    inliner = states.Inliner()
    inliner.init_customizations(settings)
    inliner.init_customizations = lambda settings: None
    inliner.parse = lambda text, lineno, memo, parent: ([nodes.Text(text)], [])
    return inliner


class _Dropped(list):
    """The children of a node that is not kept: nothing is held."""

    def append(self, item: Any) -> None:
        pass

    def extend(self, items: Any) -> None:
        pass

    def insert(self, index: Any, item: Any) -> None:
        pass


class _SectionsOnly(list):
    """The children of the document or a section: its sections and titles only. Any other
    node is dropped, and so is what is attached to it afterwards (a list's items)."""

    def append(self, item: Any) -> None:
        if isinstance(item, nodes.section):
            item.children = _SectionsOnly(c for c in item.children if _kept(c))
            list.append(self, item)
        elif isinstance(item, nodes.title):
            list.append(self, item)
        elif isinstance(item, nodes.Element):
            item.children = _Dropped()

    def extend(self, items: Any) -> None:
        for item in items:
            self.append(item)

    def insert(self, index: Any, item: Any) -> None:
        if _kept(item):
            list.insert(self, index, item)


def _kept(node: Any) -> bool:
    return isinstance(node, (nodes.section, nodes.title))


class _PopNothing(list):
    def pop(self, *args: Any) -> Any:
        return super().pop(*args) if self else None


class _LeanDocument(nodes.document):
    """A document that notes no targets, names, ids, footnotes or substitutions (only
    cross-references read them) and keeps only its sections (``_SectionsOnly``)."""

    def __init__(self, settings: Any, reporter: Any, **attributes: Any) -> None:
        super().__init__(settings, reporter, **attributes)
        self.children = _SectionsOnly()
        # A comment "end of inclusion from ..." pops this log: docutils raised IndexError
        # on one that no include put there (one comment stopped the build).
        self.include_log = _PopNothing()

    def set_id(self, node: Any, msgnode: Any = None, suggested_prefix: str = "") -> str:
        return ""

    def _note_nothing(self, *args: Any, **kwargs: Any) -> None:
        return None

    note_implicit_target = note_explicit_target = note_refname = note_refid = _note_nothing
    note_indirect_target = note_anonymous_target = note_autofootnote = _note_nothing
    note_autofootnote_ref = note_symbol_footnote = note_symbol_footnote_ref = _note_nothing
    note_footnote = note_footnote_ref = note_citation = note_citation_ref = _note_nothing
    note_substitution_def = note_substitution_ref = note_pending = _note_nothing
    note_parse_message = note_transform_message = _note_nothing


@lru_cache(maxsize=1)
def parser() -> tuple[Parser, Any]:
    """The lean parser and its settings, made once per process (a worker inherits them)."""
    settings = get_default_settings(Parser)
    settings.report_level = 5
    settings.halt_level = 5  # a title in a directive body is a "severe" message: no stop
    settings.warning_stream = False
    # No directive runs here; these stay off so that no change to that reads a file.
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    lean = Parser(inliner=_plain_text_inliner(settings))
    lean.state_classes = STATE_CLASSES
    return lean, settings


def section_titles(text: str) -> list[tuple[int, int]]:
    """(1-based docutils line of the title text, depth) of every section title, in order."""
    lean, settings = parser()
    document = _LeanDocument(settings, new_reporter("<doc>", settings), source="<doc>")
    document.note_source("<doc>", -1)
    try:
        lean.parse(text, document)
    finally:  # its lines and states hold cycles: freed now, not at the next collection
        machine, lean.statemachine = lean.statemachine, None
        if machine is not None:
            machine.input_lines = None
            machine.unlink()
    found: list[tuple[int, int]] = []

    def walk(node: Any, depth: int) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                title = child.children[0] if child.children else None
                if isinstance(title, nodes.title) and title.line:
                    found.append((title.line, depth))
                walk(child, depth + 1)

    walk(document, 1)
    return found
