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


def save_npz(path: Path, arrays: dict, compressed: bool = True) -> None:
    """np.savez(_compressed) with fixed member dates, so the same arrays give the same bytes (the manifest's hash).
    ``compressed=False`` for a file a process reads at each start (no inflating)."""
    import io
    import zipfile

    import numpy as np

    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, array in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            zf.writestr(info, buf.getvalue())
