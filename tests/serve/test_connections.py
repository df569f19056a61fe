"""What one connection may take from `keras-bert serve`, on a real uvicorn with the server's own
protocol and middleware on loopback (a trivial app behind them, no model): a body over the
limit is refused before it is read, a slow or silent client is cut off, a client that leaves
mid-body is one log line, and the port is taken again at once after a stop."""

import contextlib
import functools
import logging
import socket
import threading
import time

import pytest
import uvicorn

from keras_bert_lib.serve.connections import BodyLimits, RequestDeadline, listening_socket


async def echo(scope, receive, send):
    """Answers the size of the body it read."""
    size, more = 0, True
    while more:
        message = await receive()
        size, more = size + len(message.get("body", b"")), message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.contextmanager
def server(max_body_bytes=1000, read_timeout=1.0, port=0):
    sock = listening_socket("127.0.0.1", port)
    config = uvicorn.Config(BodyLimits(echo, max_body_bytes, read_timeout), log_config=None, timeout_keep_alive=1,
                            lifespan="off", http=functools.partial(RequestDeadline, read_timeout=read_timeout))
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not running.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        running.should_exit = True
        thread.join(10)
        sock.close()


def exchange(port, data, wait=5.0):
    """What the server sends back for `data` before it closes the connection (or `wait` passes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        answer = b""
        with contextlib.suppress(socket.timeout, ConnectionResetError):
            while chunk := s.recv(65536):
                answer += chunk
    return answer


def post(size, sent=None):
    return (b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % size
            + b"x" * (size if sent is None else sent))


def test_a_body_within_the_limit_reaches_the_app_whole():
    with server() as port:
        answer = exchange(port, post(1000))
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\n1000")


def test_a_body_over_the_limit_gets_a_413_before_any_of_it_is_sent():
    with server() as port:
        start = time.monotonic()
        answer = exchange(port, post(300_000_000, sent=0))  # the headers alone: the answer cannot wait for the body
    assert answer.startswith(b"HTTP/1.1 413") and time.monotonic() - start < 3
    assert b"300,000,000 bytes; this server takes at most 1,000 a request (--max-body-bytes)" in answer


def test_a_chunked_body_that_grows_past_the_limit_is_cut_off_with_a_413():
    chunk = b"%x\r\n%s\r\n" % (600, b"y" * 600)
    head = b"POST /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
    with server() as port:
        answer = exchange(port, head + chunk * 2 + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413") and b"at least 1,200 bytes" in answer


@pytest.mark.slow
def test_a_slow_body_gets_a_408_and_a_silent_or_slow_client_is_closed(caplog):
    caplog.set_level(logging.INFO, "keras_bert_lib.serve")
    with server(read_timeout=1.0) as port:
        start = time.monotonic()
        answer = exchange(port, post(100, sent=10))
        assert answer.startswith(b"HTTP/1.1 408") and b"within 1 s (10 bytes came)" in answer
        assert exchange(port, b"") == b"" and exchange(port, b"POST /v1/mod") == b""  # nothing, then half a line
        assert time.monotonic() - start < 8
        assert exchange(port, post(5)).startswith(b"HTTP/1.1 200")  # and it serves on
    closed = [r for r in caplog.records if "no whole request within 1 s (--read-timeout)" in r.getMessage()]
    assert len(closed) == 2, caplog.text


@pytest.mark.slow
def test_a_client_that_leaves_mid_body_is_one_line_in_the_log(caplog):
    caplog.set_level(logging.INFO, "keras_bert_lib.serve")
    with server() as port:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(post(500, sent=200))
        time.sleep(0.5)
        assert exchange(port, post(5)).startswith(b"HTTP/1.1 200")
    assert [r.getMessage() for r in caplog.records] == ["POST /v1/models/m:predict: the client left after 200 bytes "
                                                        "of its body."]


def test_port_zero_takes_a_free_port_and_a_stopped_servers_port_is_taken_again_at_once():
    with server() as port:
        assert port > 0 and exchange(port, post(3)).startswith(b"HTTP/1.1 200")  # a connection: TIME_WAIT after
    with server(port=port) as again:
        assert again == port and exchange(port, post(3)).startswith(b"HTTP/1.1 200")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ValueError, match=r"Cannot listen on 127\.0\.0\.1:\d+ .*pick another port with --port"):
            listening_socket("127.0.0.1", taken.getsockname()[1])


def test_accepted_connections_send_at_once_without_nagles_delay():
    """asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets that say they are TCP:
    without it a response's body waits for the client's delayed ACK, 40 ms a request."""
    import asyncio
    import socket

    from keras_bert_lib.serve.connections import listening_socket

    async def main():
        seen = []

        async def handle(reader, writer):
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=listening_socket("127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
        server.close()
        return seen

    assert asyncio.run(main())[0] != 0
