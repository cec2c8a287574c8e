"""Shared by the benchmarks that read the bundled corpus: its index, built in a temporary directory when
none is given."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def bundled_index(index_dir: Path | None, **overrides):
    """Settings for ``index_dir`` (default: a new temporary directory, removed at exit), with the bundled ICLR
    corpus ingested there first if it holds no index."""
    from assistant.config import Settings
    from assistant.text.corpus import load_papers
    from assistant.store.ingest import ingest

    if index_dir is None:  # removed when the process ends: each ~8 MB, and benchmarks run it often
        made = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        index_dir = Path(made) / "iclr"
    settings = Settings(index_dir=index_dir, **overrides)
    if not (index_dir / "manifest.json").exists():
        ingest(load_papers()[0], settings)
    return settings
