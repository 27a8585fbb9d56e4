"""Hostile arguments, issue 32's thirteenth round: round 12's leftover of the Python API, a Ray
address that accepts TCP but is not Ray (``nc -l``, an HTTP server), on which ``ray.init``
waited without end. The address is now probed as a gRPC server (what Ray's GCS and its client
server are) within one bound for the connect, the greeting and the answer."""

import socket
import threading

import pytest

import elevator
from elevator import campaign


def _serve(answer):
    """A TCP server on a free local port that accepts one connection, reads what the client
    sends, then sends ``answer`` and holds the connection open (None: sends nothing, as ``nc -l``;
    empty: closes it at once)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    done = threading.Event()

    def run():
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(64)
            except OSError:
                pass
            if answer is None:
                done.wait(10)
            elif answer:
                conn.sendall(answer)
                done.wait(10)
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return f"127.0.0.1:{srv.getsockname()[1]}", done


@pytest.mark.parametrize(
    "answer,said",
    [
        (None, "no gRPC answer within 1 s"),
        (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "'HTTP/1.1 '"),
        (b"", "nothing"),
    ],
    ids=["nc-l-silent", "http-server", "closes-at-once"],
)
def test_a_ray_address_that_accepts_tcp_but_is_not_ray_is_refused(monkeypatch, answer, said):
    """Before: only a TCP connection was tried, so ``ray.init`` then waited on a listener that
    is not Ray (without end: round 12's leftover)."""
    monkeypatch.setattr(campaign, "CONNECT_TIMEOUT_S", 1.0)
    for prefix in ("", "ray://"):
        address, done = _serve(answer)
        try:
            with pytest.raises(elevator.ElevatorError) as e:
                campaign._reachable(prefix + address)
        finally:
            done.set()
        msg = str(e.value)
        assert msg.startswith(f"address: {prefix + address!r}: no Ray cluster answers"), msg
        assert said in msg, msg


def test_a_grpc_server_passes_the_probe(monkeypatch):
    """The probe must not refuse what Ray is: a server answering the HTTP/2 greeting with a
    SETTINGS frame (9-byte header, type 4) passes."""
    monkeypatch.setattr(campaign, "CONNECT_TIMEOUT_S", 5.0)
    address, done = _serve(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
    try:
        campaign._reachable(address)
    finally:
        done.set()


def test_a_port_past_65535_is_refused_naming_the_address():
    with pytest.raises(elevator.ElevatorError) as e:
        campaign._reachable("127.0.0.1:99999999")
    assert str(e.value).startswith("address: '127.0.0.1:99999999'"), str(e.value)
