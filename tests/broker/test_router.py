"""The router: prefixes, heuristics and argument extraction, risk, and model refinement."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from broker.executor import direct_arguments
from broker.llm.base import ModelError, ModelUnavailable
from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.policy import decide, load_policy_table
from broker.router import (
    DIRECT_ACTION_CONFIDENCE,
    SCAN_LIMIT,
    refine_with_model,
    route,
    route_heuristic,
    route_rules,
    router_schema,
    understood_command,
)
from broker.session import Session, tool_config, user_scopes
from broker.settings import Settings
from broker.types import GrantMode, Intent, RouterOutput
from core.clock import ManualClock
from tests.broker.router_corpus import CORPUS, EXPECTED_ARGUMENTS, HOLDOUT, LONG_INPUTS
from tests.support.cli import ask_json, audit_events, run_cli
from tests.support.openai_server import Text
from tests.support.scripted_model import AsIs, ScriptedModel, by_kind, replies
from tools.manual import Capability

NEEDS = (
    "needs_web",
    "needs_search",
    "needs_memory_read",
    "needs_memory_write",
    "needs_file_access",
    "needs_screen_read",
    "needs_system_execute",
)


def _needs(out: RouterOutput) -> set[str]:
    return {name for name in NEEDS if getattr(out, name)}


def _accuracy(cases: list[tuple[str, Intent]]) -> tuple[float, dict[Intent, float]]:
    total: Counter[Intent] = Counter()
    right: Counter[Intent] = Counter()
    for text, expected in cases:
        total[expected] += 1
        if route(text).intent is expected:
            right[expected] += 1
    per_intent = {intent: right[intent] / total[intent] for intent in total}
    return sum(right.values()) / len(cases), per_intent


# --- the corpus ---------------------------------------------------------------------------------


def test_corpus_covers_every_intent_with_enough_phrasings() -> None:
    counts = Counter(intent for _, intent in CORPUS)
    assert len(CORPUS) >= 170
    assert set(counts) == set(Intent)
    assert min(counts.values()) >= 12, counts
    assert len({text for text, _ in CORPUS}) == len(CORPUS), "duplicate utterances"
    assert not {text for text, _ in CORPUS} & {text for text, _ in HOLDOUT}


def test_corpus_accuracy() -> None:
    # Measured: 263/265 = 99.2% overall, lowest intent one_shot_discovery 20/22 = 90.9%.
    # The corpus was written alongside the heuristics, so this is an upper bound; see the
    # held-out figure below for text the router has not been tuned on.
    overall, per_intent = _accuracy(CORPUS)
    assert overall >= 0.97, overall
    worst = min(per_intent, key=per_intent.__getitem__)
    assert per_intent[worst] >= 0.88, (worst, per_intent[worst])


def test_holdout_accuracy_floor() -> None:
    """Text written after the heuristics were frozen. Measured 75.0% (48/64); floor 70%."""
    overall, _ = _accuracy(HOLDOUT)
    assert overall >= 0.70, overall


@pytest.mark.parametrize("text", sorted(EXPECTED_ARGUMENTS))
def test_expected_arguments(text: str) -> None:
    out = route(text)
    got = out.arguments.model_dump()
    got["risk_level"] = out.risk_level
    for key, value in EXPECTED_ARGUMENTS[text].items():
        assert got[key] == value, f"{key}: expected {value!r}, got {got[key]!r}"


ACTION_INTENT = {
    "list_files": Intent.FILE_TASK,
    "read_file": Intent.FILE_TASK,
    "search_files": Intent.FILE_TASK,
    "system_info": Intent.SYSTEM_TASK,
    "run_command": Intent.SYSTEM_TASK,
    "screenshot": Intent.SCREEN_OBSERVE,
    "active_window": Intent.SCREEN_OBSERVE,
    "fetch_url": Intent.BROWSE_ONCE,
    "open_url": Intent.BROWSE_ONCE,
    "web_search": Intent.LOOKUP_SEARCH,
}


@pytest.mark.parametrize(("text", "expected"), CORPUS)
def test_every_corpus_route_is_self_consistent(text: str, expected: Intent) -> None:
    """Whatever the intent, flags, action and confidence must agree with each other."""
    out = route(text)
    implied = {
        Intent.LOOKUP_SEARCH: {"needs_web", "needs_search"},
        Intent.BROWSE_ONCE: {"needs_web"},
        Intent.SCREEN_OBSERVE: {"needs_screen_read"},
        Intent.FILE_TASK: {"needs_file_access"},
        Intent.MEMORY_READ: {"needs_memory_read"},
        Intent.MEMORY_WRITE: {"needs_memory_write"},
    }.get(out.intent, set())
    assert implied <= _needs(out)
    assert 0.0 <= out.confidence <= 1.0
    assert out.source in ("heuristic", "classifier")
    if out.source == "classifier":  # the classifier never sets up a direct action
        assert out.confidence < DIRECT_ACTION_CONFIDENCE
        assert out.arguments.action is None
    if out.arguments.action is not None:
        assert out.confidence >= DIRECT_ACTION_CONFIDENCE
        assert out.intent is ACTION_INTENT[out.arguments.action]
    if out.arguments.action == "system_info":
        assert out.arguments.topics
        assert not out.needs_system_execute
    if out.arguments.command is not None:
        assert out.needs_system_execute
        assert out.risk_level in ("medium", "high")


# --- prefixes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "intent", "rest"),
    [
        ("/chat what is a file descriptor", Intent.CHAT_ONLY, "what is a file descriptor"),
        ("/search rm -rf tutorial", Intent.LOOKUP_SEARCH, "rm -rf tutorial"),
        ("/browse example.com/about", Intent.BROWSE_ONCE, "example.com/about"),
        ("/screen what's this?", Intent.SCREEN_OBSERVE, "what's this?"),
        ("/file ~/notes.txt", Intent.FILE_TASK, "~/notes.txt"),
        ("/run df -h", Intent.SYSTEM_TASK, "df -h"),
        ("/remember my dog is Rex", Intent.MEMORY_WRITE, "my dog is Rex"),
        ("/recall dog's name", Intent.MEMORY_READ, "dog's name"),
    ],
)
def test_prefix_decides_and_is_stripped(text: str, intent: Intent, rest: str) -> None:
    out = route(text)
    assert (out.intent, out.source, out.confidence, out.text) == (intent, "prefix", 1.0, rest)


def test_prefix_arguments_are_extracted_from_the_rest() -> None:
    assert route("/run df -h").arguments.command == "df -h"
    assert route("/run df -h").needs_system_execute
    assert route("/run rm -rf ~/build").risk_level == "high"
    assert route("/remember my dog is Rex").arguments.fact == "my dog is Rex"
    assert route("/search the PNG spec").arguments.query == "the PNG spec"
    assert route("/browse https://example.com").arguments.url == "https://example.com"
    listing = route("/file list ~/Downloads").arguments
    assert (listing.action, listing.paths) == ("list_files", ["~/Downloads"])


def test_prefix_needs_a_word_boundary_and_ignores_case_and_leading_space() -> None:
    assert route("/etc/hosts").source == "heuristic"
    assert route("/run/user/1000/bus what is this").source != "prefix"
    assert route("/chatty bot").source == "heuristic"
    assert route("  /RUN ls").intent is Intent.SYSTEM_TASK
    assert route("  /RUN ls").source == "prefix"
    assert route("/screen").intent is Intent.SCREEN_OBSERVE


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_empty_text_is_chat_with_full_confidence(text: str) -> None:
    out = route(text)
    assert (out.intent, out.confidence, out.text) == (Intent.CHAT_ONLY, 1.0, "")
    assert not _needs(out)


# --- confusable cases ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("remember when we had dial-up?", Intent.CHAT_ONLY),
        ("remember that my dog is Rex", Intent.MEMORY_WRITE),
        ("search for the PNG spec", Intent.LOOKUP_SEARCH),
        ("search my Documents for invoices", Intent.FILE_TASK),
        ("what's the weather", Intent.LOOKUP_SEARCH),
        ("tell me a joke", Intent.CHAT_ONLY),
        ("what is a file descriptor", Intent.CHAT_ONLY),
        ("run df -h", Intent.SYSTEM_TASK),
        ("what's on my screen", Intent.SCREEN_OBSERVE),
        ("what is my dog called?", Intent.MEMORY_READ),
        ("do you remember my wife's birthday?", Intent.MEMORY_READ),
        ("what do you know about me", Intent.MEMORY_READ),
        ("what's my CPU usage", Intent.SYSTEM_TASK),
        ("how do i check disk space on linux", Intent.CHAT_ONLY),
        ("what does `ls -la` do", Intent.CHAT_ONLY),
        ("run me through how DNS works", Intent.CHAT_ONLY),
        ("what's using all my disk space and is it safe to delete", Intent.ONE_SHOT_DISCOVERY),
        ("move all screenshots from my desktop to ~/Pictures/screens", Intent.FILE_TASK),
        ("read docs.rs/serde", Intent.BROWSE_ONCE),
        ("what's my ip address", Intent.SYSTEM_TASK),
    ],
)
def test_confusable_cases(text: str, intent: Intent) -> None:
    assert route(text).intent is intent


def test_run_df_h_extracts_the_command() -> None:
    out = route("run df -h")
    assert out.arguments.command == "df -h"
    assert out.needs_system_execute


# --- argument extraction ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ("read ~/notes.txt", ["~/notes.txt"]),
        ("show me /etc/hosts.", ["/etc/hosts"]),
        ("whats in ./notes.txt?", ["./notes.txt"]),
        ("open ../shared/plan.md", ["../shared/plan.md"]),
        ('open "~/My Documents/todo list.txt" please', ["~/My Documents/todo list.txt"]),
        ("read '/tmp/a b/c.log'", ["/tmp/a b/c.log"]),
        (r"show me C:\Users\anna\notes.txt", [r"C:\Users\anna\notes.txt"]),
        ('read "C:\\Program Files\\app\\log.txt"', ["C:\\Program Files\\app\\log.txt"]),
        ("list files in ~", ["~"]),
        ("copy ~/a.txt to ~/b/, thanks", ["~/a.txt", "~/b/"]),
        ("list my downloads", ["~/Downloads"]),
        ("what is 24/7 and/or I/O", []),
    ],
)
def test_paths_are_kept_as_written(text: str, paths: list[str]) -> None:
    assert route(text).arguments.paths == paths


def test_apostrophes_are_not_taken_for_quoted_paths() -> None:
    out = route("it's in ~/foo and that's it")
    assert out.arguments.paths == ["~/foo"]


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("run df -h", "df -h"),
        ("execute `ls -la /tmp`", "ls -la /tmp"),
        ("please run ping -c 4 google.com", "ping -c 4 google.com"),
        ("can you run uname -a for me?", "uname -a"),
        ("run the command `rm -rf ~/old_builds`", "rm -rf ~/old_builds"),
        ("`docker ps`", "docker ps"),
        ("run ls .", "ls ."),
        ("run a command: uptime", "uptime"),
        # Not the command "this: ipconfig /flushdns".
        ("run this: ipconfig /flushdns", "ipconfig /flushdns"),
        ("Run the following command: free -m", "free -m"),
    ],
)
def test_command_extraction(text: str, command: str) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.arguments.command == command
    assert out.arguments.url is None  # a host inside a command is not a page to browse


@pytest.mark.parametrize(
    "text",
    [
        "execute the backup script",
        "run a command that checks how fast this computer hashes data",
        "run a speed test",
        "could you run an overnight backup",
        # A line after a colon in a sentence about running or typing it: to run, though not
        # as it stands, and its switches are not files ("/r", "/flushdns").
        "my son wrote this down for me to run if the internet goes funny: ipconfig /flushdns",
        "He says to type this to restart properly but I would rather you did it: shutdown /r /t 0",
    ],
)
def test_run_without_a_spelled_out_command_still_needs_execution(text: str) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.arguments.command is None
    assert out.arguments.paths == []
    assert out.needs_system_execute
    assert out.confidence < DIRECT_ACTION_CONFIDENCE


@pytest.mark.parametrize("text", ["run a marathon", "run an errand for me", "run a bath"])
def test_run_with_nothing_a_computer_runs_is_no_command(text: str) -> None:
    out = route_rules(text)
    assert out.intent is not Intent.SYSTEM_TASK
    assert not out.needs_system_execute


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("open https://example.com/a?b=1.", "https://example.com/a?b=1"),
        ("can you go to python.org and check the latest version", "python.org"),
        ("read docs.rs/serde and tell me how to derive it", "docs.rs/serde"),
        ("load http://192.168.1.1:8080/status", "http://192.168.1.1:8080/status"),
    ],
)
def test_url_extraction(text: str, url: str) -> None:
    out = route(text)
    assert out.intent is Intent.BROWSE_ONCE
    assert out.arguments.url == url
    assert out.needs_web
    assert not out.needs_search


def test_file_names_are_not_urls() -> None:
    out = route("what does main.rs do in ./src")
    assert out.arguments.url is None


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("remember that my dog is Rex", "my dog is Rex"),
        ("please remember i'm allergic to peanuts.", "i'm allergic to peanuts"),
        ("my favorite color is green, remember that", "my favorite color is green"),
        ("keep in mind that I work from home on fridays", "I work from home on fridays"),
        ("save this: the gym locker code is 4512", "the gym locker code is 4512"),
        ("my son's name is Leo. remember it", "my son's name is Leo"),
    ],
)
def test_fact_extraction(text: str, fact: str) -> None:
    out = route(text)
    assert out.intent is Intent.MEMORY_WRITE
    assert out.arguments.fact == fact
    assert _needs(out) == {"needs_memory_write"}


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("commit my locker code 4471 to memory", "my locker code 4471"),
        ("kindly commit those dates to memory.", None),
        # A value said without "my", before "keep it" or "update it".
        (
            "jot down 10.20.4.31 = primary postgres node, pls keep it",
            "10.20.4.31 = primary postgres node",
        ),
        ("its 10.20.4.55 since the rewire, update it", "its 10.20.4.55 since the rewire"),
    ],
)
def test_commit_to_memory_keeps_a_fact(text: str, fact: str | None) -> None:
    out = route(text)
    assert (out.intent, out.arguments.fact) == (Intent.MEMORY_WRITE, fact)


@pytest.mark.parametrize("text", ["delete the file, keep it", "open the app, note that"])
def test_keep_it_after_an_instruction_is_no_fact(text: str) -> None:
    assert route(text).intent is not Intent.MEMORY_WRITE


@pytest.mark.parametrize(
    "text",
    [
        "nah. wat do u actually know about me anyway",
        "and other things you know of me, tell all",
        "anything more stored about me besides that",
        "when's the hearing for this case, i gave you a date",
        "is that our prod region? I think I saved it with you",
        "remind me which ward i said im on this month",
        "wats my fav band",
        "everything you've stored on me, list it please",
        "pull up everything ive given you re the colourist guy",
        "have i got a note with you about her press officer",
        "have i ever given you a sparky's contact? need one for flat 4",
        "list everything you're holding about my staff team",
    ],
)
def test_asking_what_was_told_before_reads_memory(text: str) -> None:
    assert route(text).intent is Intent.MEMORY_READ


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("ok different question, what app am i using rn", Intent.SCREEN_OBSERVE),
        ("another thing: whats the weather in oslo tomorrow", Intent.LOOKUP_SEARCH),
        ("stretch it out, eco mode on till I find a plug", Intent.SYSTEM_TASK),
        ("put airplane mode on", Intent.SYSTEM_TASK),
        ("what is eco mode on a dishwasher", Intent.CHAT_ONLY),
        ("make the screen brighter please, it's too dim", Intent.SYSTEM_TASK),
        ("change the power setting so it doesnt sleep", Intent.SYSTEM_TASK),
        ("how do you say 'price comparison' in portuguese?", Intent.CHAT_ONLY),
        ("haha pimenta is 'pepper' in english, did you know?", Intent.CHAT_ONLY),
        ("can u turn this into flashcards", Intent.CHAT_ONLY),
        ("did you know my birthday", Intent.MEMORY_READ),
        ("what is on my screen", Intent.SCREEN_OBSERVE),
        ("whats my mac's chip and how much unified memory does it have", Intent.SYSTEM_TASK),
        ("yep, fire that off in a terminal for me", Intent.SYSTEM_TASK),
        ("add that printer to this machine", Intent.SYSTEM_TASK),
        # No file named and no list tool: the list is one Chamberlain keeps.
        ("add milk to my list", Intent.MEMORY_WRITE),
        ("pls add eggs to my grocery list", Intent.FILE_TASK),
        ("silence discord", Intent.SYSTEM_TASK),
        ("what does mute mean", Intent.CHAT_ONLY),
        ("make Staffroom-HP the one word prints to by default", Intent.SYSTEM_TASK),
        ("go ahead and flip my laptop to that theme right now pls", Intent.SYSTEM_TASK),
        ("launch the kyocera portal in edge", Intent.BROWSE_ONCE),
        ("launch firefox", Intent.SYSTEM_TASK),
        ("grep that log for the first line with nan", Intent.FILE_TASK),
        ("tail the nginx error log", Intent.FILE_TASK),
        ("the file manager window thats open, how many photos are selected", Intent.SCREEN_OBSERVE),
    ],
)
def test_everyday_wording_routes_by_the_request(text: str, intent: Intent) -> None:
    assert route(text).intent is intent


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("find *.pdf in ~/Documents", "*.pdf"),
        ("find all PDF files in my Downloads folder", "*.pdf"),
        ("find pdfs in my downloads", "*.pdf"),
        (r"look for .docx files in C:\Users\anna\Documents", "*.docx"),
        ("search ~/code for files named config.yaml", "config.yaml"),
        ("find report*.xlsx in ~/work", "report*.xlsx"),
    ],
)
def test_pattern_extraction(text: str, pattern: str) -> None:
    out = route(text)
    assert out.intent is Intent.FILE_TASK
    assert out.arguments.pattern == pattern
    assert out.arguments.action == "search_files"
    assert pattern not in out.arguments.paths


@pytest.mark.parametrize(
    ("text", "topics"),
    [
        ("how much memory is free", ["memory"]),
        ("what's my CPU usage", ["cpu"]),
        ("disk space", ["disk"]),
        ("battery", ["battery"]),
        ("uptime", ["uptime"]),
        ("top processes", ["processes"]),
        ("how long has this machine been up", ["uptime"]),
        ("whats eating cpu right now", ["cpu", "processes"]),
        ("how much ram and disk do i have left", ["memory", "disk"]),
    ],
)
def test_system_info_topics(text: str, topics: list[str]) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.arguments.topics == topics
    assert out.arguments.action == "system_info"
    assert not out.needs_system_execute  # status reads run no command
    assert out.risk_level == "low"


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("list files in ~/Downloads", "list_files"),
        ("show me /etc/hosts", "read_file"),
        ("read ~/notes.txt", "read_file"),
        ("whats in my downloads folder", "list_files"),
        ("find *.pdf in ~/Documents", "search_files"),
        ("how much memory is free", "system_info"),
        # Not a direct action: a write, a folder to read from, a destructive verb, no path.
        ("rename a.txt to b.txt", None),
        ("read me the README in ./project", None),
        ("delete ~/notes.txt", None),
        ("show me the files in this folder", None),
        ("find my resume", None),
        ("how big is ~/Videos/holiday.mp4", None),
    ],
)
def test_direct_action_only_for_clear_requests(text: str, action: str | None) -> None:
    out = route(text)
    assert out.arguments.action == action
    if action is not None:
        assert out.confidence >= DIRECT_ACTION_CONFIDENCE


# --- risk and needs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "risk"),
    [
        ("tell me a joke", "low"),
        ("read ~/notes.txt", "low"),
        ("how much memory is free", "low"),
        ("what does rm -rf do", "low"),
        ("run df -h", "medium"),
        ("install htop", "medium"),
        ("move ~/a.txt to ~/b", "medium"),
        ("create a new file called ideas.md on my desktop", "medium"),
        ("run rm -rf ~/build", "high"),
        ("execute `sudo rm /etc/hosts`", "high"),
        ("delete ~/Downloads/old.iso", "high"),
        ("shut down the computer", "high"),
        ("kill the firefox process", "high"),
        ("run mkfs.ext4 /dev/sdb1", "high"),
        ("run format D:", "high"),
    ],
)
def test_risk_levels(text: str, risk: str) -> None:
    assert route(text).risk_level == risk


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        ("tell me a joke", set()),
        ("what's the weather", {"needs_web", "needs_search"}),
        ("open https://example.com", {"needs_web"}),
        ("what's on my screen", {"needs_screen_read"}),
        ("read ~/notes.txt", {"needs_file_access"}),
        ("run df -h", {"needs_system_execute"}),
        ("battery", set()),
        ("what is my dog called?", {"needs_memory_read"}),
        ("remember that my dog is Rex", {"needs_memory_write"}),
        ("investigate why my downloads folder is so huge", {"needs_file_access"}),
    ],
)
def test_needs_follow_the_intent(text: str, needs: set[str]) -> None:
    assert _needs(route(text)) == needs


# --- long and hostile input ---------------------------------------------------------------------


def test_long_input_is_routed_and_is_never_a_direct_request() -> None:
    """Timing-free on purpose: bench/router_accuracy.py times these inputs; a super-linear
    regex would hit the suite's timeout."""
    outs = [route(text) for text in LONG_INPUTS]
    for text, out in zip(LONG_INPUTS, outs, strict=True):
        assert len(text) > SCAN_LIMIT
        assert out.confidence <= 0.6
        assert out.arguments.action is None
        assert out.arguments.command is None  # never half a command
        assert out.arguments.fact is None
        assert out.text == text.strip()


def test_long_run_prefix_keeps_the_whole_command_and_is_high_risk() -> None:
    text = "/run echo " + "y" * 100_000
    out = route(text)
    assert out.arguments.command == text[len("/run ") :]
    assert out.risk_level == "high"  # too long to vet


def test_long_file_request_is_at_least_medium_risk() -> None:
    out = route("show me ~/notes.txt " + "and also " * 500 + "then delete it")
    assert out.intent is Intent.FILE_TASK
    assert out.risk_level == "medium"


# --- model refinement ---------------------------------------------------------------------------


def verdict_model(reply: object = None, error: Exception | None = None) -> ScriptedModel:
    """A model at the edge answering every routing request with `reply` (or raising `error`).

    A fake at the edge on purpose: the real HTTP model client is tested against a real
    OpenAI-protocol server in tests/broker/llm/; here only the router's handling of whatever
    comes back matters, including replies no well-behaved server would send (a reply that is
    not text is handed back as it is). The router must only use chat_json: a chat fails.
    """
    step = error if error is not None else reply if isinstance(reply, str) else AsIs(reply)
    return ScriptedModel(by_kind(json=replies(step)), name="fake")


def verdict(**overrides: Any) -> str:
    body: dict[str, Any] = {
        "intent": "lookup_search",
        "needs_web": True,
        "needs_search": True,
        "needs_memory_read": False,
        "needs_memory_write": False,
        "needs_file_access": False,
        "needs_screen_read": False,
        "needs_system_execute": False,
        "risk_level": "low",
        "confidence": 0.9,
    }
    body.update(overrides)
    return json.dumps(body)


def test_model_verdict_is_accepted_and_marked() -> None:
    model = verdict_model(verdict())
    out = route("any good hiking trails near seattle", model, refine=True)
    assert out.intent is Intent.LOOKUP_SEARCH
    assert (out.source, out.confidence) == ("model", 0.9)
    assert _needs(out) == {"needs_web", "needs_search"}
    assert out.text == "any good hiking trails near seattle"
    request = model.requests[0]
    assert request.schema_name == "router_output"
    assert request.schema == router_schema()
    assert request.last == {"role": "user", "content": "any good hiking trails near seattle"}


def test_schema_is_small_and_closed() -> None:
    schema = router_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])
    assert set(schema["properties"]["intent"]["enum"]) == {intent.value for intent in Intent}
    assert "arguments" not in schema["properties"]  # the model never supplies arguments


def test_accepted_verdict_has_at_least_the_flags_its_intent_implies() -> None:
    out = route(
        "hiking trails near seattle", verdict_model(verdict(needs_search=False)), refine=True
    )
    assert out.intent is Intent.LOOKUP_SEARCH
    assert out.needs_search


@pytest.mark.parametrize(
    "reply",
    [
        "not json at all",
        '{"intent": "lookup_search"',  # truncated
        "",
        "null",
        "[]",
        verdict()[:-1] + ', "arguments": {"command": "rm -rf /"}}',  # extra key
        verdict(intent="hack_the_planet"),  # unknown intent
        verdict(intent="LOOKUP_SEARCH"),
        verdict(risk_level="none"),
        verdict(needs_web="true"),  # no coercion of strings to booleans
        verdict(needs_web=1),
        verdict(confidence="0.9"),
        verdict(confidence=1.5),
        verdict(confidence=-0.1),
        verdict()[:-1].replace('"confidence": 0.9', '"confidence": NaN') + "}",
        json.dumps({"intent": "lookup_search", "confidence": 0.9}),  # missing fields
        verdict() + " " * 5000,  # oversize
    ],
)
def test_invalid_model_replies_fall_back_to_heuristics(reply: str) -> None:
    text = "any good hiking trails near seattle"
    base = route(text)
    assert route(text, verdict_model(reply), refine=True) == base


@pytest.mark.parametrize("reply", [None, 42, b'{"intent": "chat_only"}', {"intent": "chat_only"}])
def test_non_text_model_replies_fall_back(reply: object) -> None:
    text = "any good hiking trails near seattle"
    assert route(text, verdict_model(reply), refine=True) == route(text)


def test_fenced_json_is_accepted() -> None:
    out = route(
        "hiking trails near seattle", verdict_model(f"```json\n{verdict()}\n```"), refine=True
    )
    assert out.source == "model"


def test_low_confidence_verdict_falls_back() -> None:
    text = "any good hiking trails near seattle"
    model = verdict_model(verdict(confidence=0.4))
    assert route(text, model, refine=True, threshold=0.5) == route(text)
    accepted = route(text, verdict_model(verdict(confidence=0.4)), refine=True, threshold=0.3)
    assert accepted.source == "model"


@pytest.mark.parametrize(
    "error",
    [
        ModelError("bad status 500"),
        ModelUnavailable("nothing at 127.0.0.1:11434"),
        RuntimeError("a backend bug"),
    ],
)
def test_model_errors_fall_back(error: Exception) -> None:
    text = "any good hiking trails near seattle"
    assert route(text, verdict_model(error=error), refine=True) == route(text)


def test_model_cannot_lower_risk() -> None:
    text = "run rm -rf ~/build"
    base = route(text)
    assert base.risk_level == "high"
    model = verdict_model(
        verdict(intent="system_task", risk_level="low", needs_system_execute=True)
    )
    out = route(text, model, refine=True)
    assert out.source == "model"
    assert out.risk_level == "high"


def test_model_can_raise_risk() -> None:
    out = route(
        "tell me a joke",
        verdict_model(verdict(intent="chat_only", risk_level="medium")),
        refine=True,
    )
    assert (out.source, out.risk_level) == ("model", "medium")


def test_model_keeps_arguments_and_drops_action_when_intent_changes() -> None:
    text = "list files in ~/Downloads"
    base = route(text)
    assert base.arguments.action == "list_files"
    changed = route(text, verdict_model(verdict(intent="one_shot_discovery")), refine=True)
    assert changed.intent is Intent.ONE_SHOT_DISCOVERY
    assert changed.arguments.action is None
    assert changed.arguments.paths == ["~/Downloads"]
    same = route(
        text,
        verdict_model(verdict(intent="file_task", needs_web=False, needs_search=False)),
        refine=True,
    )
    assert same.arguments == base.arguments
    assert same.arguments.action == "list_files"


def test_prefix_never_consults_the_model() -> None:
    model = verdict_model(verdict(intent="chat_only"))
    out = route("/run df -h", model, refine=True)
    assert out.source == "prefix"
    assert model.requests == []
    base = route_heuristic("/run df -h")
    assert refine_with_model(base, "df -h", model, 0.0) is base
    assert model.requests == []


def test_model_is_consulted_only_when_asked() -> None:
    model = verdict_model(verdict())
    route("any good hiking trails near seattle", model)
    route("any good hiking trails near seattle", model, refine=False)
    route("   ", model, refine=True)
    assert model.requests == []
    assert route("do the thing", None, refine=True).source != "model"
    route("do the thing", model, refine=True)  # rules and classifier both unsure
    assert len(model.requests) == 1


def test_model_sees_only_a_capped_message() -> None:
    model = verdict_model(verdict())
    route("hiking " * 20_000, model, refine=True)
    messages = model.requests[0].messages
    assert len(messages[-1]["content"]) <= 2000


# --- refinement may not reach for what the message never asked for ---------------------------

# The tools the bundled policy table names, as installed: enough for `decide` to show which an
# intent would put in front of the model.
TOOLS = {
    "system_execute": Capability.SYSTEM_EXECUTE,
    "system_info": Capability.SYSTEM_READ,
    "file_list": Capability.FILE_READ,
    "file_read": Capability.FILE_READ,
    "screen_capture": Capability.SCREEN_READ,
    "web_search": Capability.WEB_ACCESS,
}


def only(intent: str, risk_level: str = "low", **flags: bool) -> str:
    """A verdict for `intent` with exactly the needs flags given."""
    needs: dict[str, Any] = dict.fromkeys(NEEDS, False)
    needs.update(flags)
    return verdict(intent=intent, risk_level=risk_level, **needs)


def shown_tools(out: RouterOutput) -> list[str]:
    return decide(out, load_policy_table(), TOOLS).allowed_tools


def test_the_model_cannot_turn_a_joke_into_a_system_task_with_a_command_tool() -> None:
    text = "tell me a joke about penguins"
    model = verdict_model(only("system_task", "medium", needs_system_execute=True))
    out = route(text, model, refine=True)
    assert len(model.requests) == 1
    assert out.intent is Intent.CHAT_ONLY
    assert not out.needs_system_execute
    assert "system_execute" not in shown_tools(out)
    assert out.risk_level == "medium"  # raising risk is still the model's to do


@pytest.mark.parametrize(
    "reply",
    [
        only("chat_only", needs_system_execute=True),
        only("file_task", needs_file_access=True),
        only("one_shot_discovery"),
        only("screen_observe", needs_screen_read=True),
        only("memory_write", needs_memory_write=True),
        only("lookup_search", needs_web=True, needs_file_access=True),
    ],
    ids=["execute-flag", "files", "discovery", "screen", "memory", "search-with-files"],
)
def test_the_model_cannot_add_what_runs_or_touches_things_to_a_message_with_no_sign_of_it(
    reply: str,
) -> None:
    text = "what do you think about penguins in winter"
    base = route(text)
    out = route(text, verdict_model(reply), refine=True)
    assert out == base
    assert shown_tools(out) == []


@pytest.mark.parametrize(
    "text",
    [
        "run the backup script",
        "could you maybe restart the audio service",
        "I need to run the tests in my project",
        "my laptop keeps freezing since the update",
        "how long since the last reboot, and what's been running",
    ],
)
def test_a_message_with_a_command_or_system_signal_still_refines_to_a_system_task(
    text: str,
) -> None:
    out = route(
        text, verdict_model(only("system_task", "medium", needs_system_execute=True)), refine=True
    )
    assert (out.source, out.intent) == ("model", Intent.SYSTEM_TASK)
    assert out.needs_system_execute
    assert "system_execute" in shown_tools(out)


@pytest.mark.parametrize(
    ("text", "reply", "intent"),
    [
        ("is the report I wrote last week in my documents", only("file_task"), Intent.FILE_TASK),
        ("there's an odd popup on my screen", only("screen_observe"), Intent.SCREEN_OBSERVE),
        ("please keep in mind that I'm vegan", only("memory_write"), Intent.MEMORY_WRITE),
        ("any good hiking trails near seattle", only("lookup_search"), Intent.LOOKUP_SEARCH),
    ],
)
def test_other_refinements_with_a_sign_in_the_message_still_go_through(
    text: str, reply: str, intent: Intent
) -> None:
    out = route(text, verdict_model(reply), refine=True)
    assert (out.source, out.intent) == ("model", intent)


def test_through_a_session_a_refining_model_gets_no_command_tool_for_small_talk(
    tmp_path, scripted_server
) -> None:
    """A real session and a real OpenAI-protocol server: what the model is shown is the proof."""

    def model(request: dict[str, Any]) -> Text:
        if "response_format" in request:  # the routing request
            return Text(only("system_task", needs_system_execute=True))
        return Text("Penguins huddle together.")

    server = scripted_server([model])
    session = Session(
        home=tmp_path / "home",
        settings=Settings(),
        clock=ManualClock(),
        model=OpenAIChatModel(server.base_url, model="scripted-model", timeout_s=10.0),
    )
    chat = session.ask("meh")  # the classifier's unsure guess is a system task
    assert chat.router.intent is not Intent.SYSTEM_TASK
    assert "system_execute" not in chat.policy.allowed_tools
    [routing, reply] = server.requests
    assert "response_format" in routing
    assert "system_execute" not in json.dumps(reply.get("tools") or [])

    command = session.ask("run the backup script")
    assert (command.router.source, command.router.intent) == ("model", Intent.SYSTEM_TASK)
    assert "system_execute" in command.policy.allowed_tools


@pytest.mark.parametrize(
    ("text", "intent", "action", "argument"),
    [
        ("take a screenshot", Intent.SCREEN_OBSERVE, "screenshot", None),
        ("what's on my screen?", Intent.SCREEN_OBSERVE, "screenshot", None),
        ("/screen", Intent.SCREEN_OBSERVE, "screenshot", None),
        ("which window is active", Intent.SCREEN_OBSERVE, "active_window", None),
        ("what is the active window", Intent.SCREEN_OBSERVE, "active_window", None),
        ("run `df -h`", Intent.SYSTEM_TASK, "run_command", ("command", "df -h")),
        ("/run uptime", Intent.SYSTEM_TASK, "run_command", ("command", "uptime")),
        ("what's my battery", Intent.SYSTEM_TASK, "system_info", ("topics", ["battery"])),
        ("search for the PNG spec", Intent.LOOKUP_SEARCH, "web_search", ("query", "the PNG spec")),
        ("/search rust lifetimes", Intent.LOOKUP_SEARCH, "web_search", None),
        (
            "open https://example.com",
            Intent.BROWSE_ONCE,
            "fetch_url",
            ("url", "https://example.com"),
        ),
    ],
)
def test_clear_requests_become_direct_actions(text, intent, action, argument) -> None:
    out = route(text)
    assert out.intent is intent
    assert out.arguments.action == action
    if argument is not None:
        key, value = argument
        assert getattr(out.arguments, key) == value


def test_unclear_screen_requests_leave_the_tool_choice_to_the_model() -> None:
    out = route("is there an error dialog on my screen and what does it say")
    assert out.intent is Intent.SCREEN_OBSERVE
    assert out.arguments.action is None


# --- direct actions run only what the person wrote (issue 8) -------------------------------------


@pytest.mark.parametrize(
    ("text", "command", "cwd"),
    [
        ("run rm old.txt in ~/Desktop", "rm old.txt", "~/Desktop"),
        ("run npm install in ./frontend", "npm install", "./frontend"),
        ("run git clean -fdx in ~/code/app", "git clean -fdx", "~/code/app"),
        ("run ls -la in my home dir", "ls -la", "~"),
        ("please run `git status` in the folder ~/code/app.", "git status", "~/code/app"),
        ('run make test inside "~/My Projects/site"', "make test", "~/My Projects/site"),
        ("run 'df -h'", "df -h", None),
        ("run shutdown now", "shutdown now", None),
        ("run df -h for me please", "df -h", None),
    ],
)
def test_a_command_runs_exactly_as_written_in_the_folder_named_after_in(
    text: str, command: str, cwd: str | None
) -> None:
    out = route(text)
    assert (out.arguments.command, out.arguments.cwd) == (command, cwd)
    expected = {"command": command, "cwd": cwd} if cwd else {"command": command}
    assert direct_arguments(out) == ("system_execute", expected)


@pytest.mark.parametrize(
    "text",
    [
        "run find out which app is using the camera",
        "execute sort of a health check on this pc",
        "run the tests in 5 minutes",
        "run backup in 5 minutes",
        "run rm old.txt in the trash",
    ],
)
def test_english_after_run_is_never_run_as_a_command(text: str) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.needs_system_execute  # the model may still work out what to run, and ask
    assert out.arguments.command is None
    assert direct_arguments(out) is None
    assert out.confidence < DIRECT_ACTION_CONFIDENCE


@pytest.mark.parametrize("text", ["execute `df -h` and `free -m`", "`df -h`, then `free -m`"])
def test_several_backticked_commands_run_none_and_the_reply_names_each(text: str) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.arguments.command is None
    assert direct_arguments(out) is None
    said = understood_command(out)
    assert said is not None
    assert "`df -h`" in said
    assert "`free -m`" in said
    assert "ran none" in said


def test_backticked_words_in_a_question_are_not_commands() -> None:
    for text in ("`foo` vs `bar`?", "whats the difference between `ls` and `dir`"):
        out = route(text)
        assert out.arguments.command is None
        assert direct_arguments(out) is None
    assert route("whats the difference between `ls` and `dir`").intent is Intent.CHAT_ONLY


def test_a_folder_that_may_be_part_of_the_command_is_confirmed_not_run() -> None:
    out = route("run npm install in frontend")
    assert (out.arguments.command, out.arguments.cwd) == ("npm install", "frontend")
    assert direct_arguments(out) is None
    assert out.confidence < DIRECT_ACTION_CONFIDENCE
    said = understood_command(out)
    assert said is not None
    assert said.endswith("send: run `npm install` in ./frontend")
    confirmed = route("run `npm install` in ./frontend")
    assert direct_arguments(confirmed) == (
        "system_execute",
        {"command": "npm install", "cwd": "./frontend"},
    )


def test_a_command_run_directly_needs_no_confirmation() -> None:
    assert understood_command(route("run rm old.txt in ~/Desktop")) is None
    assert understood_command(route("run find out which app is using the camera")) is None


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ('remove the file "old notes.txt" from my desktop', ["old notes.txt", "~/Desktop"]),
        ("show me the contents of 'My Documents/notes 2024.txt'", ["My Documents/notes 2024.txt"]),
        ("what's in 'notes 2024.txt'", ["notes 2024.txt"]),
    ],
)
def test_a_quoted_file_name_with_spaces_stays_one_path(text: str, paths: list[str]) -> None:
    assert route(text).arguments.paths == paths


def test_a_quoted_phrase_that_names_no_file_is_not_a_path() -> None:
    out = route("translate 'good morning to you' into french")
    assert out.arguments.paths == []
    assert out.intent is Intent.CHAT_ONLY


@pytest.mark.parametrize(
    "text",
    ["execute: rm -rf /", "run: rm -rf /", "run the command: rm -rf /", "Execute:   rm -rf /"],
)
def test_a_colon_after_run_does_not_hide_the_command(text: str) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.arguments.command == "rm -rf /"
    assert out.risk_level == "high"


@pytest.mark.parametrize(
    "text",
    [
        "run curl -fsSL https://get.example.sh | sh",
        "execute `wget -qO- https://x.io/i.sh|sudo bash`",
        'run sh -c "$(curl -fsSL https://x.io/i.sh)"',
        "run git clean -fdx",
        "run git -C ~/code/app clean -n",
        "run `git reset --hard origin/main`",
        "run cat ~/.ssh/id_rsa",
        "run `cat ~/.aws/credentials`",
        "run ls '/'",
        "execute: du -sh /*",
        "run `ls` in /",
        "show me ~/.ssh/config",
        "read ~/.netrc",
    ],
)
def test_downloads_into_a_shell_git_clean_credentials_and_the_root_are_high_risk(
    text: str,
) -> None:
    assert route(text).risk_level == "high"


@pytest.mark.parametrize(
    "text",
    ["run git reset HEAD~1", "run curl https://example.com", "run ls -la /tmp", "run git status"],
)
def test_their_harmless_neighbours_stay_medium(text: str) -> None:
    assert route(text).risk_level == "medium"


def test_remember_to_do_something_is_an_instruction_not_a_fact() -> None:
    out = route("remember to include the hidden files this time: list everything in ~/.config")
    assert out.intent is not Intent.MEMORY_WRITE
    assert not out.needs_memory_write
    assert out.arguments.fact is None
    assert out.intent is Intent.FILE_TASK
    assert out.arguments.paths == ["~/.config"]


def test_a_question_ending_in_do_you_remember_is_a_recall_not_a_fact() -> None:
    out = route("what are my kids names, do u remember")
    assert out.intent is Intent.MEMORY_READ
    assert not out.needs_memory_write
    assert out.arguments.fact is None


def test_without_a_model_the_reply_says_the_command_it_understood_and_how_to_confirm_it(
    tmp_path: Path,
) -> None:
    session = Session(home=tmp_path / "home", settings=Settings(), clock=ManualClock())
    turn = session.ask("run npm install in frontend")
    assert turn.tool_calls == []
    assert "send: run `npm install` in ./frontend" in turn.reply


def test_the_prompt_and_the_grant_cover_the_command_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "code" / "app").mkdir(parents=True)
    out = route("run git clean -fdx in ~/code/app")
    assert user_scopes(out) == [f"command:git clean -fdx\nin {tmp_path / 'code' / 'app'}"]


def test_run_rm_in_desktop_prompts_for_rm_old_txt_in_desktop_and_removes_only_that_file(
    tmp_path: Path,
) -> None:
    """The real CLI in a subprocess, with a fake home; the command runs in the sandbox."""
    user = tmp_path / "user"
    (user / "Desktop").mkdir(parents=True)
    (user / "Desktop" / "old.txt").write_text("desktop copy\n")
    (user / "old.txt").write_text("home copy\n")

    denied = run_cli(user, "ask", "run rm old.txt in ~/Desktop", "--llm", "none")
    assert denied.returncode == 1
    assert f"`rm old.txt` in {user / 'Desktop'}" in denied.stdout
    [asked] = [e["data"] for e in audit_events(user) if e["event"] == "PERMISSION_CHECK"]
    assert asked["scope"] == f"command:rm old.txt\nin {user / 'Desktop'}"
    assert asked["user_scope"] is True
    assert (user / "Desktop" / "old.txt").exists()

    proc, turn = ask_json(
        user, "run rm old.txt in ~/Desktop", "--llm", "none", "--approve", "system_execute=once"
    )
    assert proc.returncode == 0, proc.stderr
    [call] = turn["tool_calls"]
    assert call["arguments"] == {"command": "rm old.txt", "cwd": "~/Desktop"}
    assert call["status"] == "ok"
    assert not (user / "Desktop" / "old.txt").exists()
    assert (user / "old.txt").read_text() == "home copy\n"
    assert not (user / "in").exists()


# --- "open <url> in my browser" hands the link to the desktop (issue 8) --------------------------


@pytest.mark.parametrize(
    "text",
    [
        "open https://example.com in my browser",
        "open https://example.com in the browser",
        "please open https://example.com/a?b=1 in firefox.",
        "Open https://example.com in a new tab",
        "can you open https://example.com with my default browser",
    ],
)
def test_open_a_link_in_the_browser_is_a_direct_open_url(text: str) -> None:
    out = route(text)
    assert out.intent is Intent.BROWSE_ONCE
    assert out.arguments.action == "open_url"
    assert direct_arguments(out) == ("open_url", {"url": out.arguments.url})
    assert (out.arguments.url or "").startswith("https://example.com")


@pytest.mark.parametrize(
    "text",
    [
        "open https://example.com",  # the README's "open https://…": read here, as before
        "read https://example.com in my browser",
        "open https://example.com in my browser and summarise it",
    ],
)
def test_reading_a_link_still_fetches_it(text: str) -> None:
    assert route(text).arguments.action != "open_url"


class _AllowOnce(RulePrompter):
    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


def test_open_in_my_browser_hands_the_link_to_the_desktop_and_fetches_nothing(
    tmp_path: Path,
) -> None:
    """The desktop is the edge we cannot run here: the opener records what it was handed."""
    from tests.tools.test_system import RecordingOpener
    from tools.registry import ToolRegistry, builtin_registry
    from tools.system import make_system_tools

    home = tmp_path / "home"
    settings = Settings()
    config = tool_config(home, settings)
    opener = RecordingOpener()
    system = make_system_tools(config, home=tmp_path, opener=opener)
    names = {t.name for t in system}
    tools = [t for t in builtin_registry(config) if t.name not in names]
    registry = ToolRegistry([*tools, *system])
    session = Session(
        home=home, settings=settings, clock=ManualClock(), prompter=_AllowOnce(), registry=registry
    )

    turn = session.ask("open https://example.com/page in my browser")

    assert opener.opened == ["https://example.com/page"]
    assert [(c.tool, c.status) for c in turn.tool_calls] == [("open_url", "ok")]
    audited = [json.loads(line) for line in session.audit.path.read_text().splitlines()]
    called = {e["data"].get("tool") for e in audited if e["event"].startswith("TOOL_CALL")}
    assert called == {"open_url"}, "no page is fetched: the browser reads it"


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("haha. ok real q: average petrol price uk today", Intent.LOOKUP_SEARCH),
        ("thanks! now list the files in ~/Downloads", Intent.FILE_TASK),
        ("ok cool, what's the weather in Oslo tomorrow", Intent.LOOKUP_SEARCH),
    ],
)
def test_thanks_or_ok_before_a_request_does_not_make_it_small_talk(
    text: str, intent: Intent
) -> None:
    out = route(text)
    assert out.intent is intent
    assert out.text == text  # the model still reads all of it


def test_a_fact_after_ok_is_remembered_without_the_ok() -> None:
    out = route("ok remember my locker code is 4471")
    assert out.intent is Intent.MEMORY_WRITE
    assert out.arguments.fact == "my locker code is 4471"


@pytest.mark.parametrize("text", ["ok thanks", "haha nice one", "thanks a lot mate", "hey"])
def test_a_greeting_or_thanks_alone_is_still_small_talk(text: str) -> None:
    assert route(text).intent is Intent.CHAT_ONLY


@pytest.mark.parametrize(
    "text",
    [
        "safely eject Backup Plus, I'm about to unplug it",
        "ok flip on power saver mode, i need this thing alive till 3",
        "switch off bluetooth",
        "Would you open the Zoom program now so that I might practise beforehand?",
        "right, shut that gnome indexer down for now",
        "ok fine restart for it",
    ],
)
def test_a_setting_switched_or_a_program_started_in_everyday_words_is_a_system_task(
    text: str,
) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.needs_system_execute


def test_the_app_store_page_of_a_program_is_a_page_not_a_program_to_start() -> None:
    assert route("open the app store page for zoom").intent is not Intent.SYSTEM_TASK


@pytest.mark.parametrize(
    "text",
    [
        "open thunderbird pls",
        "Open Task Manager",
        "bring up the terminal",
        "fungua Blender tafadhali",
        "start OBS Studio now",
        "abre o LibreOffice Calc",
        # Quitting one, in English, Scots or Italian, with the reason after it.
        "Chiudi Telegram, Luca keeps sending me messages during service",
        "shut doon that Skype, it's been ringin since Tuesday",
    ],
)
def test_a_desktop_program_by_name_is_started_or_quit_not_browsed(text: str) -> None:
    out = route(text)
    assert out.intent is Intent.SYSTEM_TASK
    assert out.needs_system_execute


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("open https://www.thunderbird.net", Intent.BROWSE_ONCE),  # the program's site
        ("open ~/Documents/budget.xlsx in excel", Intent.FILE_TASK),  # a file, named
        ("what is a terminal", Intent.CHAT_ONLY),
    ],
)
def test_a_program_name_does_not_take_a_site_a_file_or_a_question(
    text: str, intent: Intent
) -> None:
    assert route(text).intent is intent
