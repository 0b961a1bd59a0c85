"""Loopback helpers for tests: free ports, and a throwaway HTTP server that fakes a node-local service (IMDS)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


def free_ports(count: int) -> list[int]:
    """Ports free right now; held open together so the kernel cannot hand out the same one twice."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on a free 127.0.0.1 port until the block ends; yields the base URL."""
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


class FakeService(BaseHTTPRequestHandler):
    """A quiet fake of a small HTTP service: `answer` sends a body with 200, or 404 when there is none."""

    def answer(self, body: str | None) -> None:
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass
