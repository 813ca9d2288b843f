"""tools/search.py: web_search through ddgs (DuckDuckGo) or the user's SearXNG, with no internet.

What is real and what is faked:

- ddgs: the real library, its real DuckDuckGo engine (request building, HTML parsing), its real
  HTTP client (primp) with real TLS, and our real provider, cleaning and rendering. What is
  faked is the far end: ddgs is handed a proxy on 127.0.0.1 (`tests/support/search_proxy.py`)
  that accepts `CONNECT html.duckduckgo.com:443`, speaks TLS with a certificate from a
  throwaway authority (the only one the client is told to trust), and answers with a page we
  wrote in the shape of DuckDuckGo's HTML results, not one recorded from DuckDuckGo. The proxy
  and the CA file reach the tool through `make_web_tools(ddgs_proxy=...)`, a test-only seam.
- SearXNG: the fake SearXNG of `tests/support/web_server.py`, a real HTTP server on loopback.
- The permission prompt: the real runner and permission broker, with a prompter that says yes
  and records what it was asked.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from pydantic import ValidationError

from broker.session import tool_config
from broker.settings import Settings, WebSettings
from tests.security.test_web import Answering
from tests.support.rig import make_rig
from tests.support.search_proxy import SearchProxy, closed_port
from tests.support.web_server import WebServer, make_test_authority
from tools.manual import Capability, Tool, ToolError, ToolRefused, ToolResult
from tools.registry import ToolConfig
from tools.scopes import describe_scope, scope_covers
from tools.search import (
    DDGS_HOST,
    SNIPPET_CHARS,
    TITLE_CHARS,
    DdgsProxy,
    Hit,
    clean_hits,
    plain_text,
)
from tools.web import _Guard, make_web_tools

ROOT = Path(__file__).resolve().parents[2]
NO_ANSWER = "The search service did not answer ("
WHAT_TO_DO = "); try again later, or set web.searxng_url to your own SearXNG"


# --- a page in the shape of DuckDuckGo's HTML results --------------------------------------------


def ddg_result(href: str, title: str, snippet: str) -> str:
    """One result block as html.duckduckgo.com lays it out (values HTML-escaped, as it does)."""
    h, t = html.escape(href), html.escape(title)
    return f"""
<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a" href="{h}">{t}</a></h2>
    <div class="result__extras"><a class="result__url" href="{h}">{h}</a></div>
    <a class="result__snippet" href="{h}">{snippet}</a>
    <div class="clear"></div>
  </div>
</div>"""


def ddg_page(results: list[tuple[str, str, str]]) -> str:
    blocks = "".join(ddg_result(*r) for r in results)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>at DuckDuckGo</title></head>'
        f'<body><div id="links" class="results">{blocks}</div></body></html>'
    )


def ordinary(count: int) -> list[tuple[str, str, str]]:
    return [
        (
            f"https://lighthouses.example/{n}",
            f"Lighthouse {n}",
            f"The <b>lighthouse</b> number {n} &amp; its keeper.",
        )
        for n in range(1, count + 1)
    ]


HOSTILE = [
    ("javascript:alert(document.cookie)", "Click me", "script link"),
    ("http://127.0.0.1:8080/admin", "Local admin", "loopback"),
    ("http://localhost/", "Localhost", "loopback by name"),
    ("http://[::1]/", "IPv6 loopback", "loopback v6"),
    ("http://169.254.169.254/latest/meta-data/", "Metadata", "cloud metadata"),
    ("http://192.168.1.1/", "Router", "private"),
    ("http://2130706433/", "Odd spelling", "127.0.0.1 in decimal"),
    ("file:///etc/passwd", "Passwords", "a file"),
    ("https://user:pw@evil.example/", "Credentials", "userinfo"),
    ("https://duckduckgo.com/y.js?ad_provider=x", "An ad", "ddgs drops ads itself"),
]
HUGE_TITLE = "T" * 100_000
SNEAKY_TITLE = "Sa\u200bfe\x07 ti\u202etle\ufeff"


def hostile_page() -> str:
    results = [
        *HOSTILE,
        ("https://fine.example/huge", HUGE_TITLE, "x" * 50_000),
        ("https://fine.example/sneaky", SNEAKY_TITLE, "snip\x00pet \u200d&lt;script&gt;"),
        ("https://fine.example/plain", "Plain", "Ordinary."),
    ]
    return ddg_page(results)


# --- rigs -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _authority(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    where = tmp_path_factory.mktemp("ca")
    authority = make_test_authority(where, [DDGS_HOST])
    return authority, str(where / "ca.pem")


@pytest.fixture
def proxy(_authority: tuple[Any, str]) -> Iterator[SearchProxy]:
    """The proxy that plays html.duckduckgo.com, answering with 30 ordinary results."""
    with SearchProxy(_authority[0].server_context, body=ddg_page(ordinary(30))) as served:
        yield served


@pytest.fixture
def ca_file(_authority: tuple[Any, str]) -> str:
    return _authority[1]


@pytest.fixture(scope="module")
def _searx() -> Iterator[WebServer]:
    with WebServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def searx(_searx: WebServer) -> WebServer:
    _searx.reset()
    return _searx


def search_tool(proxy_url: str | None = None, ca: str | None = None, **config: Any) -> Tool:
    """web_search built from `config` (no host allowed onto private addresses unless given),
    with ddgs sent through the proxy at `proxy_url` trusting only the CA file `ca`."""
    via = DdgsProxy(proxy_url, ca) if proxy_url and ca else None
    tools = {t.name: t for t in make_web_tools(ToolConfig(**config), ddgs_proxy=via)}
    return tools["web_search"]


def call(tool: Tool, **args: Any) -> ToolResult:
    """Run a tool the way the runner does: targets first, then run."""
    tool.targets(args)
    result = tool.run(args)
    json.dumps(result.data)  # the model gets this as JSON
    return result


class Runner:
    """The real runner, permission broker and audit log around one web_search tool."""

    def __init__(self, tool: Tool, audit_path: Path) -> None:
        self.audit_path = audit_path
        self.prompter = Answering(True)
        stack = make_rig(
            audit_path.parent,
            [tool],
            prompter=self.prompter,
            audit_path=audit_path,
            prompt_timeout_s=5.0,
            turn_id="t-search",
        )
        self.runner = stack.runner
        self.turn = stack.turn

    def call(self, **arguments: Any) -> Any:
        return self.runner.execute(self.turn, "web_search", arguments)

    def ends(self) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in self.audit_path.read_text().splitlines()]
        return [r["data"] for r in records if r["event"] == "TOOL_CALL_END"]


# --- which provider, and what the prompt names ----------------------------------------------------


def test_on_a_fresh_install_search_goes_to_duckduckgo_and_the_prompt_names_its_host(
    proxy: SearchProxy, ca_file: str, tmp_path: Path
) -> None:
    rig = Runner(search_tool(proxy.url, ca_file), tmp_path / "audit.jsonl")
    outcome = rig.call(query="old lighthouses")
    assert outcome.record.status == "ok", outcome.record.reason
    (asked,) = rig.prompter.asked
    assert asked.capability is Capability.WEB_ACCESS
    assert asked.scope == f"domain:{DDGS_HOST}"
    assert describe_scope(asked.capability, asked.scope) == "html.duckduckgo.com"
    # The one site named is the one site contacted.
    assert proxy.connects == [f"{DDGS_HOST}:443"]


def test_auto_uses_searxng_when_it_is_set_and_never_contacts_duckduckgo(
    searx: WebServer, proxy: SearchProxy, ca_file: str
) -> None:
    tool = search_tool(
        proxy.url, ca_file, searxng_url=searx.url("/"), web_allow_private=("127.0.0.1",)
    )
    assert tool.targets({"query": "q"}) == ["domain:127.0.0.1"]
    result = call(tool, query="lighthouses")
    assert result.data["provider"] == f"SearXNG at {searx.url('/')}"
    assert [h.path for h in searx.hits] == ["/search?q=lighthouses&format=json"]
    assert proxy.connects == []


def test_the_provider_setting_forces_one_or_the_other(searx: WebServer) -> None:
    forced_ddgs = search_tool(searxng_url=searx.url("/"), search_provider="ddgs")
    assert forced_ddgs.targets({"query": "q"}) == [f"domain:{DDGS_HOST}"]
    forced_searxng = search_tool(search_provider="searxng")
    with pytest.raises(ToolError, match=r"`web\.searxng_url`") as caught:
        forced_searxng.targets({"query": "q"})
    assert not isinstance(caught.value, ToolRefused)
    assert searx.hits == []


def test_a_grant_for_one_search_service_does_not_cover_the_other() -> None:
    ddg, searxng = f"domain:{DDGS_HOST}", "domain:searx.example.org"
    assert scope_covers(Capability.WEB_ACCESS, ddg, [ddg])
    assert not scope_covers(Capability.WEB_ACCESS, ddg, [searxng])
    assert not scope_covers(Capability.WEB_ACCESS, searxng, [ddg])


def test_the_setting_accepts_only_the_three_providers_and_reaches_the_tools(
    tmp_path: Path,
) -> None:
    assert WebSettings().search_provider == "auto"
    with pytest.raises(ValidationError):
        WebSettings.model_validate({"search_provider": "bing"})
    settings = Settings(web=WebSettings(search_provider="searxng"))
    assert tool_config(tmp_path, settings).search_provider == "searxng"


def test_doctor_says_which_provider_answers() -> None:
    def health(**config: Any) -> tuple[bool, str]:
        tool = search_tool(**config)
        assert tool.health is not None
        (check,) = tool.health()
        return check.ok, check.detail

    ok, detail = health()
    assert ok
    assert "DuckDuckGo (through ddgs)" in detail
    assert "html.duckduckgo.com" in detail
    assert "web.search_provider: auto" in detail
    ok, detail = health(searxng_url="http://127.0.0.1:8888/")
    assert ok
    assert detail.startswith("SearXNG at http://127.0.0.1:8888/")
    ok, detail = health(search_provider="searxng")
    assert not ok
    assert "`web.searxng_url`" in detail


def test_registering_the_tools_imports_neither_ddgs_nor_its_http_client() -> None:
    code = (
        "import sys\n"
        "from tools.registry import ToolConfig, builtin_registry\n"
        "registry = builtin_registry(ToolConfig())\n"
        "registry.get('web_search').targets({'query': 'q'})\n"
        "assert 'ddgs' not in sys.modules and 'primp' not in sys.modules, 'imported eagerly'\n"
        "print('lazy')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "lazy", done.stderr


# --- what ddgs sends and what comes back ---------------------------------------------------------


def test_ddgs_posts_the_query_to_duckduckgo_and_results_come_back_capped(
    proxy: SearchProxy, ca_file: str
) -> None:
    tool = search_tool(proxy.url, ca_file)
    result = call(tool, query="  old   lighthouses ")
    (request,) = proxy.requests
    assert (request.method, request.path, request.host) == ("POST", "/html/", DDGS_HOST)
    assert parse_qs(request.body.decode())["q"] == ["old lighthouses"]
    results = result.data["results"]
    assert len(results) == 5  # the default
    assert results[0] == {
        "title": "Lighthouse 1",
        "url": "https://lighthouses.example/1",
        "snippet": "The lighthouse number 1 & its keeper.",
    }
    assert result.data["provider"] == "DuckDuckGo (through ddgs)"
    assert result.text.startswith("Results for 'old lighthouses' (DuckDuckGo (through ddgs)):")
    assert "https://lighthouses.example/5" in result.text
    many = call(tool, query="lighthouses", max_results=20).data["results"]
    assert len(many) == 20  # 30 on the page; never more than asked
    with pytest.raises(ToolError):
        tool.targets({"query": "q", "max_results": 21})


def test_hostile_results_are_dropped_or_cut_to_plain_text(proxy: SearchProxy, ca_file: str) -> None:
    proxy.body = hostile_page()
    results = call(search_tool(proxy.url, ca_file), query="q", max_results=20).data["results"]
    assert [r["url"] for r in results] == [
        "https://fine.example/huge",
        "https://fine.example/sneaky",
        "https://fine.example/plain",
    ]
    huge, sneaky, _ = results
    assert len(huge["title"]) == TITLE_CHARS
    assert len(huge["snippet"]) == SNIPPET_CHARS
    assert sneaky["title"] == "Safe title"
    assert "<" not in sneaky["snippet"]
    assert "\x00" not in sneaky["snippet"]
    assert "\u200d" not in sneaky["snippet"]


def test_an_empty_results_page_is_no_results_not_an_error(proxy: SearchProxy, ca_file: str) -> None:
    proxy.body = ddg_page([])
    result = call(search_tool(proxy.url, ca_file), query="zzqx")
    assert result.data["results"] == []
    assert result.text == "No results for 'zzqx' (DuckDuckGo (through ddgs))."


def test_results_reach_the_model_audited_as_digest_and_length_only(
    proxy: SearchProxy, ca_file: str, tmp_path: Path
) -> None:
    rig = Runner(search_tool(proxy.url, ca_file), tmp_path / "audit.jsonl")
    outcome = rig.call(query="lighthouses")
    assert "Lighthouse 1" in outcome.model_text
    (end,) = rig.ends()
    assert end["status"] == "ok"
    assert set(end["output"]) >= {"sha256", "len"}
    assert "Lighthouse" not in rig.audit_path.read_text()


# --- when the service does not answer -------------------------------------------------------------


def test_rate_limiting_is_a_clear_sentence(proxy: SearchProxy, ca_file: str) -> None:
    proxy.mode, proxy.status = "status", 202
    with pytest.raises(ToolError) as caught:
        call(search_tool(proxy.url, ca_file), query="q")
    message = str(caught.value)
    assert message.startswith(NO_ANSWER + "DuckDuckGo answered 202")
    assert message.endswith(WHAT_TO_DO)
    assert "limiting how often" in message


def test_a_redirect_is_not_followed(proxy: SearchProxy, ca_file: str) -> None:
    proxy.mode, proxy.status = "status", 302
    with pytest.raises(ToolError, match="redirected") as caught:
        call(search_tool(proxy.url, ca_file), query="q")
    assert str(caught.value).endswith(WHAT_TO_DO)
    assert proxy.connects == [f"{DDGS_HOST}:443"]  # elsewhere.example was never asked for


def test_no_network_is_a_clear_sentence_through_the_runner(ca_file: str, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    rig = Runner(search_tool(dead, ca_file), tmp_path / "audit.jsonl")
    outcome = rig.call(query="lighthouses")
    assert outcome.record.status == "error"
    reason = outcome.record.reason
    assert reason.startswith(NO_ANSWER + "html.duckduckgo.com could not be reached")
    assert reason.endswith(WHAT_TO_DO)
    assert "Traceback" not in outcome.model_text


def test_a_dropped_tunnel_is_a_clear_sentence(proxy: SearchProxy, ca_file: str) -> None:
    proxy.mode = "refuse"
    with pytest.raises(ToolError) as caught:
        call(search_tool(proxy.url, ca_file), query="q")
    assert str(caught.value).startswith(NO_ANSWER)
    assert str(caught.value).endswith(WHAT_TO_DO)


def test_a_backend_that_hangs_is_bounded_by_the_web_timeout(
    proxy: SearchProxy, ca_file: str
) -> None:
    proxy.mode = "hang"
    tool = search_tool(proxy.url, ca_file, web_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        call(tool, query="q")
    # The backend hangs for 30 s: a third of that still catches a missing timeout.
    assert time.monotonic() - started < 10
    assert str(caught.value) == NO_ANSWER + "no answer from html.duckduckgo.com within 1 s" + (
        WHAT_TO_DO
    )


# --- the cleaning itself, on SearXNG-shaped raw values -------------------------------------------


def test_plain_text_strips_markup_hidden_characters_and_caps() -> None:
    assert plain_text("<b>Bold</b> &amp; <i>it</i>", 100) == "Bold & it"
    assert plain_text("&lt;script&gt;alert(1)&lt;/script&gt;", 100) == "alert(1)"
    assert plain_text("a\u200bb\u2066c\x1bd\ue000e", 100) == "abcde"
    assert plain_text("line\nbreak\ttab", 100) == "line break tab"
    assert plain_text(None, 100) == ""
    assert plain_text({"title": "x"}, 100) == ""
    assert plain_text("y" * 1000, 10) == "y" * 9 + "…"


def test_links_follow_web_fetch_rules_and_duplicates_and_the_count_are_capped() -> None:
    guard = _Guard((), lambda host, port: [])
    hits = [
        Hit("a", "https://ok.example/a", "s"),
        Hit("dup", "https://ok.example/a#frag", "s"),
        Hit("js", "JAVASCRIPT:alert(1)", "s"),
        Hit("data", "data:text/html,<script>", "s"),
        Hit("zw", "https://ok\u200b.example/", "s"),
        Hit("none", None, "s"),
        Hit("local", "http://10.0.0.1/", "s"),
        Hit("b", "https://ok.example/b?q=ü", "s"),
        Hit("c", "https://ok.example/c", "s"),
    ]
    results, dropped = clean_hits(hits, 2, guard)
    assert [r["url"] for r in results] == [
        "https://ok.example/a",
        "https://ok.example/b?q=%C3%BC",
    ]
    assert dropped == 5
    allowing = _Guard(("10.0.0.1",), lambda host, port: [])
    kept, _ = clean_hits([Hit("local", "http://10.0.0.1/", "")], 5, allowing)
    assert [r["url"] for r in kept] == ["http://10.0.0.1/"]
