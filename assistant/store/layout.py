"""Every path under the index directory, named once: the store package owns the directory, and what other stages
keep there (saved chats, the map's layout cache) is placed by these functions."""

from __future__ import annotations

from pathlib import Path

from assistant.config import Settings, local_dir

CHROMA = "chroma"  # the Chroma store of record (collections chunks, papers, meta)
CHROMA_FILE = "chroma.sqlite3"  # inside CHROMA: what the direct read checks (chroma_file.py)
BM25 = "bm25"  # derived: the bm25s index (lexical.py)
VECTORS = "vectors"  # derived: every chunk vector in one matrix (vectors.py)
SNAPSHOT = "papers.json"  # derived: every paper and where each chunk's text is
SENTENCES = "sentences.sqlite"  # cache: sentence vectors of the abstracts (sentence_cache.py)
MANIFEST = "manifest.json"  # what was committed: embedder, chunking, fingerprint, sources
LOCK = ".lock"  # held while an ingest or remove writes
JOURNAL = "journal"  # what a write under way will write, drop and overwrite (journal.py)
ASIDE = "rebuild.json"  # an index being built beside this one, to be swapped in (aside.py)
#: What a rebuild swaps in, the manifest last: once it is in place, the new index is the index. (The sentence cache
#: too, when the rebuild made one: it holds every paper of the new index.)
SWAPPED = (CHROMA, BM25, VECTORS, SNAPSHOT, SENTENCES, MANIFEST)
CHATS = "chats.sqlite"  # saved conversations (chat/history.py)
MAP = "map"  # the map's layouts, one per index version and projection (qa/landscape.py)
PLACEHOLDER = ".gitkeep"  # the repository ships index_store/ holding only this: a clone's index is still empty


def chats_file(index_dir: Path) -> Path:
    """Where the conversations of the index in ``index_dir`` are saved."""
    return Path(index_dir) / CHATS


def map_cache(settings: Settings) -> Path:
    """Where the map's layouts of this index are cached (beside the local part of the index in server mode)."""
    return local_dir(settings) / MAP
