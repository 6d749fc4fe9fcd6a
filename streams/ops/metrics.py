"""Moved to `streams.runtime.metrics`. These names stay here only for `streams/cli.py`, until its imports
name `streams.runtime.metrics`; nothing else may import this module."""

from streams.runtime.metrics import AUDIT_GAPS, AUDIT_REGISTRY, serve

__all__ = ["AUDIT_GAPS", "AUDIT_REGISTRY", "serve"]
