"""Tool profiles: each resolver step alone, the order they run in, and the bundled profiles.

Most tests use a small set of hand-built manuals (a few per category, one MCP tool) so each step's
effect is visible on its own; the bundled profiles are checked against the real builtin registry's
manuals and the real policy table. Nothing here runs a tool: profiles read manuals only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from broker.policy import load_policy_table
from broker.profiles import (
    Profile,
    ProfileError,
    ProfileOverrides,
    ProfileTable,
    Resolved,
    load_profiles,
    resolve,
)
from tools.manual import Capability, ToolManual
from tools.mcp.config import CATEGORY_ORDER
from tools.registry import builtin_registry


def manual(name: str, category: str, capability: Capability, **extra: object) -> ToolManual:
    return ToolManual.model_validate(
        {
            "name": name,
            "description": f"the {name} tool",
            "parameters": {"type": "object", "properties": {}},
            "capability": capability,
            "category": category,
            **extra,
        }
    )


TOOLS = [
    manual("file_list", "files", Capability.FILE_READ),
    manual("file_read", "files", Capability.FILE_READ),
    manual("web_fetch", "web", Capability.WEB_ACCESS),
    manual("web_search", "web", Capability.WEB_ACCESS),
    manual("system_info", "system", Capability.SYSTEM_READ),
    manual("system_execute", "system", Capability.SYSTEM_EXECUTE, mutating=True),
    manual("screen_capture", "screen", Capability.SCREEN_READ),
    manual("notes__search", "read", Capability.FILE_READ, source="mcp", server="notes"),
]
NAMES = {m.name for m in TOOLS}


def table(*profiles: Profile) -> ProfileTable:
    return ProfileTable(profiles=profiles)


def profile(categories: set[str], **fields: object) -> Profile:
    return Profile.model_validate(
        {"name": "p", "description": "a test profile", "categories": categories, **fields}
    )


def run(p: Profile, overrides: ProfileOverrides | None = None) -> Resolved:
    return resolve(p.name, table(p), TOOLS, overrides)


def assert_every_tool_accounted_for(result: Resolved) -> None:
    """Each installed tool is either offered or dropped with a reason, never both."""
    assert set(result.tools) | set(result.dropped) == NAMES
    assert not set(result.tools) & set(result.dropped)


# --- each step on its own --------------------------------------------------------------------


def test_a_profile_keeps_only_the_tools_in_its_categories():
    result = run(profile({"files", "read"}))
    assert result.tools == ("file_list", "file_read", "notes__search")
    assert result.dropped["web_fetch"].startswith("(a)")
    assert "'web'" in result.dropped["web_fetch"]
    assert result.unknown == ()
    assert_every_tool_accounted_for(result)


def test_a_profile_deny_removes_a_tool_its_categories_kept():
    result = run(profile({"system"}, deny={"system_execute"}))
    assert result.tools == ("system_info",)
    assert result.dropped["system_execute"] == "(b) denied by profile 'p'"
    assert_every_tool_accounted_for(result)


def test_a_required_tool_outside_the_profiles_categories_comes_back():
    result = run(profile({"files"}, require={"system_info"}))
    assert result.tools == ("file_list", "file_read", "system_info")
    assert "system_execute" in result.dropped  # its category mate stays out
    assert any(step.startswith("(c) system_info") for step in result.steps)
    assert_every_tool_accounted_for(result)


def test_the_users_added_category_brings_its_tools_in():
    result = run(profile({"files"}), ProfileOverrides(add_categories={"web"}))
    assert result.tools == ("file_list", "file_read", "web_fetch", "web_search")
    assert_every_tool_accounted_for(result)


def test_the_users_removed_category_takes_its_tools_out():
    result = run(profile({"files", "web"}), ProfileOverrides(remove_categories={"web"}))
    assert result.tools == ("file_list", "file_read")
    assert result.dropped["web_search"] == "(d) your settings remove category 'web'"
    assert_every_tool_accounted_for(result)


def test_the_users_added_tool_is_offered_outside_the_profiles_categories():
    result = run(profile({"files"}), ProfileOverrides(add_tools={"screen_capture"}))
    assert result.tools == ("file_list", "file_read", "screen_capture")
    assert_every_tool_accounted_for(result)


def test_the_users_denied_tool_is_not_offered():
    result = run(profile({"files"}), ProfileOverrides(deny_tools={"file_read"}))
    assert result.tools == ("file_list",)
    assert result.dropped["file_read"] == "(d) denied by your settings"
    assert_every_tool_accounted_for(result)


def test_max_tools_keeps_the_required_tools_first_then_the_rest_by_name():
    p = profile({"files", "web"}, require={"web_search", "screen_capture"}, max_tools=3)
    result = run(p)
    # Required: screen_capture, web_search; then by name: file_list (file_read, web_fetch drop).
    assert result.tools == ("file_list", "screen_capture", "web_search")
    assert result.dropped["file_read"].startswith("(max)")
    assert result.dropped["web_fetch"].startswith("(max)")
    assert_every_tool_accounted_for(result)


def test_max_tools_keeps_the_tools_the_user_added_by_name_before_the_rest():
    p = profile({"files"}, max_tools=2)
    result = run(p, ProfileOverrides(add_tools={"web_search"}))
    assert result.tools == ("file_list", "web_search")
    assert result.dropped["file_read"].startswith("(max)")


def test_max_tools_drops_nothing_when_the_tools_fit():
    result = run(profile({"files"}, max_tools=2))
    assert result.tools == ("file_list", "file_read")
    assert not any(reason.startswith("(max)") for reason in result.dropped.values())


# --- the order of the steps ------------------------------------------------------------------


def test_a_user_deny_beats_a_profile_require():
    p = profile({"files"}, require={"system_info"})
    result = run(p, ProfileOverrides(deny_tools={"system_info"}))
    assert "system_info" not in result.tools
    assert result.dropped["system_info"] == "(d) denied by your settings"


def test_a_user_deny_beats_a_category_the_user_added():
    result = run(
        profile({"files"}),
        ProfileOverrides(add_categories={"web"}, deny_tools={"web_fetch"}),
    )
    assert result.tools == ("file_list", "file_read", "web_search")


def test_a_user_add_tools_brings_back_a_tool_the_profile_denied():
    """The user's explicit choice by name beats the bundled profile (the gate still decides)."""
    p = profile({"system"}, deny={"system_execute"})
    result = run(p, ProfileOverrides(add_tools={"system_execute"}))
    assert "system_execute" in result.tools


def test_a_user_added_category_does_not_bring_back_a_tool_the_profile_denied():
    """A category is broad: only naming the tool overrides the profile's deny."""
    p = profile({"files"}, deny={"web_fetch"})
    result = run(p, ProfileOverrides(add_categories={"web"}))
    assert result.tools == ("file_list", "file_read", "web_search")
    assert result.dropped["web_fetch"].startswith("(b) denied by profile 'p'")


def test_a_user_removed_category_keeps_the_tools_the_profile_requires():
    p = profile({"files", "system"}, require={"system_info"})
    result = run(p, ProfileOverrides(remove_categories={"system"}))
    assert result.tools == ("file_list", "file_read", "system_info")
    assert result.dropped["system_execute"].startswith("(d)")


def test_a_user_added_tool_survives_the_user_removing_its_category():
    result = run(
        profile({"files", "web"}),
        ProfileOverrides(remove_categories={"web"}, add_tools={"web_search"}),
    )
    assert result.tools == ("file_list", "file_read", "web_search")


def test_a_profile_may_not_both_deny_and_require_a_tool():
    with pytest.raises(ValidationError, match="both denied and required: file_read"):
        profile({"files"}, deny={"file_read"}, require={"file_read"})


# --- unknown names ---------------------------------------------------------------------------


def test_names_that_match_no_installed_tool_are_reported_not_refused():
    p = profile({"files"}, deny={"gone_tool"}, require={"offline__search"})
    overrides = ProfileOverrides(add_tools={"other__tool"}, deny_tools={"never_built"})
    result = run(p, overrides)
    assert result.unknown == ("gone_tool", "never_built", "offline__search", "other__tool")
    assert result.tools == ("file_list", "file_read")
    assert_every_tool_accounted_for(result)


def test_an_unknown_profile_name_is_refused_with_the_known_names():
    t = table(profile({"files"}), Profile(name="other", description="", categories=frozenset()))
    with pytest.raises(ProfileError, match=r"no profile named 'nope'; known profiles: other, p"):
        resolve("nope", t, TOOLS, None)


def test_tools_given_as_a_mapping_resolve_like_a_list():
    p = profile({"files", "read"}, deny={"file_read"})
    assert resolve("p", table(p), {m.name: m for m in TOOLS}, None) == run(p)


def test_a_mapping_that_lists_a_tool_under_another_name_is_refused():
    with pytest.raises(ValueError, match="listed under the name 'alias'"):
        resolve("p", table(profile({"files"})), {"alias": TOOLS[0]}, None)


# --- validation of profiles and overrides ----------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"name": "Read-Only"}, "name"),
        ({"categories": {"Files"}}, "categories"),
        ({"deny": {"x"}}, "deny"),  # too short for a tool name
        ({"require": {"file_read", "file_list"}, "max_tools": 1}, "requires 2 tools but allows"),
        ({"max_tools": 0}, "max_tools"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_malformed_profile_is_refused(fields, problem):
    good = {"name": "p", "description": "", "categories": {"files"}}
    with pytest.raises(ValidationError, match=problem):
        Profile.model_validate({**good, **fields})


def test_overrides_come_from_settings_lists_and_accept_mcp_names():
    overrides = ProfileOverrides.model_validate(
        {"add_tools": ["notes__search", "notes__search"], "remove_categories": ["screen"]}
    )
    assert overrides.add_tools == frozenset({"notes__search"})
    assert overrides.remove_categories == frozenset({"screen"})


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"add_tools": ["file_read"], "deny_tools": ["file_read"]}, "both added and denied"),
        ({"add_categories": ["web"], "remove_categories": ["web"]}, "both added and removed"),
        ({"add_tools": ["File_Read"]}, "add_tools"),
        ({"deny_tools": ["rm -rf"]}, "deny_tools"),
        ({"add_tool": ["file_read"]}, "add_tool"),
    ],
)
def test_malformed_overrides_are_refused(raw, problem):
    with pytest.raises(ValidationError, match=problem):
        ProfileOverrides.model_validate(raw)


def test_profiles_and_overrides_cannot_be_changed_after_validation():
    with pytest.raises(ValidationError):
        profile({"files"}).max_tools = 3  # type: ignore[misc]


# --- the bundled profiles --------------------------------------------------------------------

DEFAULT_PROFILES = ("everything", "offline", "quiet", "read_only")


@pytest.fixture(scope="module")
def builtin() -> list[ToolManual]:
    return builtin_registry().manuals()


def test_the_bundled_profiles_load():
    assert load_profiles().names() == DEFAULT_PROFILES


def test_the_bundled_profiles_name_only_real_tools_and_real_categories(builtin):
    """A typo in profiles.toml would silently deny or require nothing: every name must be a
    builtin tool, or one the policy table already names (file_write: planned, not built), and
    every category a builtin one or an MCP tool's class."""
    known_tools = {m.name for m in builtin} | load_policy_table().named_tools()
    assert {m.category for m in builtin} == {"files", "web", "system", "screen"}
    categories = {m.category for m in builtin} | set(CATEGORY_ORDER)
    for p in load_profiles().profiles:
        assert p.categories <= categories, p.name
        assert p.deny | p.require <= known_tools, p.name


@pytest.mark.parametrize("name", DEFAULT_PROFILES)
def test_no_bundled_profile_resolves_to_a_tool_every_intent_forbids(name, builtin):
    policy = load_policy_table()
    forbidden_everywhere = set.intersection(*(set(e.forbidden) for e in policy.intents.values()))
    result = resolve(name, load_profiles(), builtin, None)
    assert not set(result.tools) & forbidden_everywhere
    assert set(result.tools) | set(result.dropped) == {m.name for m in builtin}


def test_the_bundled_profiles_do_what_their_names_say(builtin):
    profiles = load_profiles()
    by_name = {m.name: m for m in builtin}

    def offered(name: str) -> list[ToolManual]:
        return [by_name[t] for t in resolve(name, profiles, builtin, None).tools]

    assert {m.name for m in offered("everything")} == set(by_name)
    assert offered("offline")
    assert all(m.capability is not Capability.WEB_ACCESS for m in offered("offline"))
    assert offered("quiet")
    assert all(m.capability is not Capability.SCREEN_READ for m in offered("quiet"))
    read_only = offered("read_only")
    assert {m.category for m in read_only} == {"files", "system", "screen"}
    assert all(not m.mutating for m in read_only)
    assert all(m.capability is not Capability.OPEN_EXTERNAL for m in read_only)
    assert "system_execute" not in {m.name for m in read_only}


# --- bad profile files -----------------------------------------------------------------------

GOOD = """
version = 1
[[profiles]]
name = "a"
description = "one"
categories = ["files"]
"""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("version = 1\n[[profiles]\nname = 'a'\n", "is not valid TOML"),
        (GOOD + "colour = 'red'\n", r"profiles\[0\]\.colour: unknown key"),
        (GOOD + "[extra]\n", "extra: unknown key"),
        (GOOD.replace('"a"', '"Bad Name"'), r"profiles\[0\]\.name: 'Bad Name' is not a name"),
        (GOOD + GOOD.replace("version = 1", ""), "profile names used more than once: a"),
        (GOOD + "deny = ['file_read']\nrequire = ['file_read']\n", "both denied and required"),
        (GOOD + "max_tools = 0\n", r"profiles\[0\]\.max_tools"),
        ("version = 1\nprofiles = []\n", "no profiles: at least one is needed"),
        (GOOD.replace("version = 1", "version = 2"), "version"),
    ],
)
def test_a_bad_profiles_file_is_refused_naming_the_file_and_the_problem(tmp_path, text, problem):
    path = tmp_path / "my_profiles.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError, match=problem) as raised:
        load_profiles(path)
    assert str(path) in str(raised.value)


def test_a_missing_profiles_file_is_refused_naming_it(tmp_path: Path):
    path = tmp_path / "absent.toml"
    with pytest.raises(ProfileError, match=r"cannot read .*absent\.toml"):
        load_profiles(path)


def test_a_good_profiles_file_loads(tmp_path: Path):
    path = tmp_path / "profiles.toml"
    path.write_text(GOOD, encoding="utf-8")
    assert load_profiles(path).get("a").categories == frozenset({"files"})
