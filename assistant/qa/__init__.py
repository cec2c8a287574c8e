"""Answering: evidence, extractive and LLM answers, summaries, the map, exports."""
