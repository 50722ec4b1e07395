"""A closed client connection is told from an open one, with or without
data waiting, and nothing waiting is consumed."""

from __future__ import annotations

import socket
import ssl

from mcp_gateway.endpoint import peer


def test_an_open_idle_connection_is_not_gone():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert peer.gone(ours) is False


def test_a_next_request_waiting_is_not_gone_and_stays_unread():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"POST /t/acme/mcp HTTP/1.1\r\n")
        assert peer.gone(ours) is False
        assert ours.recv(100) == b"POST /t/acme/mcp HTTP/1.1\r\n"


def test_a_closed_connection_is_gone():
    ours, theirs = socket.socketpair()
    theirs.close()
    with ours:
        assert peer.gone(ours) is True


def test_a_reset_connection_is_gone():
    listener = socket.create_server(("127.0.0.1", 0))
    with listener:
        theirs = socket.create_connection(listener.getsockname())
        ours, _ = listener.accept()
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
        theirs.close()  # linger 0: an RST
        with ours:
            assert peer.gone(ours) is True


def test_a_tls_socket_is_peeked_below_tls():
    ours, theirs = socket.socketpair()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    wrapped = context.wrap_socket(ours, server_side=True, do_handshake_on_connect=False)
    with wrapped, theirs:
        assert peer.gone(wrapped) is False
        theirs.close()
        assert peer.gone(wrapped) is True


def test_only_gunicorns_socket_is_probed():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        probe = peer.probe({"gunicorn.socket": ours})
        assert probe is not None
        assert probe() is False
        theirs.close()
        assert probe() is True
    assert peer.probe({}) is None
    assert peer.probe({"gunicorn.socket": "not a socket"}) is None
