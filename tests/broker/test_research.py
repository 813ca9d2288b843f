"""Research tasks (issue 24): a lookup that asks to compare, weigh sources, recommend or plan is
marked by the router, and runs as research with a capable model — several searches, pages read,
the pages listed under the answer from what the runner fetched — while without one (none, or
only the embedded model) the reply says what research needs.

Real parts: a Session with its router, policy, runner and audit; the model is a scripted
OpenAI-protocol server on 127.0.0.1; searches go to a SearXNG-speaking web server on 127.0.0.1
and pages are fetched from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import FrontEnd, worded
from broker.executor import RESEARCH_NUDGE, RESEARCH_PROMPT
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.router import is_research, route
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode, Intent, TurnResult
from core.errors import Remedy
from tests.support.openai_server import (
    Raw,
    ScriptedOpenAIServer,
    ServerFactory,
    Text,
    ToolCalls,
)
from tests.support.scripted_model import ScriptedModel
from tests.support.web_server import WebServer

# Written for these tests (not taken from any corpus): research, and single lookups.
RESEARCH = [
    "compare the three cheapest robot vacuums with good pet hair reviews and tell me which to get",
    "i need a new laptop for uni, look at a few options under 600 and recommend one",
    "what does the evidence say about intermittent fasting for people over 60? give me a verdict",
    "plan a long weekend in Porto for two: what's on, where to stay, rough costs",
    "Kindle vs Kobo vs Pocketbook for someone who reads library books — which one should I buy?",
    "dig into whether heat pumps work in old stone houses and summarise the research",
    "find me some reviews of the Fairphone 5 and tell me if it's worth it",
]
SINGLE = [
    "weather in Porto this weekend",
    "latest version of LibreOffice",
    "who won the Champions League final",
    "price of a Fairphone 5 in Germany",
    "search for the opening hours of the Tate Modern",
    "lyrics to bohemian rhapsody",
]

QUESTION = "compare a few e-readers for library books and tell me which one I should buy"


def test_research_is_told_from_a_single_lookup_by_its_words() -> None:
    assert [text for text in RESEARCH if not is_research(text)] == []
    assert [text for text in SINGLE if is_research(text)] == []


def test_the_router_marks_research_only_on_a_lookup() -> None:
    routed = route(QUESTION)
    assert routed.intent is Intent.LOOKUP_SEARCH
    assert routed.research
    assert not route("what's the weather in Leeds tomorrow").research
    # The same words about files on this computer are a file task, never research.
    files = route("compare ~/Documents/a.txt and ~/Documents/b.txt and tell me which is better")
    assert files.intent is not Intent.LOOKUP_SEARCH
    assert not files.research
    # A long paste: the words past the scan limit are not read (and routing stays fast).
    assert not is_research("x " * 5000 + "compare and recommend")


class Person(RulePrompter):
    """Allows every question for the session, and remembers them."""

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.SESSION, scope=request.scope)


@pytest.fixture(scope="module")
def _server() -> Iterator[WebServer]:
    with WebServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def web(_server: WebServer) -> WebServer:
    _server.reset()
    return _server


@pytest.fixture
def sessions(tmp_path: Path, web: WebServer) -> Iterator[Any]:
    made: list[Session] = []

    def make(model: Any) -> Session:
        settings = Settings()
        settings.web.allow_private = ["localhost", "127.0.0.1"]
        settings.web.searxng_url = web.url("/")
        settings.router.model_refinement = False
        settings.memory.extract = False
        session = Session(
            home=tmp_path / "chamberlain", settings=settings, model=model, prompter=Person()
        )
        made.append(session)
        return session

    yield make
    for session in made:
        session.close()


def served(server: ScriptedOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel(server.base_url, model="scripted-model", timeout_s=10)


def searched(web: WebServer) -> list[str]:
    return [hit.path for hit in web.hits if "/search" in hit.path]


def test_with_a_capable_model_research_searches_reads_pages_and_lists_them(
    scripted_server: ServerFactory, sessions: Any, web: WebServer
) -> None:
    page, short = web.url("/page", host="localhost"), web.url("/short.html", host="localhost")
    server = scripted_server(
        [
            ToolCalls(
                [
                    ("web_search", {"query": "best e-reader library books"}),
                    ("web_search", {"query": "kobo libby vs kindle review"}),
                ]
            ),
            ToolCalls([("web_fetch", {"url": page}), ("web_fetch", {"url": short})]),
            # The model names a source it never read: only the pages fetched are listed.
            Text("Get the Kobo: it borrows library books directly. Source: https://evil.example/"),
        ]
    )
    session = sessions(served(server))

    turn = session.ask(QUESTION)

    assert [c.tool for c in turn.tool_calls] == ["web_search"] * 2 + ["web_fetch"] * 2
    assert all(c.status == "ok" for c in turn.tool_calls), turn.tool_calls
    assert len(searched(web)) == 2
    assert turn.reply.startswith("Get the Kobo")
    assert f"\n\nPages read for this answer:\n1. {page}\n2. {short}" in turn.reply
    assert "evil.example" not in turn.reply.split("Pages read")[1]
    first = server.requests[0]
    assert RESEARCH_PROMPT in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {"web_search", "web_fetch"}


def test_a_research_answer_from_the_models_own_knowledge_is_nudged_once_then_said_as_such(
    scripted_server: ServerFactory, sessions: Any, web: WebServer
) -> None:
    server = scripted_server([Text("The Kobo, I think."), Text("Still the Kobo.")])
    session = sessions(served(server))

    turn = session.ask(QUESTION)

    assert len(server.requests) == 2
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": RESEARCH_NUDGE}
    assert turn.tool_calls == []
    assert turn.reply.startswith(
        "Still the Kobo.\n\n(Nothing was looked up: this answer is the model's own knowledge, "
        "not research.)"
    )


def test_a_model_that_fails_before_looking_anything_up_gets_no_sources_line(
    scripted_server: ServerFactory, sessions: Any, web: WebServer
) -> None:
    server = scripted_server([Raw.error(500, "model crashed")], repeat_last=True)
    turn = sessions(served(server)).ask(QUESTION)
    assert turn.failed
    assert "Nothing was looked up" not in turn.reply
    assert "Pages read" not in turn.reply


def test_research_on_snippets_alone_says_no_page_was_read(
    scripted_server: ServerFactory, sessions: Any, web: WebServer
) -> None:
    server = scripted_server(
        [ToolCalls([("web_search", {"query": "e-readers compared"})]), Text("Kobo.")]
    )
    turn = sessions(served(server)).ask(QUESTION)
    assert turn.reply.startswith(
        "Kobo.\n\n(No page was read: this answer rests on search results' snippets only.)"
    )


def test_research_may_take_more_steps_than_a_plain_turn(
    scripted_server: ServerFactory, sessions: Any, web: WebServer
) -> None:
    pages = [web.url(f"/page?n={n}", host="localhost") for n in range(6)]
    server = scripted_server(
        [ToolCalls([("web_search", {"query": "e-readers"})])]
        + [ToolCalls([("web_fetch", {"url": url})]) for url in pages]
        + [Text("The Kobo, from six pages.")]
    )
    session = sessions(served(server))
    executor = session.settings.executor
    assert executor.max_iterations < 8 <= executor.research_iterations

    turn = session.ask(QUESTION)

    assert turn.reply.startswith("The Kobo, from six pages.")
    listed = "\n".join(f"{n}. {url}" for n, url in enumerate(pages, 1))
    assert f"Pages read for this answer:\n{listed}" in turn.reply


def test_a_single_lookup_keeps_the_plain_turn(
    scripted_server: ServerFactory, sessions: Any, web: WebServer
) -> None:
    server = scripted_server([Text("Sunny, 24 degrees.")])
    turn = sessions(served(server)).ask("search for the weather in Porto this weekend")
    assert [c.tool for c in turn.tool_calls] == ["web_search"]
    assert all(RESEARCH_PROMPT not in json.dumps(r) for r in server.requests)
    assert "research" not in turn.reply


def test_without_a_model_research_says_what_it_needs(sessions: Any, web: WebServer) -> None:
    turn: TurnResult = sessions(None).ask(QUESTION)
    assert turn.remedy is Remedy.RESEARCH_NEEDS_MODEL
    assert "This is a research task" in turn.reply
    assert "No language model is connected" in turn.reply
    # Only what research needs: not the general lines about clear requests as well.
    assert "could not tell exactly which tool" not in turn.reply
    assert turn.reply.count("No language model is connected") == 1
    shown = worded(turn.reply, turn.remedy, FrontEnd.CLI)
    assert shown.endswith("or pass --llm URL.")
    assert "For research, start" in shown
    assert "Settings → Model" in worded(turn.reply, turn.remedy, FrontEnd.APP)


def test_with_the_embedded_model_research_is_one_search_and_says_so(
    sessions: Any, web: WebServer
) -> None:
    def small_model(request: Any) -> Any:
        return Text("Here is what one search found.")

    session = sessions(ScriptedModel(small_model, embedded=True))
    turn = session.ask("search for e-readers for library books, compare them and recommend one")
    assert [c.tool for c in turn.tool_calls] == ["web_search"]
    assert turn.reply.endswith(
        "The embedded model is too small to weigh several pages, so this is one search's answer."
    )
    assert turn.remedy is Remedy.RESEARCH_NEEDS_MODEL
