"""The pure core: events, the document stream, tokenizers and chunkers. No I/O, no clock, no randomness."""
