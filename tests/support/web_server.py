"""A real HTTP(S) server on a loopback address, with the routes the web tools are tested against.

It runs in a daemon thread of the test process and records every request it receives
(`hits`), so a test can show that a refused request never reached it. It binds only to an
address in 127.0.0.0/8 or ::1 and never makes an outbound connection.

Routes (GET only; anything else is 405):

- ``/page`` an article page with a title, navigation and footer noise; ``/short.html`` a page
  with one line; ``/gzip-page`` the article page gzip-compressed; ``/deflate-raw`` text sent as
  raw deflate; ``/brotli`` a body claiming ``br`` encoding;
- ``/plain`` UTF-8 text; ``/latin1`` ISO-8859-1 text declared in the header; ``/meta-charset``
  windows-1252 HTML declared only in ``<meta>``; ``/json``; ``/untyped-text`` and
  ``/untyped-binary`` with no Content-Type;
- ``/image.png``, ``/doc.pdf``, ``/octet`` binary types;
- ``/chunked`` (``?gzip`` for a gzip body too) the article page in HTTP/1.1 chunked encoding;
- ``/huge`` text that never ends (up to 64 MiB, until the client hangs up); ``/slow`` a body
  dripped a byte at a time; ``/slow-headers`` no answer at all for a long time; ``/gzip-bomb`` a
  64 KiB gzip body that inflates to 64 MiB;
- ``/status/N`` answers N; ``/redirect/N`` a chain of N same-host redirects ending at /page;
  ``/loop`` redirects to itself; ``/go?to=URL&status=N`` redirects anywhere; ``/no-location``
  a 302 without Location;
- ``…/search?q=…&format=json`` a fake SearXNG (403 unless ``format=json`` and `searx_json`;
  a redirect to `searx_redirect` when that is set).
"""

from __future__ import annotations

import contextlib
import datetime
import gzip
import ipaddress
import json
import socket
import socketserver
import ssl
import threading
import zlib
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.served import ServedInThread

ARTICLE_TITLE = "Lighthouses of the Northern Coast"
ARTICLE_SENTENCE = "The keeper climbed the spiral stair every evening at dusk to light the lamp."
NOISE = ("MENU-NOISE-HOME", "FOOTER-NOISE-COPYRIGHT")
BOMB_DECODED_BYTES = 64 * 1024 * 1024
HUGE_LIMIT = 64 * 1024 * 1024


def article_html() -> str:
    paragraphs = "\n".join(
        f"<p>{ARTICLE_SENTENCE} Paragraph {n} tells how the light was seen for miles, how ships "
        f"found the harbour at night, and how the keeper wrote in the log book.</p>"
        for n in range(1, 9)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{ARTICLE_TITLE}</title>
<script>var tracking = "SCRIPT-NOISE";</script><style>body {{ color: black }}</style></head>
<body>
<nav><a href="/">{NOISE[0]}</a> <a href="/about">About</a> <a href="/shop">Shop</a></nav>
<main><article><h1>{ARTICLE_TITLE}</h1>
{paragraphs}
</article></main>
<footer>{NOISE[1]} 2024, all rights reserved</footer>
</body></html>"""


@cache
def gzip_bomb() -> bytes:
    """64 MiB of one letter, gzip-compressed (about 64 KiB), built once per test session."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"A" * (1024 * 1024)
    parts = [compressor.compress(block) for _ in range(BOMB_DECODED_BYTES // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it."""

    method: str
    path: str
    host: str  # the Host header
    headers: dict[str, str]  # names in lower case


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    web: WebServer

    def server_bind(self) -> None:
        # Skip HTTPServer's reverse DNS lookup (socket.getfqdn), which can stall without a resolver.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up, or failed the TLS handshake: nothing to report


class _IPv6HTTPServer(_HTTPServer):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.web._record(Hit(self.command, self.path, headers.get("host", ""), headers))

    def do_POST(self) -> None:
        self._record()
        self._send(405, b"GET only", "text/plain")

    do_PUT = do_DELETE = do_HEAD = do_POST

    def do_GET(self) -> None:
        self._record()
        web = self.server.web
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        # The client may stop reading (a size or time cap): expected, not an error.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            self._route(web, path, query)

    def _route(self, web: WebServer, path: str, query: dict[str, list[str]]) -> None:
        if path == "/page":
            self._send(200, article_html().encode(), "text/html; charset=utf-8")
        elif path == "/short.html":
            self._send(200, b"<html><body><p>Only this line.</p></body></html>", "text/html")
        elif path == "/gzip-page":
            body = gzip.compress(article_html().encode())
            self._send(200, body, "text/html; charset=utf-8", {"Content-Encoding": "gzip"})
        elif path == "/deflate-raw":
            compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            body = compressor.compress(b"raw deflate text") + compressor.flush()
            self._send(200, body, "text/plain", {"Content-Encoding": "deflate"})
        elif path == "/brotli":
            self._send(200, b"\x1b\x03\x00\xf8", "text/plain", {"Content-Encoding": "br"})
        elif path == "/plain":
            body = "plain text body: naïve café ✓\nsecond line\n".encode()
            self._send(200, body, "text/plain; charset=utf-8")
        elif path == "/latin1":
            body = "Latin-1 text: café déjà vu".encode("latin-1")
            self._send(200, body, "text/plain; charset=ISO-8859-1")
        elif path == "/meta-charset":
            html = (
                '<html><head><meta charset="windows-1252"><title>Caf\u00e9 menu</title></head>'
                "<body><p>Coffee costs 3 \u20ac at the caf\u00e9.</p></body></html>"
            )
            self._send(200, html.encode("cp1252"), "text/html")
        elif path == "/json":
            self._send(200, json.dumps({"answer": 42, "word": "ok"}).encode(), "application/json")
        elif path == "/untyped-text":
            self._send(200, b"no content type, just words\n", None)
        elif path == "/untyped-binary":
            self._send(200, b"\x00\x01\x02\x03binary\x00\xff" * 10, None)
        elif path == "/image.png":
            self._send(200, b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
        elif path == "/doc.pdf":
            self._send(200, b"%PDF-1.4\n" + bytes(64), "application/pdf")
        elif path == "/octet":
            self._send(200, bytes(range(256)), "application/octet-stream")
        elif path == "/chunked":
            self._chunked(gzip.compress(article_html().encode()) if "gzip" in query else None)
        elif path == "/huge":
            self._huge(web)
        elif path == "/slow":
            self._slow(web)
        elif path == "/slow-headers":
            web.stopping.wait(30)
            self._send(200, b"late", "text/plain")
        elif path == "/gzip-bomb":
            self._send(200, gzip_bomb(), "text/plain", {"Content-Encoding": "gzip"})
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            self._send(status, f"status {status}".encode(), "text/plain")
        elif path.startswith("/redirect/"):
            left = int(path.rsplit("/", 1)[1])
            self._redirect(302, "/page" if left <= 0 else f"/redirect/{left - 1}")
        elif path == "/loop":
            self._redirect(302, "/loop")
        elif path == "/go":
            self._redirect(int(query.get("status", ["302"])[0]), query["to"][0])
        elif path == "/no-location":
            self._send(302, b"", "text/plain")
        elif path.endswith("/search"):
            self._search(web, query)
        else:
            self._send(404, b"not found", "text/plain")

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        # Header values go out as Latin-1 in http.server; a real server sends UTF-8 bytes.
        self.send_header("Location", location.encode("utf-8").decode("latin-1"))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _chunked(self, gzipped: bytes | None) -> None:
        # An HTTP/1.1 answer in chunked transfer encoding, as most real servers send pages.
        self.protocol_version = "HTTP/1.1"
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        if gzipped is not None:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Connection", "close")
        self.end_headers()
        body = gzipped if gzipped is not None else article_html().encode()
        for start in range(0, len(body), 500):
            piece = body[start : start + 500]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _huge(self, web: WebServer) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()  # no length: the body ends when the connection closes
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < HUGE_LIMIT and not web.stopping.is_set():
                self.wfile.write(chunk)
                sent += len(chunk)
        finally:
            web._sent(self.path, sent)

    def _slow(self, web: WebServer) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"start ")
        self.wfile.flush()
        for _ in range(600):  # at most 30 s, a byte every 50 ms
            if web.stopping.wait(0.05):
                return
            self.wfile.write(b".")
            self.wfile.flush()

    def _search(self, web: WebServer, query: dict[str, list[str]]) -> None:
        if web.searx_redirect is not None:
            self._redirect(302, web.searx_redirect)
            return
        if not web.searx_json or query.get("format") != ["json"]:
            self._send(403, b"Forbidden", "text/html")
            return
        q = query.get("q", [""])[0]
        results: list[Any] = [
            {
                "title": f"Result {n} for {q}",
                "url": f"https://results.example/{n}",
                "content": f"Snippet {n} about {q}.",
                "engine": "fake",
            }
            for n in range(1, 9)
        ]
        results.insert(2, {"title": "no address", "content": "dropped"})
        results.insert(3, "not an object")
        payload = {"query": q, "number_of_results": len(results), "results": results}
        self._send(200, json.dumps(payload).encode(), "application/json")


class WebServer(ServedInThread):
    """A test web server on one loopback address (127.0.0.0/8 or ::1), plain or TLS."""

    def __init__(
        self,
        bind: str = "127.0.0.1",
        *,
        tls: ssl.SSLContext | None = None,
        searx_json: bool = True,
        searx_redirect: str | None = None,
    ) -> None:
        super().__init__()
        address = ipaddress.ip_address(bind)
        if not address.is_loopback:
            raise ValueError(f"the test web server binds only to loopback, not {bind}")
        self.bind = bind
        self.tls = tls
        self.searx_json = searx_json
        self.searx_redirect = searx_redirect
        self.hits: list[Hit] = []
        # Bytes the /huge route managed to send before the client hung up, by request path.
        self.sent: dict[str, int] = {}
        # TLS server names (SNI) clients asked for.
        self.server_names: list[str | None] = []
        self._lock = threading.Lock()

    def start(self) -> WebServer:
        if self.running:
            return self
        cls = _IPv6HTTPServer if ":" in self.bind else _HTTPServer
        httpd = cls((self.bind, 0), _Handler)
        httpd.web = self
        if self.tls is not None:
            self.tls.sni_callback = self._on_sni
            httpd.socket = self.tls.wrap_socket(
                httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._serve(httpd, f"web-server-{self.bind}")
        return self

    def url(self, path: str = "/", *, host: str | None = None) -> str:
        """An address of this server, reached through `host` (a name or the bound address)."""
        scheme = "https" if self.tls is not None else "http"
        if host is None:
            host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"{scheme}://{host}:{self.port}{path}"

    def reset(self) -> None:
        """Forget what was recorded, for a server shared between tests."""
        with self._lock:
            self.hits.clear()
            self.sent.clear()
            self.server_names.clear()

    def paths(self) -> list[str]:
        with self._lock:
            return [hit.path for hit in self.hits]

    def _record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def _sent(self, path: str, count: int) -> None:
        with self._lock:
            self.sent[path] = count

    def _on_sni(self, sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        with self._lock:
            self.server_names.append(name)


@dataclass(frozen=True)
class TestAuthority:
    """A throwaway certificate authority and one server certificate it signed."""

    server_context: ssl.SSLContext  # serves the certificate
    client_context: ssl.SSLContext  # trusts only this authority


def make_test_authority(tmp: Path, names: list[str]) -> TestAuthority:
    """A CA and a server certificate for `names` (DNS names; IP addresses are not included)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=1))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Chamberlain test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = tmp / "ca.pem", tmp / "server.pem", tmp / "server.key"
    ca_file.write_bytes(ca_cert.public_bytes(pem))
    cert_file.write_bytes(cert.public_bytes(pem))
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(ca_file))
    return TestAuthority(server, client)
