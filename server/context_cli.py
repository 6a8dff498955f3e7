"""``context``: the reference CLI of the MCP tools, plus ``build`` of v0 caches.

    context resolve --cache PATH --query Q --budget N [--format json|pretty]
    context inspect --cache PATH
    context list-caches --root DIR
    context outline --cache PATH [--prefix P] [--depth N] [--cursor ID] [--budget N]
    context read --cache PATH --id ID [--scope section|page|neighbours] [--line L]
                 [--budget N]
    context build --sources DIR --cache DIR [--force]

``--force`` replaces an existing Context Engine cache only; any other existing path
(a directory without a v0 ``manifest.json``, a file, a symlink) is refused with exit 6
and one ``error:`` line naming it, and left as it was.

Success: the tool's bytes on stdout, exit 0; stdout and ``--query`` are UTF-8 whatever
the locale. Failure: one stderr line ``error: <message>``, nothing on stdout, the exit
code of ``errors.py`` (usage errors 1); the message is the one the MCP tool gives (the
spec's canonical text for the three v0 tools). Never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from ..foundation.errors import (
    EXIT_CODES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CacheMissing,
    ContextError,
    UsageError,
    as_context_error,
    spec_message,
)
from ..foundation.printable import printable
from ..library import build_v0
from ..search.budget import parse_budget
from ..search.results import READ_SCOPES
from . import navigation_tools, spec_tools


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _utf8_argument(arg: str) -> str:
    """A command-line text as UTF-8 whatever the locale decoded it with (paths stay OS
    strings). Bytes that are not UTF-8 stay surrogate-escaped: resolve says invalid_query."""
    return os.fsencode(arg).decode("utf-8", "surrogateescape")


def _existing(text: str) -> Path:
    """A ``--cache`` or ``--root`` path: the empty one names no directory (cache_missing,
    as the specs say of a root or cache that does not exist), never the current one."""
    if not text:
        raise CacheMissing(detail="empty path")
    return Path(text)


def _resolve(args: argparse.Namespace) -> str:
    budget = parse_budget(args.budget)
    if not sys.stderr.isatty():  # (the reference's stderr: nothing on success)
        return spec_tools.resolve(_existing(args.cache), args.query, budget,
                                  args.format == "pretty")
    from ..library import Cache
    from ..render.spec_json import answer_text

    cache = Cache(_existing(args.cache))
    answer = cache.resolve(args.query, budget)
    _stderr(printable(cache.meaning_status(answer).line()))  # a person: meaning or why not
    return answer_text(answer, args.format == "pretty")


def _inspect(args: argparse.Namespace) -> str:
    return spec_tools.inspect_cache(_existing(args.cache))


def _list_caches(args: argparse.Namespace) -> str:
    return spec_tools.list_caches(_existing(args.root))


def _outline(args: argparse.Namespace) -> str:
    return navigation_tools.outline_text(_existing(args.cache), args.prefix,
                                         parse_budget(args.budget), depth=args.depth,
                                         cursor=args.cursor)


def _read(args: argparse.Namespace) -> str:
    return navigation_tools.read_text(_existing(args.cache), args.id, args.scope,
                                      parse_budget(args.budget), line=args.line)


def _build(args: argparse.Namespace) -> str:
    if not args.sources or not args.cache:
        raise UsageError("--sources and --cache need a directory, not an empty path")
    built = build_v0(args.sources, args.cache, force=args.force)
    _stderr(f"Built cache: {built.document_count} documents, version {built.cache_version}")
    return ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="context", description=__doc__.splitlines()[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, help_text: str, run: Callable[[argparse.Namespace], str]
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
        sub.set_defaults(run=run)
        return sub

    resolve = command("resolve", "Resolve a query against a cache within a token budget", _resolve)
    resolve.add_argument("--cache", required=True, metavar="PATH")
    resolve.add_argument("--query", required=True, metavar="Q")
    resolve.add_argument("--budget", required=True, metavar="N")
    resolve.add_argument("--format", choices=("json", "pretty"), default="json")

    inspect = command(
        "inspect", "Inspect a cache: version, document count, size, validity", _inspect
    )
    inspect.add_argument("--cache", required=True, metavar="PATH")

    list_caches = command("list-caches", "List the cache directories under a root", _list_caches)
    list_caches.add_argument("--root", required=True, metavar="DIR")

    _navigation_commands(command)

    build = command(
        "build", "Build a Context Engine v0 cache from a directory of .md files", _build
    )
    build.add_argument("--sources", required=True, metavar="DIR")
    build.add_argument("--cache", required=True, metavar="DIR")
    build.add_argument("--force", action="store_true", help="replace an existing cache")
    return parser


def _navigation_commands(
    command: Callable[[str, str, Callable[[argparse.Namespace], str]], argparse.ArgumentParser]
) -> None:
    outline = command("outline", "A cache's files and headings with section ids and tokens "
                                 "(context_outline)", _outline)
    outline.add_argument("--cache", required=True, metavar="PATH")
    outline.add_argument("--prefix", default="", metavar="P")
    outline.add_argument("--depth", type=int, metavar="N")
    outline.add_argument("--cursor", metavar="ID")
    outline.add_argument("--budget", default=str(navigation_tools.DEFAULT_BUDGET), metavar="N")
    read = command("read", "A section by id, its page or its neighbours (context_read)", _read)
    read.add_argument("--cache", required=True, metavar="PATH")
    read.add_argument("--id", required=True, metavar="ID")
    read.add_argument("--scope", choices=READ_SCOPES, default="section")
    read.add_argument("--line", type=int, metavar="L")
    read.add_argument("--budget", default=str(navigation_tools.DEFAULT_BUDGET), metavar="N")


def run() -> NoReturn:
    """The ``context`` console script: ``main``, then a fast exit (``fast_exit``)."""
    from ..foundation.fast_exit import exit_now

    exit_now(main())


def main(argv: list[str] | None = None) -> int:
    """Run one ``context`` command and return its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        _stderr(f"error: {exc}")
        return exc.exit_code
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if argv is None:
        for field in ("query", "id", "prefix", "cursor"):
            if isinstance(getattr(args, field, None), str):
                setattr(args, field, _utf8_argument(getattr(args, field)))
    try:
        data = args.run(args).encode("utf-8")
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except UsageError as exc:  # an argument no spec covers (``build``'s)
        _stderr(f"error: {exc}")
        return exc.exit_code
    except Exception as exc:  # never a path or a traceback
        error = as_context_error(exc)
        _stderr(f"error: {_message(args, error)}")
        return error.exit_code
    return _write(data)


def _message(args: argparse.Namespace, error: ContextError) -> str:
    """The three tools say their code's canonical text only, the navigation tools what
    their MCP error says; ``build`` (no spec tool) may say more (NotACache names the path
    it leaves alone)."""
    if args.run is _build:
        return error.message
    if args.run in (_outline, _read):
        return navigation_tools.error_message(error)
    return spec_message(error.code)


def _write(data: bytes) -> int:
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError:
        # Closed stdout (e.g. a pipe): no more writes to it, not even at interpreter exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _stderr(f"error: {spec_message('io_error')}")
        return EXIT_CODES["io_error"]
    return EXIT_OK


def _stderr(line: str) -> None:
    sys.stderr.write(line.replace("\n", " ") + "\n")
    sys.stderr.flush()


if __name__ == "__main__":
    run()
