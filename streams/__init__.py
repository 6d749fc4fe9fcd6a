"""Streaming document chunking: cleaned pages in, Avro chunk records out."""

__version__ = "0.1.0"
