"""tools/arguments.py: one pydantic model per tool is both the schema the model sees and the check.

The builtin tools are built for real (no display, no network, no command is run: arguments are
refused before any of that is reached).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationError

from tools.arguments import NOT_BLANK, ToolArguments, explain
from tools.files import FileListArguments
from tools.manual import (
    Capability,
    InvalidArguments,
    Prepared,
    Tool,
    ToolManual,
    ToolResult,
    typed_tool,
)
from tools.registry import ToolConfig, ToolRegistry, builtin_registry


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return builtin_registry(ToolConfig())


def _keys(node: object) -> set[str]:
    """Every schema keyword used anywhere in `node` (property names included)."""
    if isinstance(node, dict):
        return set(node).union(*(_keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_keys(v) for v in node))
    return set()


# --- the schema shown is generated from the model ---------------------------------------------


def test_every_builtin_tool_shows_the_schema_of_its_arguments_model(registry: ToolRegistry) -> None:
    for tool in registry:
        assert tool.arguments is not None, tool.name
        assert tool.manual.parameters == tool.arguments.parameters(), tool.name
        schema = tool.manual.parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        # pydantic's noise is gone: no titles, no "or null" for a field that may be left out.
        assert not {"title", "anyOf", "$defs"} & _keys(schema), tool.name


def _manual(parameters: dict[str, Any]) -> ToolManual:
    return ToolManual(
        name="probe",
        description="a probe",
        parameters=parameters,
        capability=Capability.FILE_READ,
        category="test",
    )


def _probe(model: type[ToolArguments]) -> Tool:
    return typed_tool(
        _manual(model.parameters()),
        model,
        prepare=lambda values: Prepared.of(values, (), "easy"),
        run=lambda values, _call: ToolResult(values.model_dump(), "ran"),
    )


class DeeperListArguments(FileListArguments):
    depth: int = Field(1, ge=1, le=3, description="How many folder levels to list.")


def test_a_field_added_to_the_model_shows_up_in_the_manual_the_model_is_shown() -> None:
    tool = _probe(DeeperListArguments)
    shown = tool.manual.openai_schema()["function"]["parameters"]
    assert shown["properties"]["depth"] == {
        "default": 1,
        "description": "How many folder levels to list.",
        "maximum": 3,
        "minimum": 1,
        "type": "integer",
    }
    assert shown["properties"]["path"] == FileListArguments.parameters()["properties"]["path"]
    assert tool.run({"path": "~", "depth": 2}).data["depth"] == 2


def test_a_manual_that_does_not_show_its_model_is_refused_when_the_tool_is_built() -> None:
    with pytest.raises(ValueError, match="does not show its arguments model"):
        typed_tool(
            _manual(FileListArguments.parameters()),  # the old fields, without depth
            DeeperListArguments,
            prepare=lambda values: Prepared.of(values, (), "easy"),
            run=lambda values, _call: ToolResult({}, ""),
        )


def test_an_optional_field_is_shown_as_its_type_and_null_still_means_not_given() -> None:
    class Search(ToolArguments):
        glob: Annotated[str, Field(min_length=1, max_length=9)] | None = Field(
            None, description="a name pattern"
        )

    assert Search.parameters()["properties"]["glob"] == {
        "description": "a name pattern",
        "maxLength": 9,
        "minLength": 1,
        "type": "string",
    }
    assert Search.read({"glob": None}).glob is None


def test_a_field_called_title_is_kept() -> None:
    class Titled(ToolArguments):
        title: str = Field(max_length=5)

    assert Titled.parameters()["properties"] == {"title": {"maxLength": 5, "type": "string"}}


# --- what the model sends is checked strictly ------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "file_list",
            {"path": "~", "max_entries": True},
            "max_entries: Input should be a valid integer",
        ),
        (
            "file_list",
            {"path": "~", "max_entries": "5"},
            "max_entries: Input should be a valid integer",
        ),
        (
            "file_list",
            {"path": "~", "max_entries": 5.0},
            "max_entries: Input should be a valid integer",
        ),
        (
            "file_list",
            {"path": "~", "show_hidden": 1},
            "show_hidden: Input should be a valid boolean",
        ),
        (
            "file_list",
            {"path": "~", "show_hidden": "true"},
            "show_hidden: Input should be a valid boolean",
        ),
        ("file_list", {"path": 7}, "path: Input should be a valid string"),
        (
            "file_list",
            {"path": "~", "recursive": True},
            "recursive: Extra inputs are not permitted",
        ),
        ("file_list", {}, "path: Field required"),
        ("file_list", {"path": "   "}, "path: Value error, must not be blank"),
        ("file_list", {"path": "~", "max_entries": 0}, "greater than or equal to 1"),
        ("file_list", {"path": "~", "max_entries": 5001}, "less than or equal to 5000"),
        ("file_read", {"path": "x" * 4097}, "path: String should have at most 4096 characters"),
        ("file_search", {"root": "~", "content": ""}, "content: String should have at least 1"),
        ("web_search", {"query": "q", "max_results": 21}, "max_results: Input should be less than"),
        ("web_fetch", {"url": ["https://a.org/"]}, "url: Input should be a valid string"),
        ("system_info", {"topics": ["cpu", "cpu"]}, "topics: Value error, must not repeat"),
        ("system_info", {"topics": ["gpu"]}, "topics.0: Input should be 'cpu'"),
        ("system_info", {"top_n": False}, "top_n: Input should be a valid integer"),
        ("screen_capture", {"monitor": 65}, "monitor: Input should be less than or equal to 64"),
        ("screen_capture", {"target": "everything"}, "target: Input should be 'all'"),
        ("get_active_window", {"which": "front"}, "which: Extra inputs are not permitted"),
        (
            "system_execute",
            {"command": "ls", "shell": True},
            "shell: Extra inputs are not permitted",
        ),
        ("system_execute", {"command": ["ls", "-l"]}, "command: Input should be a valid string"),
        (
            "open_url",
            {"url": "https://a.org/" + "x" * 2048},
            "url: String should have at most 2048",
        ),
    ],
)
def test_wrong_types_bounds_and_unknown_fields_are_refused_before_the_tool_looks(
    registry: ToolRegistry, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    found = registry.get(tool)
    assert found is not None
    for attempt in (found.prepare, found.run):
        with pytest.raises(InvalidArguments, match="^invalid arguments for " + tool) as caught:
            attempt(arguments)
        assert expected in str(caught.value)


def test_the_error_names_the_field_and_the_rule_never_the_rejected_value() -> None:
    value = "hunter2-" + "v" * 5000
    field = "k" * 5000
    with pytest.raises(ValidationError) as caught:
        FileListArguments.read({"path": value, "max_entries": "many", field: 1, "a": 1})
    text = explain(caught.value)
    assert "hunter2" not in text
    assert "many" not in text
    assert text.startswith("path: String should have at most 4096 characters; max_entries: ")
    assert text.endswith("(and 1 more)")
    # An unknown field's name is the model's own text: only its start is repeated.
    assert "k" * 80 + "…: Extra inputs are not permitted" in text
    assert "k" * 81 not in text
    assert len(text) <= 301  # capped (plus the ellipsis)


def test_valid_values_come_back_typed_with_their_defaults() -> None:
    values = FileListArguments.read({"path": "~/Documents"})
    assert (values.path, values.show_hidden, values.max_entries) == ("~/Documents", False, 500)
    with pytest.raises(ValidationError):
        values.path = "/"  # type: ignore[misc]  # frozen: nobody edits a checked call


def test_a_direct_call_is_validated_the_same_way_as_one_through_the_runner(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello")
    read = registry.get("file_read")
    assert read is not None
    prepared = read.prepare({"path": str(tmp_path / "a.txt")})
    assert prepared.values is not None
    assert prepared.arguments == {"path": str(tmp_path / "a.txt")}  # as given: no defaults added
    assert json.loads(json.dumps(read.execute(prepared).data))["content"] == "hello"


def test_not_blank_refuses_whitespace_only_text() -> None:
    class Named(ToolArguments):
        name: Annotated[str, NOT_BLANK]

    assert Named.read({"name": " a "}).name == " a "
    with pytest.raises(ValidationError, match="must not be blank"):
        Named.read({"name": "\t\n"})
