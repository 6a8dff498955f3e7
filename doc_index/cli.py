"""``doc-index``: build, list, inspect, resolve, delete, serve, hook.

A thin layer over the library: ``store.IndexStore`` builds caches, ``server.tools``
answers the three tools by cache name, ``server.mcp_server`` serves them. Errors are one
``error: <message>`` line on stderr with the exit codes of DESIGN.md; never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from . import __version__
from .printable import printable

EXIT_USAGE = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    root_help = "cache root (default: $DOC_INDEX_ROOT or ~/.doc-index)"
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, default=None, help=root_help)
    parser = _Parser(prog="doc-index", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"doc-index {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    build = sub.add_parser("build", parents=[common], help="index a directory or git repository")
    build.add_argument("source", help="a local directory, or a git URL / bare repository path")
    build.add_argument("--name", help="cache name (default: the directory or repository name)")
    build.add_argument("--ref", help="git only: the branch, tag or commit to index")
    build.add_argument("--full", action="store_true", help="re-parse every file")
    build.add_argument("--max-file-bytes", type=_file_bytes, default=10 * 1024 * 1024,
                       help="skip files larger than this (default 10 MB, at most 1 GiB)")

    sub.add_parser("list", parents=[common], help="list the caches under the root")
    inspect = sub.add_parser("inspect", parents=[common], help="inspect a cache")
    inspect.add_argument("name")
    resolve = sub.add_parser("resolve", parents=[common], help="select sections for a query")
    resolve.add_argument("name")
    resolve.add_argument("query")
    resolve.add_argument("--budget", default="4000", help="token budget (default 4000)")
    resolve.add_argument("--format", choices=("json", "pretty"), default="json")
    delete = sub.add_parser("delete", parents=[common], help="delete a cache")
    delete.add_argument("name")

    serve = sub.add_parser("serve", parents=[common], help="MCP server on stdin/stdout")
    serve.add_argument("--tool-names", choices=("dotted", "underscore"), default="dotted",
                       help="publish context.resolve (dotted) or context_resolve (underscore)")

    hook = sub.add_parser("hook", parents=[common], help="git hooks that rebuild after pull")
    hook.add_argument("action", choices=("install", "uninstall"))
    hook.add_argument("repo", nargs="?", default=".", help="a git checkout (default: .)")
    return parser


def _file_bytes(text: str) -> int:
    """``--max-file-bytes``: an integer in [1, MAX_RAW_FILE_BYTES], else a usage error (0
    or less would skip every file; more than a manifest may describe is refused)."""
    from .store.manifest import MAX_RAW_FILE_BYTES

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= MAX_RAW_FILE_BYTES:
        raise argparse.ArgumentTypeError(
            f"{text} is out of range: use 1 to {MAX_RAW_FILE_BYTES} bytes"
        )
    return value


def _root(args: argparse.Namespace) -> Path:
    from .store.roots import default_root

    return args.root if args.root is not None else default_root()


def run() -> NoReturn:
    """The ``doc-index`` console script: ``main``, then a fast exit (``fast_exit``)."""
    from .fast_exit import exit_now

    exit_now(main())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if argv is None and args.command == "resolve":
        # The query is UTF-8 whatever the locale decoded argv with (as in ``context``).
        args.query = os.fsencode(args.query).decode("utf-8", "surrogateescape")
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: a fact, never a traceback
        from .errors import ContextError

        if isinstance(exc, ContextError):
            print(f"error: {exc.message}", file=sys.stderr)
            return exc.exit_code
        from .store.index_store import InvalidCacheKey

        if isinstance(exc, InvalidCacheKey):
            print(f"error: {printable(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
        if isinstance(exc, OSError):
            print(f"error: {_os_message(exc)}", file=sys.stderr)
            return 6
        print(f"error: internal error ({type(exc).__name__}: {printable(str(exc))})",
              file=sys.stderr)
        return 7


def _os_message(exc: OSError) -> str:
    parts = [printable(exc.strerror or str(exc))]
    if exc.filename:
        parts.append(printable(str(exc.filename)))
    return ": ".join(parts)


def _run(args: argparse.Namespace) -> int:
    command = args.command
    if command == "build":
        from .build import run_build

        return run_build(args.source, _root(args), name=args.name, ref=args.ref, full=args.full,
                         max_bytes=args.max_file_bytes)
    if command == "serve":
        from .server.mcp_server import run

        return run(_root(args), tool_names=args.tool_names)
    if command == "hook":
        from .store.git_hooks import run_hook_command

        return run_hook_command(args.action, Path(args.repo), args.root)
    if command == "delete":
        return _delete(_root(args), args.name)
    return _tool(args)


def _delete(root: Path, name: str) -> int:
    from .errors import ContextError
    from .server.cache_paths import resolve_cache_name
    from .store.index_store import IndexStore

    shown = printable(name)  # one line, whatever the name holds
    try:
        resolve_cache_name(root, name)
    except ContextError:
        print(f"not found: {shown}", file=sys.stderr)
        return 4
    deleted = IndexStore(root).delete_index(name)
    print(f"{'deleted' if deleted else 'not found'}: {shown}", file=sys.stderr)
    return 0 if deleted else 4


def _tool(args: argparse.Namespace) -> int:
    from .server import tools
    from .server.cache_paths import resolve_cache_name

    root = _root(args)
    if args.command == "list":
        out = tools.list_caches(root)
    elif args.command == "inspect":
        out = tools.inspect_cache(resolve_cache_name(root, args.name))
    else:
        budget: object = args.budget
        try:
            budget = int(args.budget)
        except ValueError:
            pass
        out = tools.resolve(resolve_cache_name(root, args.name), args.query, budget,
                            pretty=args.format == "pretty")
    sys.stdout.buffer.write(out.encode("utf-8"))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    run()
