"""Faust agents: thin shells that decode, call the pure core, encode and publish."""
