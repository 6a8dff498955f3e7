"""A compatibility entry point: git hooks installed by doc-index before 0.1 run ``python -I
-m doc_index.store.git_hooks``; they keep working (the runner is ``doc_index.cli.hook_runner``,
which ``doc-index hook install`` writes now). tests/test_layers.py names this module."""

import sys

if __name__ == "__main__":
    from ..cli.hook_runner import main

    sys.exit(main())
