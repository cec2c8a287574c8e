"""Embedding text: the local MiniLM on onnxruntime and the OpenAI-compatible embedders."""
