"""Wire formats: Avro (Confluent framing or single-object encoding) and JSON page events."""
