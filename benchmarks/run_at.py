"""Run a benchmark script with the `assistant` package of another checkout, such as a worktree of an earlier commit
for a question set's first run (an editable install's import hook wins over PYTHONPATH, so that alone is not enough):

    git worktree add /tmp/wt <commit> && ln -s "$PWD/benchmarks/.work" /tmp/wt/benchmarks/.work
    python benchmarks/run_at.py /tmp/wt benchmarks/heldout.py --sets arxiv300d --label NAME_first_run
    git worktree remove --force /tmp/wt
"""

from __future__ import annotations

import os
import runpy
import sys

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    checkout, script = os.path.abspath(sys.argv[1]), sys.argv[2]
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path[:0] = [checkout, os.path.dirname(os.path.abspath(script))]
    import assistant

    print(f"assistant from {assistant.__file__}", file=sys.stderr, flush=True)
    sys.argv = sys.argv[2:]
    runpy.run_path(script, run_name="__main__")
