"""The index on disk: Chroma, the manifest, BM25 and vector caches, ingest, integrity and repair."""
