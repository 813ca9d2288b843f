"""A local HTTP proxy that plays a search engine's site, for the ddgs provider's tests.

ddgs (through its HTTP client, primp) can be given a proxy. This proxy, on 127.0.0.1, accepts
the client's `CONNECT html.duckduckgo.com:443`, then speaks TLS itself with a certificate for
that name signed by a throwaway test authority (the client is told to trust only that
authority), reads the real request ddgs sends, and answers it with a canned page. So the real
ddgs engine code, primp's HTTP and TLS, and our parsing and cleaning all run; what is fake is
the far end: the page is ours, not DuckDuckGo's, and no byte leaves this computer.

Modes: `page` (200 with `body`), `status` (that status, e.g. 202 as DuckDuckGo sends when it
rate-limits; a 3xx carries `Location: <location>`), `hang` (accept the tunnel, then never
answer), `refuse` (close the tunnel at once). Every CONNECT target and every tunnelled request
is recorded.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import ssl
import threading
from dataclasses import dataclass
from http.server import HTTPServer
from typing import Any

from tests.support.served import ServedInThread


@dataclass(frozen=True)
class Tunnelled:
    """One request as it arrived inside the tunnel."""

    connect_to: str  # the CONNECT target, host:port
    method: str
    path: str
    host: str  # the Host header inside the tunnel
    body: bytes


class _ProxyServer(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    proxy: SearchProxy

    def server_bind(self) -> None:
        # No reverse DNS lookup (HTTPServer's socket.getfqdn), which can stall without a resolver.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up or gave up on the handshake: nothing to report


def _read_head(stream: Any) -> tuple[str, dict[str, str]]:
    """The request line and headers (names in lower case) from a socket file."""
    line = stream.readline(65537).decode("latin-1").strip()
    headers: dict[str, str] = {}
    while True:
        raw = stream.readline(65537).decode("latin-1")
        if raw in ("\r\n", "\n", ""):
            break
        name, _, value = raw.partition(":")
        headers[name.strip().lower()] = value.strip()
    return line, headers


class _Handler(socketserver.StreamRequestHandler):
    server: _ProxyServer

    def handle(self) -> None:
        proxy = self.server.proxy
        line, _ = _read_head(self.rfile)
        method, _, rest = line.partition(" ")
        target = rest.split(" ", 1)[0]
        if method != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        proxy._connected(target)
        if proxy.mode == "refuse":
            return
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        with contextlib.suppress(OSError, ssl.SSLError):
            tls = proxy.tls.wrap_socket(self.connection, server_side=True)
            tls.settimeout(10)
            stream = tls.makefile("rwb")
            request, headers = _read_head(stream)
            length = int(headers.get("content-length", "0") or 0)
            body = stream.read(length) if length else b""
            req_method, _, req_rest = request.partition(" ")
            proxy._tunnelled(
                Tunnelled(
                    target, req_method, req_rest.split(" ", 1)[0], headers.get("host", ""), body
                )
            )
            if proxy.mode == "hang":
                proxy.stopping.wait(30)
                return
            status = proxy.status if proxy.mode == "status" else 200
            payload = proxy.body.encode("utf-8")
            # A redirect points at another site, so following it would show as a new CONNECT.
            where = f"Location: {proxy.location}\r\n" if 300 <= status < 400 else ""
            stream.write(
                f"HTTP/1.1 {status} Canned\r\nContent-Type: text/html; charset=utf-8\r\n"
                f"{where}Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode(
                    "ascii"
                )
                + payload
            )
            stream.flush()
            tls.close()


class SearchProxy(ServedInThread):
    """An HTTP CONNECT proxy on 127.0.0.1 that answers every tunnelled request itself."""

    def __init__(self, tls: ssl.SSLContext, *, body: str = "", mode: str = "page") -> None:
        super().__init__()
        self.tls = tls
        self.body = body
        self.mode = mode
        self.status = 200
        self.location = "https://elsewhere.example/"
        self.connects: list[str] = []
        self.requests: list[Tunnelled] = []
        self._lock = threading.Lock()

    def start(self) -> SearchProxy:
        if self.running:
            return self
        httpd = _ProxyServer(("127.0.0.1", 0), _Handler)
        httpd.proxy = self
        self._serve(httpd, "search-proxy")
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _connected(self, target: str) -> None:
        with self._lock:
            self.connects.append(target)

    def _tunnelled(self, request: Tunnelled) -> None:
        with self._lock:
            self.requests.append(request)


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
