"""The training inputs kept in the repository (training/inputs/README.md) and how to read them."""

from __future__ import annotations

import hashlib
import json
import lzma
from pathlib import Path

INPUTS = Path(__file__).resolve().parent / "inputs"
#: 19,972 arXiv ML abstracts with titles (CC0 metadata), xz-compressed.
PAPERS = INPUTS / "arxiv-ml.jsonl.xz"
#: The 30 development questions over the bundled corpus.
DEV = INPUTS / "dev.jsonl"


def read_text(path: Path) -> str:
    """A text input, decompressed when it ends in .xz; a missing input stops the run with how to restore it."""
    if not path.exists():
        raise SystemExit(f"missing input {path}: restore it with git (training/inputs/README.md says where it came from)")
    data = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    return data.decode("utf-8")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in read_text(path).splitlines() if line.strip()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
