"""The web tools: fetch one page as readable text; web_search (tools/search.py) shares the rules.

Both are scoped by domain (`domain:<host>`, lower-case IDNA). A call reaches the network only
after the runner checked its grant, and then only the one host it names:

- Only `http://` and `https://` GETs. Every other scheme, a user name or password in the
  address, invisible or control characters, and odd spellings of IP addresses (`2130706433`,
  `0x7f.1`) are refused from `targets()`, before anyone is asked.
- Loopback, private, link-local (cloud metadata), carrier-grade NAT, multicast, unspecified and
  reserved addresses, in IPv4, IPv6 and IPv4-in-IPv6 forms, are refused unless the host is in
  the `web.allow_private` setting. IP literals and `localhost` names are checked in `targets()`;
  names are resolved in `run()`, after the grant, so no DNS query leaves before the user agreed.
- The connection goes to the very address that was checked (the name is resolved once, the
  socket is opened to that IP, and the peer is compared with it once connected), while the Host
  header, TLS SNI and certificate check keep the real name: a DNS answer that changes between
  check and connect (rebinding) cannot steer the request.
- Redirects are followed by hand, at most five, and each hop is checked again: scheme, address
  rule, and scope (the same host, a subdomain of it, or its `www.` twin). Anything else stops
  with the new domain named, so the user can be asked for it separately.
- The body is read in pieces under a size cap and one overall deadline; compressed bodies are
  decoded here with the output capped, so a small gzip bomb cannot grow past the cap.

This module must never make any other connection: no proxies from the environment, no cookies,
no credentials, no robots.txt, no telemetry, nothing at import time (the extractor is imported
on first use). web_search's SearXNG requests go through this module's client; its ddgs
provider uses ddgs's own client, for one fixed host (see tools/search.py).
"""

from __future__ import annotations

import codecs
import contextlib
import http.client
import ipaddress
import logging
import re
import socket
import ssl
import time
import unicodedata
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote, urljoin

import idna
import urllib3
from pydantic import Field
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.util.ssl_match_hostname import CertificateError

from tools.arguments import NOT_BLANK, ToolArguments
from tools.files import decode_text
from tools.manual import (
    CallPlan,
    Capability,
    Prepared,
    RequestWords,
    Tool,
    ToolError,
    ToolManual,
    ToolRefused,
    ToolResult,
    typed_tool,
)
from tools.registry import ToolConfig

if TYPE_CHECKING:
    from tools.search import DdgsProxy

log = logging.getLogger("chamberlain.tools.web")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses the host resolves to, as strings. Injectable for tests.
Resolver = Callable[[str, int], Sequence[str]]

MAX_URL_CHARS = 2048
MAX_REDIRECTS = 5
# What the model gets of a page's text; the body cap (web_max_bytes) bounds what is read.
TEXT_CHARS_CAP = 100_000
CONNECT_TIMEOUT_S = 10.0
READ_CHUNK = 64 * 1024
USER_AGENT = "Chamberlain/0.1 (local desktop assistant)"
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_SETTING_HINT = "add the host to the setting `web.allow_private` if you trust it"


# --- addresses -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebAddress:
    """A checked http(s) URL: scheme, normalised host, port, and the path with its query."""

    scheme: str
    host: str  # lower-case IDNA, no trailing dot; an IPv6 address without brackets
    port: int
    path: str  # starts with "/", query included, fragment dropped, non-ASCII percent-encoded
    ip: IPAddress | None  # set when the host is an IP address

    @property
    def target(self) -> str:
        return f"domain:{self.host}"

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}"


_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_ASCII_HOST_RE = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*")
_USERINFO_RE = re.compile(r"(//)[^/?#]*@")
_NUMERIC_LABEL_RE = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")


def _shown(text: str, limit: int = 120) -> str:
    """A piece of untrusted text, safe to put in a message: escaped and short."""
    shown = ascii(text[:limit])[1:-1]
    return shown + ("…" if len(text) > limit else "")


def _char_name(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f" {name}" if name else ""


def parse_web_url(raw: str) -> WebAddress:
    """Check and normalise an http(s) URL, or raise ToolRefused saying why it is never fetched.

    Pure: no DNS, no network. Ordinary spaces around the address are ignored; anything invisible
    or any whitespace inside it is refused, as is a backslash (parsers disagree about it).
    """
    text = raw.strip(" \t\r\n")
    if not text:
        raise ToolRefused("The address is empty; give a full http:// or https:// URL")
    if len(text) > MAX_URL_CHARS:
        raise ToolRefused(f"The address is longer than {MAX_URL_CHARS} characters")
    # Messages show the address without any user name or password in it.
    shown = _shown(_USERINFO_RE.sub(r"\1[redacted]@", text))
    for ch in text:
        if unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
            raise ToolRefused(
                f"The address {shown} contains an invisible, space or control character "
                f"(U+{ord(ch):04X}{_char_name(ch)}); such addresses are "
                "refused because they can hide where a request really goes"
            )
    if "\\" in text:
        raise ToolRefused(
            f"The address {shown} contains a backslash, which browsers and servers read "
            "differently; write it with forward slashes"
        )
    match = _SCHEME_RE.match(text)
    if match is None:
        raise ToolRefused(f"{shown} is not a web address; give a full http:// or https:// URL")
    scheme = match.group(1).lower()
    if scheme not in ("http", "https"):
        raise ToolRefused(
            f"{scheme}: addresses are never fetched ({shown}); only http:// and https:// "
            "web pages can be"
        )
    rest = text[match.end() :]
    if not rest.startswith("//"):
        raise ToolRefused(f"{shown} is not a full address; write {scheme}://host/path")
    rest = rest[2:]
    end = len(rest)
    for sep in "/?#":
        found = rest.find(sep)
        if found != -1:
            end = min(end, found)
    authority, path = rest[:end], rest[end:]
    if "@" in authority:
        raise ToolRefused(
            f"The address {shown} carries a user name or password before '@'; Chamberlain "
            "never sends those, and in 'http://a.com@b.net/' the host is really b.net"
        )
    host, port = _split_authority(authority, scheme)
    host, ip = _normalise_host(host)
    path = path.split("#", 1)[0]
    if not path.startswith("/"):
        path = "/" + path
    # Non-ASCII in the path or query is sent percent-encoded (UTF-8), as browsers do.
    path = re.sub(r"[^\x21-\x7e]+", lambda m: quote(m.group(), safe=""), path)
    return WebAddress(scheme, host, port, path, ip)


def _split_authority(authority: str, scheme: str) -> tuple[str, int]:
    port_text = ""
    if authority.startswith("["):
        close = authority.find("]")
        if close == -1:
            raise ToolRefused(f"The host {_shown(authority)} has an unclosed '['")
        host, after = authority[: close + 1], authority[close + 1 :]
        if after and not after.startswith(":"):
            raise ToolRefused(f"{_shown(authority)} is not a valid host and port")
        port_text = after[1:]
    elif authority.count(":") > 1:
        raise ToolRefused(
            f"{_shown(authority)} is not a valid host; an IPv6 address must be in [brackets]"
        )
    else:
        host, _, port_text = authority.partition(":")
    default = 443 if scheme == "https" else 80
    if not port_text:
        return host, default
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ToolRefused(f"{_shown(port_text)} is not a valid port number")
    return host, int(port_text)


def _normalise_host(host: str) -> tuple[str, IPAddress | None]:
    """(lower-case IDNA host, its IP address when it is one); ToolRefused when invalid."""
    if not host:
        raise ToolRefused("The address has no host name")
    if host.startswith("["):
        inner = host[1:-1]
        if "%" in inner:
            raise ToolRefused(f"The IPv6 address {_shown(host)} has a zone index ('%'), refused")
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError as exc:
            raise ToolRefused(f"{_shown(host)} is not a valid IPv6 address") from exc
        return v6.compressed, v6
    if "%" in host:
        raise ToolRefused(f"The host {_shown(host)} is percent-encoded; write it plainly")
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise ToolRefused(f"{_shown(host)} is not a valid host name ({exc})") from exc
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if len(host) > 253 or not _ASCII_HOST_RE.fullmatch(host):
        raise ToolRefused(f"{_shown(host)} is not a valid host name")
    if any(len(label) > 63 for label in host.split(".")):
        raise ToolRefused(f"{_shown(host)} is not a valid host name (a part is too long)")
    last = host.rsplit(".", 1)[-1]
    if _NUMERIC_LABEL_RE.fullmatch(last):
        # Browsers (WHATWG URL) and the C library read a host ending in a number as an IPv4
        # address, in decimal, octal or hex, with 1 to 4 parts: 2130706433 and 0x7f.1 are both
        # 127.0.0.1. Only the plain dotted-decimal spelling is accepted.
        v4 = _whatwg_ipv4(host)
        if v4 is None:
            raise ToolRefused(f"{_shown(host)} is neither a valid host name nor an IP address")
        if str(v4) != host:
            raise ToolRefused(
                f"{_shown(host)} is an unusual spelling of the IP address {v4}; such spellings "
                "are refused (they are a common way to disguise an address)"
            )
        return host, v4
    return host, None


def _whatwg_ipv4(host: str) -> ipaddress.IPv4Address | None:
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers: list[int] = []
    for part in parts:
        if part[:2] in ("0x", "0X"):
            digits, base, allowed = part[2:], 16, "0123456789abcdefABCDEF"
        elif len(part) > 1 and part.startswith("0"):
            digits, base, allowed = part[1:], 8, "01234567"
        else:
            digits, base, allowed = part, 10, "0123456789"
        if not part or any(ch not in allowed for ch in digits):
            return None
        numbers.append(int(digits, base) if digits else 0)
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    value = numbers[-1]
    for index, n in enumerate(numbers[:-1]):
        value += n * 256 ** (3 - index)
    return ipaddress.IPv4Address(value)


def fetch_plan(address: WebAddress) -> CallPlan:
    """What a fetch of `address` sends where: the URL as requested (its fragment, which never
    leaves this computer, dropped), GET, no body, and the one host it reaches."""
    return CallPlan(url=address.url, method="GET", network=(address.host,))


def url_target(raw: str) -> str:
    """The `domain:<host>` target a web_fetch of `raw` would name (ToolRefused if never fetched)."""
    return parse_web_url(raw).target


# --- which addresses are off limits --------------------------------------------------------------


def _nets(
    *specs: tuple[str, str],
) -> tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]:
    return tuple((ipaddress.ip_network(net), label) for net, label in specs)


_LOOPBACK = "a loopback address (this computer)"
_PRIVATE = "a private-network address"
# Never a web server, whatever the settings say.
_ALWAYS_FORBIDDEN = _nets(
    ("0.0.0.0/8", "an unspecified address"),
    ("224.0.0.0/4", "a multicast address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("::/128", "an unspecified address"),
    ("ff00::/8", "a multicast address"),
)
_FORBIDDEN = _nets(
    ("127.0.0.0/8", _LOOPBACK),
    ("10.0.0.0/8", _PRIVATE),
    ("172.16.0.0/12", _PRIVATE),
    ("192.168.0.0/16", _PRIVATE),
    ("169.254.0.0/16", "a link-local address (where cloud metadata services live)"),
    ("100.64.0.0/10", "a carrier-grade NAT address"),
    ("192.0.0.0/24", "a reserved protocol address"),
    ("192.0.2.0/24", "a documentation address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("192.88.99.0/24", "a reserved relay address"),
    ("240.0.0.0/4", "a reserved address"),
    ("::1/128", _LOOPBACK),
    ("fc00::/7", "a unique-local IPv6 address (private network)"),
    ("fe80::/10", "a link-local IPv6 address"),
    ("fec0::/10", "a site-local IPv6 address (private network)"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("100::/64", "a discard-only address"),
    ("2001::/23", "a reserved protocol address"),
    ("2001:db8::/32", "a documentation address"),
    ("3fff::/20", "a documentation address"),
    ("::/96", "a deprecated IPv4-compatible IPv6 address"),
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
# Only global unicast IPv6 is on the public internet; everything outside it is refused.
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 form carries (mapped, NAT64, 6to4), which is where it goes."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip in _IPV4_TRANSLATED:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "IPv4-translated"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    return None


def address_problem(ip: IPAddress, *, allowed: bool = False) -> str | None:
    """Why Chamberlain will not connect to `ip` (a phrase), or None when it may.

    `allowed`: the user listed the host in `web.allow_private`; only never-useful addresses
    (unspecified, multicast, broadcast) are refused then.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            v4, form = embedded
            inner = address_problem(v4, allowed=allowed)
            return None if inner is None else f"the {form} form of {v4}, {inner}"
    for net, label in _ALWAYS_FORBIDDEN:
        if ip in net:
            return label
    if allowed:
        return None
    for net, label in _FORBIDDEN:
        if ip in net:
            return label
    if not ip.is_global or (isinstance(ip, ipaddress.IPv6Address) and ip not in _GLOBAL_UNICAST):
        return "not a public internet address"
    return None


def _is_localhost_name(host: str) -> bool:
    # RFC 6761: localhost and every name under it mean this computer, whatever DNS says.
    return host == "localhost" or host.endswith(".localhost")


def _allow_list(entries: Sequence[str]) -> tuple[bool, frozenset[str]]:
    """(everything allowed, the normalised hosts) from `web.allow_private`."""
    hosts: set[str] = set()
    for entry in entries:
        value = entry.strip()
        if value == "*":
            return True, frozenset()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        try:
            hosts.add(str(ipaddress.ip_address(value)))
            continue
        except ValueError:
            pass
        try:
            hosts.add(_normalise_host(value)[0])
        except ToolRefused:
            log.warning("ignoring %r in web.allow_private: not a host name or address", entry)
    return False, frozenset(hosts)


def _system_resolver(host: str, port: int) -> Sequence[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


class _AddressRefused(ToolRefused):
    """A host on an address Chamberlain does not connect to; `where` says which and why."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where


class _Guard:
    """Applies the address rule to a WebAddress: statically, then after resolving its name."""

    def __init__(self, allow_private: Sequence[str], resolver: Resolver) -> None:
        self._allow_all, self._allowed = _allow_list(allow_private)
        self._resolver = resolver

    def allowed(self, host: str) -> bool:
        return self._allow_all or host in self._allowed

    def _refuse(self, address: WebAddress, ip: IPAddress, problem: str) -> ToolRefused:
        if address.ip is not None:
            where = f"{address.host} is {problem}"
        elif _is_localhost_name(address.host):
            where = f"{address.host} is this computer ({problem})"
        else:
            where = f"{address.host} resolves to {ip}, {problem}"
        return _AddressRefused(
            where,
            f"{where}; Chamberlain does not connect to loopback, private or link-local "
            f"addresses unless you allow that host ({_SETTING_HINT})",
        )

    def check_static(self, address: WebAddress) -> None:
        """Refuse what needs no DNS to refuse: IP literals and localhost names."""
        allowed = self.allowed(address.host)
        if address.ip is not None:
            problem = address_problem(address.ip, allowed=allowed)
            if problem is not None:
                raise self._refuse(address, address.ip, problem)
        elif _is_localhost_name(address.host) and not allowed:
            loopback = ipaddress.IPv4Address("127.0.0.1")
            raise self._refuse(address, loopback, "a loopback address")

    def resolve(self, address: WebAddress) -> list[IPAddress]:
        """The checked addresses to connect to, in order; refuses if any answer is off limits."""
        self.check_static(address)
        if address.ip is not None:
            return [address.ip]
        if _is_localhost_name(address.host):
            return [ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1")]
        try:
            answers = self._resolver(address.host, address.port)
        except (OSError, UnicodeError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            raise ToolError(f"Cannot find the host {address.host} ({why})") from exc
        found: list[IPAddress] = []
        allowed = self.allowed(address.host)
        for answer in answers:
            try:
                ip = ipaddress.ip_address(answer.split("%", 1)[0])
            except ValueError:
                continue
            # One bad answer spoils the lot: a mix of public and private answers is a trick.
            problem = address_problem(ip, allowed=allowed)
            if problem is not None:
                raise self._refuse(address, ip, problem)
            if ip not in found:
                found.append(ip)
        if not found:
            raise ToolError(f"Cannot find the host {address.host} (no usable address)")
        return found


def _same_site(origin: str, host: str) -> bool:
    """Whether a redirect to `host` stays within what a permission for `origin` covers."""
    if host == origin or host.endswith("." + origin):
        return True
    return origin.startswith("www.") and host == origin[4:]


# --- reading a response --------------------------------------------------------------------------


class _BodyDecoder:
    """Content-Encoding decoding with the output capped per call: a bomb stays compressed."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._deflate = encoding == "deflate"
        if encoding in ("", "identity"):
            self._z: Any = None
        elif encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self._deflate:
            self._z = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise ToolError(
                f"The server sent the content compressed as {_shown(encoding, 40)!r}, which "
                "Chamberlain does not decode (it asks for gzip or deflate only)"
            )
        self._first = True

    def decode(self, data: bytes, limit: int) -> bytes:
        """At most `limit` decoded bytes from `data` plus what earlier calls left undecoded."""
        if self._z is None:
            return data[:limit]
        out = b""
        pending = self._z.unconsumed_tail + data
        while len(out) < limit:
            try:
                piece = self._z.decompress(pending, limit - len(out))
            except zlib.error:
                if self._deflate and self._first:
                    # "deflate" is sometimes sent raw, without its zlib header.
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._first = False
                    continue
                raise
            self._first = False
            out += piece
            if self._z.eof and self._z.unused_data:
                # Another gzip member follows (concatenated gzip is valid).
                pending = self._z.unused_data
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                continue
            if not piece or not self._z.unconsumed_tail:
                break
            pending = self._z.unconsumed_tail
        return out


@dataclass
class _Response:
    address: WebAddress
    status: int
    reason: str
    media_type: str
    charset: str | None
    body: bytes
    truncated: bool
    timed_out: bool


class _StatusError(ToolError):
    """The server answered, but not with the page: 404, 500, 304, …"""

    def __init__(self, address: WebAddress, status: int, reason: str) -> None:
        self.status = status
        super().__init__(f"{address.url} answered {status} {_shown(reason, 80)}".rstrip())


def _media_type(header: str | None) -> tuple[str, str | None]:
    """(media type, charset) from a Content-Type header ("" when absent)."""
    if not header:
        return "", None
    parts = header.split(";")
    media = parts[0].strip().lower()
    charset = None
    for param in parts[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return media, charset


class _Client:
    """GET over a pinned connection, redirects by hand, under one deadline and a size cap."""

    def __init__(self, guard: _Guard, timeout_s: float, tls_context: ssl.SSLContext | None) -> None:
        self.guard = guard
        self.timeout_s = timeout_s
        self.tls_context = tls_context

    def get(
        self,
        start: WebAddress,
        *,
        accept: str,
        max_bytes: int,
        follow_redirects: bool,
        check_type: Callable[[WebAddress, str], None],
    ) -> _Response:
        deadline = time.monotonic() + self.timeout_s
        current = start
        seen = {start.url}
        for hop in range(MAX_REDIRECTS + 1):
            ips = self.guard.resolve(current)
            conn, sock = self._connect(current, ips, deadline)
            try:
                response = self._request(conn, sock, current, accept, deadline)
                if response.status in _REDIRECT_STATUSES and follow_redirects:
                    following = self._next_hop(start, current, response)
                    if hop == MAX_REDIRECTS:
                        raise ToolError(
                            f"Stopped after {MAX_REDIRECTS} redirects (the last one, from "
                            f"{current.url}, led to {following.url}); the site keeps redirecting"
                        )
                    if following.url in seen:
                        raise ToolError(
                            f"{current.url} redirects in a loop (back to {following.url})"
                        )
                    seen.add(following.url)
                    log.debug("redirect %s -> %s", current.url, following.url)
                    current = following
                    continue
                if response.status in _REDIRECT_STATUSES:
                    where = response.headers.get("Location", "")
                    raise ToolError(
                        f"{current.url} answered with a redirect (to {_shown(where)}), which "
                        "is not followed here"
                    )
                if not 200 <= response.status < 300:
                    raise _StatusError(current, response.status, response.reason or "")
                media, charset = _media_type(response.headers.get("Content-Type"))
                check_type(current, media)
                body, truncated, timed_out = self._read_body(
                    response, sock, current, max_bytes, deadline
                )
                return _Response(
                    current,
                    response.status,
                    response.reason or "",
                    media,
                    charset,
                    body,
                    truncated,
                    timed_out,
                )
            finally:
                conn.close()
                sock.close()
        raise AssertionError("unreachable: the redirect loop always returns or raises")

    def _next_hop(
        self, start: WebAddress, current: WebAddress, response: urllib3.HTTPResponse
    ) -> WebAddress:
        location = response.headers.get("Location")
        if not location:
            raise ToolError(f"{current.url} answered {response.status} without saying where to")
        with contextlib.suppress(UnicodeError):
            # http.client reads headers as Latin-1; a UTF-8 Location comes out garbled.
            location = location.encode("latin-1").decode("utf-8")
        try:
            following = parse_web_url(urljoin(current.url, location.strip(" \t")))
        except ToolRefused as exc:
            raise ToolRefused(f"{current.url} redirected elsewhere, and refused: {exc}") from exc
        if not _same_site(start.host, following.host):
            raise ToolRefused(
                f"{current.url} redirected to {following.host}, which this permission does not "
                f"cover; ask for it separately (the new address: {_shown(following.url, 300)})"
            )
        try:
            self.guard.check_static(following)
        except ToolRefused as exc:
            raise ToolRefused(f"{current.url} redirected to {following.url}: {exc}") from exc
        return following

    def _connect(
        self, address: WebAddress, ips: list[IPAddress], deadline: float
    ) -> tuple[HTTPConnection, socket.socket]:
        problems: list[str] = []
        for ip in ips:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            conn: HTTPConnection
            if address.scheme == "https":
                # Connect to the checked IP; SNI and the certificate check use the real name.
                conn = HTTPSConnection(
                    str(ip),
                    address.port,
                    timeout=min(remaining, CONNECT_TIMEOUT_S),
                    server_hostname=address.host,
                    assert_hostname=address.host,
                    ssl_context=self.tls_context,
                    cert_reqs="CERT_REQUIRED",
                )
            else:
                conn = HTTPConnection(
                    str(ip), address.port, timeout=min(remaining, CONNECT_TIMEOUT_S)
                )
            try:
                conn.connect()
                sock = conn.sock
                if sock is None:
                    raise ToolError(f"Connecting to {address.host} ({ip}) failed")
                peer = ipaddress.ip_address(str(sock.getpeername()[0]).split("%", 1)[0])
            except (ssl.SSLCertVerificationError, CertificateError) as exc:
                conn.close()
                why = getattr(exc, "verify_message", None) or str(exc)
                raise ToolError(
                    f"The TLS certificate of {address.host} is not valid: {why}"
                ) from exc
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                conn.close()
                cause = exc.__context__ if isinstance(exc, urllib3.exceptions.HTTPError) else exc
                if isinstance(cause, ssl.SSLCertVerificationError):
                    raise ToolError(
                        f"The TLS certificate of {address.host} is not valid: "
                        f"{cause.verify_message or cause}"
                    ) from exc
                problems.append(f"{ip}: {_connect_error(exc)}")
                continue
            if peer != ip:
                # Defence in depth: the socket must be connected where the check said.
                conn.close()
                raise ToolRefused(f"Connected to {peer} instead of the checked address {ip}")
            return conn, sock
        if not problems:
            raise ToolError(f"{address.host} did not answer within {self.timeout_s:g} s")
        raise ToolError(f"Cannot connect to {address.authority} ({'; '.join(problems)})")

    def _request(
        self,
        conn: HTTPConnection,
        sock: socket.socket,
        address: WebAddress,
        accept: str,
        deadline: float,
    ) -> urllib3.HTTPResponse:
        headers = {
            "Host": address.authority,
            "User-Agent": USER_AGENT,
            "Accept": accept,
            "Accept-Encoding": "gzip, deflate",
            "Connection": "close",
        }
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            conn.timeout = remaining
            sock.settimeout(remaining)
            conn.request(
                "GET", address.path, headers=headers, preload_content=False, decode_content=False
            )
            return conn.getresponse()
        except (TimeoutError, urllib3.exceptions.TimeoutError) as exc:
            raise ToolError(f"{address.host} did not answer within {self.timeout_s:g} s") from exc
        except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
            raise ToolError(
                f"{address.host} did not give a valid HTTP answer ({_connect_error(exc)})"
            ) from exc

    def _read_body(
        self,
        response: urllib3.HTTPResponse,
        sock: socket.socket,
        address: WebAddress,
        max_bytes: int,
        deadline: float,
    ) -> tuple[bytes, bool, bool]:
        encoding = (response.headers.get("Content-Encoding") or "").strip().lower()
        decoder = _BodyDecoder(encoding)
        body = bytearray()
        raw_total = 0
        truncated = timed_out = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                truncated = timed_out = True
                break
            # http.client closes its socket once the body is complete; that is not an error.
            with contextlib.suppress(OSError):
                sock.settimeout(remaining)
            try:
                raw = response.read1(READ_CHUNK, decode_content=False)
            except (TimeoutError, urllib3.exceptions.TimeoutError):
                truncated = timed_out = True
                break
            except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
                if not body:
                    raise ToolError(
                        f"Reading from {address.host} failed ({_connect_error(exc)})"
                    ) from exc
                truncated = True  # what arrived is kept, marked as incomplete
                break
            raw_total += len(raw)
            try:
                body += decoder.decode(raw, max_bytes + 1 - len(body))
            except zlib.error as exc:
                if not body:
                    raise ToolError(
                        f"{address.host} sent a damaged {encoding} body ({exc})"
                    ) from exc
                truncated = True
                break
            if len(body) > max_bytes or (raw and raw_total > max_bytes):
                truncated = True
                break
            if not raw:
                break
        return bytes(body[:max_bytes]), truncated, timed_out


def _connect_error(exc: BaseException) -> str:
    inner = exc.__context__ if isinstance(exc, urllib3.exceptions.HTTPError) else None
    for candidate in (inner, exc):
        if isinstance(candidate, OSError) and candidate.strerror:
            return candidate.strerror
    text = str(exc) or type(exc).__name__
    return _shown(re.sub(r"<[^>]*>: ", "", text), 200)


# --- turning bodies into text --------------------------------------------------------------------

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/csv",
        "application/rss+xml",
        "application/atom+xml",
    }
)
_BINARY_WORDS = {
    "image": "an image",
    "audio": "audio",
    "video": "a video",
    "font": "a font",
    "model": "a 3-D model",
    "application/pdf": "a PDF document",
    "application/zip": "a zip archive",
    "application/gzip": "a gzip archive",
    "application/octet-stream": "binary data",
}
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:\-]+)""", re.I)
_XML_DECL_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)


def _kind_of(media: str) -> str | None:
    """'html', 'text', 'binary', or None when the server did not say."""
    if not media:
        return None
    if media in _HTML_TYPES:
        return "html"
    if media.startswith("text/") or media in _TEXT_APPLICATION_TYPES:
        return "text"
    if media.endswith(("+json", "+xml")):
        return "text"
    return "binary"


def _binary_refusal(address: WebAddress, media: str, *, sniffed: bool = False) -> ToolError:
    if sniffed:
        what = (
            f"binary data (the server called it {_shown(media, 80)})"
            if media
            else ("binary data (the server gave no type)")
        )
    else:
        kind = _BINARY_WORDS.get(media) or _BINARY_WORDS.get(media.split("/", 1)[0])
        what = f"{kind or 'a file'} ({_shown(media, 80)})"
    return ToolError(
        f"{address.url} is {what}, not a web page or text; web_fetch reads only pages and text"
    )


def _check_fetchable(address: WebAddress, media: str) -> None:
    if _kind_of(media) == "binary":
        raise _binary_refusal(address, media)


def _looks_binary(body: bytes) -> bool:
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False  # also covers the UTF-32 marks
    return b"\x00" in body[:8192]


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


_BOM_CODECS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode_body(body: bytes, declared: str | None, *, html: bool, complete: bool) -> str:
    """Text from a body: byte-order mark, then the declared charset, then <meta>, then a guess."""
    codec = next((c for bom, c in _BOM_CODECS if body.startswith(bom)), None)
    codec = codec or _codec(declared)
    if codec is None and html:
        found = _META_CHARSET_RE.search(body[:4096])
        codec = _codec(found.group(1).decode("ascii")) if found else None
        if codec in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
            codec = "utf-8"  # a <meta> that could be read as ASCII is not UTF-16 (HTML spec)
    if codec is not None:
        decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        return str(decoder.decode(body, final=complete))
    guessed = decode_text(body, complete=complete)
    if guessed is not None:
        return guessed.text
    return body.decode("utf-8", errors="replace")


def _clean_lines(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, readable main text) of an HTML page, with trafilatura; never touches the network."""
    import lxml.etree
    import lxml.html
    import trafilatura

    html = _XML_DECL_RE.sub("", html, count=1)
    if not html.strip():
        return "", ""
    try:
        tree = lxml.html.document_fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return "", _clean_lines(html)
    title = ""
    for path in (".//title", ".//meta[@property='og:title']", ".//h1"):
        node = tree.find(path)
        if node is None:
            continue
        value = node.get("content") if node.tag == "meta" else node.text_content()
        title = " ".join(str(value or "").split())
        if title:
            break
    text = trafilatura.extract(
        html,
        favor_recall=True,
        include_comments=False,
        include_tables=True,
        include_links=False,
        include_images=False,
        deduplicate=False,
        with_metadata=False,
    )
    if not text:
        # Too little for the extractor to call it an article: all visible text instead.
        for node in tree.xpath("//script|//style|//noscript|//template|//head"):
            node.drop_tree()
        text = tree.text_content()
    return title[:500], _clean_lines(text)


# --- the tools -----------------------------------------------------------------------------------


class WebFetchArguments(ToolArguments):
    url: Annotated[str, NOT_BLANK] = Field(
        min_length=1,
        max_length=MAX_URL_CHARS,
        description="The full address, starting with http:// or https://",
    )


class _WebTools:
    def __init__(
        self, config: ToolConfig, resolver: Resolver, tls_context: ssl.SSLContext | None
    ) -> None:
        self.config = config
        self.guard = _Guard(config.web_allow_private, resolver)
        self.client = _Client(self.guard, config.web_timeout_s, tls_context)

    # web_fetch

    def prepare_fetch(self, args: WebFetchArguments) -> Prepared:
        address = parse_web_url(args.url)
        self.guard.check_static(address)
        # The prompt shows exactly what is sent, whole: the path and query can carry data out
        # (`?ref=<a private note>`), so no front end may cut them to the host.
        return Prepared.of(args, [address.target], "easy", address, fetch_plan(address))

    def fetch(self, args: WebFetchArguments, prepared: Prepared) -> ToolResult:
        address = prepared.plan
        if not isinstance(address, WebAddress):
            address = parse_web_url(args.url)
        response = self.client.get(
            address,
            accept="text/html,application/xhtml+xml,text/plain;q=0.9,text/*;q=0.8,*/*;q=0.1",
            max_bytes=self.config.web_max_bytes,
            follow_redirects=True,
            check_type=_check_fetchable,
        )
        kind = _kind_of(response.media_type)
        body = response.body
        if _looks_binary(body):
            # NUL bytes are never text (outside UTF-16/32, which start with a byte-order mark).
            raise _binary_refusal(response.address, response.media_type, sniffed=True)
        if kind is None:
            # No Content-Type: a leading tag means HTML, anything else is text.
            head = body[:1024].lstrip().lower()
            kind = "html" if head.startswith((b"<!doctype html", b"<html")) else "text"
        complete = not response.truncated
        text = _decode_body(body, response.charset, html=kind == "html", complete=complete)
        title = ""
        if kind == "html":
            title, text = html_to_text(text)
        truncated = response.truncated
        if len(text) > TEXT_CHARS_CAP:
            text, truncated = text[:TEXT_CHARS_CAP], True
        data: dict[str, Any] = {
            "url": address.url,
            "final_url": response.address.url,
            "status": response.status,
            "content_type": response.media_type,
            "title": title,
            "text": text,
            "truncated": truncated,
            "bytes": len(body),
        }
        if response.timed_out:
            data["note"] = (
                f"the page was still arriving after {self.config.web_timeout_s:g} s; "
                "only what came is shown"
            )
        elif truncated:
            data["note"] = "the page is longer than Chamberlain reads; only its start is shown"
        return ToolResult(data=data, text=_render_page(data), truncated=truncated)


def _render_page(data: dict[str, Any]) -> str:
    lines = []
    if data["title"]:
        lines.append(data["title"])
    lines.append(data["final_url"])
    if data["final_url"] != data["url"]:
        lines[-1] += f" (from {data['url']})"
    lines.append("")
    lines.append(data["text"] or "(no readable text)")
    if "note" in data:
        lines.append(f"[{data['note']}]")
    return "\n".join(lines)


def make_web_tools(
    config: ToolConfig,
    *,
    resolver: Resolver | None = None,
    tls_context: ssl.SSLContext | None = None,
    ddgs_proxy: DdgsProxy | None = None,
) -> list[Tool]:
    """web_fetch and web_search, built from the user's settings.

    `resolver`, `tls_context` and `ddgs_proxy` exist for tests (a resolver that plays a DNS we
    cannot run, a certificate authority made for a loopback server, a local proxy that plays
    the search engine); Chamberlain itself passes none of them.
    """
    tools = _WebTools(config, resolver or _system_resolver, tls_context)
    # The runner's own limit, above the tool's deadline (DNS lookups are not under it).
    timeout_s = config.web_timeout_s + 10.0
    web_fetch = typed_tool(
        ToolManual(
            name="web_fetch",
            description=(
                "Fetch one web page (http:// or https://) and return its title and readable "
                "text. Text files and JSON come back as text; images, PDFs and other binary "
                "files are refused. Redirects to another site stop and name it. Search results "
                "are not fetched automatically: call this for the one page you need."
            ),
            parameters=WebFetchArguments.parameters(),
            capability=Capability.WEB_ACCESS,
            category="web",
            risk="moderate",
            timeout_s=timeout_s,
            output_cap=2 * TEXT_CHARS_CAP + 16 * 1024,
        ),
        WebFetchArguments,
        prepare=tools.prepare_fetch,
        run=tools.fetch,
        user_scopes_of=_site_scope,
    )
    # web_search shares this module's address rules and client; it lives in tools/search.py,
    # which imports from here (hence the import at call time).
    from tools.search import make_search_tool

    web_search = make_search_tool(
        config, tools.guard, tools.client, timeout_s=timeout_s, ddgs_proxy=ddgs_proxy
    )
    return [web_fetch, web_search]


def _site_scope(words: RequestWords) -> list[str]:
    """The site of a link the user gave (a link the rules refuse names no scope)."""
    if not words.url:
        return []
    try:
        return [url_target(words.url)]
    except (ToolError, ValueError):
        return []
