"""Turning files into page events (I/O lives here, not in the core)."""
