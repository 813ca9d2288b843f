"""tools/web.py: web_fetch and web_search against real HTTP(S) servers on loopback addresses.

Everything here is on 127.0.0.0/8 (or ::1), which the tools refuse by default, so most tests
allow the test host names through `web_allow_private`; the refusals themselves are tested
without it (here and in tests/security/test_web.py). Different host names for the same
machine (`localhost`, `127.0.0.1`, `127.0.0.2`, `*.localhost`) stand for different sites.
Where a test needs DNS answers this machine cannot give, it passes a resolver function and
says so; the connection itself is always real.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import free_port
from tests.support.web_server import (
    ARTICLE_SENTENCE,
    ARTICLE_TITLE,
    HUGE_LIMIT,
    NOISE,
    WebServer,
    make_test_authority,
)
from tools.manual import Capability, Tool, ToolError, ToolRefused, ToolResult
from tools.registry import ToolConfig, builtin_registry
from tools.web import (
    MAX_REDIRECTS,
    TEXT_CHARS_CAP,
    USER_AGENT,
    address_problem,
    html_to_text,
    make_web_tools,
    parse_web_url,
)

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ("localhost", "127.0.0.1", "127.0.0.2")


@pytest.fixture(scope="module")
def _main_server() -> Iterator[WebServer]:
    with WebServer("127.0.0.1") as server:
        yield server


@pytest.fixture(scope="module")
def _other_server() -> Iterator[WebServer]:
    with WebServer("127.0.0.2") as server:
        yield server


@pytest.fixture
def web(_main_server: WebServer) -> WebServer:
    """The site under test, on 127.0.0.1, with nothing recorded yet."""
    _main_server.reset()
    return _main_server


@pytest.fixture
def other(_other_server: WebServer) -> WebServer:
    """A second site: its own server, on 127.0.0.2, with nothing recorded yet."""
    _other_server.reset()
    return _other_server


def tools_for(
    allow: Sequence[str] = LOCAL, *, resolver: Any = None, tls: Any = None, **config: Any
) -> dict[str, Tool]:
    cfg = ToolConfig(web_allow_private=tuple(allow), **config)
    return {t.name: t for t in make_web_tools(cfg, resolver=resolver, tls_context=tls)}


def call(tool: Tool, **args: Any) -> ToolResult:
    """Run a tool the way the runner does: targets first, then run."""
    tool.targets(args)
    result = tool.run(args)
    json.dumps(result.data)  # the model gets this as JSON
    return result


def fetch(url: str, **options: Any) -> dict[str, Any]:
    data: dict[str, Any] = call(tools_for(**options)["web_fetch"], url=url).data
    return data


# --- manuals and registration --------------------------------------------------------------------


def test_both_tools_are_web_access_reads_with_bounded_arguments() -> None:
    tools = make_web_tools(ToolConfig())
    assert [t.name for t in tools] == ["web_fetch", "web_search"]
    for tool in tools:
        manual = tool.manual
        assert manual.capability is Capability.WEB_ACCESS
        assert (manual.category, manual.mutating) == ("web", False)
        schema = manual.parameters
        assert schema["additionalProperties"] is False
        for name in schema["required"]:
            assert schema["properties"][name]["maxLength"] > 0
    # The runner's hard limit sits above the tool's own deadline.
    assert tools[0].manual.timeout_s > ToolConfig().web_timeout_s


def test_the_builtin_registry_includes_the_web_tools() -> None:
    registry = builtin_registry(ToolConfig())
    assert "web_fetch" in registry
    assert "web_search" in registry


def test_importing_and_registering_opens_no_connection_and_defers_the_extractor() -> None:
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n"
        "    raise SystemExit('network use at import: %r' % (a,))\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "import tools.web\n"
        "from tools.registry import ToolConfig, builtin_registry\n"
        "builtin_registry(ToolConfig(searxng_url='http://127.0.0.1:9'))\n"
        "assert 'trafilatura' not in sys.modules, 'the extractor was imported eagerly'\n"
        "print('quiet')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "quiet"


# --- addresses and targets -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "target", "normalised"),
    [
        ("HTTPS://WWW.Example.COM.:443/a?b=1#frag", "domain:www.example.com", None),
        ("http://example.com:8080", "domain:example.com", "http://example.com:8080/"),
        ("https://Bücher.de/straße", "domain:xn--bcher-kva.de", None),
        ("  https://example.org/x  ", "domain:example.org", "https://example.org/x"),
        ("http://[2606:4700::1111]/", "domain:2606:4700::1111", "http://[2606:4700::1111]/"),
    ],
)
def test_targets_name_the_lower_case_idna_host(url: str, target: str, normalised: Any) -> None:
    tool = tools_for(())["web_fetch"]
    assert tool.targets({"url": url}) == [target]
    if normalised:
        assert parse_web_url(url).url == normalised


def test_the_path_is_sent_percent_encoded_and_the_fragment_dropped() -> None:
    address = parse_web_url("https://de.example/wiki/Köln?q=ü#Geschichte")
    assert address.path == "/wiki/K%C3%B6ln?q=%C3%BC"
    assert address.port == 443


def test_targets_never_query_dns() -> None:
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    tool = tools_for((), resolver=resolver)["web_fetch"]
    assert tool.targets({"url": "https://example.com/"}) == ["domain:example.com"]
    assert asked == []  # a name is resolved in run(), after the user agreed


@pytest.mark.parametrize(
    ("address", "phrase"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.31.0.1", "private"),
        ("192.168.0.10", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.1", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fd12:3456::1", "unique-local"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1"),
        ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254"),
        ("2002:c0a8:0101::", "6to4 form of 192.168.1.1"),
        ("::ffff:0:7f00:1", "IPv4-translated form of 127.0.0.1"),
        ("5f00::1", "not a public internet address"),
        ("2001:db8::1", "documentation"),
    ],
)
def test_off_limits_addresses_are_named(address: str, phrase: str) -> None:
    import ipaddress

    problem = address_problem(ipaddress.ip_address(address))
    assert problem is not None
    assert phrase in problem


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700::1111"])
def test_public_addresses_are_fine(address: str) -> None:
    import ipaddress

    assert address_problem(ipaddress.ip_address(address)) is None


def test_allowing_a_host_lifts_the_rule_except_for_never_useful_addresses() -> None:
    import ipaddress

    assert address_problem(ipaddress.ip_address("127.0.0.1"), allowed=True) is None
    assert address_problem(ipaddress.ip_address("::ffff:10.0.0.1"), allowed=True) is None
    assert address_problem(ipaddress.ip_address("0.0.0.0"), allowed=True) is not None
    assert address_problem(ipaddress.ip_address("224.0.0.1"), allowed=True) is not None


# --- what a page becomes -------------------------------------------------------------------------


def test_an_html_page_becomes_its_title_and_main_text(web: WebServer) -> None:
    data = fetch(web.url("/page", host="localhost"))
    assert data["status"] == 200
    assert data["content_type"] == "text/html"
    assert data["title"] == ARTICLE_TITLE
    assert ARTICLE_SENTENCE in data["text"]
    assert "Paragraph 8" in data["text"]
    for noise in (*NOISE, "SCRIPT-NOISE", "color: black"):
        assert noise not in data["text"]
    assert data["truncated"] is False
    assert data["url"] == data["final_url"] == web.url("/page", host="localhost")
    assert data["bytes"] > 1000


def test_the_request_carries_the_real_host_and_nothing_personal(web: WebServer) -> None:
    fetch(web.url("/plain", host="localhost"))
    (hit,) = web.hits
    assert hit.method == "GET"
    assert hit.host == f"localhost:{web.port}"
    assert hit.headers["user-agent"] == USER_AGENT
    assert "cookie" not in hit.headers
    assert "authorization" not in hit.headers


def test_a_page_too_thin_for_the_extractor_still_gives_its_text(web: WebServer) -> None:
    data = fetch(web.url("/short.html", host="localhost"))
    assert data["text"] == "Only this line."


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/plain", "plain text body: naïve café ✓\nsecond line\n"),
        ("/latin1", "Latin-1 text: café déjà vu"),
        ("/json", '{"answer": 42, "word": "ok"}'),
        ("/untyped-text", "no content type, just words\n"),
        ("/deflate-raw", "raw deflate text"),
    ],
)
def test_text_comes_back_as_text_in_its_charset(web: WebServer, path: str, expected: str) -> None:
    data = fetch(web.url(path, host="localhost"))
    assert data["text"] == expected
    assert data["title"] == ""
    assert data["truncated"] is False


def test_the_charset_of_a_meta_tag_is_honoured(web: WebServer) -> None:
    data = fetch(web.url("/meta-charset", host="localhost"))
    assert data["title"] == "Café menu"
    assert "Coffee costs 3 € at the café." in data["text"]


@pytest.mark.parametrize("path", ["/gzip-page", "/chunked", "/chunked?gzip"])
def test_gzip_and_chunked_pages_are_decoded(web: WebServer, path: str) -> None:
    data = fetch(web.url(path, host="localhost"))
    assert data["title"] == ARTICLE_TITLE
    assert ARTICLE_SENTENCE in data["text"]
    assert "Paragraph 8" in data["text"]
    assert data["truncated"] is False


@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("/image.png", "an image (image/png)"),
        ("/doc.pdf", "a PDF document (application/pdf)"),
        ("/octet", "binary data (application/octet-stream)"),
        ("/untyped-binary", "binary data (the server gave no type)"),
    ],
)
def test_binary_content_is_refused_with_what_it_is(web: WebServer, path: str, what: str) -> None:
    with pytest.raises(ToolError, match="not a web page or text") as caught:
        fetch(web.url(path, host="localhost"))
    assert what in str(caught.value)


def test_an_encoding_it_does_not_decode_is_refused(web: WebServer) -> None:
    with pytest.raises(ToolError, match="compressed as 'br'"):
        fetch(web.url("/brotli", host="localhost"))


def test_an_error_status_is_reported(web: WebServer) -> None:
    with pytest.raises(ToolError, match="answered 404 Not Found"):
        fetch(web.url("/status/404", host="localhost"))


def test_html_to_text_falls_back_to_og_title_and_h1() -> None:
    og = '<html><head><meta property="og:title" content="From OG"></head><body>x</body></html>'
    assert html_to_text(og)[0] == "From OG"
    assert html_to_text("<html><body><h1>Heading  one</h1><p>t</p></body></html>")[0] == (
        "Heading one"
    )
    assert html_to_text("") == ("", "")


# --- redirects -----------------------------------------------------------------------------------


def test_same_host_redirects_are_followed(web: WebServer) -> None:
    data = fetch(web.url("/redirect/3", host="localhost"))
    assert data["final_url"] == web.url("/page", host="localhost")
    assert data["title"] == ARTICLE_TITLE
    assert web.paths() == ["/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0", "/page"]


def test_five_redirects_are_followed_and_a_sixth_is_not(web: WebServer) -> None:
    assert fetch(web.url(f"/redirect/{MAX_REDIRECTS - 1}", host="localhost"))["status"] == 200
    web.hits.clear()
    with pytest.raises(ToolError, match=f"Stopped after {MAX_REDIRECTS} redirects"):
        fetch(web.url(f"/redirect/{MAX_REDIRECTS}", host="localhost"))
    assert len(web.hits) == MAX_REDIRECTS + 1
    assert "/page" not in web.paths()


def test_a_redirect_loop_stops_at_once(web: WebServer) -> None:
    with pytest.raises(ToolError, match="redirects in a loop"):
        fetch(web.url("/loop", host="localhost"))
    assert web.paths() == ["/loop"]


def test_a_redirect_without_location_is_an_error(web: WebServer) -> None:
    with pytest.raises(ToolError, match="without saying where to"):
        fetch(web.url("/no-location", host="localhost"))


def test_a_redirect_to_another_domain_names_it_and_is_not_followed(
    web: WebServer, other: WebServer
) -> None:
    start = web.url("/go?to=" + other.url("/page"), host="localhost")
    with pytest.raises(ToolRefused) as caught:
        fetch(start)
    message = str(caught.value)
    assert "redirected to 127.0.0.2, which this permission does not cover" in message
    assert "ask for it separately" in message
    assert other.hits == []


def test_the_www_twin_and_subdomains_count_as_the_same_site(web: WebServer) -> None:
    allow = ("localhost", "www.localhost", "api.localhost")
    to_bare = web.url("/go?to=" + web.url("/page", host="localhost"), host="www.localhost")
    assert fetch(to_bare, allow=allow)["final_url"] == web.url("/page", host="localhost")
    to_sub = web.url("/go?to=" + web.url("/plain", host="api.localhost"), host="localhost")
    assert fetch(to_sub, allow=allow)["final_url"] == web.url("/plain", host="api.localhost")
    assert web.hits[-1].host == f"api.localhost:{web.port}"


def test_a_redirect_up_to_the_parent_domain_is_another_site(web: WebServer) -> None:
    allow = ("localhost", "api.localhost")
    start = web.url("/go?to=" + web.url("/page", host="localhost"), host="api.localhost")
    with pytest.raises(ToolRefused, match="redirected to localhost, which this permission"):
        fetch(start, allow=allow)
    assert len(web.hits) == 1


def test_each_hop_is_checked_against_the_private_address_rule(web: WebServer) -> None:
    # api.localhost is inside the site's scope, but only localhost itself was allowed.
    start = web.url("/go?to=" + web.url("/page", host="api.localhost"), host="localhost")
    with pytest.raises(ToolRefused, match=r"api\.localhost is this computer"):
        fetch(start, allow=("localhost",))
    assert "/page" not in web.paths()


def test_a_permanent_redirect_with_a_utf8_location_is_followed(web: WebServer) -> None:
    start = web.url("/go?status=308&to=/status/404%3Fw%3Dcaf%C3%A9", host="localhost")
    with pytest.raises(ToolError, match="answered 404"):
        fetch(start)
    assert web.hits[-1].path == "/status/404?w=caf%C3%A9"


# --- caps ----------------------------------------------------------------------------------------


def test_a_huge_body_stops_at_the_size_cap(web: WebServer) -> None:
    cap = 256 * 1024
    data = fetch(web.url("/huge?cap", host="localhost"), web_max_bytes=cap)
    assert data["truncated"] is True
    assert data["bytes"] == cap
    assert len(data["text"]) <= TEXT_CHARS_CAP
    assert "only its start is shown" in data["note"]
    for _ in range(250):  # the server notices the hang-up on its next write
        if "/huge?cap" in web.sent:
            break
        time.sleep(0.02)
    assert web.sent["/huge?cap"] < HUGE_LIMIT


def test_a_gzip_bomb_is_decoded_only_up_to_the_cap(web: WebServer) -> None:
    cap = 128 * 1024
    data = fetch(web.url("/gzip-bomb", host="localhost"), web_max_bytes=cap)
    assert data["truncated"] is True
    assert data["bytes"] == cap
    assert set(data["text"]) == {"A"}


def test_a_body_that_drips_stops_at_the_deadline_with_what_came(web: WebServer) -> None:
    started = time.monotonic()
    data = fetch(web.url("/slow", host="localhost"), web_timeout_s=0.4)
    elapsed = time.monotonic() - started
    # Without the deadline the drip lasts 30 s: a third of that still catches it on a busy machine.
    assert elapsed < 10.0
    assert data["truncated"] is True
    assert data["text"].startswith("start .")
    assert "still arriving after 0.4 s" in data["note"]


def test_a_server_that_never_answers_times_out(web: WebServer) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"did not answer within 0\.3 s"):
        fetch(web.url("/slow-headers", host="localhost"), web_timeout_s=0.3)
    # The server answers after 30 s: a third of that still catches a missing deadline.
    assert time.monotonic() - started < 10.0


def test_a_closed_port_is_a_plain_error() -> None:
    with pytest.raises(ToolError, match="Cannot connect to localhost"):
        fetch(f"http://localhost:{free_port()}/")


def test_the_text_handed_to_the_model_is_capped(web: WebServer) -> None:
    data = fetch(web.url("/huge", host="localhost"), web_max_bytes=TEXT_CHARS_CAP * 2)
    assert len(data["text"]) == TEXT_CHARS_CAP
    assert data["truncated"] is True


# --- the connection goes where the check said ----------------------------------------------------


def test_the_resolved_address_is_pinned_and_dns_asked_once(
    web: WebServer, other: WebServer
) -> None:
    """A resolver stands in for a rebinding DNS server (first answer 127.0.0.1, then
    127.0.0.2): the request must go to the first, checked answer, with the name as Host."""
    answers = iter(["127.0.0.1", "127.0.0.2", "127.0.0.2"])
    asked: list[tuple[str, int]] = []

    def rebinding(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return [next(answers)]

    data = fetch(web.url("/plain", host="rebind.test"), allow=("rebind.test",), resolver=rebinding)
    assert data["text"].startswith("plain text body")
    assert asked == [("rebind.test", web.port)]
    assert [hit.host for hit in web.hits] == [f"rebind.test:{web.port}"]
    assert other.hits == []


def test_a_name_that_resolves_to_a_private_address_is_refused_before_connecting(
    web: WebServer,
) -> None:
    """The resolver plays an intranet DNS answer; nothing is allowed, so nothing connects."""
    tool = tools_for((), resolver=lambda host, port: ["127.0.0.1"])["web_fetch"]
    args = {"url": web.url("/page", host="intranet.test")}
    assert tool.targets(args) == ["domain:intranet.test"]
    with pytest.raises(ToolRefused, match=r"intranet.test resolves to 127.0.0.1, a loopback"):
        tool.run(args)
    assert web.hits == []


def test_one_bad_dns_answer_spoils_them_all(web: WebServer) -> None:
    """Even for an allowed host, an answer mixing a usable and a never-useful address is a
    trick: refused, and the usable one is not tried either."""
    with pytest.raises(ToolRefused, match=r"0\.0\.0\.0, an unspecified address"):
        fetch(
            web.url("/page", host="mixed.test"),
            allow=("mixed.test",),
            resolver=lambda host, port: ["127.0.0.1", "0.0.0.0"],
        )
    assert web.hits == []


def test_an_unknown_host_is_a_plain_error() -> None:
    def nxdomain(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(ToolError, match=r"Cannot find the host nowhere\.test"):
        fetch("https://nowhere.test/", allow=(), resolver=nxdomain)


def test_allow_list_entries_are_normalised_and_star_allows_all(web: WebServer) -> None:
    assert fetch(web.url("/plain", host="localhost"), allow=(" LOCALHOST. ",))["status"] == 200
    assert fetch(web.url("/plain"), allow=("*",))["status"] == 200
    with pytest.raises(ToolRefused):
        fetch(web.url("/plain"), allow=("localhost",))  # 127.0.0.1 is another host name


def test_ipv6_loopback_works_when_allowed() -> None:
    with WebServer("::1") as v6:
        assert fetch(v6.url("/plain"), allow=("[::1]",))["status"] == 200
        assert v6.hits[0].host == f"[::1]:{v6.port}"


def test_https_to_a_pinned_address_keeps_the_name_for_sni_and_the_certificate(
    tmp_path: Path,
) -> None:
    authority = make_test_authority(tmp_path, ["localhost"])
    with WebServer("127.0.0.1", tls=authority.server_context) as secure:
        trusted = tools_for(tls=authority.client_context)["web_fetch"]
        data = call(trusted, url=secure.url("/plain", host="localhost")).data
        assert data["text"].startswith("plain text body")
        assert secure.server_names == ["localhost"]
        # The certificate names localhost, not the address: reaching it by IP must fail.
        with pytest.raises(ToolError, match=r"TLS certificate of 127\.0\.0\.1 is not valid"):
            call(trusted, url=secure.url("/plain"))
        # The system's trust store does not know the test authority.
        with pytest.raises(ToolError, match="TLS certificate of localhost is not valid"):
            call(tools_for()["web_fetch"], url=secure.url("/plain", host="localhost"))
        assert secure.paths() == ["/plain"]


# --- web_search ----------------------------------------------------------------------------------


def test_search_set_to_searxng_without_an_engine_says_how_to_set_one() -> None:
    tool = tools_for(search_provider="searxng")["web_search"]
    with pytest.raises(ToolError) as caught:
        tool.targets({"query": "lighthouses"})
    message = str(caught.value)
    assert "`web.searxng_url`" in message
    assert "http://127.0.0.1:8888" in message
    assert "json" in message.lower()
    assert not isinstance(caught.value, ToolRefused)


def test_a_local_engine_is_refused_unless_allowed_and_the_message_says_how(
    web: WebServer,
) -> None:
    tool = tools_for((), searxng_url=web.url("/"))["web_search"]
    with pytest.raises(ToolRefused) as caught:
        tool.targets({"query": "lighthouses"})
    message = str(caught.value)
    assert "`web.allow_private`" in message
    assert '"127.0.0.1"' in message
    assert web.hits == []


def test_search_returns_titles_urls_and_snippets_and_fetches_none_of_them(
    web: WebServer,
) -> None:
    tool = tools_for(searxng_url=web.url("/"))["web_search"]
    assert tool.targets({"query": "x"}) == ["domain:127.0.0.1"]
    result = call(tool, query="  old   lighthouses ", max_results=3)
    results = result.data["results"]
    assert [r["title"] for r in results] == [
        "Result 1 for old lighthouses",
        "Result 2 for old lighthouses",
        "Result 3 for old lighthouses",
    ]
    assert results[0] == {
        "title": "Result 1 for old lighthouses",
        "url": "https://results.example/1",
        "snippet": "Snippet 1 about old lighthouses.",
    }
    assert "https://results.example/3" in result.text
    (hit,) = web.hits
    assert hit.path == "/search?q=old+lighthouses&format=json"
    assert hit.headers["accept"] == "application/json"


def test_search_gives_five_results_by_default_and_skips_broken_entries(web: WebServer) -> None:
    data = call(tools_for(searxng_url=web.url("/"))["web_search"], query="q").data
    urls = [r["url"] for r in data["results"]]
    assert urls == [f"https://results.example/{n}" for n in range(1, 6)]


def test_an_engine_under_a_path_is_asked_under_that_path(web: WebServer) -> None:
    call(tools_for(searxng_url=web.url("/searx/"))["web_search"], query="q")
    assert web.paths() == ["/searx/search?q=q&format=json"]


def test_an_engine_without_the_json_format_says_how_to_enable_it() -> None:
    with WebServer(searx_json=False) as engine:
        tool = tools_for(searxng_url=engine.url("/"))["web_search"]
        with pytest.raises(ToolError, match="enable the JSON format") as caught:
            call(tool, query="q")
        assert "403" in str(caught.value)


def test_an_engine_that_redirects_is_not_followed(other: WebServer) -> None:
    with WebServer(searx_redirect=other.url("/search")) as engine:
        tool = tools_for(searxng_url=engine.url("/"))["web_search"]
        with pytest.raises(ToolError, match="answered with a redirect"):
            call(tool, query="q")
    assert other.hits == []
