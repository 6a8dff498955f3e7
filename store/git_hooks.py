"""The hook runner's old name: hooks an earlier doc-index installed run ``python -I -m
doc_index.store.git_hooks``; they keep working (``doc_index.hook_runner`` is the runner)."""

import sys

if __name__ == "__main__":
    from ..hook_runner import _main

    sys.exit(_main())
