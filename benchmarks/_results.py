"""Writing a benchmark's results file: unlabelled, the run replaces the file; with ``--label``, it is kept under
``runs[label]`` beside the runs before it (the file's top level stays the first, unlabelled run)."""

import json
from pathlib import Path


def save(path: Path, out: dict, label: str | None, about: dict) -> None:
    """Write ``out`` to ``path``; under ``label`` (with ``about``: what it was run with) if one is given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if label:
        runs = json.loads(path.read_text()) if path.exists() else {}
        runs.setdefault("runs", {})[label] = out | about
        out = runs
    path.write_text(json.dumps(out, indent=1))
