"""What one HTTP connection may take from the server: the size of a body, the time to send a
request, the time to sit idle. Each limit answers before the work it guards (a 413 before a
byte of an oversized body is read, a closed socket for a client that never finishes its
request), and each refusal is one line in the log."""

import asyncio
import logging
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger("keras_bert_lib.serve")


class BodyLimits:
    """ASGI middleware: reads each request's body whole, within `max_body_bytes` and
    `read_timeout` seconds, before the application sees it.

    A `Content-Length` over the limit is answered 413 at once, without reading the body; a body
    that grows past it while arriving (chunked) is cut off with a 413; a client that has not
    sent its whole body after `read_timeout` seconds gets a 408; one that leaves mid-body is a
    line in the log. The application then reads the body it was given (from memory).

    Example:
        ```python
        from fastapi import FastAPI
        from keras_bert_lib.serve.connections import BodyLimits
        app = BodyLimits(FastAPI(), max_body_bytes=4 << 20, read_timeout=30)
        ```
    """

    def __init__(self, app, max_body_bytes=4 << 20, read_timeout=30.0):
        self.app, self.max_body_bytes, self.read_timeout = app, max_body_bytes, read_timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        where = f"{scope['method']} {scope['path']}"
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return await self._refuse(send, 413, where, self._too_large(int(length)))
        chunks, size = [], 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.read_timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
            except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11
                return await self._refuse(send, 408, where, f"The body did not arrive within {self.read_timeout:g} s "
                                                            f"({size:,} bytes came); send it at once (--read-timeout).")
            if message["type"] == "http.disconnect":
                logger.info("%s: the client left after %s bytes of its body.", where, f"{size:,}")
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return await self._refuse(send, 413, where, self._too_large(size, "at least "))
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replayed():  # the body once, then what the connection says (a disconnect)
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)

    def _too_large(self, size, prefix=""):
        return (f"The body has {prefix}{size:,} bytes; this server takes at most {self.max_body_bytes:,} a request "
                "(--max-body-bytes): send fewer texts a request.")

    @staticmethod
    async def _refuse(send, status, where, message):
        logger.info("%d %s: %s", status, where, message)
        body = ('{"error": "%s"}' % message.replace('"', "'")).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


class RequestDeadline(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol on httptools (its fast parser), but a connection has
    `read_timeout` seconds to send each request's line and headers, counted from when it opened
    or its previous answer went out; a client that sends nothing, or sends slowly (Slowloris),
    is closed with a line in the log.
    Idle time between requests is uvicorn's `timeout_keep_alive`; the body's time is
    `BodyLimits`'.

    Example:
        ```python
        import functools
        from keras_bert_lib.serve.connections import RequestDeadline
        protocol = functools.partial(RequestDeadline, read_timeout=30)   # uvicorn.Config(http=protocol)
        ```
    """

    def __init__(self, *args, read_timeout=30.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.read_timeout, self._deadline = read_timeout, None

    def connection_made(self, transport):
        super().connection_made(transport)
        self._arm()

    def data_received(self, data):
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # the request's head is in: the body and the answer are timed elsewhere
        elif self._deadline is None and not self.transport.is_closing():
            self._arm()  # a new request is arriving (uvicorn's idle timer stopped at its first byte)

    def on_response_complete(self):
        super().on_response_complete()
        self._disarm()

    def connection_lost(self, exc):
        self._disarm()
        super().connection_lost(exc)

    def _arm(self):
        self._deadline = self.loop.call_later(self.read_timeout, self._too_slow)

    def _disarm(self):
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self):
        self._deadline = None
        if self.cycle is None or self.cycle.response_complete:
            client = "%s:%d" % self.client if self.client else "a client"
            logger.info("Closed the connection of %s: no whole request within %g s (--read-timeout).", client,
                        self.read_timeout)
            self.transport.close()


def listening_socket(host, port):
    """A socket bound to `host`:`port` (0: a free port, which `getsockname()` then gives), with
    SO_REUSEADDR as uvicorn sets it, so that a server restarted right after another stopped on
    the port gets it; the server listens on it once its models are loaded. A ValueError names a
    port that is taken or not allowed.

    Example:
        ```python
        from keras_bert_lib.serve.connections import listening_socket
        with listening_socket("127.0.0.1", 0) as s:
            port = s.getsockname()[1]
        ```
    """
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on accepted sockets whose proto says TCP, and
    # without it Nagle's algorithm holds a response's body behind the client's delayed ACK (40 ms)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ValueError(f"Cannot listen on {host}:{port} ({e.strerror}); pick another port with --port, or stop what "
                         "holds it.") from None
    return sock
