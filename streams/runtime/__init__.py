"""What every role process shares: its Kafka client settings and names, and its metrics endpoint.

Agents, sinks and ops import this package; it imports only the core and the settings.
"""
