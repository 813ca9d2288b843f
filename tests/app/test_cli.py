"""End to end: the real `chamberlain` CLI in a subprocess, a real home dir, real files, and a
real HTTP server on 127.0.0.1 speaking the OpenAI protocol and playing scripted model turns.

Nothing is mocked: what these tests see is what a user running the command would see.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import PASSPHRASE, ask_json, audit_events, make_user, run_cli
from tests.support.openai_server import Raw, Text, ToolCalls


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


# --- the "done when" -------------------------------------------------------------------


def test_list_documents_with_a_once_grant_lists_them(user):
    proc = run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none"
    )
    assert proc.returncode == 0, proc.stderr
    assert "plan.txt" in proc.stdout
    assert "budget.csv" in proc.stdout


def test_without_approval_it_is_denied_with_a_clear_message(user):
    proc = run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    assert proc.returncode == 1
    assert "plan.txt" not in proc.stdout
    # The reply says in words what was not done and why; no tool or capability id in it.
    assert proc.stdout.startswith(
        f"I did not list a folder: permission to read files ({user / 'Documents'}) was not "
        "granted: there was no one here to ask."
    )
    assert "file_list" not in proc.stdout
    assert "file_read" not in proc.stdout
    # How to allow it is the CLI's own wording, beside the broker's reply (never inside it):
    # the flag's value is the capability's id, the sentence says the action.
    assert "--approve" not in proc.stdout
    assert proc.stderr.startswith(
        "To let Chamberlain read files from the command line, re-run with --approve file_read=once"
    )
    # The audit keeps the ids.
    denied = [e for e in audit_events(user) if e["event"] == "PERMISSION_DENIED"]
    assert [(e["data"]["tool"], e["data"]["capability"]) for e in denied] == [
        ("file_list", "file_read")
    ]


def test_a_refusal_is_said_once_not_twice(user):
    proc = run_cli(user, "ask", "run `ls; rm -rf ~`", "--llm", "none")
    assert proc.returncode == 1
    assert "refused: refused" not in proc.stdout
    assert "`;` runs a second command" in proc.stdout


def test_audit_verify_passes_then_fails_after_any_single_byte_changes(user):
    run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none"
    )
    run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    ok = run_cli(user, "audit", "verify")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    log = user / ".chamberlain" / "audit.jsonl"
    original = log.read_bytes()
    for position in (0, len(original) // 3, len(original) // 2, len(original) - 2):
        data = bytearray(original)
        data[position] = ord("X") if data[position] != ord("X") else ord("Y")
        log.write_bytes(bytes(data))
        bad = run_cli(user, "audit", "verify", "--json")
        assert bad.returncode == 1, f"byte {position} changed and verify still passed"
        assert json.loads(bad.stdout)["first_bad_line"] >= 1
    log.write_bytes(original)
    assert run_cli(user, "audit", "verify").returncode == 0


def test_the_audit_log_holds_no_file_contents(user):
    run_cli(
        user, "ask", "read ~/Documents/plan.txt", "--approve", "file_read=once", "--llm", "none"
    )
    text = (user / ".chamberlain" / "audit.jsonl").read_text()
    assert "Buy milk" not in text
    assert "TOOL_CALL_END" in text


# --- the model's tool loop against a scripted server ------------------------------------------


@pytest.mark.parametrize("stream", ["true", "false"])
def test_model_reads_a_file_under_a_grant_and_answers(user, scripted_server, stream):
    server = scripted_server(
        [
            ToolCalls([("file_read", {"path": "~/Documents/plan.txt"})]),
            Text("Your plan: buy milk, then call the bank."),
        ]
    )
    proc, turn = ask_json(
        user,
        "summarise my plan in ~/Documents",
        "--llm",
        server.base_url,
        "--approve",
        "file_read=once",
        "--no-refine",
        env={"CHAMBERLAIN_LLM__STREAM": stream},
    )
    assert proc.returncode == 0, proc.stderr
    assert turn["reply"] == "Your plan: buy milk, then call the bank."
    assert [c["status"] for c in turn["tool_calls"]] == ["ok"]
    call = turn["tool_calls"][0]
    assert call["capability"] == "file_read"
    assert call["token_id"]
    # The file's text went to the model as the tool result, and nowhere else.
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "Buy milk" in tool_message["content"]
    assert server.requests[0]["stream"] is (stream == "true")


def test_model_sees_only_the_tools_policy_allows(user, scripted_server):
    server = scripted_server([Text("Here is what I found.")])
    run_cli(
        user, "ask", "search my Documents for invoices", "--llm", server.base_url, "--no-refine"
    )
    sent = sorted(t["function"]["name"] for t in server.requests[0]["tools"])
    assert sent == ["file_list", "file_read", "file_search", "open_path"]


def test_chat_sends_no_tools_at_all(user, scripted_server):
    server = scripted_server([Text("Why did the scarecrow win an award?")])
    proc, turn = ask_json(user, "tell me a joke", "--llm", server.base_url, "--no-refine")
    assert proc.returncode == 0
    assert "tools" not in server.requests[0]
    assert turn["tool_calls"] == []


def test_forbidden_and_invented_tools_are_refused_and_the_turn_still_answers(user, scripted_server):
    server = scripted_server(
        [
            ToolCalls([("system_info", {}), ("delete_everything", {"path": "/"})]),
            Text("I can't do that here."),
        ]
    )
    proc, turn = ask_json(
        user,
        "search my Documents for invoices",
        "--llm",
        server.base_url,
        "--approve-all",
        "once",
        "--no-refine",
    )
    assert proc.returncode == 0
    statuses = {c["tool"]: c["status"] for c in turn["tool_calls"]}
    assert statuses == {"system_info": "refused", "delete_everything": "refused"}
    assert turn["reply"] == "I can't do that here."
    # The refusal went back to the model as a tool error naming what it may use.
    errors = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(errors) == 2
    assert all(e.startswith("error (refused): ") and "file_list" in e for e in errors), errors
    ends = [e for e in audit_events(user) if e["event"] == "TOOL_CALL_END"]
    assert {e["data"]["status"] for e in ends} == {"refused"}
    assert not [e for e in audit_events(user) if e["event"] == "TOOL_CALL_START"]


def test_broken_json_arguments_go_back_as_errors_and_are_bounded(user, scripted_server):
    server = scripted_server([ToolCalls([("file_read", '{"path": "~/Documents/pl')])])
    proc, turn = ask_json(
        user,
        "summarise my plan in ~/Documents",
        "--llm",
        server.base_url,
        "--approve",
        "file_read=once",
        "--no-refine",
    )
    assert proc.returncode == 0
    assert 1 <= len(turn["tool_calls"]) <= 3
    assert all(c["status"] == "error" for c in turn["tool_calls"])
    assert "not valid JSON" in turn["tool_calls"][0]["reason"]
    assert turn["reply"].startswith("I stopped")
    assert len(server.requests) == len(turn["tool_calls"])


def test_schema_violations_and_oversized_arguments_are_tool_errors(user, scripted_server):
    server = scripted_server(
        [
            ToolCalls([("file_read", {"path": 42})]),
            ToolCalls([("file_read", {"path": "x" * 40000})]),
            Text("Sorry."),
        ]
    )
    _proc, turn = ask_json(
        user,
        "read the notes in ~/Documents",
        "--llm",
        server.base_url,
        "--approve",
        "file_read=once",
        "--no-refine",
    )
    assert [c["status"] for c in turn["tool_calls"]] == ["error", "error"]
    assert "invalid arguments" in turn["tool_calls"][0]["reason"]
    assert "limit" in turn["tool_calls"][1]["reason"]
    assert turn["reply"] == "Sorry."


def test_a_looping_model_is_stopped_as_a_stall(user, scripted_server):
    server = scripted_server([ToolCalls([("file_list", {"path": "~/Documents"})])])
    proc, turn = ask_json(
        user,
        "look around my ~/Documents folder",
        "--llm",
        server.base_url,
        "--approve",
        "file_read=once",
        "--no-refine",
    )
    assert proc.returncode == 0
    assert len(turn["tool_calls"]) == 3
    assert "same tool call" in turn["reply"]
    assert turn["iterations"] == 3


def test_iteration_budget_ends_the_loop(user, scripted_server):
    def wander(request):
        step = len([m for m in request["messages"] if m["role"] == "tool"])
        return ToolCalls([("file_list", {"path": f"~/Documents/../Documents/{'.' * 0}{step}"})])

    home = user / ".chamberlain"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"executor": {"max_iterations": 2}}))
    server = scripted_server([wander])
    _proc, turn = ask_json(
        user,
        "look around my ~/Documents folder",
        "--llm",
        server.base_url,
        "--approve",
        "file_read=once",
        "--no-refine",
    )
    assert turn["iterations"] == 2
    assert "budget of 2 steps" in turn["reply"]


def test_model_asking_for_ssh_key_under_a_documents_grant_is_denied(user, scripted_server):
    server = scripted_server(
        [
            ToolCalls([("file_read", {"path": "~/Documents/../.ssh/id_rsa"})]),
            ToolCalls([("file_read", {"path": "~/.ssh/id_rsa"})]),
            Text("I wasn't allowed to read that."),
        ]
    )
    _proc, turn = ask_json(
        user,
        "summarise ~/Documents",
        "--llm",
        server.base_url,
        "--approve",
        "file_read=session",
        "--no-refine",
    )
    # Credentials are out of every tool's reach: refused before anyone is asked.
    assert [c["status"] for c in turn["tool_calls"]] == ["refused", "refused"]
    assert all("credentials" in c["reason"] for c in turn["tool_calls"])
    assert turn["reply"] == "I wasn't allowed to read that."
    sent = json.dumps(server.requests)
    assert "secretkey" not in sent
    asked = [e for e in audit_events(user) if e["event"] == "PERMISSION_CHECK"]
    assert not any(".ssh" in json.dumps(e["data"]) for e in asked)


def test_approve_with_a_scope_answers_prompts_inside_it(user, scripted_server):
    (user / "Projects").mkdir()
    (user / "Projects" / "todo.txt").write_text("ship it\n")
    server = scripted_server(
        [ToolCalls([("file_read", {"path": "~/Projects/todo.txt"})]), Text("done")]
    )
    _proc, turn = ask_json(
        user,
        "summarise ~/Documents",
        "--llm",
        server.base_url,
        "--approve",
        f"file_read=once:{user / 'Projects'}",
        "--no-refine",
    )
    assert [c["status"] for c in turn["tool_calls"]] == ["ok"]


def test_no_approval_scope_reaches_a_credential(user, scripted_server):
    server = scripted_server([ToolCalls([("file_read", {"path": "~/.ssh/id_rsa"})]), Text("done")])
    _proc, turn = ask_json(
        user,
        "summarise ~/Documents",
        "--llm",
        server.base_url,
        "--approve",
        f"file_read=once:{user / '.ssh'}",
        "--no-refine",
    )
    assert [c["status"] for c in turn["tool_calls"]] == ["refused"]


def test_model_server_errors_end_the_turn_with_a_clear_reply(user, scripted_server):
    server = scripted_server([Raw.error(500, "model crashed")])
    proc, turn = ask_json(user, "tell me a joke", "--llm", server.base_url, "--no-refine")
    assert proc.returncode == 1
    assert "500" in turn["reply"]


# --- direct actions and no model ---------------------------------------------------------------


def test_direct_action_is_phrased_by_the_model_in_one_call(user, scripted_server):
    server = scripted_server([Text("You have plenty of memory free.")])
    proc, turn = ask_json(
        user, "how much memory is free", "--llm", server.base_url, "--approve", "system_read=once"
    )
    assert proc.returncode == 0, proc.stderr
    assert turn["direct"] is True
    assert turn["reply"] == "You have plenty of memory free."
    assert len(server.requests) == 1
    assert "tools" not in server.requests[0]
    assert "available" in server.requests[0]["messages"][-1]["content"]


def test_direct_action_without_a_model_renders_the_result(user):
    proc, turn = ask_json(
        user, "how much memory is free", "--llm", "none", "--approve", "system_read=once"
    )
    assert proc.returncode == 0
    assert "Memory" in turn["reply"]


def test_chat_without_a_model_explains_how_to_connect_one(user):
    proc = run_cli(user, "ask", "tell me a joke", "--llm", "none")
    assert proc.returncode == 1
    assert "--llm URL" in proc.stdout


def test_unreachable_model_still_serves_direct_actions(user):
    proc = run_cli(
        user,
        "ask",
        "list files in ~/Documents",
        "--llm",
        "http://127.0.0.1:9/v1",
        "--approve",
        "file_read=once",
    )
    assert proc.returncode == 0
    assert "plan.txt" in proc.stdout


# --- route, policy, grants, doctor, usage --------------------------------------------------------


def test_route_json_has_the_contract_keys(user):
    proc = run_cli(user, "route", "remember that my dog is Rex", "--json")
    data = json.loads(proc.stdout)
    for key in ("intent", "confidence", "source", "risk_level", "arguments", "needs_memory_write"):
        assert key in data
    assert data["intent"] == "memory_write"


def test_route_json_says_what_decided_and_which_words_pushed_the_classifier(user):
    proc = run_cli(user, "route", "am i connected to the internet?", "--json")
    data = json.loads(proc.stdout)
    assert (data["intent"], data["source"]) == ("system_task", "classifier")
    explained = data["explanation"]
    assert explained["decided_by"] == "classifier"
    assert explained["how"] == "the classifier overruled the rules' reading"
    assert explained["rules"]["intent"] == "chat_only"  # the rules alone could not place it
    assert explained["classifier"]["intent"] == "system_task"
    features = [name for name, _ in explained["classifier"]["features"]]
    assert any("connected" in name for name in features)


def test_policy_json(user):
    data = json.loads(run_cli(user, "policy", "file_task", "--json").stdout)
    assert data["allowed_tools"] == ["file_list", "file_read", "file_search", "open_path"]
    assert "system_info" in data["forbidden_tools"]
    assert "system_execute" in data["forbidden_tools"]
    assert data["required_capabilities"] == ["file_read", "open_external"]


def test_always_grant_is_listed_and_revoked(user):
    run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=always", "--llm", "none"
    )
    listed = json.loads(run_cli(user, "grants", "list", "--json").stdout)
    assert [g["mode"] for g in listed] == ["always"]
    # The saved grant covers the next run with no flag at all.
    again = run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    assert again.returncode == 0
    assert "plan.txt" in again.stdout
    assert run_cli(user, "grants", "revoke-all").returncode == 0
    assert json.loads(run_cli(user, "grants", "list", "--json").stdout) == []
    denied = run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    assert denied.returncode == 1


def test_usage_errors_exit_2(user):
    assert run_cli(user, "ask", "hi", "--approve", "bogus=once").returncode == 2
    assert run_cli(user, "ask", "hi", "--approve", "file_read=forever").returncode == 2
    assert run_cli(user, "policy", "no_such_intent").returncode == 2
    assert run_cli(user, "frobnicate").returncode == 2


def test_doctor_reports_the_token_secret_fallback(user):
    proc = run_cli(user, "doctor", "--json", "--llm", "none")
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    assert "fallback" in checks["token secret"]["detail"]
    assert checks["policy self-test"]["ok"] is True
    assert proc.returncode == 0


def test_debug_routing_prints_each_stage(user):
    proc = run_cli(
        user,
        "ask",
        "list files in ~/Documents",
        "--llm",
        "none",
        "--debug-routing",
        "--approve",
        "file_read=once",
    )
    for stage in ("[router]", "[policy]", "[tool_call]"):
        assert stage in proc.stderr


def test_a_broken_settings_file_is_said_once_and_a_request_still_runs_on_the_defaults(user):
    home = user / ".chamberlain"
    home.mkdir()
    broken = '{\n  "llm": {"url": "none"\n'
    (home / "settings.json").write_text(broken)
    proc = run_cli(
        user, "ask", "list files in ~/Documents", "--llm", "none", "--approve", "file_read=once"
    )
    assert proc.returncode == 0, proc.stderr
    assert "plan.txt" in proc.stdout
    said = [line for line in proc.stderr.splitlines() if "settings.json" in line]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith(f"chamberlain: {home / 'settings.json'} line 3: not valid JSON (")
    assert said[0].endswith("; using the default settings until it is fixed or moved aside")
    assert "Traceback" not in proc.stderr
    assert (home / "settings.json").read_text() == broken
    assert not list(home.glob("settings.json.*"))


def test_a_wrong_setting_is_named_by_key_and_the_rest_of_the_file_still_counts(user):
    home = user / ".chamberlain"
    home.mkdir()
    (home / "settings.json").write_text(
        '{\n  "policy": {"deny": ["file_list", "file_search"]},\n'
        '  "router": {"confidence_threshold": "high"}\n}'
    )
    proc = run_cli(user, "policy", "file_task")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"chamberlain: {home / 'settings.json'} line 3: router.confidence_threshold: Input "
        "should be a valid number, unable to parse string as a number; using the default for "
        "router.confidence_threshold until it is fixed or moved aside"
    ]
    # The person's denial still holds: a broken neighbour never widens what is allowed.
    assert "file_list" in proc.stdout.split("forbidden:")[1].splitlines()[0]


def test_choosing_a_model_never_replaces_a_broken_settings_file(user):
    home = user / ".chamberlain"
    home.mkdir()
    (home / "settings.json").write_text("{ nope")
    proc = run_cli(user, "models", "use", "none")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"chamberlain: {home / 'settings.json'} line 1: not valid JSON (Expecting property name "
        "enclosed in double quotes); fix it or move it aside (Chamberlain then starts from its "
        "defaults)"
    ]
    assert (home / "settings.json").read_text() == "{ nope"
    assert not list(home.glob("settings.json.*"))


def test_remembering_needs_no_model_round_trip(user, scripted_server):
    server = scripted_server([Text("this should not be asked")])
    proc = run_cli(user, "ask", "remember that my dog is Rex", "--llm", server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "Remembered" in proc.stdout
    # Only the sensitivity label may be asked (JSON mode); never a chat reply.
    assert all("response_format" in r for r in server.requests)


def test_damaged_token_key_is_a_clear_error_and_is_kept(user):
    home = user / ".chamberlain"
    home.mkdir()
    (home / "token.key").write_text("not a key")
    proc = run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    assert proc.returncode == 1
    # The wording is broker/keys.py's (being reworded under issue 8): it names the file.
    assert "token.key" in proc.stderr
    assert "damaged" in proc.stderr or "cannot read" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (home / "token.key").read_text() == "not a key"


# --- commands (issue 4: "done when") -----------------------------------------------------


def test_a_command_chained_with_rm_is_refused_with_the_reason(user):
    proc = run_cli(user, "ask", "run ls; rm -rf ~", "--llm", "none", "--approve-all", "once")
    assert proc.returncode == 1
    assert "I did not run a command" in proc.stdout
    assert "`;`" in proc.stdout
    assert (user / "Documents" / "plan.txt").exists()


def test_df_asks_once_and_then_runs(user):
    denied = run_cli(user, "ask", "run `df -h`", "--llm", "none")
    assert denied.returncode == 1
    assert "read-only commands" in denied.stdout
    proc, turn = ask_json(user, "run `df -h`", "--llm", "none", "--approve", "system_execute=once")
    assert proc.returncode == 0, proc.stderr
    assert turn["tool_calls"][0]["status"] == "ok"
    assert "Filesystem" in turn["reply"]
    asks = [e for e in audit_events(user) if e["event"] == "PERMISSION_CHECK"]
    assert asks[-1]["data"]["outcome"] == "ask"
    assert asks[-1]["data"]["reversibility"] == "easy"


# --- the command line as a person meets it ----------------------------------------------------


def test_a_timed_grant_lasts_its_minutes_across_commands_and_is_listed_with_the_time_left(user):
    first = run_cli(
        user,
        "ask",
        "list files in ~/Documents",
        "--approve",
        "file_read=timed",
        "--timed-minutes",
        "10",
        "--llm",
        "none",
    )
    assert first.returncode == 0, first.stderr
    listed = run_cli(user, "grants", "list")
    assert "timed" in listed.stdout
    assert "9 min" in listed.stdout
    assert "left" in listed.stdout
    (grant,) = json.loads(run_cli(user, "grants", "list", "--json").stdout)
    assert 590 < grant["expires_at"] - grant["issued_at"] <= 600
    # A new process, no flag: the grant still covers it.
    again = run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    assert again.returncode == 0, again.stdout
    assert "plan.txt" in again.stdout
    saved = json.loads((user / ".chamberlain" / "grants.json").read_text())
    assert [e["mode"] for e in saved] == ["timed"]
    assert saved[0]["mac"]


def test_a_saved_timed_grant_whose_expiry_was_moved_is_not_honoured(user):
    run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=timed", "--llm", "none"
    )
    path = user / ".chamberlain" / "grants.json"
    saved = json.loads(path.read_text())
    saved[0]["expires_at"] += 365 * 86400
    path.write_text(json.dumps(saved))
    listed = run_cli(user, "grants", "list")
    assert "did not write" in listed.stderr
    denied = run_cli(user, "ask", "list files in ~/Documents", "--llm", "none")
    assert denied.returncode == 1


def test_a_timed_grant_that_ended_is_dropped_from_the_file_when_next_checked(tmp_path):
    """Time is moved by a ManualClock: two GrantStores on one file stand for two commands."""
    from broker.permissions import GrantStore
    from broker.types import Grant, GrantMode
    from core.clock import ManualClock
    from tools.manual import Capability

    clock, key, path = ManualClock(), b"k" * 32, tmp_path / "grants.json"
    timed = Grant(
        id="g-1",
        capability=Capability.FILE_READ,
        scope=str(tmp_path),
        mode=GrantMode.TIMED,
        issued_at=clock.now(),
        expires_at=clock.now() + 300,
    )
    GrantStore(path, clock, key=key).add(timed)
    later = GrantStore(path, clock, key=key)
    assert [g.id for g in later.live()] == ["g-1"]
    clock.advance(301)
    assert later.live() == []
    assert [g.id for g in later.pop_expired()] == ["g-1"]
    assert json.loads(path.read_text()) == []


def test_a_timed_grant_for_a_command_line_holding_a_password_is_never_saved(tmp_path):
    from broker.permissions import GrantStore
    from broker.types import Grant, GrantMode
    from core.clock import ManualClock
    from tools.manual import Capability

    clock, path = ManualClock(), tmp_path / "grants.json"
    store = GrantStore(path, clock, key=b"k" * 32)
    store.add(
        Grant(
            id="g-1",
            capability=Capability.SYSTEM_EXECUTE,
            scope=f"command:curl -u bob:hunter2 https://example.com\nin {tmp_path}",
            mode=GrantMode.TIMED,
            issued_at=clock.now(),
            expires_at=clock.now() + 300,
        )
    )
    assert [g.id for g in store.live()] == ["g-1"]
    assert "hunter2" not in (path.read_text() if path.exists() else "")


def test_revoke_all_counts_the_grants_it_ended_in_words(user):
    """It reads "Revoked 2 grants." (it read "Revoked 2 grant(s)."); one grant is "Revoked 1
    grant." in tests/app/test_terminal.py."""
    (user / "Downloads").mkdir()
    for folder in ("Documents", "Downloads"):
        asked = f"list files in ~/{folder}"
        proc = run_cli(user, "ask", asked, "--approve", "file_read=always", "--llm", "none")
        assert proc.returncode == 0, proc.stderr
    assert len(json.loads(run_cli(user, "grants", "list", "--json").stdout)) == 2
    proc = run_cli(user, "grants", "revoke-all", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Revoked 2 grants. ")


def test_grants_revoke_accepts_the_id_without_its_prefix(user):
    run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=always", "--llm", "none"
    )
    (grant,) = json.loads(run_cli(user, "grants", "list", "--json").stdout)
    bare = grant["id"].removeprefix("g-")
    revoked = run_cli(user, "grants", "revoke", bare)
    assert revoked.returncode == 0, revoked.stderr
    assert f"Revoked {grant['id']}." in revoked.stdout
    assert json.loads(run_cli(user, "grants", "list", "--json").stdout) == []


def test_usage_errors_name_what_is_missing_not_argparses_internal_names(user):
    grants = run_cli(user, "grants")
    assert grants.returncode == 2
    assert "grants_cmd" not in grants.stderr
    assert "list, revoke, revoke-all" in grants.stderr
    audit = run_cli(user, "audit")
    assert "audit_cmd" not in audit.stderr
    assert "tail, verify" in audit.stderr
    memory = run_cli(user, "memory")
    assert memory.returncode == 2
    assert "memory_cmd" not in memory.stderr


def test_audit_tail_shows_one_readable_line_per_stage_and_json_on_request(user):
    run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none"
    )
    events = audit_events(user)
    shown = run_cli(user, "audit", "tail", "-n", "50")
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert len(lines) == len(events)
    assert not any('{"' in line or '"}' in line for line in lines)  # no raw JSON, cut or whole
    summary = next(line for line in lines if "posthook_summary" in line)
    assert "file_task" in summary
    granted = next(line for line in lines if "permission_granted" in line)
    assert "once" in granted
    assert "file_read" in granted
    raw = json.loads(run_cli(user, "audit", "tail", "-n", "50", "--json").stdout)
    assert [e["event"] for e in raw] == [e["event"] for e in events]
    assert raw[-1]["data"] == events[-1]["data"]


# --- start-up and memory only when the turn needs it --------------------------------------------


def _remember_rex(user: Path) -> None:
    """An encrypted memory keyed by the passphrase in the environment, holding one fact."""
    proc = run_cli(user, "ask", "remember that my dog is called Rex", "--llm", "none")
    assert proc.returncode == 0, proc.stderr


def _modules_after(code: str, user: Path) -> list[str]:
    """Which of the heavy optional modules are loaded after running `code` in a fresh process."""
    import subprocess
    import sys

    from tests.support.cli import REPO

    probe = (
        f"{code}\nimport sys\n"
        "print(sorted(m for m in ('openai', 'sqlite_utils', 'numpy', 'keyring') "
        "if m in sys.modules))"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(user),
        "CHAMBERLAIN_HOME": str(user / ".chamberlain"),
        "CHAMBERLAIN_MEMORY__ENCRYPTION": "off",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=user, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_importing_the_cli_loads_no_model_sdk_and_no_sqlite_utils(user):
    assert _modules_after("import app.cli", user) == []


def test_a_direct_action_with_no_model_never_loads_the_model_sdk_sqlite_utils_or_keyring(user):
    """The start-up costs issue 8 measured: none of these is needed to run a direct action."""
    run = (
        "from app.cli import main\n"
        "assert main(['ask', 'how much memory is free', '--llm', 'none', '--approve-all', "
        "'once']) == 0"
    )
    assert _modules_after(run, user) == []


def test_listing_files_never_asks_for_the_memory_passphrase(user):
    # An encrypted memory exists, keyed by a passphrase, and none is given this time.
    _remember_rex(user)
    env = {"CHAMBERLAIN_MEMORY_PASSPHRASE": ""}
    proc = run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "plan.txt" in proc.stdout
    assert "passphrase" not in proc.stderr.lower()
    assert "memory" not in proc.stderr.lower()


def test_a_memory_question_without_the_passphrase_says_memory_was_not_opened(user):
    _remember_rex(user)
    env = {"CHAMBERLAIN_MEMORY_PASSPHRASE": ""}
    proc = run_cli(user, "ask", "what is my dog called?", "--llm", "none", env=env)
    assert proc.returncode == 1
    assert "Rex" not in proc.stdout
    assert "memory was not opened, so this request recalls and remembers nothing" in proc.stderr


# On a terminal (a pty, as a person runs it). The pty rig lives in test_terminal.py.
@pytest.fixture
def terminal():
    from tests.app.test_terminal import Terminal

    opened: list[Terminal] = []

    def start(user: Path, *args: str, env: dict[str, str | None] | None = None) -> Terminal:
        opened.append(Terminal(user, *args, env=env))
        return opened[-1]

    yield start
    for term in opened:
        term.close()


NO_PASSPHRASE: dict[str, str | None] = {"CHAMBERLAIN_MEMORY_PASSPHRASE": None}


def _answer(term: Any, prompt: str, text: str) -> str:
    """Wait for `prompt`, then type `text`; what the terminal showed up to the prompt.

    Each answer waits for its own prompt: getpass discards what was typed before it."""
    shown: str = term.read_until(prompt)
    term.screen = ""
    term.type(text + "\n")
    return shown


def test_in_a_terminal_listing_files_runs_without_a_passphrase_prompt(user, terminal):
    _remember_rex(user)
    term = terminal(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none",
        env=NO_PASSPHRASE,
    )  # fmt: skip
    code, screen, stdout = term.finish(timeout=20)
    assert code == 0, screen
    assert "plan.txt" in stdout
    assert "assphrase" not in screen


def test_a_new_memory_passphrase_is_typed_twice_after_a_warning_that_it_cannot_be_recovered(
    user, terminal
):
    term = terminal(
        user, "ask", "remember that my dog is called Rex", "--llm", "none", env=NO_PASSPHRASE
    )
    assert "cannot be recovered" in _answer(term, "New memory passphrase:", "first try")
    _answer(term, "Type it again to confirm:", "first tyr")  # a typo: nothing is created
    _answer(term, "The two did not match. New memory passphrase:", "hunter two")
    _answer(term, "Type it again to confirm:", "hunter two")
    code, screen, _stdout = term.finish()
    assert code == 0, screen
    listed = run_cli(user, "memory", "list", env={"CHAMBERLAIN_MEMORY_PASSPHRASE": "hunter two"})
    assert "my dog is called Rex" in listed.stdout, listed.stderr


def test_a_mistyped_passphrase_is_asked_again_and_the_last_refusal_says_what_it_did(user, terminal):
    _remember_rex(user)
    term = terminal(user, "ask", "what is my dog called?", "--llm", "none", env=NO_PASSPHRASE)
    _answer(term, "Memory passphrase:", "not it")
    again = _answer(term, "Memory passphrase:", PASSPHRASE)
    assert "That passphrase did not open the memory (nothing was changed); try again" in again
    code, screen, stdout = term.finish()
    assert code == 0, screen
    assert "Rex" in stdout

    term = terminal(user, "ask", "what is my dog called?", "--llm", "none", env=NO_PASSPHRASE)
    for _ in range(3):
        _answer(term, "Memory passphrase:", "still not it")
    code, screen, stdout = term.finish()
    assert code == 1
    assert "Rex" not in stdout
    assert "nothing was recalled or remembered this time; the file was not changed" in screen


def test_doctor_in_a_terminal_does_not_say_to_run_in_a_terminal(user, terminal):
    _remember_rex(user)
    term = terminal(user, "doctor", "--llm", "none", env=NO_PASSPHRASE)
    _code, screen, stdout = term.finish()
    (line,) = [line for line in stdout.splitlines() if "] memory:" in line]
    assert "run in a terminal" not in line
    assert "doctor does not ask for" in line
    assert "assphrase:" not in screen  # and it never prompts


def test_doctor_names_a_broken_settings_file_and_checks_the_rest_with_the_settings_in_use(user):
    home = user / ".chamberlain"
    home.mkdir()
    (home / "settings.json").write_text(
        '{"memory": {"encryption": "off"}, "executor": {"max_iterations": 0}}'
    )
    proc = run_cli(user, "doctor", "--llm", "none", "--json")
    checks = {check["name"]: check for check in json.loads(proc.stdout)}
    assert not checks["settings"]["ok"]
    assert "line 1: executor.max_iterations: " in checks["settings"]["detail"]
    # Memory is checked as the app opens it: the file's own memory.encryption still counts.
    assert "NOT encrypted (memory.encryption = off)" in checks["memory"]["detail"]


# --- a model server that fails mid-way ---------------------------------------------------------


def test_a_reply_cut_mid_body_is_said_to_be_cut_not_that_no_model_answers(user, scripted_server):
    from tests.support.openai_server import Cut

    server = scripted_server([Cut(Text("Why did the chicken " * 20), at_byte=60)])

    proc = run_cli(user, "ask", "tell me a joke", "--llm", server.base_url, "--no-refine")

    assert proc.returncode == 1
    said = proc.stdout + proc.stderr
    assert "closed the connection in the middle of its reply" in said
    assert "No model answers" not in said
    assert "start a local" not in said.lower()
    assert "Traceback" not in said


def test_a_server_trickling_its_whole_answer_fails_the_turn_soon_after_the_limit(
    user, scripted_server
):
    """One byte every 0.2 s, headers included: no gap between bytes ever trips a read timeout,
    and the answer would take over a minute. With llm.timeout_s 2, the turn ends a little
    after 2 s from its first model call (bounded generously here; bench/model_deadline.py
    measures it)."""
    import time

    from tests.support.openai_server import Trickle

    server = scripted_server([Trickle(Text("a slow joke " * 20), interval=0.2, whole=True)])

    proc = run_cli(
        user,
        "ask",
        "tell me a joke",
        "--llm",
        server.base_url,
        "--model",
        "scripted-model",
        env={"CHAMBERLAIN_LLM__TIMEOUT_S": "2"},
    )
    ended = time.monotonic()

    assert proc.returncode == 1, proc.stderr
    assert "did not answer within 2 s, the limit for one model call" in proc.stdout
    first_call = next(hit.at for hit in server.hits if hit.path.endswith("/chat/completions"))
    assert ended - first_call < 3 * 2
    assert len(server.requests) == 1, "a model that failed in a turn is not asked again in it"
