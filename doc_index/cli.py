"""``doc-index``: build, list, inspect, resolve, delete, serve, hook, mcp-config.

A thin layer over the library API (``doc_index.api``): it parses the arguments, calls
the API and renders its objects (``server.jsonout``); ``server.mcp_server`` serves MCP.
Errors are one ``error: <message>`` line on stderr with the exit code of the one table
(``doc_index.errors``, as DESIGN.md lists them); never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from . import __version__
from .errors import EXIT_USAGE
from .mcp_config import CLIENTS
from .printable import printable


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    root_help = "cache root (default: $DOC_INDEX_ROOT or ~/.doc-index)"
    # --root is taken before and after the subcommand (a separate dest, so the
    # subcommand's default None cannot erase the first); given twice, the later one wins,
    # as with any repeated option.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, default=None, help=root_help)
    parser = _Parser(prog="doc-index", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"doc-index {__version__}")
    parser.add_argument("--root", dest="root_before", type=Path, default=None,
                        help=root_help)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    build = sub.add_parser("build", parents=[common], help="index a directory or git repository")
    build.add_argument("source", help="a local directory, or a git URL / bare repository path")
    build.add_argument("--name", help="the cache's name, exactly (default: from the source)")
    build.add_argument("--ref", help="git URL or bare repository only: the branch, tag or "
                       "commit to index (default: the remote's HEAD)")
    which = build.add_mutually_exclusive_group()
    which.add_argument("--subdir", metavar="P", help="index the folder P of the repository "
                       "(a URL may say URL#P) instead of its documentation")
    which.add_argument("--all", dest="everything", action="store_true",
                       help="index every file of a git source or work tree, not only its "
                       "documentation")
    build.add_argument("--full", action="store_true", help="re-parse every file")
    build.add_argument("--replace", action="store_true",
                       help="replace a cache of that name built from another source")
    build.add_argument("--max-file-bytes", type=_file_bytes, default=None,
                       help="skip files larger than this (default 10 MB, at most 1 GiB)")

    json_help = "JSON for scripts (README: list and inspect)"
    listing = sub.add_parser("list", parents=[common], help="list the caches under the root")
    listing.add_argument("--json", action="store_true", help=json_help)
    inspect = sub.add_parser("inspect", parents=[common], help="inspect a cache")
    inspect.add_argument("name")
    inspect.add_argument("--json", action="store_true", help=json_help)
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

    config = sub.add_parser("mcp-config", parents=[common],
                            help="print the MCP configuration block for a client")
    config.add_argument("--client", required=True, choices=CLIENTS)
    return parser


def _file_bytes(text: str) -> int:
    """``--max-file-bytes``: an integer the build accepts (``any_source.check_max_bytes``),
    else a usage error."""
    from .errors import UsageError
    from .store.any_source import check_max_bytes

    try:
        return check_max_bytes(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run() -> NoReturn:
    """The ``doc-index`` console script: ``main``, then a fast exit (``fast_exit``)."""
    from .fast_exit import exit_now

    exit_now(main())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.root is None:
        args.root = args.root_before
    if argv is None and args.command == "resolve":
        # The query is UTF-8 whatever the locale decoded argv with (as in ``context``).
        args.query = os.fsencode(args.query).decode("utf-8", "surrogateescape")
    try:
        return _run(args)
    except (Exception, KeyboardInterrupt) as exc:  # the last line of defence: a fact
        from .errors import describe, exit_code_of

        print(f"error: {describe(exc)}", file=sys.stderr)
        return exit_code_of(exc)


def _run(args: argparse.Namespace) -> int:
    from . import api

    command = args.command
    if command == "build":
        from .build_command import run_build

        return run_build(args.source, args.root, name=args.name, ref=args.ref, full=args.full,
                         replace=args.replace, max_bytes=args.max_file_bytes,
                         subdir=args.subdir, everything=args.everything)
    if command == "serve":
        from .server.mcp_server import run

        return run(_root(args.root), tool_names=args.tool_names)
    if command == "hook":
        if args.action == "install":
            lines = api.install_hooks(args.repo, root=args.root)
        else:
            lines = api.uninstall_hooks(args.repo)
        for line in lines:
            print(printable(line), file=sys.stderr)
        return 0
    if command == "delete":
        api.delete(args.name, root=args.root)
        print(f"deleted: {printable(args.name)}", file=sys.stderr)
        return 0
    if command == "mcp-config":
        from .mcp_config import config_text

        out = config_text(args.client, _root(args.root))
    else:
        out = _read_command(args)
    sys.stdout.buffer.write(out.encode("utf-8"))
    sys.stdout.flush()
    return 0


def _read_command(args: argparse.Namespace) -> str:
    """The stdout text of list, inspect or resolve."""
    from . import api

    if args.command in ("list", "inspect"):
        from . import listing

        if args.command == "list":
            caches = api.describe_caches(args.root)
            return (listing.list_json(caches) if args.json
                    else listing.list_text(caches, _root(args.root)))
        cache = api.describe(args.name, root=args.root)
        return listing.details_json(cache) if args.json else listing.details_text(cache)
    from .server import jsonout

    answer = api.resolve(args.name, args.query, args.budget, root=args.root)
    selection = answer.selection
    if not answer.documents and selection["documents_excluded_by_budget"]:
        # stdout stays the spec's answer; a person is told why it is empty
        print(f"note: no section fits in {selection['budget']} tokens with its metadata "
              f"({selection['documents_excluded_by_budget']} matched): ask again with "
              f"--budget 2000", file=sys.stderr)
    return jsonout.answer_text(answer, pretty=args.format == "pretty")


def _root(root: Path | None) -> Path:
    from .store.roots import default_root

    return root if root is not None else default_root()


if __name__ == "__main__":
    run()
