"""Security corpus: the web tools against SSRF tricks, scope escapes by redirect, and floods.

Every attempt goes through the real runner, a real permission broker whose prompter says yes
to everything (so only the tools' own rules and the runner stand in the way), a real audit
log, and real HTTP servers on loopback addresses that record every request they receive. For
each attempt we check the status and its reason, that the audit log records how the call
ended (TOOL_CALL_END), that the chain still verifies, and that no server saw the forbidden
request. Floods (huge bodies, gzip bombs, slow drips) are not refused: they are bounded, and
the bound is what is checked.

A resolver function stands in for DNS where a test needs an answer this machine cannot give
(a name pointing at a private address); the connections themselves are always real.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from broker.audit.verify import verify
from broker.permissions import (
    PermissionRequest,
    PromptDecision,
    RulePrompter,
)
from broker.runner import CallOutcome
from broker.types import GrantMode
from tests.support.rig import Rig as ToolRig
from tests.support.web_server import WebServer
from tools.registry import ToolConfig
from tools.web import MAX_REDIRECTS, make_web_tools

STOPPED = {"refused", "error", "denied"}


class Answering(RulePrompter):
    """A prompter that gives the same answer to everything, and records what it was asked."""

    def __init__(self, allow: bool = True) -> None:
        self.allow = allow
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=self.allow, mode=GrantMode.ONCE)


@dataclasses.dataclass
class Rig:
    """The support rig over the web tools, and its prompter as the `Answering` it is."""

    stack: ToolRig
    prompter: Answering

    def call(self, tool: str, **arguments: Any) -> CallOutcome:
        return self.stack.runner.execute(self.stack.turn, tool, arguments)


@dataclasses.dataclass
class Servers:
    main: WebServer  # 127.0.0.1
    other: WebServer  # 127.0.0.2, another site
    v6: WebServer  # ::1

    def all_hits(self) -> list[str]:
        return [f"{s.bind} {h.path}" for s in (self.main, self.other, self.v6) for h in s.hits]

    def fill(self, template: str) -> str:
        return template.format(p=self.main.port, p2=self.other.port, p6=self.v6.port)


@pytest.fixture(scope="module")
def _running() -> Iterator[Servers]:
    with WebServer("127.0.0.1") as main, WebServer("127.0.0.2") as other, WebServer("::1") as v6:
        yield Servers(main, other, v6)


@pytest.fixture
def servers(_running: Servers) -> Servers:
    """The three servers, shared by the module, with nothing recorded yet."""
    for server in (_running.main, _running.other, _running.v6):
        server.reset()
    return _running


RigFactory = Callable[..., Rig]


@pytest.fixture
def make_rig(tmp_path: Path, tool_rig: Callable[..., ToolRig]) -> RigFactory:
    def build(
        allow: Sequence[str] = (),
        *,
        resolver: Any = None,
        grant: bool = True,
        **config: Any,
    ) -> Rig:
        cfg = ToolConfig(web_allow_private=tuple(allow), **config)
        prompter = Answering(grant)
        stack = tool_rig(
            make_web_tools(cfg, resolver=resolver),
            prompter=prompter,
            audit_path=tmp_path / f"audit-{len(list(tmp_path.iterdir()))}.jsonl",
            prompt_timeout_s=5.0,
            allowed=["web_fetch", "web_search"],
            turn_id="t-web",
        )
        return Rig(stack, prompter)

    return build


def assert_stopped(rig: Rig, outcome: CallOutcome, statuses: set[str], reason: str) -> None:
    record = outcome.record
    assert record.status in statuses, (record.status, record.reason)
    assert reason in record.reason, record.reason
    assert outcome.result is None
    assert outcome.model_text.startswith(f"error ({record.status}):")
    (end,) = rig.stack.events("TOOL_CALL_END", record.call_id)
    assert end["data"]["status"] == record.status
    assert end["data"]["reason"] == record.reason
    assert "pw@" not in record.reason  # a password in the address is never echoed
    assert verify(rig.stack.audit_path).ok


# --- refused before anyone is asked: no DNS, no connection, no prompt -----------------------------

REFUSED_UP_FRONT = [
    # loopback, however it is written
    ("loopback", "http://127.0.0.1:{p}/page", "a loopback address"),
    ("loopback-other", "http://127.0.0.2:{p2}/page", "a loopback address"),
    ("localhost", "http://localhost:{p}/page", "localhost is this computer"),
    ("localhost-caps-dot", "http://LOCALHOST.:{p}/page", "localhost is this computer"),
    ("localhost-sub", "http://admin.localhost:{p}/page", "admin.localhost is this computer"),
    ("ipv6-loopback", "http://[::1]:{p6}/page", "::1 is a loopback address"),
    ("ipv4-mapped", "http://[::ffff:127.0.0.1]:{p}/page", "IPv4-mapped form of 127.0.0.1"),
    ("ipv4-mapped-hex", "http://[::ffff:7f00:1]:{p}/page", "IPv4-mapped form of 127.0.0.1"),
    ("nat64", "http://[64:ff9b::7f00:1]:{p}/page", "NAT64 form of 127.0.0.1"),
    ("decimal", "http://2130706433:{p}/page", "unusual spelling of the IP address 127.0.0.1"),
    ("hex-dotted", "http://0x7f.0.0.1:{p}/page", "unusual spelling of the IP address 127.0.0.1"),
    ("hex-whole", "http://0x7F000001:{p}/page", "unusual spelling of the IP address 127.0.0.1"),
    ("octal", "http://017700000001:{p}/page", "unusual spelling of the IP address 127.0.0.1"),
    ("octal-dotted", "http://0177.0.0.01:{p}/page", "unusual spelling of the IP address"),
    ("short-form", "http://127.1:{p}/page", "unusual spelling of the IP address 127.0.0.1"),
    ("leading-zeros", "http://127.000.000.001:{p}/page", "unusual spelling of the IP address"),
    ("fullwidth-digits", "http://１２７．０．０．１:{p}/page", "127.0.0.1 is a loopback address"),
    ("ideographic-dots", "http://127。0。0。1:{p}/page", "127.0.0.1 is a loopback address"),
    ("too-many-parts", "http://127.0.0.0.1:{p}/page", "neither a valid host name nor an IP"),
    ("unspecified", "http://0.0.0.0:{p}/page", "an unspecified address"),
    ("unspecified-v6", "http://[::]:{p6}/page", "an unspecified address"),
    # user names, encodings and parser confusion
    ("userinfo", "http://example.com@127.0.0.1:{p}/page", "user name or password"),
    ("userinfo-pass", "http://user:pw@127.0.0.1:{p}/page", "user name or password"),
    ("userinfo-encoded", "http://example.com%40127.0.0.1:{p}/page", "percent-encoded"),
    ("backslash", "http://example.com\\@127.0.0.1:{p}/page", "backslash"),
    ("zone-index", "http://[fe80::1%25lo]:{p}/page", "zone index"),
    ("unbracketed-v6", "http://::1:{p6}/page", "must be in [brackets]"),
    # the other private ranges and cloud metadata
    ("metadata", "http://169.254.169.254/latest/meta-data/", "link-local"),
    ("metadata-mapped", "http://[::ffff:169.254.169.254]/latest/", "form of 169.254.169.254"),
    ("metadata-decimal", "http://2852039166/latest/meta-data/", "unusual spelling"),
    ("rfc1918-10", "http://10.0.0.1/", "a private-network address"),
    ("rfc1918-172", "http://172.16.5.4/", "a private-network address"),
    ("rfc1918-192", "http://192.168.1.1/admin", "a private-network address"),
    ("cgnat", "http://100.64.0.1/", "carrier-grade NAT"),
    ("ula", "http://[fd00::1]/", "unique-local IPv6"),
    ("link-local-v6", "http://[fe80::1]/", "link-local IPv6"),
    ("multicast", "http://224.0.0.1/", "a multicast address"),
    ("6to4-private", "http://[2002:c0a8:101::1]/", "6to4 form of 192.168.1.1"),
    # other schemes
    ("file", "file:///etc/passwd", "file: addresses are never fetched"),
    ("file-caps", "FILE:///etc/passwd", "file: addresses are never fetched"),
    ("file-mixed-host", "File://localhost/etc/passwd", "file: addresses are never fetched"),
    ("gopher", "gopher://127.0.0.1:{p}/_GET%20/page", "gopher: addresses are never fetched"),
    ("ftp", "ftp://127.0.0.1:{p}/", "ftp: addresses are never fetched"),
    ("dict", "dict://127.0.0.1:{p}/info", "dict: addresses are never fetched"),
    ("data", "data:text/html,<h1>hi</h1>", "data: addresses are never fetched"),
    ("javascript", "javascript:alert(1)", "javascript: addresses are never fetched"),
    ("no-scheme", "//127.0.0.1:{p}/page", "not a web address"),
    ("one-slash", "http:/127.0.0.1:{p}/page", "not a full address"),
    # whitespace and invisible characters
    ("zero-width-space", "http://exa\u200bmple.com/", "U+200B ZERO WIDTH SPACE"),
    ("soft-hyphen", "http://exam\u00adple.com/", "U+00AD SOFT HYPHEN"),
    ("rtl-override", "\u202ehttp://moc.elpmaxe/", "U+202E"),
    ("tab-in-host", "http://example.com\t@127.0.0.1:{p}/", "U+0009"),
    ("newline-in-scheme", "java\nscript:alert(1)", "U+000A"),
    ("nbsp", "http://example.com\u00a0/", "U+00A0 NO-BREAK SPACE"),
    ("bom", "\ufeffhttp://127.0.0.1:{p}/page", "U+FEFF"),
    ("space-inside", "http://127.0.0.1:{p}/pa ge", "U+0020 SPACE"),
]


@pytest.mark.parametrize(
    ("template", "reason"),
    [case[1:] for case in REFUSED_UP_FRONT],
    ids=[case[0] for case in REFUSED_UP_FRONT],
)
def test_fetch_refused_before_asking(
    make_rig: RigFactory, servers: Servers, template: str, reason: str
) -> None:
    rig = make_rig(resolver=_no_dns)
    outcome = rig.call("web_fetch", url=servers.fill(template))
    assert_stopped(rig, outcome, {"refused"}, reason)
    assert rig.prompter.asked == []  # never even offered to the user
    assert rig.stack.events("TOOL_CALL_START", outcome.record.call_id) == []
    assert servers.all_hits() == []


def _no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"DNS was asked about {host} for a call that should never run")


def test_the_corpus_is_large_enough() -> None:
    """Data sanity, the one size check of this corpus: the refusal tests stand on it."""
    assert len(REFUSED_UP_FRONT) + len(REFUSED_ON_THE_WAY) >= 60


# --- refused on the way: each redirect hop, and DNS answers, are checked again --------------------

# (id, where /go sends the request, what the reason says)
REFUSED_ON_THE_WAY = [
    (
        "other-domain",
        "http://127.0.0.2:{p2}/page",
        "redirected to 127.0.0.2, which this permission does not cover; ask for it separately",
    ),
    (
        "protocol-relative",
        "//127.0.0.2:{p2}/page",
        "redirected to 127.0.0.2, which this permission does not cover",
    ),
    ("same-machine-ip", "http://127.0.0.1:{p}/page", "redirected to 127.0.0.1, which"),
    ("metadata", "http://169.254.169.254/latest/meta-data/", "redirected to 169.254.169.254"),
    ("ipv6-loopback", "http://[::1]:{p6}/page", "redirected to ::1, which"),
    ("userinfo", "http://localhost@127.0.0.2:{p2}/page", "user name or password"),
    ("decimal-ip", "http://2130706433:{p}/page", "unusual spelling of the IP address"),
    ("file", "file:///etc/passwd", "file: addresses are never fetched"),
    ("file-caps", "FILE:///etc/shadow", "file: addresses are never fetched"),
    ("gopher", "gopher://localhost:{p}/_GET", "gopher: addresses are never fetched"),
    ("javascript", "javascript:alert(document.cookie)", "javascript: addresses are never"),
    ("data", "data:text/plain,hello", "data: addresses are never fetched"),
    ("invisible", "http://local\u200bhost:{p}/page", "U+200B ZERO WIDTH SPACE"),
    (
        "private-subdomain",
        "http://api.www.localhost:{p}/page",
        "api.www.localhost is this computer",
    ),
]


@pytest.mark.parametrize(
    ("location", "reason"),
    [case[1:] for case in REFUSED_ON_THE_WAY],
    ids=[case[0] for case in REFUSED_ON_THE_WAY],
)
def test_a_redirect_hop_is_refused(
    make_rig: RigFactory, servers: Servers, location: str, reason: str
) -> None:
    # The user allowed www.localhost and localhost (both this computer) and nothing else.
    rig = make_rig(("www.localhost", "localhost"))
    start = servers.main.url("/go?to=" + quote(servers.fill(location)), host="www.localhost")
    outcome = rig.call("web_fetch", url=start)
    assert_stopped(rig, outcome, {"error", "refused"}, reason)
    assert len(rig.prompter.asked) == 1  # for www.localhost only; the hop asks for nothing
    assert [e["data"]["tool"] for e in rig.stack.events("TOOL_CALL_START", outcome.record.call_id)]
    assert len(servers.main.hits) == 1  # /go only, no second hop
    assert servers.other.hits == []
    assert servers.v6.hits == []


def test_too_many_redirects_stop_after_five(make_rig: RigFactory, servers: Servers) -> None:
    rig = make_rig(("localhost",))
    url = servers.main.url(f"/redirect/{MAX_REDIRECTS + 3}", host="localhost")
    outcome = rig.call("web_fetch", url=url)
    assert_stopped(rig, outcome, STOPPED, f"Stopped after {MAX_REDIRECTS} redirects")
    assert len(servers.main.hits) == MAX_REDIRECTS + 1
    assert "/page" not in servers.main.paths()


def test_a_redirect_loop_stops(make_rig: RigFactory, servers: Servers) -> None:
    rig = make_rig(("localhost",))
    outcome = rig.call("web_fetch", url=servers.main.url("/loop", host="localhost"))
    assert_stopped(rig, outcome, STOPPED, "redirects in a loop")
    assert servers.main.paths() == ["/loop"]


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        (["127.0.0.1"], "intranet.test resolves to 127.0.0.1, a loopback address"),
        (["::ffff:127.0.0.1"], "IPv4-mapped form of 127.0.0.1"),
        (["169.254.169.254"], "resolves to 169.254.169.254, a link-local address"),
        (["127.0.0.1", "10.0.0.1"], "resolves to 127.0.0.1"),
    ],
    ids=["loopback", "mapped", "metadata", "mixed"],
)
def test_a_name_that_resolves_to_a_private_address_never_connects(
    make_rig: RigFactory, servers: Servers, answers: list[str], reason: str
) -> None:
    """The resolver plays a DNS server answering a private address for a public-looking name."""
    rig = make_rig(resolver=lambda host, port: answers)
    url = servers.main.url("/page", host="intranet.test")
    outcome = rig.call("web_fetch", url=url)
    assert_stopped(rig, outcome, STOPPED, reason)
    assert servers.all_hits() == []


def test_a_denied_permission_never_reaches_the_server(
    make_rig: RigFactory, servers: Servers
) -> None:
    rig = make_rig(("localhost",), grant=False)
    outcome = rig.call("web_fetch", url=servers.main.url("/page", host="localhost"))
    assert_stopped(rig, outcome, {"denied"}, "")
    assert rig.stack.events("TOOL_CALL_START", outcome.record.call_id) == []
    assert servers.all_hits() == []


def test_a_grant_is_asked_for_the_exact_domain(make_rig: RigFactory, servers: Servers) -> None:
    rig = make_rig(("localhost",))
    outcome = rig.call("web_fetch", url=servers.main.url("/plain", host="LocalHost."))
    assert outcome.record.status == "ok"
    (request,) = rig.prompter.asked
    assert request.scope == "domain:localhost"


# --- floods are bounded ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "config", "note"),
    [
        ("/huge", {"web_max_bytes": 200_000}, "only its start is shown"),
        ("/gzip-bomb", {"web_max_bytes": 200_000}, "only its start is shown"),
        ("/slow", {"web_timeout_s": 0.3}, "still arriving after 0.3 s"),
    ],
    ids=["huge", "gzip-bomb", "slow-drip"],
)
def test_a_flood_is_cut_at_its_bound(
    make_rig: RigFactory, servers: Servers, path: str, config: dict[str, Any], note: str
) -> None:
    rig = make_rig(("localhost",), **config)
    outcome = rig.call("web_fetch", url=servers.main.url(path, host="localhost"))
    assert outcome.record.status == "ok", outcome.record.reason
    assert outcome.result is not None
    data = outcome.result.data
    assert data["truncated"] is True
    assert data["bytes"] <= config.get("web_max_bytes", ToolConfig().web_max_bytes)
    assert note in data["note"]
    assert (
        len(outcome.model_text)
        <= rig.stack.runner.registry.get("web_fetch").manual.output_cap + 100
    )
    (end,) = rig.stack.events("TOOL_CALL_END", outcome.record.call_id)
    assert end["data"]["status"] == "ok"


def test_a_server_that_never_answers_is_an_error_within_the_deadline(
    make_rig: RigFactory, servers: Servers
) -> None:
    rig = make_rig(("localhost",), web_timeout_s=0.3)
    outcome = rig.call("web_fetch", url=servers.main.url("/slow-headers", host="localhost"))
    assert_stopped(rig, outcome, {"error"}, "did not answer within 0.3 s")


def test_binary_content_is_refused_with_a_reason(make_rig: RigFactory, servers: Servers) -> None:
    rig = make_rig(("localhost",))
    outcome = rig.call("web_fetch", url=servers.main.url("/doc.pdf", host="localhost"))
    assert_stopped(rig, outcome, {"error"}, "a PDF document (application/pdf)")


# --- web_search -----------------------------------------------------------------------------------


def test_a_local_search_engine_is_refused_unless_allowed(
    make_rig: RigFactory, servers: Servers
) -> None:
    rig = make_rig(searxng_url=servers.main.url("/"))
    outcome = rig.call("web_search", query="anything")
    assert_stopped(rig, outcome, {"refused"}, 'add "127.0.0.1" to the setting `web.allow_private`')
    assert rig.prompter.asked == []
    assert servers.all_hits() == []


def test_search_set_to_searxng_without_an_engine_is_an_error_before_asking(
    make_rig: RigFactory,
) -> None:
    rig = make_rig(search_provider="searxng")
    outcome = rig.call("web_search", query="anything")
    assert_stopped(rig, outcome, {"error"}, "`web.searxng_url`")
    assert rig.prompter.asked == []


def test_search_results_are_never_fetched(make_rig: RigFactory, servers: Servers) -> None:
    rig = make_rig(("127.0.0.1",), searxng_url=servers.main.url("/"))
    outcome = rig.call("web_search", query="lighthouses", max_results=8)
    assert outcome.record.status == "ok"
    assert outcome.result is not None
    assert len(outcome.result.data["results"]) == 8
    assert [h.path for h in servers.main.hits] == ["/search?q=lighthouses&format=json"]
    assert servers.other.hits == []
