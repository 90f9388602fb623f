"""Tagging many notes: the runner, its sinks and rejects file, and the worker processes."""
