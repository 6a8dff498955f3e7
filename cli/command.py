"""``doc-index``: build, sync, list, inspect, resolve, outline, read, delete, serve, hook,
mcp-config, model.

A thin layer over the library (``doc_index.library``): it parses the arguments, calls one
method of ``DocIndex`` or ``Cache`` and renders the typed result (``render``).
Errors are one ``error: <message>`` line on stderr with the exit code of the one table
(``doc_index.foundation.errors``, as DESIGN.md lists them); never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .. import __version__
from ..foundation.errors import EXIT_USAGE, UsageError
from ..foundation.printable import printable
from ..mcp_config import CLIENTS
from ..search.results import READ_SCOPES

if TYPE_CHECKING:
    from ..library import DocIndex


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse quotes the arguments it refuses: one line, every name escaped.
        self.exit(EXIT_USAGE, f"error: {printable(message)}\n")


DESCRIPTION = ("Build documentation caches from folders and git repositories, list, inspect "
               "and query them, and serve them to AI agents over MCP.")
ROOT_HELP = ("the cache root (default: $DOC_INDEX_ROOT, else the per-user data folder, "
             "~/.local/share/doc-index on Linux)")
DEFAULT_BUDGET = "2000"
NAME_HELP = "a cache's name (doc-index list shows them)"
MODEL_HELP = ("the folder holding the embedding model for answers by meaning (default: "
              "$DOC_INDEX_MODEL_DIR, else where 'doc-index model fetch' puts it)")


def _parser() -> argparse.ArgumentParser:
    # --root is taken before and after the subcommand (a separate dest, so the
    # subcommand's default None cannot erase the first); given twice, the later one wins,
    # as with any repeated option.
    common = _Parser(add_help=False)
    common.add_argument("--root", metavar="DIR", default=None, help=ROOT_HELP)
    parser = _Parser(prog="doc-index", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"doc-index {__version__}")
    parser.add_argument("--root", dest="root_before", metavar="DIR", default=None,
                        help=ROOT_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser,
                                help="what to do (doc-index COMMAND --help tells more)")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help_text,
                              description=_sentence(help_text))

    _build_command(command)
    _sync_command(command)
    _read_commands(command)
    serve = command("serve", "the MCP server, on stdin and stdout or over HTTP (--http)")
    serve.add_argument("--tool-names", choices=("dotted", "underscore"), default="dotted",
                       help="publish context.resolve (dotted, the default) or context_resolve "
                            "(underscore: for clients that refuse dots)")
    serve.add_argument("--model", metavar="DIR", help=MODEL_HELP)
    serve.add_argument("--http", metavar="[HOST:]PORT",
                       help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                            "(HOST default 127.0.0.1; any other address needs a token)")
    serve.add_argument("--token-file", metavar="FILE",
                       help="with --http: the bearer token clients must send, in a file only "
                            "you can read (default: $DOC_INDEX_HTTP_TOKEN)")
    _hook_command(sub, common)
    _model_command(sub)
    config = command("mcp-config", "print an MCP client's configuration block for this "
                                   "installation")
    config.add_argument("--client", required=True, choices=CLIENTS,
                        help="the MCP client: " + ", ".join(CLIENTS))
    config.add_argument("--http", metavar="URL",
                        help="point the client at a running 'serve --http' at URL (e.g. "
                             "http://docs.internal:8765/mcp) instead of starting the server; "
                             "the token is read from $DOC_INDEX_HTTP_TOKEN where it runs")
    return parser


Command = Callable[[str, str], argparse.ArgumentParser]


def _build_command(command: Command) -> None:
    build = command("build", "index a directory, a git repository or a published package "
                             "(again: only what changed)")
    build.add_argument("source", help="a local directory, a git URL / bare repository path, "
                       "or a published package: pypi:NAME==VERSION, npm:NAME@VERSION")
    _naming_options(build)
    build.add_argument("--ref", help="git URL or bare repository only: the branch, tag or "
                       "commit to index (default: the remote's HEAD)")
    build.add_argument("--full", action="store_true", help="re-parse every file")
    build.add_argument("--replace", action="store_true",
                       help="replace a cache of that name built from another source")
    build.add_argument("--max-file-bytes", metavar="BYTES", type=_file_bytes, default=None,
                       help="skip files larger than this (default 10 MB, at most 1 GiB)")
    build.add_argument("--model", metavar="DIR", help=MODEL_HELP)


def _model_command(sub: Any) -> None:
    """``doc-index model fetch``."""
    model_help = "the embedding model for answers by meaning (the semantic extra)"
    model = sub.add_parser("model", help=model_help, description=_sentence(model_help))
    actions = model.add_subparsers(dest="action", required=True, metavar="ACTION",
                                   parser_class=_Parser, help="fetch")
    fetch = actions.add_parser(
        "fetch", help="download the pinned model file (once)",
        description="Download the pinned model file from its publisher (23 MB, checked by "
                    "its sha256) into the user cache folder, or --dest. On a machine "
                    "without network, copy the file into a folder and point --model or "
                    "DOC_INDEX_MODEL_DIR at it instead.")
    fetch.add_argument("--dest", metavar="DIR",
                       help="the folder to put it in (default: the user cache folder)")
    fetch.add_argument("--url", help="a mirror of the pinned file (the sha256 still decides)")
    fetch.set_defaults(root=None)  # (no root: none is read)


def _sync_command(command: Command) -> None:
    sync = command("sync", "one cache per dependency a project pins, at its pinned version")
    sync.add_argument("project", nargs="?", default=".",
                      help="the project folder holding its lockfiles (default: .)")
    sync.add_argument("--dry-run", action="store_true",
                      help="print the plan (keep, build, prune) and do nothing")
    sync.add_argument("--prune", action="store_true",
                      help="delete the caches sync made for this project that no project "
                           "pins any more (never another cache)")
    sync.add_argument("--all-locked", action="store_true",
                      help="every locked package, not only the direct dependencies")
    sync.add_argument("--trust-project-index", action="store_true",
                      help="also fetch from the indexes and registries the project names "
                           "(its lockfiles, requirements, .npmrc, [tool.uv]) where your "
                           "configuration names others; never sends them your credentials "
                           "(for a person at the terminal: the git hook never does this)")


def _read_commands(command: Command) -> None:
    """list, inspect, resolve and delete."""
    json_help = "one line of JSON, for scripts"
    listing = command("list", "list the caches under the root")
    listing.add_argument("--json", action="store_true", help=json_help)
    inspect = command("inspect", "show one cache: source, ref, commit, sections, size, age")
    inspect.add_argument("name", help=NAME_HELP)
    inspect.add_argument("--json", action="store_true", help=json_help)
    resolve = command("resolve", "the sections of a cache that answer a question")
    resolve.add_argument("name", help=NAME_HELP)
    resolve.add_argument("query", help="the question, in the words the docs likely use")
    resolve.add_argument("--budget", metavar="TOKENS", default=DEFAULT_BUDGET,
                         help=f"the most tokens the whole answer may take, 0 to 10000000 "
                              f"(default {DEFAULT_BUDGET})")
    resolve.add_argument("--format", choices=("json", "pretty", "text"), default="json",
                         help="json: the answer as context.resolve gives it (default); "
                              "pretty: the same, indented; text: each section under a header "
                              "naming its file, lines and headings, for reading")
    resolve.add_argument("--model", metavar="DIR", help=MODEL_HELP)
    _navigation_commands(command)
    delete = command("delete", "delete a cache (and nothing that is not one)")
    delete.add_argument("name", help=NAME_HELP)


def _navigation_commands(command: Command) -> None:
    """outline and read: what the MCP tools context_outline and context_read answer."""
    budget_help = (f"the most tokens the whole answer may take, 0 to 10000000 (default "
                   f"{DEFAULT_BUDGET})")
    outline = command("outline", "a cache's files and headings with their section ids and "
                                 "tokens (as context_outline answers)")
    outline.add_argument("name", help=NAME_HELP)
    outline.add_argument("--prefix", default="", help="only the files whose path starts "
                                                      "with this")
    outline.add_argument("--depth", type=int, metavar="N",
                         help="only headings at most N deep (1: each page's title)")
    outline.add_argument("--cursor", metavar="ID", help="start at this section id (the "
                                                        "answer's outline.next)")
    outline.add_argument("--budget", metavar="TOKENS", default=DEFAULT_BUDGET,
                         help=budget_help)
    read = command("read", "a section by id, its page or its neighbours (as context_read "
                           "answers)")
    read.add_argument("name", help=NAME_HELP)
    read.add_argument("id", help="the section id (from resolve or outline)")
    read.add_argument("--scope", choices=READ_SCOPES, default="section",
                      help="section: it whole (default); page: every section of its file; "
                           "neighbours: the sections just before and after it")
    read.add_argument("--line", type=int, metavar="L",
                      help="start at this line of the file (the answer's read.next_line)")
    read.add_argument("--budget", metavar="TOKENS", default=DEFAULT_BUDGET, help=budget_help)


def _navigate(index: DocIndex, args: argparse.Namespace) -> str:
    """The stdout text of outline and read: the bytes the MCP tools send."""
    from ..search.budget import parse_budget
    from ..search.navigation import outline_text, reading_text

    cache = index.cache(args.name)
    budget = parse_budget(args.budget)
    if args.command == "outline":
        return outline_text(cache.outline(args.prefix, budget, depth=args.depth,
                                          cursor=args.cursor))
    return reading_text(cache.read(args.id, args.scope, budget, line=args.line))


def _hook_command(sub: Any, common: argparse.ArgumentParser) -> None:
    hook_help = "git hooks that rebuild a checkout's cache after pull, checkout or rebase"
    middle = argparse.ArgumentParser(add_help=False)  # ``hook --root DIR install``
    middle.add_argument("--root", dest="root_middle", metavar="DIR", default=None,
                        help=ROOT_HELP)
    hook = sub.add_parser("hook", parents=[middle], help=hook_help,
                          description=_sentence(hook_help))
    actions = hook.add_subparsers(dest="action", required=True, metavar="ACTION",
                                  parser_class=_Parser, help="install or uninstall")
    repo_help = "a git checkout, or a folder in it (default: .)"
    install = actions.add_parser(
        "install", parents=[common], help="install the hooks (again: update their options)",
        description="Install git hooks that rebuild the checkout's cache after pull, "
                    "checkout or rebase (in the background; a build they would refuse, or "
                    "one that failed, is one line in git's output).")
    install.add_argument("repo", nargs="?", default=".", help=repo_help)
    _naming_options(install, hook=True)
    uninstall = actions.add_parser(
        "uninstall", parents=[common], help="remove the hooks, restoring what was there",
        description="Remove the hooks, putting back any hook that was there before.")
    uninstall.add_argument("repo", nargs="?", default=".", help=repo_help)


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _naming_options(parser: argparse.ArgumentParser, *, hook: bool = False) -> None:
    """``build``'s naming options, which ``hook install`` takes too (the hook remembers
    them)."""
    what = "the cache the hook builds" if hook else "the cache"
    parser.add_argument("--name", help=f"name {what} exactly this (default: from the source)")
    if hook:
        parser.add_argument("--subdir", metavar="PATH",
                            help="index this folder of the checkout (relative to its top, or "
                                 "a path inside it) instead of its documentation")
        return
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--subdir", metavar="P", help="index the folder P of the repository "
                       "(a URL may say URL#P) instead of its documentation")
    which.add_argument("--all", dest="everything", action="store_true",
                       help="index every file of a git source or work tree, not only its "
                       "documentation")


def _file_bytes(text: str) -> int:
    """``--max-file-bytes``: an integer the build accepts (``any_source.check_max_bytes``),
    else a usage error."""
    from ..build import check_max_bytes
    from ..foundation.errors import UsageError

    try:
        return check_max_bytes(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run() -> NoReturn:
    """The ``doc-index`` console script: ``main``, then a fast exit (``fast_exit``)."""
    from ..foundation.fast_exit import exit_now

    exit_now(main())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for earlier in ("root_middle", "root_before"):  # the last --root given wins
        if args.root is None:
            args.root = getattr(args, earlier, None)
    if argv is None and args.command in ("resolve", "read", "outline"):
        # Texts are UTF-8 whatever the locale decoded argv with (as in ``context``).
        for field in ("query", "id", "prefix", "cursor"):
            if isinstance(getattr(args, field, None), str):
                setattr(args, field, os.fsencode(getattr(args, field)).decode(
                    "utf-8", "surrogateescape"))
    try:
        return _run(args)
    except (Exception, KeyboardInterrupt) as exc:  # the last line of defence: a fact
        from ..foundation.errors import exit_code_of
        from ..render.messages import for_people

        print(f"error: {for_people(exc, args)}", file=sys.stderr)
        return exit_code_of(exc)


def _run(args: argparse.Namespace) -> int:
    from ..library import DocIndex

    if args.command == "hook" and args.action == "uninstall":  # (no root: none is read)
        return _lines(DocIndex().uninstall_hooks(args.repo))
    if args.command == "model":  # (no root either)
        return _fetch_model(DocIndex(), args)
    index = DocIndex(_root(args.root), model=_model_dir(getattr(args, "model", None)))
    command = args.command
    if command == "build":
        from .build_command import run_build

        return run_build(index, args.source, name=args.name, ref=args.ref, full=args.full,
                         replace=args.replace, max_bytes=args.max_file_bytes,
                         subdir=args.subdir, everything=args.everything)
    if command == "sync":
        from .sync_command import run_sync

        return run_sync(index, args.project, dry_run=args.dry_run, prune=args.prune,
                        all_locked=args.all_locked,
                        trust_project_index=args.trust_project_index)
    if command == "serve":
        if args.token_file is not None and args.http is None:
            raise UsageError("--token-file is for --http: stdio needs no token")
        # lazy: the SDK server loads for ``serve`` only (tests/test_import_rules.py)
        from ..server.mcp_server import run as run_server

        return run_server(index.root, tool_names=args.tool_names, model=index.model,
                          http=args.http, token_file=args.token_file)
    if command == "hook":
        return _lines(index.install_hooks(args.repo, name=args.name, subdir=args.subdir))
    if command == "delete":
        index.cache(args.name).delete()
        print(f"deleted: {printable(args.name)}", file=sys.stderr)
        return 0
    if command == "mcp-config":
        if args.http is not None:  # (no server is started: no meaning line)
            out = index.mcp_config(args.client, http=args.http)
        else:
            meaning = index.meaning_status(verify=True)
            out = index.mcp_config(args.client, meaning)
            by = ("meaning, with this model (--model in its args)" if meaning.on
                  else "words only")
            print(printable(f"{meaning.line()}: the server this block starts answers by "
                            f"{by}"), file=sys.stderr)
    elif command == "resolve":
        out = _resolve(index, args)
    elif command in ("outline", "read"):
        out = _navigate(index, args)
    else:
        out = _list_or_inspect(index, args)
    sys.stdout.buffer.write(out.encode("utf-8"))
    sys.stdout.flush()
    return 0


def _model_dir(given: str | None) -> Path | None:
    """``--model DIR``: a folder holding a model file (ModelError naming it otherwise)."""
    if given is None:
        return None
    from ..embedding.model import find_model

    folder = Path(given)
    find_model(folder)
    return folder


def _fetch_model(index: DocIndex, args: argparse.Namespace) -> int:
    """``doc-index model fetch``: what is fetched from where, a progress line on a
    terminal, then the file's path."""
    from ..embedding import fetch
    from ..embedding.model import user_model_dir

    dest = Path(args.dest) if args.dest is not None else user_model_dir()
    url = args.url or fetch.URL
    print(f"fetching {url}\n  into {printable(str(dest))} ({fetch.SIZE / 1e6:.1f} MB, "
          f"sha256 {fetch.SHA256})", file=sys.stderr, flush=True)
    progress = None
    if sys.stderr.isatty():
        def progress(got: int) -> None:
            sys.stderr.write(f"\r  {got / 1e6:.1f} of {fetch.SIZE / 1e6:.1f} MB")
            sys.stderr.flush()
    try:
        path, downloaded = index.fetch_model(dest=dest, url=url, progress=progress)
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")
    state = "fetched" if downloaded else "already there"
    print(f"{state}: {printable(str(path))}")
    return 0


def _lines(lines: list[str]) -> int:
    """What the hooks command did, one line each on stderr."""
    for line in lines:
        print(printable(line), file=sys.stderr)
    return 0


def _list_or_inspect(index: DocIndex, args: argparse.Namespace) -> str:
    """The stdout text of list or inspect."""
    from ..render import listing

    if args.command == "list":
        caches = [cache.info() for cache in index.caches()]
        if args.json:
            return listing.list_json(caches)
        return listing.list_text(caches, index.root, meaning=index.meaning_status())
    cache = index.cache(args.name)
    details = cache.info()
    if args.json:
        return listing.details_json(details)
    return listing.details_text(details, meaning=cache.meaning_status())


def _resolve(index: DocIndex, args: argparse.Namespace) -> str:
    """The stdout text of resolve (the cache is named first, then the budget checked)."""
    from ..search.budget import parse_budget

    cache = index.cache(args.name)
    answer = cache.resolve(args.query, parse_budget(args.budget))
    if sys.stderr.isatty():  # a person: whether this answer used meaning, or why not
        print(printable(cache.meaning_status(answer).line()), file=sys.stderr)
    selection = answer.selection
    if not answer.documents and selection["documents_excluded_by_budget"]:
        # stdout stays the spec's answer; a person is told why it is empty
        print(f"note: no section fits in {selection['budget']} tokens with its metadata "
              f"({selection['documents_excluded_by_budget']} matched): ask again with "
              f"--budget {max(2000, 2 * selection['budget'])}", file=sys.stderr)
    if args.format == "text":
        from ..render.answer_text import answer_text

        return answer_text(answer)
    from ..render.spec_json import answer_text as json_text

    return json_text(answer, pretty=args.format == "pretty")


def _root(given: str | None) -> Path:
    """``--root`` (UsageError when empty), else the default root; on the default root, the
    note about caches an earlier doc-index left in ``~/.doc-index`` (``store.roots``)."""
    from ..store import roots

    if given is not None:
        return roots.checked_root(given)
    root = roots.default_root()
    if roots.ROOT_ENV not in os.environ:
        note = roots.old_root_note(root)
        if note is not None:
            print(note, file=sys.stderr)
    return root


if __name__ == "__main__":
    run()
