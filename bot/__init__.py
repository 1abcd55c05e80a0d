"""Composition root: CLI, settings, the Brain, the LLM engine and the transports."""
