"""`keras-bert serve` in a subprocess on 127.0.0.1 and a free port, and plain HTTP calls to it."""

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(arguments, log_folder, start_seconds=300, port=0):
    """Yields (the server's base URL, its Popen) once /v2/health/ready answers 200; SIGTERM at the
    end. With `port` 0 (the default) the server takes a free port and the test reads it from the
    line of its log that says where it listens."""
    log_path = os.path.join(log_folder, f"serve-{time.monotonic_ns()}.log")
    log = open(log_path, "w")
    command = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "keras-bert"), "serve", *arguments,
                                "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    url = None
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            if command.poll() is not None:
                raise AssertionError(f"the server exited ({command.returncode}):\n" + _tail(log_path))
            if url is None:
                listening = re.search(r"Serving .* on (http://127\.0\.0\.1:\d+)$", _tail(log_path, None), re.M)
                url = listening and listening.group(1)
            try:
                if url and call(url, "GET", "/v2/health/ready")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("the server did not get ready:\n" + _tail(log_path))
            time.sleep(0.5)
        command.log_path = log_path
        yield url, command
    finally:
        if command.poll() is None:
            command.send_signal(signal.SIGTERM)
            try:
                command.wait(60)
            except subprocess.TimeoutExpired:
                command.kill()
        log.close()


def call(url, method, path, body=None, timeout=120, content_type="application/json"):
    """(status, the JSON answer or its text) of one request; `body` a dict (sent as JSON) or bytes."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        connection.request(method, path, data, {"Content-Type": content_type} if data is not None else {})
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
    finally:
        connection.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def _tail(path, characters=4000):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()[-characters:] if characters else f.read()
