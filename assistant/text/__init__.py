"""Reading papers: files to records, sentences, terms, chunks, titles, terminal-safe text."""
