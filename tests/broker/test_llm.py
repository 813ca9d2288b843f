"""The OpenAI-compatible client and endpoint resolution, against a real HTTP server on 127.0.0.1.

No part of the `openai` SDK is mocked: the scripted server speaks the chat-completions protocol
(JSON and server-sent events) and the client meets real sockets, real timeouts and real
connection refusals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

import pytest

from broker.llm import endpoints
from broker.llm.base import ModelError, ModelUnavailable
from broker.llm.endpoints import InvalidEndpoint, is_loopback_url, resolve_endpoint
from broker.llm.openai_client import (
    MAX_ARGUMENT_CHARS,
    MAX_CONTENT_CHARS,
    MAX_TOOL_CALLS,
    OpenAIChatModel,
)
from broker.settings import LLMSettings
from core.errors import Remedy
from tests.support.openai_server import (
    Cut,
    KeepAlive,
    Raw,
    ScriptedOpenAIServer,
    ServerFactory,
    Stall,
    Text,
    ToolCalls,
    Trickle,
    free_port,
)

USER = [{"role": "user", "content": "hello"}]
FILE_READ_TOOL = {
    "type": "function",
    "function": {
        "name": "file_read",
        "description": "Read a text file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
ROUTER_SCHEMA = {
    "type": "object",
    "properties": {"intent": {"type": "string"}},
    "required": ["intent"],
    "additionalProperties": False,
}

both_modes = pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])


def client(server: ScriptedOpenAIServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("model", "scripted-model")
    options.setdefault("timeout_s", 10.0)
    return OpenAIChatModel(server.base_url, **options)


# -- text and tool calls ---------------------------------------------------------------------------


def test_streaming_text_arrives_in_pieces_and_is_reassembled(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server(["The capital of France is Paris."], fragments=4)
    pieces: list[str] = []
    model = client(server, stream=True, on_delta=pieces.append)

    reply = model.chat(USER)

    assert reply.content == "The capital of France is Paris."
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert len(pieces) > 1, "the text should reach the caller while it streams"
    assert "".join(pieces) == reply.content
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["messages"] == USER


def test_plain_text_reply(scripted_server: ServerFactory) -> None:
    server = scripted_server([Text("Bonjour.")])
    pieces: list[str] = []
    model = client(server, stream=False, on_delta=pieces.append)

    reply = model.chat(USER)

    assert reply.content == "Bonjour."
    assert reply.finish_reason == "stop"
    assert pieces == ["Bonjour."]
    assert not server.requests[0].get("stream")


@both_modes
def test_tool_calls_are_reassembled_exactly(scripted_server: ServerFactory, stream: bool) -> None:
    first = {"path": "/home/ana/notes/ünïcode – 2024.txt", "encoding": "utf-8", "limit": 4096}
    second = {"command": ["ls", "-la", "/tmp"], "cwd": None}
    server = scripted_server(
        [ToolCalls([("file_read", first), ("shell_run", second)])], fragments=7
    )

    reply = client(server, stream=stream).chat(USER, tools=[FILE_READ_TOOL])

    assert [(call.name, call.arguments) for call in reply.tool_calls] == [
        ("file_read", json.dumps(first)),
        ("shell_run", json.dumps(second)),
    ]
    assert reply.tool_calls[0].id != reply.tool_calls[1].id
    assert all(call.id for call in reply.tool_calls)
    assert reply.finish_reason == "tool_calls"


@both_modes
def test_broken_argument_json_is_passed_through_raw(
    scripted_server: ServerFactory, stream: bool
) -> None:
    broken = '{"path": "/etc/hostname", "mode": '
    server = scripted_server([ToolCalls([("file_read", broken)])])

    reply = client(server, stream=stream).chat(USER, tools=[FILE_READ_TOOL])

    assert reply.tool_calls[0].name == "file_read"
    assert reply.tool_calls[0].arguments == broken


@both_modes
def test_a_server_that_refuses_tools_gets_them_in_the_prompt_from_then_on(
    scripted_server: ServerFactory, stream: bool
) -> None:
    """Ollama answers a model without tool support with HTTP 400 "does not support tools": the
    same request goes again with the tools described in the prompt, the reply's <tool_call>
    block becomes a real tool call, and later requests skip the refused form."""
    call = '<tool_call>{"name": "file_read", "arguments": {"path": "/tmp/a.txt"}}</tool_call>'
    server = scripted_server(
        [
            Raw.error(400, "registry.ollama.ai/library/tinyllama does not support tools"),
            Text(call),
            Text("I read it."),
        ]
    )
    model = client(server, stream=stream)

    reply = model.chat(USER, tools=[FILE_READ_TOOL])
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("file_read", {"path": "/tmp/a.txt"})
    ]
    assert model.native_tools is False
    again = model.chat(USER, tools=[FILE_READ_TOOL])
    assert again.content == "I read it."
    first, retried, later = server.requests
    assert "tools" in first
    assert "tools" not in retried
    assert "tools" not in later
    assert "<tool_call>" in retried["messages"][0]["content"]  # the protocol's instructions


def test_a_server_with_a_known_context_gets_a_request_cut_to_fit(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server(["Summary."])
    model = OpenAIChatModel(
        server.base_url, model="m", timeout_s=10, context_tokens=2048, reply_tokens=512
    )
    messages = [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "summarise the log"},
        {"role": "tool", "tool_call_id": "c1", "content": "old " * 3000},
        {"role": "tool", "tool_call_id": "c2", "content": "START " + "new " * 3000 + "END"},
    ]
    reply = model.chat(messages)
    sent = server.requests[0]["messages"]
    assert sent[0]["content"] == "You help."
    assert sent[1]["content"] == "summarise the log"
    assert "dropped to fit" in sent[2]["content"]
    assert sent[3]["content"].startswith("START ")
    assert sent[3]["content"].endswith("END")
    assert len(json.dumps(sent)) < 3 * 2048
    assert reply.context_cuts == ("an earlier tool result", "part of the latest tool result")


def test_a_refusal_that_is_not_about_tools_stays_an_error(scripted_server: ServerFactory) -> None:
    server = scripted_server([Raw.error(400, "messages[0].content must be a string")])
    model = client(server)
    with pytest.raises(ModelError, match="HTTP 400"):
        model.chat(USER, tools=[FILE_READ_TOOL])
    assert model.native_tools is None
    assert len(server.requests) == 1


@both_modes
def test_tools_are_sent_only_when_there_are_some(
    scripted_server: ServerFactory, stream: bool
) -> None:
    server = scripted_server(["ok"])
    model = client(server, stream=stream)

    model.chat(USER)
    model.chat(USER, tools=[])
    model.chat(USER, tools=[FILE_READ_TOOL])

    assert [("tools" in request) for request in server.requests] == [False, False, True]
    assert server.requests[2]["tools"] == [FILE_READ_TOOL]


def test_text_alongside_tool_calls_is_kept(scripted_server: ServerFactory) -> None:
    server = scripted_server([ToolCalls([("file_read", {"path": "a"})], content="Let me look.")])

    reply = client(server).chat(USER, tools=[FILE_READ_TOOL])

    assert reply.content == "Let me look."
    assert [call.name for call in reply.tool_calls] == ["file_read"]


# -- choosing the model ----------------------------------------------------------------------------


def test_model_is_picked_from_the_server_list_when_not_named(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server(["hi"], models=["qwen2.5:7b", "llama3.2:3b"])

    model = OpenAIChatModel(server.base_url, model=None, timeout_s=10)
    model.chat(USER)

    assert model.name == "qwen2.5:7b"
    assert server.requests[0]["model"] == "qwen2.5:7b"


def test_a_named_model_is_used_without_asking_the_server(scripted_server: ServerFactory) -> None:
    server = scripted_server(["hi"], models=["other"])

    model = OpenAIChatModel(server.base_url, model="mine", timeout_s=10)
    model.chat(USER)

    assert model.name == "mine"
    assert [hit.path for hit in server.hits] == ["/v1/chat/completions"]
    assert server.requests[0]["model"] == "mine"


def test_a_server_without_models_is_a_clear_error(scripted_server: ServerFactory) -> None:
    server = scripted_server(["hi"], models=[])

    with pytest.raises(ModelError, match="lists no models") as caught:
        OpenAIChatModel(server.base_url, model=None, timeout_s=10)
    assert caught.value.remedy is Remedy.NAME_MODEL
    assert "--model" not in str(caught.value)


@pytest.mark.parametrize(
    "answer",
    [Raw(200, "<html></html>", "text/html"), Raw(200, '{"data": 7}'), Raw.error(404, "nope")],
    ids=["html", "data-not-list", "404"],
)
def test_a_broken_model_list_is_a_model_error(scripted_server: ServerFactory, answer: Raw) -> None:
    server = scripted_server(["hi"], models_answer=answer)

    with pytest.raises(ModelError) as caught:
        OpenAIChatModel(server.base_url, model=None, timeout_s=10)
    assert not isinstance(caught.value, ModelUnavailable)


def test_from_settings_reads_the_key_from_the_configured_variable(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server(["hi"])
    settings = LLMSettings(model="m", api_key_env="MY_KEY", stream=False, timeout_s=7)

    model = OpenAIChatModel.from_settings(server.base_url, settings, environ={"MY_KEY": "k-123"})
    model.chat(USER)

    assert server.hits[0].headers["authorization"] == "Bearer k-123"
    assert not server.requests[0].get("stream")


def test_openai_api_key_from_the_environment_is_never_sent(
    scripted_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")
    server = scripted_server(["hi"])

    client(server).chat(USER)

    assert "sk-real-secret" not in json.dumps([hit.headers for hit in server.hits])


# -- failures --------------------------------------------------------------------------------------


@both_modes
def test_server_error_is_a_model_error_with_the_servers_message(
    scripted_server: ServerFactory, stream: bool
) -> None:
    server = scripted_server([Raw.error(500, "CUDA out of memory", "server_error")])

    with pytest.raises(ModelError, match=r"HTTP 500.*CUDA out of memory") as caught:
        client(server, stream=stream).chat(USER)
    assert not isinstance(caught.value, ModelUnavailable)


@both_modes
def test_nothing_listening_is_model_unavailable_with_advice(stream: bool) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    model = OpenAIChatModel(url, model="m", timeout_s=5, stream=stream)

    with pytest.raises(ModelUnavailable) as caught:
        model.chat(USER)

    message = str(caught.value)
    assert message.startswith(f"No model answers at {url}: ")
    assert "refused" in message.lower()
    # What to do is data the front end words (app/errors.py), never a flag named here.
    assert caught.value.remedy is Remedy.START_MODEL
    assert "--llm" not in message


def test_nothing_listening_when_picking_a_model_is_model_unavailable() -> None:
    with pytest.raises(ModelUnavailable, match="No model answers at"):
        OpenAIChatModel(f"http://127.0.0.1:{free_port()}/v1", model=None, timeout_s=5)


@both_modes
def test_a_server_that_does_not_answer_in_time_is_a_timeout(
    scripted_server: ServerFactory, stream: bool
) -> None:
    server = scripted_server([Stall(30, "too late")])

    with pytest.raises(ModelError, match=r"did not answer within 0.2 s") as caught:
        client(server, stream=stream, timeout_s=0.2).chat(USER)
    assert not isinstance(caught.value, ModelUnavailable)


@pytest.mark.parametrize(
    "turn",
    [
        Raw(200, "<html>It works!</html>", "text/html"),
        Raw(200, '{"choices": 5}'),
        Raw(200, '{"object": "chat.completion", "choices": []}'),
        Raw(200, '{"choices": [{"message": {"content": 42}}]}'),
        Raw(200, "data: {not json\n\n", "text/event-stream"),
        Raw(200, 'data: {"choices": [{"delta": {"content": ["x"]}}]}\n\n', "text/event-stream"),
        Raw(200, "", "text/event-stream"),
    ],
    ids=[
        "html",
        "choices-not-list",
        "no-choices",
        "content-not-text",
        "sse-not-json",
        "sse-content-not-text",
        "empty-stream",
    ],
)
@both_modes
def test_malformed_replies_are_model_errors(
    scripted_server: ServerFactory, turn: Raw, stream: bool
) -> None:
    server = scripted_server([turn])

    with pytest.raises(ModelError, match="malformed reply"):
        client(server, stream=stream).chat(USER)


def test_a_server_that_ignores_stream_true_still_works(scripted_server: ServerFactory) -> None:
    completion = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "whole"},
                "finish_reason": "stop",
            }
        ],
    }
    server = scripted_server([Raw(200, json.dumps(completion))])

    reply = client(server, stream=True).chat(USER)

    assert reply.content == "whole"


# -- one deadline per call, and replies that stop short ----------------------------------------

# The whole-call deadline these tests use. Each bounds the call at about a third of what it would
# take with the deadline ignored (the server's whole answer): generous on a loaded machine, since
# only "near the deadline, not half a minute later" is the promise.
DEADLINE_S = 1.0


@both_modes
def test_a_reply_that_trickles_in_byte_by_byte_ends_at_the_deadline(
    scripted_server: ServerFactory, stream: bool
) -> None:
    # One byte every 50 ms never trips a gap timeout; the whole reply would take over a minute.
    server = scripted_server([Trickle(Text("slow " * 60), interval=0.05), "quick"])
    model = client(server, stream=stream, timeout_s=DEADLINE_S)

    started = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer within 1 s") as caught:
        model.chat(USER)
    elapsed = time.monotonic() - started

    assert elapsed < 10.0  # the whole reply trickles for 30 s or more
    assert not isinstance(caught.value, ModelUnavailable)
    # The client is still usable: the cut connection was not left in its pool.
    assert model.chat(USER).content == "quick"


@both_modes
def test_keep_alives_do_not_hold_a_call_past_its_deadline(
    scripted_server: ServerFactory, stream: bool
) -> None:
    # SSE comments (or leading spaces) every 100 ms for a minute, and only then the answer.
    server = scripted_server([KeepAlive(60, Text("finally"), interval=0.1)])
    model = client(server, stream=stream, timeout_s=DEADLINE_S)

    started = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer within 1 s"):
        model.chat(USER)

    assert time.monotonic() - started < 20.0  # a minute of keep-alives


def test_chat_json_has_one_deadline_for_the_whole_call(scripted_server: ServerFactory) -> None:
    server = scripted_server([KeepAlive(60, Text('{"intent": "chat_only"}'), interval=0.1)])
    model = client(server, timeout_s=DEADLINE_S)

    started = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer within 1 s"):
        model.chat_json(USER, ROUTER_SCHEMA, "router_output")

    assert time.monotonic() - started < 20.0  # a minute of keep-alives
    assert len(server.requests) == 1, "a timeout is not retried with another response_format"


@both_modes
def test_headers_that_trickle_in_byte_by_byte_do_not_hold_a_call_past_its_deadline(
    scripted_server: ServerFactory, stream: bool
) -> None:
    # The status line and headers come one byte every 100 ms: no response exists for seconds,
    # and no gap between bytes ever trips a read timeout.
    server = scripted_server([Trickle(Text("slow"), interval=0.1, whole=True), "quick"])
    model = client(server, stream=stream, timeout_s=DEADLINE_S)

    started = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer within 1 s") as caught:
        model.chat(USER)

    assert time.monotonic() - started < 14.0  # the whole answer trickles for over 40 s
    assert not isinstance(caught.value, ModelUnavailable)
    assert model.chat(USER).content == "quick"


@both_modes
@pytest.mark.parametrize("at_byte", [10, 200], ids=["in-the-first-event", "later"])
def test_a_reply_cut_mid_body_says_the_server_closed_the_connection_in_its_reply(
    scripted_server: ServerFactory, stream: bool, at_byte: int
) -> None:
    server = scripted_server([Cut(Text("a long answer " * 40), at_byte=at_byte), "again"])
    model = client(server, stream=stream)

    with pytest.raises(ModelError) as caught:
        model.chat(USER)

    message = str(caught.value)
    assert not isinstance(caught.value, ModelUnavailable)
    assert (
        f"The model server at {server.base_url} closed the connection in the middle of its reply"
        in message
    )
    assert "Start a local server" not in message
    assert model.chat(USER).content == "again"


def test_a_stream_cut_mid_body_after_some_text_keeps_the_text_and_says_why_it_stops(
    scripted_server: ServerFactory,
) -> None:
    # Two events of text arrive, then the server hangs up inside the third.
    server = scripted_server(
        [Cut(Text("First part. Second part. Third part. Fourth."), at_byte=700)]
    )
    streamed: list[str] = []

    reply = client(server, stream=True, on_delta=streamed.append).chat(USER)

    assert reply.cut is True
    assert reply.cut_reason == "the model server closed the connection in the middle of its reply"
    assert reply.content == "".join(streamed)
    assert reply.content.startswith("First part.")
    assert not reply.content.endswith("Fourth.")


def test_a_request_holding_a_name_that_is_not_utf8_reaches_the_server_escaped(
    scripted_server: ServerFactory,
) -> None:
    # A tool result that kept a file name's undecodable byte (a lone surrogate, as Python reads
    # it): the request is still sent, with the byte shown escaped, instead of failing to encode.
    server = scripted_server(["seen"])
    name = os.fsdecode(b"report\xff.txt")
    messages = [*USER, {"role": "user", "content": f"the folder holds {name}"}]

    assert client(server).chat(messages).content == "seen"
    assert server.requests[0]["messages"][1]["content"] == "the folder holds report\\xff.txt"


def test_a_stream_that_ends_without_its_finish_marker_is_marked_cut(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server([Cut(Text("The three steps are: first, open")), "Complete."])
    model = client(server, stream=True)

    cut = model.chat(USER)
    whole = model.chat(USER)

    assert cut.cut is True
    assert cut.content == "The three steps are: first, open"
    assert cut.finish_reason is None
    assert whole.cut is False
    assert whole.finish_reason == "stop"


def test_tool_calls_in_a_cut_stream_are_marked_cut(scripted_server: ServerFactory) -> None:
    server = scripted_server([Cut(ToolCalls([("file_read", {"path": "/tmp/a"})]))])

    reply = client(server, stream=True).chat(USER, tools=[FILE_READ_TOOL])

    assert reply.cut is True


# -- bounds on absurd replies ----------------------------------------------------------------------


@both_modes
def test_oversized_content_is_cut_at_the_cap(scripted_server: ServerFactory, stream: bool) -> None:
    server = scripted_server([Text("x" * (2 * MAX_CONTENT_CHARS))], fragments=8)

    reply = client(server, stream=stream).chat(USER)

    assert len(reply.content) == MAX_CONTENT_CHARS
    assert reply.finish_reason == "length"


@both_modes
def test_too_many_tool_calls_are_dropped_past_the_cap(
    scripted_server: ServerFactory, stream: bool
) -> None:
    calls = [("file_read", {"path": f"/tmp/{i}"}) for i in range(MAX_TOOL_CALLS + 9)]
    server = scripted_server([ToolCalls(calls)])

    reply = client(server, stream=stream).chat(USER, tools=[FILE_READ_TOOL])

    assert len(reply.tool_calls) == MAX_TOOL_CALLS
    assert [call.arguments for call in reply.tool_calls] == [
        json.dumps(arguments) for _, arguments in calls[:MAX_TOOL_CALLS]
    ]


@both_modes
def test_oversized_arguments_are_cut_at_the_cap(
    scripted_server: ServerFactory, stream: bool
) -> None:
    huge = json.dumps({"text": "y" * (2 * MAX_ARGUMENT_CHARS)})
    server = scripted_server([ToolCalls([("file_write", huge)])])

    reply = client(server, stream=stream).chat(USER)

    assert reply.tool_calls[0].arguments == huge[:MAX_ARGUMENT_CHARS]


# -- chat_json -------------------------------------------------------------------------------------


def test_chat_json_asks_for_a_strict_json_schema(scripted_server: ServerFactory) -> None:
    server = scripted_server(['{"intent": "chat_only"}'])

    text = client(server, stream=True).chat_json(USER, ROUTER_SCHEMA, "router_output")

    assert text == '{"intent": "chat_only"}'
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "router_output", "schema": ROUTER_SCHEMA, "strict": True},
    }
    assert not request.get("stream")


@pytest.mark.parametrize(
    ("rejected", "expected_formats"),
    [
        (["json_schema"], ["json_schema", "json_object"]),
        (["json_schema", "json_object"], ["json_schema", "json_object", None]),
    ],
)
def test_chat_json_falls_back_when_the_server_rejects_the_format(
    scripted_server: ServerFactory, rejected: list[str], expected_formats: list[str | None]
) -> None:
    server = scripted_server(['{"intent": "file_task"}'], reject_response_formats=rejected)

    text = client(server).chat_json(USER, ROUTER_SCHEMA, "router_output")

    assert text == '{"intent": "file_task"}'
    sent = [(request.get("response_format") or {}).get("type") for request in server.requests]
    assert sent == expected_formats


def test_chat_json_falls_back_on_a_scripted_400(scripted_server: ServerFactory) -> None:
    server = scripted_server(
        [Raw.error(400, "response_format json_schema is not supported"), '{"intent": "x"}']
    )

    assert client(server).chat_json(USER, ROUTER_SCHEMA, "r") == '{"intent": "x"}'
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [401, 500])
def test_chat_json_does_not_retry_errors_a_simpler_format_cannot_fix(
    scripted_server: ServerFactory, status: int
) -> None:
    server = scripted_server([Raw.error(status, "nope")])

    with pytest.raises(ModelError, match=f"HTTP {status}"):
        client(server).chat_json(USER, ROUTER_SCHEMA, "r")
    assert len(server.requests) == 1


def test_chat_json_when_nothing_listens_is_model_unavailable() -> None:
    model = OpenAIChatModel(f"http://127.0.0.1:{free_port()}/v1", model="m", timeout_s=5)

    with pytest.raises(ModelUnavailable):
        model.chat_json(USER, ROUTER_SCHEMA, "r")


# -- properties and proxies ------------------------------------------------------------------------


def test_properties_of_a_loopback_client(scripted_server: ServerFactory) -> None:
    model = client(scripted_server(["hi"]))

    assert model.is_loopback is True
    assert model.is_embedded is False


def test_a_remote_endpoint_is_not_loopback_and_is_not_contacted_when_the_model_is_named() -> None:
    # A reserved TEST-NET address: constructing must not connect anywhere.
    with OpenAIChatModel("http://192.0.2.1/v1", model="gpt-x", timeout_s=0.1) as model:
        assert model.is_loopback is False
        assert model.name == "gpt-x"


def test_loopback_requests_ignore_proxy_settings(
    scripted_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = scripted_server(["direct"])

    assert client(server).chat(USER).content == "direct"
    monkeypatch.setattr(endpoints, "PROBE_PORTS", [("scripted", server.port)])
    assert resolve_endpoint("auto") == server.base_url


# -- endpoint resolution ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434/v1"),
        ("http://127.0.0.1:11434/", "http://127.0.0.1:11434/v1"),
        ("localhost:1234", "http://localhost:1234/v1"),
        ("  HTTP://LocalHost:8080  ", "http://LocalHost:8080/v1"),
        ("https://api.example.com/v1/", "https://api.example.com/v1"),
        ("https://gateway.example.com/openai/v2", "https://gateway.example.com/openai/v2"),
        ("http://[::1]:8000", "http://[::1]:8000/v1"),
    ],
)
def test_explicit_urls_are_normalised_without_contacting_them(setting: str, expected: str) -> None:
    assert resolve_endpoint(setting) == expected


@pytest.mark.parametrize("setting", ["none", "None", " NONE "])
def test_none_means_no_model(setting: str) -> None:
    assert resolve_endpoint(setting) is None


@pytest.mark.parametrize(
    "setting",
    [
        "ftp://127.0.0.1/v1",
        "http://",
        "http://127.0.0.1:99999",
        "http://h/v1?x=1",
        "embedded",
        # Each once taken as an address: a space, a broken scheme, a port that is not one, a
        # host that is not one.
        "htp:/localhost 18731",
        "htp:/localhost:18731",
        "http://my host/v1",
        "localhost:abc",
        "localhost:",
        "http://:8080",
        "http://x%20y/v1",
    ],
)
def test_unusable_urls_are_rejected(setting: str) -> None:
    with pytest.raises(InvalidEndpoint):
        resolve_endpoint(setting)


def test_auto_finds_the_first_local_server_that_lists_models(
    scripted_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = scripted_server(models=["a"])
    second = scripted_server(models=["b"])
    monkeypatch.setattr(
        endpoints,
        "PROBE_PORTS",
        [("nothing", free_port()), ("first", first.port), ("second", second.port)],
    )

    assert resolve_endpoint("auto", timeout_s=2) == first.base_url
    assert [hit.path for hit in first.hits] == ["/v1/models"]
    assert second.hits == []


@pytest.mark.parametrize(
    "answer",
    [
        Raw(200, "<html>Router admin</html>", "text/html"),
        Raw.error(404, "no such route"),
        Raw(200, '{"models": ["not the openai shape"]}'),
    ],
    ids=["html", "404", "other-json"],
)
def test_auto_skips_a_server_that_is_not_a_model_server(
    scripted_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, answer: Raw
) -> None:
    other = scripted_server(models_answer=answer)
    model_server = scripted_server(models=["m"])
    monkeypatch.setattr(
        endpoints, "PROBE_PORTS", [("web app", other.port), ("model", model_server.port)]
    )

    assert resolve_endpoint("auto", timeout_s=2) == model_server.base_url
    assert [hit.path for hit in other.hits] == ["/v1/models"]


def test_auto_returns_none_when_nothing_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(endpoints, "PROBE_PORTS", [("a", free_port()), ("b", free_port())])

    assert resolve_endpoint("auto") is None


def test_the_default_probe_order_is_ollama_lm_studio_llama_cpp_vllm() -> None:
    assert [port for _, port in endpoints.PROBE_PORTS] == [11434, 1234, 8080, 8000]


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://localhost:1234/v1", True),
        ("http://[::1]:8000/v1", True),
        ("localhost:8080", True),
        ("http://192.168.1.5:11434/v1", False),
        ("https://api.openai.com/v1", False),
        ("http://localhost.evil.example/v1", False),
        ("http://tenant.localhost/v1", False),
        ("http://128.0.0.1/v1", False),
    ],
)
def test_is_loopback_url(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


# -- the scripted server itself --------------------------------------------------------------------


def test_scripted_server_streams_fragments_like_real_servers(
    scripted_server: ServerFactory,
) -> None:
    """The client tests above rely on this: several argument fragments, id and name once."""
    server = scripted_server([ToolCalls([("file_read", {"path": "/a/long/enough/path.txt"})])])
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps({"model": "m", "messages": USER, "stream": True}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        events = [line for line in response.read().decode().split("\n\n") if line]

    assert events[-1] == "data: [DONE]"
    deltas = [
        json.loads(event.removeprefix("data: "))["choices"][0]["delta"] for event in events[:-1]
    ]
    fragments = [delta["tool_calls"][0] for delta in deltas if "tool_calls" in delta]
    assert len(fragments) > 1
    assert "id" in fragments[0]
    assert fragments[0]["function"]["name"] == "file_read"
    assert all("id" not in f and "name" not in f["function"] for f in fragments[1:])


def test_scripted_server_repeats_its_last_turn_unless_told_not_to(
    scripted_server: ServerFactory,
) -> None:
    looping = client(scripted_server(["first", "again"]))
    assert [looping.chat(USER).content for _ in range(3)] == ["first", "again", "again"]

    once = client(scripted_server(["only"], repeat_last=False))
    assert once.chat(USER).content == "only"
    with pytest.raises(ModelError, match="exhausted"):
        once.chat(USER)


def test_scripted_server_callable_turns_see_the_request(scripted_server: ServerFactory) -> None:
    def echo_tools(request: dict[str, Any]) -> str:
        return ",".join(tool["function"]["name"] for tool in request.get("tools", []))

    server = scripted_server([echo_tools])

    assert client(server).chat(USER, tools=[FILE_READ_TOOL]).content == "file_read"


def test_scripted_server_is_reachable_from_a_subprocess(scripted_server: ServerFactory) -> None:
    server = scripted_server(models=["from-parent"])
    code = (
        "import json, sys, urllib.request\n"
        "with urllib.request.urlopen(sys.argv[1] + '/models', timeout=5) as r:\n"
        "    print(json.load(r)['data'][0]['id'])\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", code, server.base_url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )

    assert result.stdout.strip() == "from-parent"


def test_scripted_server_stops_cleanly() -> None:
    server = ScriptedOpenAIServer(["hi"]).start()
    url = server.base_url
    server.stop()
    server.stop()  # idempotent

    with pytest.raises(ModelUnavailable):
        OpenAIChatModel(url, model="m", timeout_s=2).chat(USER)


def test_a_configured_temperature_is_sent_and_none_leaves_the_servers_default(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server(["a", "b"])
    OpenAIChatModel(server.base_url, model="m", timeout_s=10, temperature=0.0).chat(USER)
    OpenAIChatModel(server.base_url, model="m", timeout_s=10).chat(USER)
    assert server.requests[0]["temperature"] == 0.0
    assert "temperature" not in server.requests[1]
