"""The ports the project's own services listen on."""

from __future__ import annotations

import socket
from contextlib import closing

from streams.ops.processes import ephemeral_range, free_port


def test_free_ports_lie_outside_the_range_outgoing_connections_draw_from() -> None:
    """A port from the ephemeral range can become a client's source port while a server is still starting
    (a probe dialling it connects to itself and holds it): Kafka then fails to bind it. free_port's ports
    lie outside that range, bind, and are not handed out twice."""
    low, high = ephemeral_range()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(not low <= port <= high for port in ports), (low, high, ports)
    for port in ports[:5]:
        with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            with closing(socket.create_connection(("127.0.0.1", port), timeout=2)) as client:
                source = client.getsockname()[1]
            assert low <= source <= high  # the client's own port comes from the range, never ours
