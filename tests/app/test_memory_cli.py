"""Memory end to end: the real CLI in a subprocess, a real (encrypted unless said otherwise)
SQLite file under a fake home, and a real OpenAI-protocol server on 127.0.0.1 where a model is
needed. What these tests check is what the user would see, or what we promise about their data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import ask_json, audit_events, make_user, run_cli
from tests.support.openai_server import Text

PLAINTEXT = {"CHAMBERLAIN_MEMORY__ENCRYPTION": "off"}


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user(tmp_path / "user")


def every_byte_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def memory_list(user: Path, *extra: str, env=None) -> list[dict]:
    proc = run_cli(user, "memory", "list", "--json", *extra, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --- the "done when" -------------------------------------------------------------------


def test_remember_then_recall_without_a_model(user):
    proc, turn = ask_json(user, "remember that my dog is called Rex", "--llm", "none")
    assert proc.returncode == 0, proc.stderr
    [event] = turn["memory"]
    assert event["status"] == "active"
    assert event["sensitivity"] == "low"
    assert "Remembered" in turn["reply"]
    assert f"chamberlain memory forget {event['fact_id']}" in turn["reply"]

    later = run_cli(user, "ask", "what is my dog called?", "--llm", "none")
    assert later.returncode == 0, later.stderr
    assert "Rex" in later.stdout


def test_ask_prints_what_was_remembered_with_the_command_that_undoes_it(user):
    proc = run_cli(user, "ask", "remember that my dog is called Rex", "--llm", "none")
    assert proc.returncode == 0, proc.stderr
    [fact] = memory_list(user)
    assert proc.stdout == (
        f'Remembered: "my dog is called Rex" (undo: `chamberlain memory forget {fact["id"]}`).\n'
    )


def test_remember_then_the_model_is_given_the_fact(user, scripted_server):
    run_cli(user, "ask", "remember that my dog is called Rex", "--llm", "none")
    server = scripted_server([Text("Your dog is called Rex.")])
    _proc, turn = ask_json(user, "what is my dog called?", "--llm", server.base_url, "--no-refine")
    assert turn["reply"] == "Your dog is called Rex."
    system = server.requests[0]["messages"][0]["content"]
    assert "my dog is called Rex" in system
    events = json.loads(run_cli(user, "memory", "events", "--json").stdout)
    assert "USED" in {e["kind"] for e in events}


def test_secret_fact_waits_for_approval_and_is_not_recalled_until_then(user):
    proc, turn = ask_json(user, "remember that I have diabetes", "--llm", "none")
    assert proc.returncode == 0, proc.stderr
    [event] = turn["memory"]
    assert (event["status"], event["sensitivity"]) == ("pending", "secret")
    assert "approve" in turn["reply"]

    before = run_cli(user, "ask", "do you remember my diabetes?", "--llm", "none")
    assert "I have diabetes" not in before.stdout

    pending = json.loads(run_cli(user, "memory", "pending", "--json").stdout)
    assert [f["id"] for f in pending] == [event["fact_id"]]
    assert run_cli(user, "memory", "approve", event["fact_id"]).returncode == 0

    after = run_cli(user, "ask", "do you remember my diabetes?", "--llm", "none")
    assert "I have diabetes" in after.stdout


def test_password_is_refused_and_appears_nowhere_under_home(user):
    proc = run_cli(user, "ask", "remember my password is hunter2", "--llm", "none", env=PLAINTEXT)
    assert "never stores" in proc.stdout
    assert memory_list(user, env=PLAINTEXT) == []
    assert b"hunter2" not in every_byte_under(user / ".chamberlain")


def test_forget_removes_the_text_from_the_database_file(user):
    run_cli(user, "ask", "remember that my dog is called Zorblax", "--llm", "none", env=PLAINTEXT)
    run_cli(user, "ask", "remember that my cat is called Quimby", "--llm", "none", env=PLAINTEXT)
    facts = {f["text"]: f["id"] for f in memory_list(user, env=PLAINTEXT)}
    db = user / ".chamberlain" / "memory.db"
    assert b"Zorblax" in db.read_bytes()

    forgotten = run_cli(user, "memory", "forget", facts["my dog is called Zorblax"], env=PLAINTEXT)
    assert forgotten.returncode == 0, forgotten.stderr
    assert forgotten.stdout.startswith("Forgot 1 fact; its text is gone.")
    assert b"Zorblax" not in every_byte_under(user / ".chamberlain")
    assert b"Quimby" in db.read_bytes()


# --- encryption and keys ------------------------------------------------------------------------


def test_encrypted_store_holds_no_plaintext_and_needs_the_passphrase(user):
    run_cli(user, "ask", "remember that my dog is called Zorblax", "--llm", "none")
    assert b"Zorblax" not in every_byte_under(user / ".chamberlain")
    db = user / ".chamberlain" / "memory.db"
    before = db.read_bytes()

    wrong = run_cli(user, "memory", "list", env={"CHAMBERLAIN_MEMORY_PASSPHRASE": "nope"})
    assert wrong.returncode == 1
    assert "Traceback" not in wrong.stderr
    assert "key" in wrong.stderr or "passphrase" in wrong.stderr
    assert db.read_bytes() == before


def test_no_keyring_and_no_passphrase_says_what_to_do(user):
    env = {"CHAMBERLAIN_MEMORY_PASSPHRASE": ""}
    proc = run_cli(user, "ask", "remember that my dog is called Rex", "--llm", "none", env=env)
    assert proc.returncode == 1
    assert "CHAMBERLAIN_MEMORY_PASSPHRASE" in proc.stdout + proc.stderr
    # The command line's words for it, the same sentence since before the broker stopped
    # writing them (the app words the same failure its own way).
    listed = run_cli(user, "memory", "list", env=env)
    assert listed.stderr == (
        "chamberlain: memory is encrypted and there is no system keyring here: give a passphrase "
        "in CHAMBERLAIN_MEMORY_PASSPHRASE, or run in a terminal to type one, or start a system "
        "keyring (GNOME Keyring, KWallet or KeePassXC's Secret Service)\n"
    )
    # Other requests still work without memory.
    listing = run_cli(
        user,
        "ask",
        "list files in ~/Documents",
        "--llm",
        "none",
        "--approve",
        "file_read=once",
        env=env,
    )
    assert listing.returncode == 0
    assert "plan.txt" in listing.stdout


# --- supersede, pause, temporary, anchors ----------------------------------------------------


def test_a_new_value_for_a_single_valued_slot_supersedes_the_old(user):
    run_cli(user, "memory", "add", "I live in Leeds")
    run_cli(user, "memory", "add", "I live in York")
    active = memory_list(user)
    assert [f["text"] for f in active] == ["I live in York"]
    history = memory_list(user, "--all")
    old = next(f for f in history if f["text"] == "I live in Leeds")
    assert old["status"] == "superseded"


def test_paused_memory_remembers_nothing(user):
    env = {"CHAMBERLAIN_MEMORY__PAUSED": "true"}
    proc = run_cli(user, "ask", "remember that my dog is called Rex", "--llm", "none", env=env)
    assert "paused" in proc.stdout
    assert memory_list(user) == []


def test_temporary_chat_recalls_nothing_but_keeps_anchors(user, scripted_server):
    run_cli(user, "memory", "add", "my dog is called Rex")
    run_cli(user, "memory", "anchors", "add", "Always answer in French.")
    server = scripted_server([Text("Je ne sais pas."), Text("Il s'appelle Rex.")])
    run_cli(
        user,
        "ask",
        "what is my dog called?",
        "--llm",
        server.base_url,
        "--no-refine",
        "--temporary",
    )
    system = server.requests[0]["messages"][0]["content"]
    assert "Always answer in French." in system
    assert "Rex" not in system
    run_cli(user, "ask", "what is my dog called?", "--llm", server.base_url, "--no-refine")
    assert "Rex" in server.requests[1]["messages"][0]["content"]


# --- model proposals ------------------------------------------------------------------------------


def _proposals(facts: list[dict]):
    def turn(request: dict):
        if "response_format" in request:
            return Text(json.dumps({"facts": facts}))
        return Text("Noted, sounds lovely.")

    return turn


def test_model_proposals_need_evidence_from_the_users_words(user, scripted_server):
    server = scripted_server(
        [
            _proposals(
                [
                    {
                        "text": "my sister lives in Oslo",
                        "evidence": "my sister lives in Oslo",
                        "category": "person",
                        "sensitivity": "low",
                    },
                    {
                        "text": "likes green tea",
                        "evidence": "I love green tea",
                        "category": "preference",
                        "sensitivity": "low",
                    },
                    {
                        "text": "owns a yacht",
                        "evidence": "I own a yacht",
                        "category": "general",
                        "sensitivity": "low",
                    },
                ]
            )
        ]
    )
    proc, turn = ask_json(
        user,
        "I love green tea, and my sister lives in Oslo",
        "--llm",
        server.base_url,
        "--no-refine",
        env={"CHAMBERLAIN_MEMORY__EXTRACT": "true"},
    )
    assert proc.returncode == 0, proc.stderr
    texts = {e["text"]: e for e in turn["memory"]}
    assert "owns a yacht" not in texts  # its evidence is not in the message
    assert texts["likes green tea"]["status"] == "active"
    # A relationship is personal whatever the model said: it waits for approval.
    assert texts["my sister lives in Oslo"]["status"] == "pending"
    drops = [
        e
        for e in audit_events(user)
        if e["event"] == "MEMORY_WRITE" and e["data"].get("action") == "dropped"
    ]
    assert len(drops) == 1


def test_the_audit_log_never_holds_a_facts_text(user):
    run_cli(user, "ask", "remember that my dog is called Zorblax", "--llm", "none")
    run_cli(user, "ask", "what is my dog called?", "--llm", "none")
    log = (user / ".chamberlain" / "audit.jsonl").read_text()
    assert "Zorblax" not in log
    assert "MEMORY_WRITE" in log
    assert "MEMORY_RECALL" in log
    assert run_cli(user, "audit", "verify").returncode == 0


# --- export and import ---------------------------------------------------------------------------


def test_export_then_import_arrives_pending(user, tmp_path):
    run_cli(user, "memory", "add", "my dog is called Rex")
    out = tmp_path / "export.json"
    assert run_cli(user, "memory", "export", "-o", str(out)).returncode == 0
    data = json.loads(out.read_text())
    assert data["schema_version"] == 1
    assert run_cli(user, "memory", "forget", "--all", "--yes").returncode == 0
    assert memory_list(user) == []
    imported = run_cli(user, "memory", "import", str(out))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("Imported 1 fact, waiting for approval")
    [fact] = memory_list(user)
    assert fact["status"] == "pending"
    assert fact["text"] == "my dog is called Rex"


def test_forgetting_two_facts_says_two_facts(user):
    run_cli(user, "memory", "add", "my dog is called Rex")
    run_cli(user, "memory", "add", "my cat is called Quimby")
    proc = run_cli(user, "memory", "forget", "--all", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Forgot 2 facts; their text is gone.")


def test_import_of_garbage_is_a_clear_error(user, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"facts": "nope"}')
    proc = run_cli(user, "memory", "import", str(bad))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert memory_list(user) == []


def test_import_of_a_deeply_nested_file_is_a_clear_error_naming_it(user, tmp_path):
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000)
    proc = run_cli(user, "memory", "import", str(bad))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr
    assert memory_list(user) == []


def test_a_huge_memory_add_is_refused_for_its_length_at_once(user):
    # As long as one argument may be (Linux caps a single argument at 128 KiB).
    proc = run_cli(user, "memory", "add", "x" * 120_000)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "characters" in proc.stderr
    assert memory_list(user) == []


def test_memory_list_says_when_it_shows_only_the_newest(user, tmp_path):
    added = run_cli(user, "memory", "add", "the garden shed is green")
    assert added.returncode == 0, added.stderr
    export = tmp_path / "one.json"
    done = run_cli(user, "memory", "export", "--output", str(export))
    if done.returncode != 0:
        done = run_cli(user, "memory", "export")
        export.write_text(done.stdout)
    data = json.loads(export.read_text())
    (template,) = data["facts"]
    data["facts"] = [
        {**template, "id": f"{template['id'][:-4]}{i:04d}", "text": f"the shed has {i} pots"}
        for i in range(1005)
    ]
    export.write_text(json.dumps(data))
    imported = run_cli(user, "memory", "import", str(export))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("Imported 1005 facts, each waiting for approval")
    proc = run_cli(user, "memory", "list", "--status", "pending")
    assert proc.returncode == 0, proc.stderr
    assert "… and 5 more (showing the newest 1000 of 1005)" in proc.stdout
