"""The benchmarks run end to end and report the figures docs/BENCHMARKS.md is built from.

Tiny sizes, real parts (real sessions, real audit files in tmp dirs). No timing is asserted:
on a shared machine that would only flake. What is asserted is the report's shape, that every
turn shape really ran its tools, and that the schema figures are the bytes the executor sends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import pipeline_overhead, schema_tokens
from bench.pipeline_overhead import Shape, make_data, open_session
from broker.types import GrantMode
from tests.support.scripted_model import ScriptedModel, calls_tool

SHAPES = {
    "chat": [],
    "direct_list_once": ["file_list"],
    "direct_list_session": ["file_list"],
    "loop_file_read": ["file_read"],
    "direct_system_info": ["system_info"],
}
SUMMARY_KEYS = {"p50", "p99", "mean", "max"}


def _json_output(capsys: pytest.CaptureFixture[str], main: Any, argv: list[str]) -> Any:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_pipeline_overhead_reports_every_shape_and_stage(tmp_path, capsys):
    argv = ["--turns", "3", "--warmup", "1", "--json", "--dir", str(tmp_path)]
    report = _json_output(capsys, pipeline_overhead.main, argv)

    assert set(report["machine"]) >= {"uname", "cpu", "nproc", "ram", "python", "date"}
    assert report["targets_ms"] == {"p50": 1.0, "p99": 5.0}
    assert set(report["shapes"]) == set(SHAPES)
    for name, shape in report["shapes"].items():
        assert shape["turns"] == 3
        assert shape["tool_calls"] == SHAPES[name], name
        parts = ("audit_ms", "authorize_ms", "runner_ms")
        for key in ("overhead_ms", "total_ms", "tool_ms", "model_ms", *parts):
            assert set(shape[key]) == SUMMARY_KEYS, (name, key)
        assert shape["overhead_ms"]["p50"] > 0
        assert shape["audit_ms"]["p50"] > 0
        assert shape["total_ms"]["p50"] >= shape["overhead_ms"]["p50"]
        assert shape["audit_lines_per_turn"] > 0
        assert shape["model_calls_per_turn"] >= 1
        if SHAPES[name]:
            assert shape["tool_ms"]["p50"] > 0, name
            assert shape["authorize_ms"]["p50"] > 0, name
            assert shape["runner_ms"]["p50"] > shape["authorize_ms"]["p50"], name
        else:
            assert shape["runner_ms"]["max"] == 0
    # A once grant is asked for on every turn; a session grant only the first time (warm-up).
    assert report["shapes"]["direct_list_once"]["prompts_per_turn"] == 1
    assert report["shapes"]["direct_list_session"]["prompts_per_turn"] == 0
    assert set(report["stages"]) >= {
        "router_heuristics",
        "policy_decide",
        "audit_append_router_output",
        "permission_authorize_live_grant",
    }
    for stage in report["stages"].values():
        assert stage["p50"] > 0
    # Everything was written inside the temporary directory, which is gone again.
    assert list(tmp_path.iterdir()) == []


def test_pipeline_overhead_text_report_and_aging(tmp_path, capsys):
    assert pipeline_overhead.main(["--turns", "2", "--warmup", "0", "--dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "targets: overhead p50 <= 1 ms, p99 <= 5 ms" in text
    assert "loop_file_read" in text

    aging = _json_output(
        capsys, pipeline_overhead.main, ["--aging", "3", "--json", "--dir", str(tmp_path)]
    )
    assert set(aging) == {"direct_list_once", "direct_list_session"}
    # Revoked once-grants are dropped, so a long session does not pile them up; the session
    # shape keeps its one grant.
    assert aging["direct_list_once"][-1]["grants_held"] == 0
    assert aging["direct_list_session"][-1]["grants_held"] == 1


def test_pipeline_overhead_profile_names_the_pipeline(tmp_path, capsys):
    argv = ["--profile", "chat", "--turns", "2", "--warmup", "0", "--dir", str(tmp_path)]
    assert pipeline_overhead.main(argv) == 0
    assert "session.py" in capsys.readouterr().out


def test_schema_tokens_reports_every_intent(capsys):
    report = _json_output(capsys, schema_tokens.main, ["--json"])

    assert report["chars_per_token"] == 4
    assert set(report["intents"]) == {
        "chat_only", "lookup_search", "browse_once", "one_shot_discovery", "screen_observe",
        "file_task", "system_task", "memory_read", "memory_write",
    }  # fmt: skip
    everything = report["intents"]["chat_only"]["all_registered"]
    assert everything["tools"] == len(report["registered_tools"])
    assert everything["bytes"] > 0
    assert everything["tokens_est"] > 0
    for row in report["intents"].values():
        assert row["all_registered"] == everything
        assert 0 <= row["gated"]["bytes"] <= everything["bytes"]
        assert 0.0 <= row["ratio_bytes"] <= 1.0
        assert row["projected_allowed"] <= row["projected_all"]
    assert report["intents"]["chat_only"]["gated"]["tools"] == 0
    assert report["intents"]["file_task"]["allowed_tools"] == [
        "file_list", "file_read", "file_search", "open_path",
    ]  # fmt: skip


def test_schema_figures_are_what_the_executor_sends(tmp_path: Path):
    """The gated figure for file_task is the byte size of the tools a real loop turn sends."""
    data = tmp_path / "data"
    make_data(data)
    model = ScriptedModel(calls_tool("file_read", {"path": str(data / "notes.txt")}, then="done."))
    shape = Shape("loop", f"summarise the notes file in {data}", model, GrantMode.SESSION, "")
    session = open_session(tmp_path / "home", shape, [0])
    turn = session.ask(shape.text)
    session.audit.close()

    assert turn.router.intent.value == "file_task"
    assert [c.tool for c in turn.tool_calls] == ["file_read"]
    sent = [request.tools for request in model.requests]
    assert len(sent) == 2
    assert sent[0] == sent[1]
    expected = schema_tokens.measure()["intents"]["file_task"]["gated"]
    assert len(schema_tokens.wire_json(sent[0] or []).encode()) == expected["bytes"]


def test_the_follow_up_bench_reads_a_listing_as_a_file_tool_gives_it() -> None:
    # A size column after a name is the tool's, not part of the name; spaces in a name stay.
    from bench.router_followups import listed_in

    reply = (
        "3 found:\n"
        "1. /data/seq/old/2022_pilot/L001_R1.fastq.gz  6.1G\n"
        "2. ~/Library/Caches/com.example.Resolve 21.4 GB\n"
        "3. ~/Music/Low Tide (radio edit).wav (4 MB)\n"
        "4. ~/Documents/Taxes 2025/return.pdf"
    )
    assert listed_in(reply) == (
        "/data/seq/old/2022_pilot/L001_R1.fastq.gz",
        "~/Library/Caches/com.example.Resolve",
        "~/Music/Low Tide (radio edit).wav",
        "~/Documents/Taxes 2025/return.pdf",
    )
