"""web_search: one query to one search service, answered with cleaned titles, links and snippets.

Two providers, chosen by the setting `web.search_provider`:

- `ddgs` (the default when no SearXNG is set): the ddgs metasearch library, pinned to one
  engine, DuckDuckGo's HTML endpoint (`html.duckduckgo.com`). ddgs would otherwise pick among a
  dozen engines at random; pinning one is what lets the permission prompt name the one site a
  search contacts, truthfully. ddgs brings its own HTTP client (primp): that connection is not
  pinned to a checked address like web_fetch's, but its host is a fixed public name checked by
  TLS, nothing the model or a page chooses; redirects are not followed and the page is capped.
  Unlike web_fetch's client, primp honours the proxy environment variables (HTTPS_PROXY,
  ALL_PROXY): a search then reaches the same host through the user's proxy.
- `searxng`: the user's own SearXNG (`web.searxng_url`, JSON format enabled), reached through
  web_fetch's client with all its address rules; "auto" picks it whenever it is set.

A call names exactly one target, `domain:<host of the service>`, so a grant for one service
never covers another. What comes back is untrusted text from the internet: every field is made
plain text (tags, control, invisible and zero-width characters removed) and capped, and each
link is checked with web_fetch's own rules (http(s) only, no loopback, private or odd addresses,
nothing hidden in it); a link that fails is dropped. The links are never fetched here.

This module must never search anything but the one service the call was prepared for, and must
not import ddgs before a search needs it (it brings a native HTTP client).
"""

from __future__ import annotations

import functools
import html
import importlib.util
import json
import logging
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol
from urllib.parse import urlencode

from pydantic import Field

from tools.arguments import NOT_BLANK, ToolArguments
from tools.manual import (
    Capability,
    HealthCheck,
    Prepared,
    Tool,
    ToolError,
    ToolManual,
    ToolRefused,
    ToolResult,
    typed_tool,
)
from tools.registry import ToolConfig
from tools.web import (
    MAX_URL_CHARS,
    WebAddress,
    _AddressRefused,
    _Client,
    _Guard,
    _shown,
    _StatusError,
    parse_web_url,
)

log = logging.getLogger("chamberlain.tools.search")

SEARCH_MAX_BYTES = 1024 * 1024
MAX_SEARCH_RESULTS = 20
MAX_QUERY_CHARS = 500
TITLE_CHARS = 300
SNIPPET_CHARS = 500
# The one ddgs engine used, and the one host it contacts.
DDGS_ENGINE = "duckduckgo"
DDGS_HOST = "html.duckduckgo.com"
DDGS_REGION = "wt-wt"  # DuckDuckGo's "no particular region"
_OWN_SEARXNG = "set web.searxng_url to your own SearXNG"


class WebSearchArguments(ToolArguments):
    query: Annotated[str, NOT_BLANK] = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    max_results: int = Field(5, ge=1, le=MAX_SEARCH_RESULTS)


@dataclass(frozen=True)
class Hit:
    """One result as a provider gave it: raw, untrusted, not yet cleaned."""

    title: object
    url: object
    snippet: object


class SearchProvider(Protocol):
    """A search service: the one site it contacts, and the search itself."""

    @property
    def name(self) -> str:
        """What the user is told the search went through ("DuckDuckGo (through ddgs)")."""
        ...

    @property
    def address(self) -> WebAddress:
        """The service's address; its host is the call's one target."""
        ...

    def search(self, query: str, max_results: int) -> list[Hit]:
        """Raw results, or ToolError with a sentence the user can act on."""
        ...


# --- SearXNG -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearxngProvider:
    """The user's SearXNG, asked for JSON through web_fetch's client (address rules included)."""

    address: WebAddress
    client: _Client
    max_bytes: int

    @property
    def name(self) -> str:
        return f"SearXNG at {self.address.url}"

    def search(self, query: str, max_results: int) -> list[Hit]:
        engine = self.address
        base = engine.path.split("?", 1)[0].rstrip("/")
        endpoint = WebAddress(
            engine.scheme,
            engine.host,
            engine.port,
            f"{base}/search?{urlencode({'q': query, 'format': 'json'})}",
            engine.ip,
        )

        def json_only(address: WebAddress, media: str) -> None:
            if media and media != "application/json" and not media.endswith("+json"):
                raise ToolError(
                    f"The SearXNG server at {engine.url} answered with {_shown(media, 80)}, "
                    "not JSON; enable the JSON format in its settings.yml "
                    "(search: formats: [html, json])"
                )

        try:
            response = self.client.get(
                endpoint,
                accept="application/json",
                max_bytes=min(self.max_bytes, SEARCH_MAX_BYTES),
                follow_redirects=False,
                check_type=json_only,
            )
        except ToolRefused as exc:
            raise _engine_refusal(engine, exc) from exc
        except _StatusError as exc:
            if exc.status == 403:
                raise ToolError(
                    f"The SearXNG server at {engine.url} refused the JSON request (403); "
                    "enable the JSON format in its settings.yml (search: formats: [html, json])"
                ) from exc
            raise
        if response.truncated:
            raise ToolError(f"The SearXNG server at {engine.url} sent an oversized answer")
        try:
            payload = json.loads(response.body.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError) as exc:
            raise ToolError(f"The SearXNG server at {engine.url} did not send valid JSON") from exc
        raw_results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(raw_results, list):
            raise ToolError(f"The SearXNG server at {engine.url} sent no result list")
        return [
            Hit(item.get("title"), item.get("url"), item.get("content"))
            for item in raw_results
            if isinstance(item, dict)
        ]


def _engine_refusal(engine: WebAddress, exc: ToolRefused) -> ToolRefused:
    if not isinstance(exc, _AddressRefused):
        return exc
    return ToolRefused(
        f"The SearXNG server set in `web.searxng_url` ({engine.url}) is not on the public "
        f"internet: {exc.where}. Chamberlain connects to such addresses only when you allow "
        f'it; a SearXNG on this computer is a common setup: add "{engine.host}" to the setting '
        "`web.allow_private` to use it"
    )


# --- ddgs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DdgsProxy:
    """For tests only: send ddgs through this HTTP proxy and trust only this CA file."""

    url: str
    ca_file: str


class _NotAnswered(Exception):
    """The engine answered, but not with a results page."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@functools.cache
def _duckduckgo_engine() -> type[Any]:
    """ddgs's DuckDuckGo engine, made to say why a page did not come (ddgs only returns None)."""
    from ddgs.engines.duckduckgo import Duckduckgo

    class CheckedDuckduckgo(Duckduckgo):
        def request(self, *args: Any, **kwargs: Any) -> Any:
            response = self.http_client.request(*args, **kwargs)
            status = int(response.status_code)
            if status in (202, 429):
                # DuckDuckGo's HTML endpoint answers 202 with a challenge when it rate-limits.
                raise _NotAnswered(
                    f"DuckDuckGo answered {status}, its sign that it is limiting how often "
                    "this computer may search"
                )
            if 300 <= status < 400:
                raise _NotAnswered(f"DuckDuckGo redirected ({status}), which is not followed")
            if status != 200:
                raise _NotAnswered(f"DuckDuckGo answered {status}")
            if len(response.content) > SEARCH_MAX_BYTES:
                raise _NotAnswered("DuckDuckGo sent an oversized page")
            return response.text

    return CheckedDuckduckgo


@dataclass(frozen=True)
class DdgsProvider:
    """DuckDuckGo through ddgs, one engine, one host, under `timeout_s`."""

    timeout_s: float
    proxy: DdgsProxy | None = None

    @property
    def name(self) -> str:
        return "DuckDuckGo (through ddgs)"

    @property
    def address(self) -> WebAddress:
        return parse_web_url(f"https://{DDGS_HOST}/html/")

    def search(self, query: str, max_results: int) -> list[Hit]:
        import lxml.etree
        from ddgs.exceptions import DDGSException, TimeoutException

        # ddgs takes whole seconds; its client (primp) applies it to each request in full.
        timeout = max(1, math.ceil(self.timeout_s))
        try:
            engine = _duckduckgo_engine()(
                proxy=self.proxy.url if self.proxy else None,
                timeout=timeout,
                verify=self.proxy.ca_file if self.proxy else True,
            )
            # A redirect would reach a host the prompt did not name: never followed.
            engine.http_client.client.follow_redirects = False
            found = engine.search(query, region=DDGS_REGION, safesearch="moderate", page=1)
        except _NotAnswered as exc:
            raise _no_answer(exc.why) from exc
        except TimeoutException as exc:
            raise _no_answer(f"no answer from {DDGS_HOST} within {timeout} s") from exc
        except DDGSException as exc:
            raise _no_answer(f"{DDGS_HOST} could not be reached: {_cause(exc)}") from exc
        except (lxml.etree.LxmlError, ValueError) as exc:
            raise _no_answer(f"the page from {DDGS_HOST} could not be read ({exc})") from exc
        return [
            Hit(getattr(r, "title", ""), getattr(r, "href", ""), getattr(r, "body", ""))
            for r in found or ()
        ]


def _cause(exc: BaseException) -> str:
    """The deepest message of a ddgs error (it wraps primp's), short and escaped."""
    inner: BaseException = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    text = str(inner) or type(inner).__name__
    return _shown(text, 160)


def _no_answer(why: str) -> ToolError:
    return ToolError(
        f"The search service did not answer ({why}); try again later, or {_OWN_SEARXNG}"
    )


def ddgs_installed() -> bool:
    return importlib.util.find_spec("ddgs") is not None


# --- cleaning what comes back --------------------------------------------------------------------

_TAG_RE = re.compile(r"<[^<>]*>")
# Invisible characters: controls, format characters (zero-width, bidi overrides), private use,
# surrogates and unassigned code points.
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})


def plain_text(value: object, limit: int) -> str:
    """A field of a result as one line of plain text, at most `limit` characters."""
    if not isinstance(value, str):
        return ""
    # Bounded work on a hostile field: the first few times the limit is all that can survive.
    text = value[: limit * 8]
    text = html.unescape(_TAG_RE.sub(" ", text))
    text = _TAG_RE.sub(" ", text)  # tags that were written as entities
    text = "".join(ch for ch in text if unicodedata.category(ch) not in _HIDDEN or ch in "\t\n")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def checked_link(value: object, guard: _Guard) -> str | None:
    """The link normalised as web_fetch would fetch it, or None when web_fetch would refuse it."""
    if not isinstance(value, str) or len(value) > MAX_URL_CHARS:
        return None
    try:
        address = parse_web_url(value)
        guard.check_static(address)
    except ToolRefused:
        return None
    return address.url


def clean_hits(
    hits: Iterable[Hit], max_results: int, guard: _Guard
) -> tuple[list[dict[str, str]], int]:
    """(at most `max_results` clean results, how many were dropped for their links)."""
    results: list[dict[str, str]] = []
    seen: set[str] = set()
    dropped = 0
    for hit in hits:
        if len(results) >= max_results:
            break
        link = checked_link(hit.url, guard)
        if link is None:
            dropped += 1
            continue
        if link in seen:
            continue
        seen.add(link)
        results.append(
            {
                "title": plain_text(hit.title, TITLE_CHARS),
                "url": link,
                "snippet": plain_text(hit.snippet, SNIPPET_CHARS),
            }
        )
    return results, dropped


def _render_results(data: dict[str, Any]) -> str:
    results: list[dict[str, str]] = data["results"]
    if not results:
        return f"No results for {data['query']!r} ({data['provider']})."
    lines = [f"Results for {data['query']!r} ({data['provider']}):"]
    for number, item in enumerate(results, 1):
        lines.append(f"{number}. {item['title'] or item['url']}\n   {item['url']}")
        if item["snippet"]:
            lines.append(f"   {item['snippet']}")
    return "\n".join(lines)


# --- the tool ------------------------------------------------------------------------------------


class _Search:
    def __init__(
        self, config: ToolConfig, guard: _Guard, client: _Client, ddgs_proxy: DdgsProxy | None
    ) -> None:
        self.config = config
        self.guard = guard
        self.client = client
        self.ddgs_proxy = ddgs_proxy

    def provider(self) -> SearchProvider:
        choice = self.config.search_provider
        if choice == "searxng" or (choice == "auto" and self.config.searxng_url):
            return SearxngProvider(self._searxng(), self.client, self.config.web_max_bytes)
        if choice not in ("auto", "ddgs"):
            raise ToolError(
                f"The setting `web.search_provider` is {_shown(choice, 40)!r}; use auto, ddgs "
                "or searxng"
            )
        if not ddgs_installed():
            raise ToolError(
                "Web search without a SearXNG server needs the ddgs package, which is not "
                f"installed; install it (pip install ddgs), or {_OWN_SEARXNG}"
            )
        return DdgsProvider(self.config.web_timeout_s, self.ddgs_proxy)

    def _searxng(self) -> WebAddress:
        url = self.config.searxng_url
        if not url:
            raise ToolError(
                "Web search is set to use SearXNG (`web.search_provider` is searxng), and no "
                "server is set: set the setting `web.searxng_url` to its address (for example "
                "http://127.0.0.1:8888), with the JSON format enabled in its settings.yml "
                "(search: formats: [html, json]), or set `web.search_provider` to auto"
            )
        try:
            return parse_web_url(url)
        except ToolRefused as exc:
            raise ToolError(f"The setting `web.searxng_url` is not usable: {exc}") from exc

    def prepare(self, args: WebSearchArguments) -> Prepared:
        provider = self.provider()
        try:
            self.guard.check_static(provider.address)
        except ToolRefused as exc:
            raise _engine_refusal(provider.address, exc) from exc
        return Prepared.of(args, [provider.address.target], "easy", provider)

    def run(self, args: WebSearchArguments, prepared: Prepared) -> ToolResult:
        query = " ".join(args.query.split())
        plan = prepared.plan
        provider = plan if isinstance(plan, SearxngProvider | DdgsProvider) else self.provider()
        hits = provider.search(query, args.max_results)
        results, dropped = clean_hits(hits, args.max_results, self.guard)
        if dropped:
            log.info("dropped %d search results with refused links", dropped)
        data = {
            "query": query,
            "provider": provider.name,
            "engine": provider.address.url,
            "results": results,
        }
        return ToolResult(data=data, text=_render_results(data))

    def health(self) -> list[HealthCheck]:
        try:
            provider = self.provider()
        except ToolError as exc:
            return [HealthCheck("web search", False, f"{exc}; page fetches work", False)]
        return [
            HealthCheck(
                "web search",
                True,
                f"{provider.name}, contacting {provider.address.host} "
                f"(setting web.search_provider: {self.config.search_provider})",
                False,
            )
        ]


def make_search_tool(
    config: ToolConfig,
    guard: _Guard,
    client: _Client,
    *,
    timeout_s: float,
    ddgs_proxy: DdgsProxy | None = None,
) -> Tool:
    """web_search, sharing web_fetch's address rules and client (built by `make_web_tools`)."""
    search = _Search(config, guard, client, ddgs_proxy)
    return typed_tool(
        ToolManual(
            name="web_search",
            description=(
                "Search the web (DuckDuckGo, or the user's SearXNG server) and return titles, "
                "addresses and snippets. The pages themselves are not opened; use web_fetch "
                "for one of them if needed."
            ),
            parameters=WebSearchArguments.parameters(),
            capability=Capability.WEB_ACCESS,
            category="web",
            risk="moderate",
            timeout_s=timeout_s,
        ),
        WebSearchArguments,
        prepare=search.prepare,
        run=search.run,
        health=search.health,
    )
