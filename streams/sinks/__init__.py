"""Sinks: consumers of the chunk and status topics that write MongoDB and a vector store, idempotently."""
