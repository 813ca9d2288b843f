"""Where the model lives: turn the `llm.url` setting into an OpenAI-compatible base URL.

"auto" probes the usual local servers on loopback only (Ollama, LM Studio, llama.cpp server,
vLLM) with one short GET of `/v1/models` each; an explicit URL is only normalised, never
contacted. This module must never open any other connection: no remote probing, no DNS
lookups of names the user did not give, no proxies (invariant 7, no surprise networking).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from core.errors import ConfigError

log = logging.getLogger("chamberlain.broker.llm")

# (server name, port) probed in this order by "auto", always on 127.0.0.1.
# A module constant so tests can point it at a scripted server.
PROBE_PORTS: list[tuple[str, int]] = [
    ("Ollama", 11434),
    ("LM Studio", 1234),
    ("llama.cpp server", 8080),
    ("vLLM", 8000),
]

# A model list is small; anything bigger is not the server we are looking for.
_PROBE_MAX_BYTES = 1024 * 1024


class InvalidEndpoint(ConfigError, ValueError):
    """The `llm.url` setting (or --llm) is not something we can talk to."""


def is_loopback_url(url: str) -> bool:
    """True when `url` points at this machine (127.0.0.0/8, ::1 or localhost)."""
    try:
        host = urlsplit(url if "://" in url else f"http://{url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    # Not "*.localhost": whether those resolve to loopback depends on the resolver, and this
    # answer decides what may be sent to the endpoint.
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def normalise_url(url: str) -> str:
    """An explicit endpoint as a base URL: scheme and host kept, `/v1` added when no path is given.

    "localhost:11434" → "http://localhost:11434/v1"; "https://host/api/v1/" → "https://host/api/v1".
    What is not an address is refused with a sentence saying what is wrong with it, by example:
    in "htp:/localhost 18731" a space and a broken "http://"; in "localhost:abc" a port that is
    not a number; "ftp://x" another scheme; "http://:8080" no host. Never contacts anything.
    """
    text = url.strip()
    example = "e.g. http://127.0.0.1:11434/v1"
    if text.lower() == "embedded":
        raise InvalidEndpoint(
            f"'embedded' selects the bundled model, not a server's address; give one such as "
            f"{example.removeprefix('e.g. ')}"
        )
    if not text:
        raise InvalidEndpoint(f"the model server's address is empty; give one, {example}")
    if any(character.isspace() for character in text):
        raise InvalidEndpoint(f"{url!r} has a space in it; an address has none, {example}")
    if "://" not in text and _BROKEN_SCHEME.match(text):
        raise InvalidEndpoint(f"{url!r} must begin with http:// or https://, {example}")
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed "[" of an IPv6 address
        raise InvalidEndpoint(f"{url!r} names no valid server, {example}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidEndpoint(f"{url!r} must begin with http:// or https://, {example}")
    try:
        # .port raises ValueError on a non-numeric or out-of-range port.
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or parts.netloc.endswith(":"):
        raise InvalidEndpoint(
            f"{url!r} has no valid port: after the ':' comes a number from 1 to 65535, {example}"
        )
    host = parts.hostname or ""
    if not host:
        raise InvalidEndpoint(
            f"{url!r} names no server: its name or IP address goes after http://, {example}"
        )
    if not _HOST.fullmatch(host) and not _is_ip_address(host):
        raise InvalidEndpoint(
            f"{url!r} names no valid server: {host!r} is not a host name, {example}"
        )
    if parts.query or parts.fragment:
        raise InvalidEndpoint(
            f"{url!r}: give the server's base address without '?' or '#' parts, {example}"
        )
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, "", ""))


# "htp:/host", "https//host": a scheme typed wrong, not a "host:port" ("localhost:8080" is not
# matched: a port follows the colon).
_BROKEN_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*(:/|//)", re.IGNORECASE)
# A host name: letters (any script), digits, hyphens and dots.
_HOST = re.compile(r"[\w.-]+")


def _is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _answers_with_models(base_url: str, timeout_s: float) -> bool:
    """One GET {base_url}/models, without proxies: True when it returns a JSON model list."""
    return server_models(base_url, timeout_s) is not None


# A server listing more models than this is cut to this many (the rest are not offered).
MAX_LISTED_MODELS = 200


def server_models(base_url: str, timeout_s: float) -> list[str] | None:
    """The model ids a server lists at {base_url}/models (one GET, no proxies), or None when it
    does not answer with a JSON model list. Ids are untrusted text: non-strings, empty or
    over-long ids and control characters are dropped."""
    payload = _get_json(f"{base_url}/models", timeout_s)
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    ids: list[str] = []
    for entry in payload["data"]:
        name = entry.get("id") if isinstance(entry, dict) else None
        usable = isinstance(name, str) and 0 < len(name) <= 200 and name.isprintable()
        if usable and name not in ids:
            ids.append(str(name))
        if len(ids) >= MAX_LISTED_MODELS:
            break
    return ids


@dataclass(frozen=True)
class LocalServer:
    name: str
    base_url: str
    models: list[str]


def local_servers(timeout_s: float = 0.3) -> list[LocalServer]:
    """Every local server on the usual ports that lists models (loopback only, one GET each)."""
    found: list[LocalServer] = []
    for server_name, port in PROBE_PORTS:
        base_url = f"http://127.0.0.1:{port}/v1"
        models = server_models(base_url, timeout_s)
        if models is not None:
            found.append(LocalServer(server_name, base_url, models))
    return found


def probe_local_servers(timeout_s: float = 0.3) -> str | None:
    """The base URL of the first local server in PROBE_PORTS that lists models, else None."""
    for server_name, port in PROBE_PORTS:
        base_url = f"http://127.0.0.1:{port}/v1"
        if _answers_with_models(base_url, timeout_s):
            log.info("found %s at %s", server_name, base_url)
            return base_url
    log.info("no local model server answers on ports %s", [port for _, port in PROBE_PORTS])
    return None


def resolve_endpoint(url_setting: str, timeout_s: float = 0.3) -> str | None:
    """The base URL to use for `url_setting`, or None when no model is to be used.

    "none" → None; "auto" → the first local server that answers (probed on loopback), or None;
    anything else is an explicit URL, normalised but not contacted. Raises InvalidEndpoint for a
    setting that is not a usable URL.
    """
    setting = url_setting.strip()
    if setting.lower() == "none":
        return None
    if setting.lower() == "auto":
        return probe_local_servers(timeout_s)
    return normalise_url(setting)


def _get_json(url: str, timeout_s: float, body: dict[str, object] | None = None) -> object:
    """One GET (or POST of `body`) without proxies; the parsed JSON, or None."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Accept": "application/json", "Content-Type": "application/json"},
        method="POST" if body is not None else "GET",
    )
    try:
        with opener.open(request, timeout=timeout_s) as response:
            if response.status != 200:
                return None
            raw = response.read(_PROBE_MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        # URLError and timeouts are OSErrors; an HTTP error status is an HTTPError (URLError).
        log.debug("no answer from %s: %s", url, exc)
        return None
    if len(raw) > _PROBE_MAX_BYTES:
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None


# A context length told by a server is taken only within these bounds (llm.context_tokens has
# the same floor): a server saying 1 would otherwise make every request "not fit".
_CONTEXT_BOUNDS = (512, 10_000_000)


def _context_length(value: object) -> int | None:
    low, high = _CONTEXT_BOUNDS
    if isinstance(value, int) and not isinstance(value, bool) and low <= value < high:
        return value
    return None


def context_tokens(base_url: str, model: str | None, timeout_s: float = 0.5) -> int | None:
    """The context length a local server says its model has, or None when it does not say.

    Asked only of servers on this machine, in the ways each tells it: vLLM's `max_model_len` in
    its model list, llama.cpp server's `/props`, LM Studio's `/api/v0/models/<id>`, Ollama's
    `/api/show` (its `num_ctx` parameter when set, else the model's own context length, which
    Ollama may not use in full: set llm.context_tokens to be exact). Every answer is
    untrusted: only a positive integer is taken.
    """
    if not is_loopback_url(base_url):
        return None
    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    listing = _get_json(f"{root}/v1/models", timeout_s)
    if isinstance(listing, dict) and isinstance(listing.get("data"), list):
        for entry in listing["data"]:
            if isinstance(entry, dict) and (model is None or entry.get("id") == model):
                found = _context_length(entry.get("max_model_len"))
                if found:
                    return found
    props = _get_json(f"{root}/props", timeout_s)
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        found = _context_length(settings.get("n_ctx")) if isinstance(settings, dict) else None
        if found:
            return found
    if model:
        studio = _get_json(f"{root}/api/v0/models/{urllib.parse.quote(model, safe='')}", timeout_s)
        if isinstance(studio, dict):
            found = _context_length(studio.get("loaded_context_length")) or _context_length(
                studio.get("max_context_length")
            )
            if found:
                return found
        shown = _get_json(f"{root}/api/show", timeout_s, {"model": model})
        if isinstance(shown, dict):
            return _ollama_context(shown)
    return None


def _ollama_context(shown: dict[str, object]) -> int | None:
    parameters = shown.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                return _context_length(int(parts[1]))
    info = shown.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if isinstance(key, str) and key.endswith(".context_length"):
                return _context_length(value)
    return None


# How servers say a request was longer than the model's context: OpenAI's error code, llama.cpp
# server's error type, and the words of vLLM ("maximum context length"), llama.cpp ("exceeds the
# available context size"), Ollama and LM Studio ("context length", "n_ctx").
_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "context size",
    "context window",
    "maximum context",
    "n_ctx",
    "too many tokens",
    "prompt is too long",
)


def says_context_exceeded(status: int, body: object) -> bool:
    """Whether an error answer (`status`, its parsed JSON `body`) says the request did not fit
    the model's context. Only its code and words are read, to know what to do next (fit the
    request to a smaller context once); nothing of it is trusted beyond that."""
    if status not in (400, 413, 422, 500):
        return False
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        for key in ("code", "type"):
            if str(error.get(key) or "").lower() in _CONTEXT_CODES:
                return True
        text = error.get("message")
    else:
        text = error
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return False
    lowered = text.lower()
    return any(words in lowered for words in _CONTEXT_WORDS)
