"""The brokers the suite runs on: one list for the fixtures (conftest) and the scheduler (schedule)."""

BUSES = ("noida", "kafka")
