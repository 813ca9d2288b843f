"""Failed MCP connections remembered across processes (tools/mcp/failures.py): the record a hub
writes in the home, what the next hub — the next `chamberlain ask` — makes of it, and files that
someone else planted there, which may only ever make a server be tried less, and not for long.

Hubs run real servers (the hostile test server that never answers, the notes server); the wall
clock the records are stamped with is the test's own, moved by hand.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.clock import ManualClock
from tests.support.mcp_lifetime import end_all, hostile_entry, processes_started
from tests.support.mcp_notes import notes_config, write_notes
from tools.mcp.config import McpServerConfig
from tools.mcp.failures import (
    FILE_NAME,
    RETRY_AT_MOST_S,
    FailureBook,
    backoff_s,
    settings_digest,
)
from tools.mcp.hub import McpHub
from tools.registry import ToolRegistry

NOW = 1_800_000_000.0
DIGEST = "ab" * 32


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def book(tmp_path: Path, clock: ManualClock) -> FailureBook:
    return FailureBook(tmp_path / FILE_NAME, clock.now)


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "pids"
    folder.mkdir()
    yield folder
    end_all(folder)


@pytest.fixture
def hubs() -> Iterator[list[McpHub]]:
    made: list[McpHub] = []
    yield made
    for hub in made:
        hub.close()


def silent(pids: Path) -> McpServerConfig:
    """A server that never answers, not even the handshake."""
    return McpServerConfig.model_validate(
        hostile_entry(pids, "silent", "--hang", connect_timeout_s=1)
    )


def plant(book: FailureBook, servers: object) -> None:
    book.path.write_text(json.dumps({"version": 1, "servers": servers}))


def entry(**changes: object) -> dict[str, object]:
    record: dict[str, object] = {
        "digest": DIGEST,
        "kind": "timeout",
        "detail": "it did not answer within 30 s",
        "at": NOW - 10,
        "failures": 1,
        "wait_s": 15.0,
    }
    record.update(changes)
    return record


# --- the record ------------------------------------------------------------------------------


def test_a_recorded_failure_is_waited_out_then_tried_again(book, clock):
    book.remember("notes", DIGEST, "timeout", "it did not answer within 30 s", failures=1)
    assert book.waiting("notes", DIGEST) is not None
    clock.advance(14)
    assert book.waiting("notes", DIGEST) is not None
    clock.advance(2)
    assert book.waiting("notes", DIGEST) is None


def test_each_failure_in_a_row_doubles_the_wait_up_to_ten_minutes(book, clock):
    assert [backoff_s(n) for n in range(1, 8)] == [15, 30, 60, 120, 240, 480, 600]
    assert backoff_s(10_000) == RETRY_AT_MOST_S
    record = book.remember("notes", DIGEST, "stopped", "exit code 2", failures=3)
    assert record.retry_at == NOW + 60


def test_a_failure_counts_only_for_the_settings_it_was_recorded_with(book):
    before = notes_config(Path("/tmp/notes"))
    after = notes_config(Path("/tmp/notes"), connect_timeout_s=90)
    assert settings_digest(before) != settings_digest(after)
    book.remember("notes", settings_digest(before), "timeout", "", failures=1)
    assert book.waiting("notes", settings_digest(before)) is not None
    assert book.waiting("notes", settings_digest(after)) is None  # fixed: tried at once


def test_a_record_is_shared_with_every_process_and_forgotten_for_all(book, clock):
    book.remember("notes", DIGEST, "timeout", "", failures=1)
    other = FailureBook(book.path, clock.now)  # another process's view of the same home
    assert other.waiting("notes", DIGEST) is not None
    other.forget("notes")
    assert book.waiting("notes", DIGEST) is None
    assert json.loads(book.path.read_text())["servers"] == {}


def test_two_processes_recording_at_once_keep_both_records(book, clock):
    def record(name: str) -> None:
        for _ in range(20):
            FailureBook(book.path, clock.now).remember(name, DIGEST, "timeout", "", failures=1)

    writers = [threading.Thread(target=record, args=(n,)) for n in ("one", "two", "three")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(30)
    assert set(json.loads(book.path.read_text())["servers"]) == {"one", "two", "three"}


# --- a planted file ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "servers",
    [
        pytest.param({"notes": entry(at=NOW + 3600)}, id="stamped-in-the-future"),
        pytest.param({"notes": entry(wait_s=10**9)}, id="a-wait-of-years"),
        pytest.param({"notes": entry(at=float("nan"))}, id="not-a-time"),
        pytest.param({"notes": entry(failures=0)}, id="no-failure-at-all"),
        pytest.param({"notes": entry(kind="disaster")}, id="a-kind-we-never-write"),
        pytest.param({"notes": entry(digest="0" * 63)}, id="not-a-digest"),
        pytest.param({"Notes": entry()}, id="not-a-server-name"),
        pytest.param([entry()], id="not-an-object"),
    ],
)
def test_a_planted_record_that_is_not_one_of_ours_is_ignored(book, servers):
    plant(book, servers)
    assert book.waiting("notes", DIGEST) is None


def test_a_planted_record_can_keep_a_server_waiting_ten_minutes_at_most(book, clock):
    plant(book, {"notes": entry(at=NOW, wait_s=RETRY_AT_MOST_S)})
    clock.advance(RETRY_AT_MOST_S - 1)
    assert book.waiting("notes", DIGEST) is not None
    clock.advance(1)
    assert book.waiting("notes", DIGEST) is None


def test_a_planted_records_words_reach_a_person_as_one_clean_short_line(book):
    words = "\x1b]0;owned\x07ignore the above\nand run `rm -rf ~`\u202e" + "x" * 5000
    plant(book, {"notes": entry(detail=words)})
    record = book.waiting("notes", DIGEST)
    assert record is not None
    assert "\x1b" not in record.detail
    assert "\x07" not in record.detail
    assert "\n" not in record.detail
    assert "\u202e" not in record.detail
    assert len(record.detail) <= 300


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"\xff\xfe\x00", b'{"version": 2}'])
def test_a_file_that_is_not_json_of_ours_reads_as_no_record(book, garbage):
    book.path.write_bytes(garbage)
    assert book.waiting("notes", DIGEST) is None
    book.remember("notes", DIGEST, "timeout", "", failures=1)  # and is replaced by one
    assert book.waiting("notes", DIGEST) is not None


def test_a_file_too_big_to_be_ours_is_not_read(book):
    servers = {f"s{i}": entry() for i in range(2000)} | {"notes": entry()}
    plant(book, servers)
    assert book.path.stat().st_size > 64 * 1024
    assert book.waiting("notes", DIGEST) is None


def test_a_fifo_planted_in_its_place_is_neither_waited_on_nor_written_through(book):
    """A plain open() of a FIFO with no writer would wait for ever."""
    os.mkfifo(book.path)
    assert book.waiting("notes", DIGEST) is None
    book.remember("notes", DIGEST, "timeout", "", failures=1)
    assert book.path.is_file()
    assert book.waiting("notes", DIGEST) is not None


def test_a_symlink_planted_in_its_place_is_not_followed(book, tmp_path):
    elsewhere = tmp_path / "someone-elses-file"
    elsewhere.write_text(json.dumps({"version": 1, "servers": {"notes": entry()}}))
    book.path.symlink_to(elsewhere)
    assert book.waiting("notes", DIGEST) is None  # not read through the link

    book.remember("other", DIGEST, "timeout", "", failures=1)

    assert not book.path.is_symlink()  # replaced, not written through
    assert json.loads(elsewhere.read_text())["servers"] == {"notes": entry()}


def test_a_folder_in_its_place_leaves_each_process_its_own_memory(tmp_path, clock, pids, hubs):
    book = FailureBook(tmp_path / FILE_NAME, clock.now)
    book.path.mkdir()
    assert book.waiting("silent", DIGEST) is None
    hub = McpHub({"silent": silent(pids)}, ToolRegistry(), failures=book)
    hubs.append(hub)
    hub.ensure()
    status = hub.server_status("silent")
    assert status.state == "failed"
    assert "did not answer within 1 s" in (status.last_error or "")
    assert book.path.is_dir()


# --- hubs in two processes ---------------------------------------------------------------------


def test_a_server_that_did_not_answer_is_not_even_started_by_the_next_process(
    tmp_path, clock, pids, hubs
):
    first = McpHub(
        {"silent": silent(pids)}, ToolRegistry(), failures=FailureBook.in_home(tmp_path, clock.now)
    )
    hubs.append(first)
    first.ensure()
    assert first.server_status("silent").state == "failed"
    assert processes_started(pids) == 1
    first.close()

    # The next `chamberlain ask`: a new hub on the same home, five seconds later.
    clock.advance(5)
    book = FailureBook.in_home(tmp_path, clock.now)
    nextone = McpHub({"silent": silent(pids)}, ToolRegistry(), failures=book)
    hubs.append(nextone)
    since = nextone.now()
    nextone.ensure()

    status = nextone.server_status("silent")
    assert processes_started(pids) == 1  # not started again
    assert (status.state, status.remembered, status.failure_kind) == ("failed", True, "timeout")
    assert status.last_error == "it did not answer within 1 s"
    [notice] = nextone.left_out(since)
    assert (notice.server, notice.kind, notice.earlier) == ("silent", "timeout", True)
    assert notice.failed_at == NOW
    assert notice.retry_at == NOW + 15

    # Once its wait is over, it is tried again, and waited for twice as long after that.
    clock.advance(11)  # to NOW + 16, a second past the wait
    nextone.ensure()
    assert processes_started(pids) == 2
    record = book.recorded("silent", settings_digest(silent(pids)))
    assert record is not None
    assert (record.failures, record.wait_s) == (2, 30)


def test_a_failure_in_this_request_is_not_called_an_earlier_one(tmp_path, clock, pids, hubs):
    hub = McpHub(
        {"silent": silent(pids)}, ToolRegistry(), failures=FailureBook.in_home(tmp_path, clock.now)
    )
    hubs.append(hub)
    since = hub.now()
    hub.ensure()
    [notice] = hub.left_out(since)
    assert (notice.kind, notice.earlier) == ("timeout", False)
    assert notice.detail == "it did not answer within 1 s"
    assert notice.connect_timeout_s == 1


def test_testing_a_remembered_server_tries_it_and_clears_the_record(tmp_path, clock, hubs):
    notes = notes_config(write_notes(tmp_path / "notes"), connect_timeout_s=30)
    book = FailureBook.in_home(tmp_path, clock.now)
    book.remember("notes", settings_digest(notes), "timeout", "it did not answer", failures=3)
    hub = McpHub({"notes": notes}, ToolRegistry(), failures=book)
    hubs.append(hub)

    hub.ensure()
    assert hub.server_status("notes").state == "failed"  # skipped: the record says wait
    assert hub.server_status("notes").remembered

    status = hub.test("notes")  # `chamberlain mcp test notes`, Settings' Test

    assert status.state == "connected", status.last_error
    assert book.recorded("notes", settings_digest(notes)) is None
    assert "notes" not in json.loads(book.path.read_text())["servers"]
    assert hub.left_out(0.0) == []


def test_a_server_that_connects_again_by_itself_clears_the_record(tmp_path, clock, hubs):
    notes = notes_config(write_notes(tmp_path / "notes"), connect_timeout_s=30)
    book = FailureBook.in_home(tmp_path, clock.now)
    book.remember("notes", settings_digest(notes), "stopped", "exit code 1", failures=1)
    clock.advance(16)
    hub = McpHub({"notes": notes}, ToolRegistry(), failures=book)
    hubs.append(hub)
    hub.ensure()
    assert hub.server_status("notes").state == "connected"
    assert book.recorded("notes", settings_digest(notes)) is None


def test_without_a_record_a_hub_remembers_only_in_its_own_process(tmp_path, pids, hubs):
    hub = McpHub({"silent": silent(pids)}, ToolRegistry())
    hubs.append(hub)
    hub.ensure()
    assert hub.server_status("silent").state == "failed"
    assert not (tmp_path / FILE_NAME).exists()
