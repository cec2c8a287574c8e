"""Finding papers: hybrid retrieval, re-ranking, named papers and the learned decisions."""
