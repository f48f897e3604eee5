"""A real HTTP search server on 127.0.0.1 for fetch tests, answering per query string."""

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-able object, str, bytes, or an iterable of byte chunks
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


Handler = Callable[[Received], Reply]


def hits(query: str, count: int = 3) -> dict:
    """A small Elasticsearch-like answer for `query`."""
    return {"hits": {"hits": [
        {"_id": f"{query}-{n}", "_source": {"title": f"{query} result {n}", "rank": n}}
        for n in range(1, count + 1)
    ]}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # listen()'s backlog: at the default 5, a judge's 16 calls opening connections at once
    # lost SYNs and waited a second to retry, which no real server makes them do.
    request_queue_size = 128


class SearchServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.handler: Handler = lambda request: Reply(body=hits(request.query["q"][0]))
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in two writes: with Nagle's algorithm on, the body waits
            # for the client's delayed ACK of the headers, 40 ms on Linux, which no real engine
            # or provider adds (they set TCP_NODELAY).
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                request = Received(
                    method=self.command, path=parts.path, query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                with server._lock:
                    server.received.append(request)
                reply = server.handler(request)
                if reply.delay:
                    time.sleep(reply.delay)
                # The client may give up (timeout or size cap): expected in these tests.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                body = reply.body
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                if isinstance(body, bytes | str) or not isinstance(body, Iterable) or \
                        isinstance(body, dict | list):
                    data = body if isinstance(body, bytes) else (
                        body.encode() if isinstance(body, str) else json.dumps(body).encode())
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                # Streamed without a length, the way a misbehaving engine would.
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in body:
                    self.wfile.write(chunk)
                self.close_connection = True

            do_GET = do_POST = do_PUT = _handle

        self._server = _Server((host, port), _Handler)
        # shutdown() waits for the serving loop to look at its flag: every poll_interval
        # (0.5 s by default, which every test with a server paid at its end).
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "SearchServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def queries(self) -> list[str]:
        return [r.query.get("q", [""])[0] for r in self.received]


@contextmanager
def running_server(host: str = "127.0.0.1", port: int = 0) -> Iterator[SearchServer]:
    server = SearchServer(host, port).start()
    try:
        yield server
    finally:
        server.stop()
