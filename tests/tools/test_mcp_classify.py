"""How an MCP server's tools are named, classified and bounded (tools/mcp/classify.py, config.py).

Everything a server says is hostile input: names, descriptions, schemas and annotations."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from tools.manual import Capability
from tools.mcp.classify import (
    SchemaRejected,
    checked_schema,
    classify,
    clean_text,
    local_name,
)
from tools.mcp.config import McpServerConfig, McpSettings, loopback_url
from tools.registry import builtin_registry
from tools.scopes import covers_one, describe_scope


def server(**options: Any) -> McpServerConfig:
    return McpServerConfig(command="some-server", **options)


def hints(**values: bool) -> SimpleNamespace:
    base = {"read_only_hint": None, "destructive_hint": None, "open_world_hint": None}
    return SimpleNamespace(**(base | values))


# --- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remote", "ours"),
    [
        ("read_file", "notes__read_file"),
        ("readFile", "notes__read_file"),
        ("read-file", "notes__read_file"),
        ("Read File!", "notes__read_file"),
        ("__private", "notes__private"),
        ("9lives", "notes__t_9lives"),
    ],
)
def test_a_tool_is_named_server__tool_in_the_builtin_pattern(remote, ours):
    assert local_name("notes", remote) == ours


@pytest.mark.parametrize("remote", ["", "!!!", "—", "x" * 80])
def test_a_name_that_cannot_make_a_tool_name_gives_none(remote):
    assert local_name("notes", remote) is None


def test_no_mcp_tool_name_can_be_a_builtin_tool_name():
    """A builtin's name has no '__'; every MCP tool's has: a server naming its tool
    'file_read' or 'system_execute' gets notes__file_read, never the builtin."""
    builtins = builtin_registry().names()
    assert all("__" not in name for name in builtins)
    for name in builtins:
        assert local_name("notes", name) == f"notes__{name}"


@pytest.mark.parametrize("name", ["No", "no__tes", "notes_", "n" * 25, "9notes", "no-tes", ""])
def test_a_server_name_that_would_make_tool_names_ambiguous_is_refused(name):
    with pytest.raises(ValidationError):
        McpSettings.model_validate({"servers": {name: {"command": "x"}}})


# --- classes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remote", "category"),
    [
        ("read_text_file", "read"),
        ("list_directory", "read"),
        ("search_files", "read"),
        ("get_file_info", "read"),
        ("directory_tree", "read"),
        ("query", "read"),
        ("write_file", "write"),
        ("edit_file", "write"),
        ("create_directory", "write"),
        ("move_file", "write"),
        ("deleteRecord", "write"),
        ("run_script", "execute"),
        ("execute", "execute"),
        ("invoke-lambda", "execute"),
        # The strictest word wins: reading and deleting is a write; listing and running, execute.
        ("get_and_delete", "write"),
        ("list_then_run", "execute"),
    ],
)
def test_a_tools_name_gives_its_class(remote, category):
    kind = classify(remote, None, server())
    assert kind.category == category
    assert (
        kind.capability
        == {
            "read": Capability.MCP_READ,
            "write": Capability.MCP_WRITE,
            "execute": Capability.MCP_EXECUTE,
        }[category]
    )
    assert "name" in kind.why


@pytest.mark.parametrize("remote", ["weather", "frobnicate", "x"])
def test_a_name_that_says_nothing_gets_the_strictest_class(remote):
    kind = classify(remote, None, server())
    assert (kind.category, kind.risk, kind.reversibility) == (
        "execute",
        "dangerous",
        "irreversible",
    )
    assert "strictest" in kind.why


def test_the_users_mapping_beats_the_server_default_which_beats_the_name():
    config = server(default_category="read", tools={"purge_cache": {"category": "execute"}})
    assert classify("purge_cache", None, config).category == "execute"
    # the default covers every other tool, whatever its name says
    assert classify("delete_everything", None, config).category == "read"
    assert classify("weather", None, config).why == "this server's default category in settings"


def test_read_only_and_harmless_annotations_never_lower_the_class():
    """A server saying its write tool only reads, destroys nothing and stays local changes
    nothing: annotations may only make a tool stricter."""
    lying = hints(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for remote, expected in [("write_file", "write"), ("run", "execute"), ("weather", "execute")]:
        kind = classify(remote, lying, server())
        assert kind.category == expected
        assert kind == classify(remote, None, server())


def test_annotations_saying_a_tool_changes_or_destroys_raise_it():
    changes = classify("read_thing", hints(read_only_hint=False), server())
    assert (changes.category, changes.risk) == ("write", "moderate")
    assert "changes things" in changes.why

    destroys = classify("get_thing", hints(destructive_hint=True), server())
    assert (destroys.category, destroys.risk, destroys.reversibility) == (
        "write",
        "dangerous",
        "irreversible",
    )

    reaches_out = classify("list_issues", hints(open_world_hint=True), server())
    assert (reaches_out.category, reaches_out.risk) == ("read", "moderate")


def test_a_users_mapping_keeps_its_class_but_annotations_still_raise_the_risk():
    config = server(tools={"sync": {"category": "read"}})
    kind = classify("sync", hints(read_only_hint=False, destructive_hint=True), config)
    assert kind.category == "read"
    assert (kind.risk, kind.reversibility) == ("dangerous", "irreversible")


def test_annotations_of_the_wrong_type_are_ignored():
    odd = SimpleNamespace(read_only_hint="yes", destructive_hint=1, open_world_hint=None)
    assert classify("read_file", odd, server()) == classify("read_file", None, server())


# --- what the server says, bounded ------------------------------------------------------------


def test_a_description_is_printable_and_capped():
    text = clean_text("Reads\x1b[31m a file\x00 \u202e" + "x" * 5000)
    assert "\x1b" not in text
    assert "\x00" not in text
    assert "\u202e" not in text
    assert len(text) <= 1024
    assert text.endswith("…")
    assert clean_text(None) == ""


def test_a_schema_loses_the_servers_regular_expressions():
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(x+)+$": {"type": "string"}},
        "required": ["path"],
    }
    cleaned = checked_schema(schema)
    assert cleaned == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }


def test_a_schema_without_type_or_properties_is_an_object_schema():
    assert checked_schema({}) == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ("not a schema", "not a JSON object"),
        ({"type": "string"}, "does not describe an object"),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}},
            "refers",
        ),
        ({"type": "object", "properties": {"a": {"type": 5}}}, "invalid"),
        ({"type": "object", "description": "x" * 40000}, "bytes"),
    ],
)
def test_a_schema_that_cannot_be_used_is_refused_with_why(schema, words):
    with pytest.raises(SchemaRejected, match=words):
        checked_schema(schema)


def test_a_deeply_nested_schema_is_refused():
    node: dict[str, Any] = {"type": "object"}
    for _ in range(40):
        node = {"type": "object", "properties": {"a": node}}
    with pytest.raises(SchemaRejected, match="nested"):
        checked_schema(node)


def test_a_local_reference_stays_and_an_id_is_dropped():
    schema = {
        "$id": "https://evil.example/base",
        "type": "object",
        "$defs": {"p": {"type": "string"}},
        "properties": {"path": {"$ref": "#/$defs/p"}},
    }
    cleaned = checked_schema(schema)
    assert "$id" not in cleaned
    assert cleaned["properties"]["path"] == {"$ref": "#/$defs/p"}


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:3000/mcp",
        "http://127.8.9.10/mcp",
        "http://[::1]:3000/mcp",
        "http://localhost:3000/mcp",
        "https://LOCALHOST/mcp",
    ],
)
def test_a_loopback_url_is_accepted(url):
    assert loopback_url(url) == url
    assert McpServerConfig(url=url).transport == "http"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://example.com/mcp", "on this computer"),
        ("http://10.0.0.2/mcp", "on this computer"),
        ("http://127.0.0.1.evil.example/mcp", "on this computer"),
        ("ftp://127.0.0.1/mcp", "http"),
        ("http://me:secret@127.0.0.1/mcp", "password"),
        ("http://127.0.0.1:notaport/", "not a URL"),
    ],
)
def test_a_url_elsewhere_is_refused_with_why(url, words):
    with pytest.raises(ValidationError, match=words):
        McpServerConfig(url=url)


def test_a_server_is_a_command_or_a_url_not_both_nor_neither():
    with pytest.raises(ValidationError, match="either"):
        McpServerConfig(command="x", url="http://127.0.0.1/mcp")
    with pytest.raises(ValidationError, match="either"):
        McpServerConfig()


def test_the_shape_pasted_from_other_mcp_clients_is_accepted():
    pasted = {
        "servers": {
            "notes": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"],
                "env": {},
            }
        }
    }
    config = McpSettings.model_validate(pasted).servers["notes"]
    assert config.describe() == "npx -y @modelcontextprotocol/server-filesystem /home/me/notes"


@pytest.mark.parametrize(
    "bad",
    [
        {"command": "x", "alwaysAllow": ["read_file"]},
        {"command": "x", "env": {"A=B": "c"}},
        {"command": "x", "args": ["a\0b"]},
        {"command": "x", "allow_tools": ["a"], "deny_tools": ["a"]},
        {"command": "x", "default_category": "admin"},
        {"command": "x", "timeout_s": 0},
    ],
)
def test_a_bad_server_setting_is_an_error_naming_it(bad):
    with pytest.raises(ValidationError):
        McpServerConfig.model_validate(bad)


def test_allow_and_deny_lists_decide_what_is_offered():
    config = server(allow_tools=["read_file", "list_directory"])
    assert config.offers("read_file") == (True, "")
    assert config.offers("write_file")[0] is False
    denied = server(deny_tools=["write_file"])
    assert denied.offers("write_file") == (False, "denied in this server's settings")


# --- scopes ---------------------------------------------------------------------------------


def test_an_mcp_grant_covers_its_tool_or_every_tool_of_its_server():
    cap = Capability.MCP_READ
    target = "mcp:notes__read_file"
    assert covers_one(cap, "mcp:notes__read_file", target, resolve_scope=False)
    assert covers_one(cap, "mcp:notes__*", target, resolve_scope=False)
    assert not covers_one(cap, "mcp:notes__list_directory", target, resolve_scope=False)
    assert not covers_one(cap, "mcp:note__*", target, resolve_scope=False)
    assert not covers_one(cap, "mcp:other__*", target, resolve_scope=False)
    assert not covers_one(cap, "*", target, resolve_scope=False)
    assert not covers_one(cap, "mcp:*", target, resolve_scope=False)
    assert describe_scope(cap, "mcp:notes__read_file") == "the tool read_file of MCP server 'notes'"
    assert "every tool of MCP server 'notes'" in describe_scope(cap, "mcp:notes__*")
