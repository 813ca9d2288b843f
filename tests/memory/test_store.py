"""The fact store: adding, consent, supersede, recall, forgetting for good, anchors, export.

Real SQLite files in tmp_path (plaintext where a test reads the file's raw bytes, both modes
where encryption could change the behaviour). Time comes from a manual clock.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memory.db import MemoryStoreError, open_database
from memory.slots import normalise
from memory.store.errors import (
    AnchorNotFoundError,
    CredentialRefused,
    FactNotFoundError,
    FactStateError,
    ImportFormatError,
    InvalidInputError,
)
from memory.store.facts import MemoryStore
from memory.store.recall import build_match_query
from memory.types import EventKind, Fact, FactSource, FactStatus, Sensitivity

KEY = bytes(range(32))
DAY = 86400.0
LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


class ManualClock:
    def __init__(self, t: float = 1_700_000_000.0) -> None:
        self.t = t

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _open(path: Path, encrypted: bool, clock: ManualClock, **kwargs: Any) -> MemoryStore:
    database = open_database(path, key=KEY if encrypted else None, encrypted=encrypted)
    return MemoryStore(database, clock, **kwargs)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=[False, True], ids=["plaintext", "encrypted"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock):
    opened = _open(tmp_path / "memory.db", bool(request.param), clock)
    yield opened
    opened.close()


@pytest.fixture
def plain(tmp_path: Path, clock: ManualClock):
    """A plaintext store, for the tests that read the database file's raw bytes."""
    opened = _open(tmp_path / "memory.db", False, clock)
    yield opened
    opened.close()


def _kinds(store: MemoryStore, fact_id: str) -> list[EventKind]:
    return [e.kind for e in reversed(store.events(fact_id=fact_id))]


def _file_bytes(path: Path) -> dict[str, bytes]:
    return {
        suffix: Path(f"{path}{suffix}").read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(f"{path}{suffix}").exists()
    }


def _holds(path: Path, marker: str) -> list[str]:
    """Which of the database's files hold the marker's bytes (in any case)."""
    needles = {marker.encode(), marker.lower().encode(), marker.upper().encode()}
    return [
        suffix or "main"
        for suffix, data in _file_bytes(path).items()
        if any(needle in data for needle in needles)
    ]


# --- adding and dedupe ---------------------------------------------------------------------


def test_add_stores_every_field_and_logs_add(store, clock):
    outcome = store.add(
        "My dog is called Rex",
        sensitivity=LOW,
        category="pets",
        reasons=["harmless"],
        evidence="remember that my dog is called Rex",
        expires_at=clock.now() + 10 * DAY,
    )
    assert outcome.action == "added"
    assert outcome.superseded == []
    fact = outcome.fact
    assert store.get(fact.id) == fact
    assert (fact.text, fact.category, fact.reasons) == (
        "My dog is called Rex",
        "pets",
        ["harmless"],
    )
    assert fact.status is FactStatus.ACTIVE
    assert fact.source is FactSource.USER_EXPLICIT
    assert fact.created_at == clock.now()
    assert fact.expires_at == clock.now() + 10 * DAY
    assert _kinds(store, fact.id) == [EventKind.ADD]


@pytest.mark.parametrize(
    ("level", "expected"),
    [(LOW, FactStatus.ACTIVE), (PERSONAL, FactStatus.PENDING), (SECRET, FactStatus.PENDING)],
)
def test_status_defaults_to_active_only_for_low(store, level, expected):
    assert store.add("I live at 12 Elm Street", sensitivity=level).fact.status is expected


def test_caller_may_pass_the_status(store):
    fact = store.add("I have diabetes", sensitivity=SECRET, status=FactStatus.ACTIVE).fact
    assert fact.status is FactStatus.ACTIVE
    with pytest.raises(InvalidInputError):
        store.add("x y z", sensitivity=LOW, status=FactStatus.SUPERSEDED)


def test_duplicate_confirms_instead_of_adding(store, clock):
    first = store.add("My dog is called Rex.", sensitivity=LOW).fact
    clock.advance(DAY)
    again = store.add("  my DOG   is called rex!! ", sensitivity=LOW)

    assert again.action == "duplicate"
    assert again.fact.id == first.id
    assert again.fact.confirmed_at == clock.now()
    assert store.count() == 1
    assert _kinds(store, first.id) == [EventKind.ADD, EventKind.CONFIRM]


def test_duplicate_can_only_raise_sensitivity(store):
    first = store.add("I see Dr Smith on Fridays", sensitivity=PERSONAL).fact
    assert store.add("I see Dr Smith on Fridays", sensitivity=LOW).fact.sensitivity is PERSONAL
    raised = store.add("i see dr smith on fridays", sensitivity=SECRET, reasons=["health"]).fact
    assert raised.id == first.id
    assert raised.sensitivity is SECRET
    assert "health" in raised.reasons


def test_duplicate_of_a_superseded_fact_is_a_new_fact(store):
    paris = store.add("my home city is Paris", sensitivity=LOW, slot="user.home_city").fact
    store.add("my home city is Berlin", sensitivity=LOW, slot="user.home_city")
    back = store.add("my home city is Paris", sensitivity=LOW, slot="user.home_city")
    assert back.action == "superseded"
    assert back.fact.id != paris.id


def test_normalise():
    assert normalise("  «My  Dog»\tis REX.  ") == "my dog» is rex"
    assert normalise("...") == ""


@pytest.mark.parametrize("text", ["", "   ", "x" * 4001])
def test_empty_or_huge_text_is_refused(store, text):
    with pytest.raises(InvalidInputError):
        store.add(text, sensitivity=LOW)
    assert store.count() == 0


def test_past_expiry_is_refused(store, clock):
    with pytest.raises(InvalidInputError, match="already past"):
        store.add("a fact", sensitivity=LOW, expires_at=clock.now() - 1)


# --- slots, supersede, edits ------------------------------------------------------------------


def test_new_value_for_a_slot_supersedes_the_old_and_keeps_history(store, clock):
    paris = store.add("my home city is Paris", sensitivity=LOW, slot="user.home_city").fact
    clock.advance(60)
    outcome = store.add("my home city is Berlin", sensitivity=LOW, slot="user.home_city")

    assert outcome.action == "superseded"
    assert [f.id for f in outcome.superseded] == [paris.id]
    old = store.get(paris.id)
    assert old is not None
    assert old.status is FactStatus.SUPERSEDED
    assert old.superseded_by == outcome.fact.id
    assert [f.text for f in store.history(outcome.fact.id)] == [
        "my home city is Paris",
        "my home city is Berlin",
    ]
    assert store.history(paris.id) == store.history(outcome.fact.id)
    assert _kinds(store, paris.id) == [EventKind.ADD, EventKind.SUPERSEDE]
    # Listed by default: the current value only; the history on request.
    assert [f.id for f in store.facts()] == [outcome.fact.id]
    assert {f.id for f in store.facts(include_superseded=True)} == {paris.id, outcome.fact.id}


def test_slots_are_per_subject_and_facts_without_slot_never_supersede(store):
    store.add("my name is Ann", sensitivity=LOW, slot="user.name")
    sister = store.add(
        "my sister's name is Bea", sensitivity=LOW, slot="user.name", subject="sister"
    )
    assert sister.action == "added"
    store.add("I like tea", sensitivity=LOW)
    assert store.add("I like coffee", sensitivity=LOW).action == "added"
    assert store.count(FactStatus.ACTIVE) == 4


def test_pending_fact_supersedes_nothing_until_approved(store):
    old = store.add("I work at Acme", sensitivity=LOW, slot="user.employer").fact
    new = store.add("I work at Globex", sensitivity=PERSONAL, slot="user.employer")
    assert new.action == "added"
    assert new.fact.status is FactStatus.PENDING
    assert store.get(old.id).status is FactStatus.ACTIVE

    approved = store.approve(new.fact.id)
    assert approved.status is FactStatus.ACTIVE
    assert approved.confirmed_at is not None
    assert store.get(old.id).status is FactStatus.SUPERSEDED
    assert store.get(old.id).superseded_by == new.fact.id
    assert EventKind.CONFIRM in _kinds(store, new.fact.id)


def test_edit_makes_a_new_user_version_and_supersedes_the_old(store, clock):
    old = store.add(
        "my home city is Paris",
        sensitivity=PERSONAL,
        slot="user.home_city",
        status=FactStatus.ACTIVE,
        reasons=["a place"],
    ).fact
    clock.advance(5)
    new = store.edit(old.id, "my home city is Lyon")

    assert new.id != old.id
    assert new.text == "my home city is Lyon"
    assert new.source is FactSource.USER_EDIT
    assert new.status is FactStatus.ACTIVE
    assert (new.slot, new.sensitivity, new.reasons) == ("user.home_city", PERSONAL, ["a place"])
    assert store.get(old.id).status is FactStatus.SUPERSEDED
    assert store.get(old.id).superseded_by == new.id
    assert _kinds(store, new.id) == [EventKind.EDIT]
    assert [f.id for f in store.history(old.id)] == [old.id, new.id]
    with pytest.raises(FactStateError):
        store.edit(old.id, "editing a past version")


def test_editing_a_pending_fact_makes_it_the_slot_value(store):
    acme = store.add("I work at Acme", sensitivity=LOW, slot="user.employer").fact
    pending = store.add("I work at Globex", sensitivity=PERSONAL, slot="user.employer").fact
    edited = store.edit(pending.id, "I work at Globex Ltd")
    assert edited.status is FactStatus.ACTIVE
    assert store.get(acme.id).superseded_by == edited.id
    assert store.get(pending.id).superseded_by == edited.id
    assert [f.id for f in store.facts(status=FactStatus.ACTIVE)] == [edited.id]


def test_edited_fact_is_never_superseded_automatically(store):
    original = store.add("my home city is Paris", sensitivity=LOW, slot="user.home_city").fact
    edited = store.edit(original.id, "my home city is Lyon")

    outcome = store.add("my home city is Rome", sensitivity=LOW, slot="user.home_city")

    assert outcome.action == "added"
    assert outcome.superseded == []
    assert outcome.fact.status is FactStatus.PENDING
    assert any("edited" in reason for reason in outcome.fact.reasons)
    assert store.get(edited.id).status is FactStatus.ACTIVE
    # The user's approval is not automatic: now the edited fact yields.
    store.approve(outcome.fact.id)
    assert store.get(edited.id).status is FactStatus.SUPERSEDED


def test_approve_and_reject_need_the_right_state(store):
    active = store.add("I like tea", sensitivity=LOW).fact
    assert store.approve(active.id) == active  # already active: nothing changes
    with pytest.raises(FactStateError, match="not pending"):
        store.reject(active.id)
    with pytest.raises(FactNotFoundError):
        store.approve("nope")
    with pytest.raises(FactNotFoundError):
        store.edit("nope", "text")


def test_reject_deletes_a_pending_fact(store):
    pending = store.add("I have diabetes", sensitivity=SECRET).fact
    store.reject(pending.id)
    assert store.get(pending.id) is None
    assert store.count() == 0
    assert _kinds(store, pending.id) == [EventKind.ADD, EventKind.REJECT]


# --- recall ----------------------------------------------------------------------------------


def _seed(store: MemoryStore) -> dict[str, Fact]:
    texts = {
        "peanuts": "I am allergic to peanuts",
        "butter": "I like peanut butter sandwiches",
        "pollen": "my sister has a pollen allergy",
        "dog": "my dog is called Rex",
        "farm": "peanut farms are common in Georgia",
    }
    return {k: store.add(t, sensitivity=LOW).fact for k, t in texts.items()}


def test_allergy_peanut_finds_allergic_to_peanuts_first(store):
    facts = _seed(store)
    found = store.recall("allergy peanut")
    assert found[0].id == facts["peanuts"].id
    assert facts["dog"].id not in [f.id for f in found]


def test_prefix_terms_reach_what_porter_stemming_alone_does_not(store):
    cats = store.add("I am allergic to cats", sensitivity=LOW).fact
    # Porter stems "allergy" to "allergi" and "allergic" to "allerg": no shared term.
    assert [f.id for f in store.recall("allergy")] == [cats.id]
    assert [f.id for f in store.recall("allergies?")] == [cats.id]
    assert build_match_query("allergy") == '"allergy" OR "aller"*'


def test_recall_counts_each_use(store, clock):
    facts = _seed(store)
    clock.advance(DAY)
    store.recall("what is my dog called")
    clock.advance(DAY)
    found = store.recall("dog Rex")

    assert [f.id for f in found] == [facts["dog"].id]
    assert found[0].use_count == 2
    assert found[0].last_used_at == clock.now()
    stored = store.get(facts["dog"].id)
    assert (stored.use_count, stored.last_used_at) == (2, clock.now())
    assert _kinds(store, facts["dog"].id) == [EventKind.ADD, EventKind.USED, EventKind.USED]
    # Facts that were not returned were not used.
    assert store.get(facts["peanuts"].id).use_count == 0


def test_search_is_not_a_use(store):
    facts = _seed(store)
    assert store.search("dog")[0].id == facts["dog"].id
    assert store.get(facts["dog"].id).use_count == 0
    assert EventKind.USED not in _kinds(store, facts["dog"].id)


def test_pending_facts_are_not_recalled_until_approved(store):
    pending = store.add("I have diabetes", sensitivity=SECRET).fact
    assert store.recall("diabetes") == []
    assert store.get(pending.id).use_count == 0
    store.approve(pending.id)
    assert [f.id for f in store.recall("diabetes")] == [pending.id]


def test_superseded_facts_are_not_recalled(store):
    store.add("my home city is Paris", sensitivity=LOW, slot="user.home_city")
    berlin = store.add("my home city is Berlin", sensitivity=LOW, slot="user.home_city").fact
    assert [f.id for f in store.recall("home city")] == [berlin.id]
    assert store.recall("Paris") == []


def test_expired_facts_are_never_recalled_even_before_expire_runs(store, clock):
    fact = store.add(
        "I am in Lisbon this week", sensitivity=LOW, expires_at=clock.now() + 7 * DAY
    ).fact
    assert [f.id for f in store.recall("Lisbon")] == [fact.id]
    clock.advance(7 * DAY)
    assert store.recall("Lisbon") == []
    assert store.recall("Lisbon", now=clock.now() - DAY) != []  # `now` is honoured
    assert store.get(fact.id) is not None

    assert store.expire() == 1
    assert store.get(fact.id) is None
    assert _kinds(store, fact.id)[-1] is EventKind.EXPIRE
    assert store.expire() == 0


def test_recall_respects_the_sensitivity_ceiling(store):
    store.add("my sister Ann lives in Leeds", sensitivity=PERSONAL, status=FactStatus.ACTIVE)
    store.add("Leeds has good tea rooms", sensitivity=LOW)
    assert len(store.recall("Leeds")) == 2
    assert [f.text for f in store.recall("Leeds", max_sensitivity=LOW)] == [
        "Leeds has good tea rooms"
    ]


def test_filters_are_exact_even_when_many_better_matches_are_filtered_out(store):
    for i in range(80):
        store.add(f"secret garden note {i} garden garden", sensitivity=SECRET)  # pending
    wanted = store.add("the garden shed key is under the pot", sensitivity=LOW).fact
    assert [f.id for f in store.recall("garden")] == [wanted.id]


def test_a_fact_holding_every_word_is_found_even_when_dozens_score_higher_on_one_word(store):
    """Short facts holding one of the words outscore a long fact holding both, by bm25; the
    fact that answers the whole question must still come first."""
    for i in range(40):
        store.add(f"sister {i}", sensitivity=LOW)
        store.add(f"peanut {i}", sensitivity=LOW)
    wanted = store.add(
        "long ago at the lake house my younger sister once told everyone at the table a story "
        "about the day she found out she could not eat a single peanut without trouble",
        sensitivity=LOW,
    ).fact
    assert store.recall("sister peanut")[0].id == wanted.id


def test_recency_confirmation_and_use_break_ties(store, clock):
    old = store.add("my favourite colour is blue", sensitivity=LOW).fact
    clock.advance(365 * DAY)
    new = store.add("my favourite colour is green", sensitivity=LOW).fact
    assert [f.id for f in store.recall("favourite colour", limit=2)] == [new.id, old.id]
    # Confirming the old one makes it recent and confirmed: now it leads.
    store.add("My favourite colour is blue.", sensitivity=LOW)
    assert store.recall("favourite colour", limit=2)[0].id == old.id


def test_recall_limit(store):
    for i in range(10):
        store.add(f"tea fact number {i}", sensitivity=LOW)
    assert len(store.recall("tea")) == 5
    assert len(store.recall("tea", limit=3)) == 3


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "?!…",
        '"',
        "*",
        "NEAR(",
        'dog" OR "x',
        "AND OR NOT",
        "^dog",
        "-dog",
        "dog:rex",
        "col:x",
        "'; DROP TABLE facts; --",
        "(((",
        "a" * 5000,
        "ÄÖÜ ß é 中文 🙂",
    ],
)
def test_untrusted_queries_never_break_recall(store, query):
    store.add("my dog is called Rex", sensitivity=LOW)
    found = store.recall(query)
    assert isinstance(found, list)
    assert store.count() == 1
    if not any(ch.isalnum() for ch in query):
        assert found == []


def test_stopwords_do_not_match_everything_but_stand_alone_queries_still_work(store):
    store.add("my dog is called Rex", sensitivity=LOW)
    store.add("my cat is called Tom", sensitivity=LOW)
    assert [f.text for f in store.recall("what is my dog called?", limit=1)] == [
        "my dog is called Rex"
    ]
    assert build_match_query("who am I") is not None


# --- forgetting, for good --------------------------------------------------------------------


def _marked(store: MemoryStore) -> dict[str, Fact]:
    facts = {
        "QXALPHAMARK": store.add(
            "my locker code word is QXALPHAMARK", sensitivity=LOW, category="work"
        ),
        "QXBRAVOMARK": store.add(
            "my neighbour is called QXBRAVOMARK", sensitivity=PERSONAL, category="people"
        ),
        "QXCHARLIEMARK": store.add(
            "I like the band QXCHARLIEMARK", sensitivity=LOW, category="music"
        ),
    }
    return {marker: outcome.fact for marker, outcome in facts.items()}


def _forget_each_way(store: MemoryStore, how: str, fact: Fact, clock: ManualClock) -> None:
    if how == "forget":
        assert store.forget(fact.id) == 1
    elif how == "category":
        assert store.forget_category(fact.category) == 1
    elif how == "reject":
        store.reject(fact.id)
    elif how == "expire":
        clock.advance(2 * DAY)
        assert store.expire() == 1


@pytest.mark.parametrize("how", ["forget", "category", "reject", "expire"])
def test_forgotten_text_is_gone_from_every_file(tmp_path, clock, how):
    path = tmp_path / "memory.db"
    store = _open(path, False, clock)
    kept = _marked(store)
    target = store.add(
        "I was treated at QXDELTAMARK clinic",
        sensitivity=SECRET,
        category="health",
        evidence="remember I was treated at QXDELTAMARK clinic",
        expires_at=clock.now() + DAY if how == "expire" else None,
    ).fact
    store.recall("QXDELTAMARK")  # nothing (pending), but the query went through the index
    store.approve(target.id) if how != "reject" else None
    store.recall("clinic QXDELTAMARK") if how != "reject" else None
    assert _holds(path, "QXDELTAMARK")

    _forget_each_way(store, how, target, clock)

    # Already gone while the store is still open (a crash now would not bring it back) ...
    assert _holds(path, "QXDELTAMARK") == []
    store.close()
    # ... and after closing, from the main file, the WAL and the shared-memory file.
    assert _holds(path, "QXDELTAMARK") == []
    for marker in kept:
        assert _holds(path, marker), f"{marker} was lost"
    # The events record the deletion with a digest, not the text.
    reopened = _open(path, False, clock)
    try:
        assert reopened.get(target.id) is None
        assert reopened.recall("QXDELTAMARK clinic") == []
        assert reopened.integrity_check() == "ok"
    finally:
        reopened.close()


def test_forget_removes_every_version_of_a_fact(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = _open(path, False, clock)
    first = store.add("my home city is QXOLDTOWN", sensitivity=LOW, slot="user.home_city").fact
    second = store.add("my home city is QXMIDTOWN", sensitivity=LOW, slot="user.home_city").fact
    third = store.edit(second.id, "my home city is QXNEWTOWN")
    keep = store.add("I like QXKEEPER biscuits", sensitivity=LOW).fact

    assert store.forget(second.id) == 3
    store.close()
    for marker in ("QXOLDTOWN", "QXMIDTOWN", "QXNEWTOWN"):
        assert _holds(path, marker) == [], marker
    assert _holds(path, "QXKEEPER")
    store = _open(path, False, clock)
    try:
        assert [store.get(i) for i in (first.id, second.id, third.id)] == [None] * 3
        assert store.get(keep.id) is not None
        assert store.forget("no-such-id") == 0
    finally:
        store.close()


def test_forget_all_removes_facts_and_anchors(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = _open(path, False, clock)
    _marked(store)
    store.add_anchor("always answer in QXANCHORMARK style")
    assert store.forget_all() == 3
    assert store.facts(include_superseded=True) == []
    assert store.anchors() == []
    assert store.recall("QXALPHAMARK") == []
    store.close()
    for marker in ("QXALPHAMARK", "QXBRAVOMARK", "QXCHARLIEMARK", "QXANCHORMARK"):
        assert _holds(path, marker) == [], marker


def test_forget_category_takes_only_that_category(store):
    facts = _marked(store)
    assert store.forget_category("people") == 1
    assert store.get(facts["QXBRAVOMARK"].id) is None
    assert store.count() == 2
    assert store.forget_category("nothing here") == 0


def test_events_hold_digests_never_text(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = _open(path, False, clock)
    texts = ["my dog is called QXEVENTDOG", "I have QXEVENTSECRET", "my city is QXEVENTCITY"]
    dog = store.add(texts[0], sensitivity=LOW, slot="user.dog").fact
    secret = store.add(texts[1], sensitivity=SECRET).fact
    store.add(texts[2], sensitivity=LOW, slot="user.city")
    store.add("my city is QXEVENTTOWN", sensitivity=LOW, slot="user.city")
    store.recall("dog")
    store.add(texts[0], sensitivity=LOW)
    store.edit(dog.id, "my dog is called QXEVENTREX")
    store.reject(secret.id)
    store.add_anchor("QXEVENTANCHOR first")
    store.export_json()
    store.export_markdown()
    store.forget_all()

    rows = list(store.database.db["events"].rows)
    kinds = {row["kind"] for row in rows}
    assert {
        "ADD",
        "USED",
        "CONFIRM",
        "EDIT",
        "SUPERSEDE",
        "REJECT",
        "ANCHOR_SET",
        "EXPORT",
        "DELETE",
    } <= kinds
    for row in rows:
        for value in row.values():
            assert "QXEVENT" not in str(value).upper(), row
    digests = {row["digest"] for row in rows if row["kind"] == "ADD"}
    assert hashlib.sha256(texts[1].encode()).hexdigest() in digests
    store.close()
    assert _holds(path, "QXEVENT") == []


# --- the refuse hook -------------------------------------------------------------------------


def _refuse(text: str) -> str | None:
    return "That looks like a password; it was not stored." if "hunter2" in text else None


def test_refuse_hook_blocks_every_way_text_is_written(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = _open(path, False, clock, refuse=_refuse)
    fact = store.add("my dog is called Rex", sensitivity=LOW).fact
    events_before = len(store.events())

    attempts = [
        lambda: store.add("my password is hunter2", sensitivity=LOW),
        lambda: store.add("a harmless fact", sensitivity=LOW, evidence="pw hunter2"),
        lambda: store.edit(fact.id, "my dog's password is hunter2"),
        lambda: store.add_anchor("always use hunter2"),
        lambda: store.import_json(_export_of([_fact_dict("login hunter2")])),
    ]
    for attempt in attempts:
        with pytest.raises(CredentialRefused, match="looks like a password"):
            attempt()

    assert store.count() == 1
    assert store.anchors() == []
    assert len(store.events()) == events_before
    store.close()
    assert _holds(path, "hunter2") == []


# --- anchors ---------------------------------------------------------------------------------


def test_anchors_keep_their_order_and_can_be_moved_and_removed(store):
    a = store.add_anchor("Call me Sam.")
    b = store.add_anchor("I use metric units.")
    c = store.add_anchor("Answer briefly.")
    assert [x.id for x in store.anchors()] == [a.id, b.id, c.id]
    assert [x.position for x in store.anchors()] == [0, 1, 2]

    moved = store.move_anchor(c.id, 0)
    assert moved.position == 0
    assert [x.id for x in store.anchors()] == [c.id, a.id, b.id]
    store.move_anchor(c.id, 99)  # clamped to the end
    assert [x.id for x in store.anchors()] == [a.id, b.id, c.id]

    store.remove_anchor(a.id)
    assert [(x.id, x.position) for x in store.anchors()] == [(b.id, 0), (c.id, 1)]
    with pytest.raises(AnchorNotFoundError):
        store.remove_anchor(a.id)
    with pytest.raises(AnchorNotFoundError):
        store.move_anchor("nope", 1)
    # Anchors are not facts: they never come back from recall or list.
    assert store.recall("metric units") == []
    assert store.facts() == []


def test_anchors_prompt_fits_the_budget_in_order(store):
    store.add_anchor("Call me Sam.")  # "- Call me Sam." = 14 chars
    store.add_anchor("I use metric units.")  # 21 chars + newline
    store.add_anchor("Hi")  # would fit, but comes after one that does not

    full = store.anchors_prompt(1000)
    assert full.text == "- Call me Sam.\n- I use metric units.\n- Hi"
    assert full.used_chars == len(full.text)
    assert full.omitted == []

    tight = store.anchors_prompt(20)
    assert tight.text == "- Call me Sam."
    assert (tight.used_chars, tight.budget_chars) == (14, 20)
    assert [a.text for a in tight.omitted] == ["I use metric units.", "Hi"]

    assert store.anchors_prompt(0).text == ""
    assert len(store.anchors_prompt(0).omitted) == 3


# --- export and import -------------------------------------------------------------------------


def _fact_dict(text: str, **fields: Any) -> dict[str, Any]:
    return Fact(
        id="x" + hashlib.md5(text.encode()).hexdigest()[:8],
        text=text,
        created_at=1_600_000_000.0,
        **fields,
    ).model_dump(mode="json")


def _export_of(facts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema": "chamberlain.memory", "schema_version": 1, "facts": facts, "anchors": []}


def test_export_import_round_trip_arrives_pending(tmp_path, clock):
    source = _open(tmp_path / "a.db", True, clock)
    dog = source.add("my dog is called Rex", sensitivity=LOW, category="pets").fact
    source.add("I have asthma", sensitivity=SECRET, category="health", reasons=["health"])
    source.add(
        "my home city is Paris",
        sensitivity=PERSONAL,
        slot="user.home_city",
        status=FactStatus.ACTIVE,
    )
    source.add(
        "my home city is Berlin",
        sensitivity=PERSONAL,
        slot="user.home_city",
        status=FactStatus.ACTIVE,
    )
    source.add_anchor("Call me Sam.")
    exported = json.loads(json.dumps(source.export_json()))
    markdown = source.export_markdown()
    assert EventKind.EXPORT in [e.kind for e in source.events()]

    assert exported["schema"] == "chamberlain.memory"
    assert exported["schema_version"] == 1
    assert len(exported["facts"]) == 4  # the superseded Paris included
    assert [a["text"] for a in exported["anchors"]] == ["Call me Sam."]
    for text in ("my dog is called Rex", "I have asthma", "Paris", "Berlin", "Call me Sam."):
        assert text in markdown

    # Into the same store: everything is already there.
    assert source.import_json(exported) == []
    assert source.get(dog.id).status is FactStatus.ACTIVE
    source.close()

    target = _open(tmp_path / "b.db", False, clock)
    try:
        imported = target.import_json(exported)
        assert sorted(f.text for f in imported) == [
            "I have asthma",
            "my dog is called Rex",
            "my home city is Berlin",
        ]
        for fact in imported:
            assert fact.status is FactStatus.PENDING
            assert fact.source is FactSource.IMPORT
            assert target.get(fact.id) == fact
        asthma = next(f for f in imported if f.text == "I have asthma")
        assert (asthma.sensitivity, asthma.category, asthma.reasons) == (
            SECRET,
            "health",
            ["health"],
        )
        assert target.recall("dog") == []  # pending: not until approved
        assert target.anchors() == []  # anchors are pinned by hand, never imported
        assert target.import_json(exported) == []  # duplicates skipped
    finally:
        target.close()


def test_import_can_raise_sensitivity_but_never_lower_it(store):
    data = _export_of(
        [
            _fact_dict("I have asthma", sensitivity="personal"),
            _fact_dict("I take insulin", sensitivity="secret"),
        ]
    )
    imported = store.import_json(
        data, sensitivity_floor=lambda text: SECRET if "asthma" in text else LOW
    )
    assert {f.text: f.sensitivity for f in imported} == {
        "I have asthma": SECRET,
        "I take insulin": SECRET,
    }


def _garbage() -> list[Any]:
    good = _fact_dict("my dog is called Rex")
    return [
        None,
        [],
        "chamberlain.memory",
        {"schema": "other", "schema_version": 1, "facts": []},
        {"schema": "chamberlain.memory", "schema_version": 2, "facts": []},
        {"schema": "chamberlain.memory", "schema_version": "1", "facts": []},
        {"schema": "chamberlain.memory", "schema_version": True, "facts": []},
        {"schema": "chamberlain.memory", "schema_version": 1},
        {"schema": "chamberlain.memory", "schema_version": 1, "facts": {}},
        {**_export_of([good]), "extra": 1},
        _export_of([good, "not an object"]),
        _export_of([good, {**good, "text": ""}]),
        _export_of([good, {**good, "sensitivity": "top-secret"}]),
        _export_of([good, {**good, "created_at": "yesterday"}]),
        _export_of([good, {**good, "surprise": True}]),
        _export_of([good, {k: v for k, v in good.items() if k != "text"}]),
        {**_export_of([good]), "anchors": "none"},
        {**_export_of([good]), "anchors": [{"id": "a", "text": "x"}]},
    ]


@pytest.mark.parametrize("data", _garbage(), ids=[f"garbage{i}" for i in range(len(_garbage()))])
def test_import_of_anything_else_fails_and_writes_nothing(store, data):
    store.add("an existing fact", sensitivity=LOW)
    events_before = store.events()
    with pytest.raises(ImportFormatError, match=r"(?i)nothing was imported"):
        store.import_json(data)
    assert store.count() == 1
    assert store.events() == events_before


# --- reading ---------------------------------------------------------------------------------


def test_list_filters(store):
    store.add("a low fact", sensitivity=LOW, category="general")
    store.add("a personal fact", sensitivity=PERSONAL, category="people")
    store.add("a secret fact", sensitivity=SECRET, category="health")
    assert len(store.facts()) == 3
    assert [f.text for f in store.facts(status=FactStatus.PENDING, sensitivity=SECRET)] == [
        "a secret fact"
    ]
    assert [f.text for f in store.facts(status="active")] == ["a low fact"]
    assert [f.text for f in store.facts(category="people")] == ["a personal fact"]
    assert len(store.facts(limit=2)) == 2


def test_search_sees_every_status(store):
    store.add("my home city is Paris", sensitivity=LOW, slot="user.home_city")
    store.add("my home city is Berlin", sensitivity=LOW, slot="user.home_city")
    store.add("I visited Paris twice", sensitivity=PERSONAL)
    found = {f.text: f.status for f in store.search("Paris")}
    assert found == {
        "my home city is Paris": FactStatus.SUPERSEDED,
        "I visited Paris twice": FactStatus.PENDING,
    }
    assert [f.text for f in store.search("Paris", status=FactStatus.PENDING)] == [
        "I visited Paris twice"
    ]
    assert store.search("") == []


def test_history_of_unknown_fact_is_empty(store):
    assert store.history("nope") == []
    assert store.get("nope") is None


def test_closed_store_says_so(tmp_path, clock):
    store = _open(tmp_path / "memory.db", False, clock)
    store.close()
    store.close()
    with pytest.raises(MemoryStoreError, match="closed"):
        store.add("x y", sensitivity=LOW)


def test_integrity_check_is_ok(store):
    _seed(store)
    assert store.integrity_check() == "ok"


# --- concurrency -------------------------------------------------------------------------------


@pytest.mark.parametrize("encrypted", [False, True], ids=["plaintext", "encrypted"])
def test_reader_connection_reads_while_another_writes(tmp_path, clock, encrypted):
    path = tmp_path / "memory.db"
    writer = _open(path, encrypted, clock)
    reader = _open(path, encrypted, clock)
    writer.add("fact zero", sensitivity=LOW)
    errors: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(1, 150):
                writer.add(f"fact number {i}", sensitivity=LOW)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(len(reader.facts(limit=10_000)))
                reader.search("fact")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), threading.Thread(target=read)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        assert seen
        assert seen == sorted(seen)  # never went backwards, never saw half a write
        assert reader.count() == 150
    finally:
        writer.close()
        reader.close()


def test_open_read_snapshot_does_not_block_the_writer(tmp_path, clock):
    path = tmp_path / "memory.db"
    writer = _open(path, False, clock)
    reader = _open(path, False, clock)
    try:
        writer.add("first", sensitivity=LOW)
        conn = reader.database.conn
        conn.execute("BEGIN")
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1
        started = time.monotonic()
        writer.add("second", sensitivity=LOW)  # WAL: no waiting for the reader
        assert time.monotonic() - started < 1.0
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 1  # its snapshot
        conn.execute("COMMIT")
        assert reader.count() == 2
    finally:
        writer.close()
        reader.close()


def test_one_store_from_many_worker_threads(tmp_path, clock):
    store = _open(tmp_path / "memory.db", True, clock)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            outcomes = list(
                pool.map(lambda i: store.add(f"worker fact {i % 25}", sensitivity=LOW), range(100))
            )
            list(pool.map(lambda _: store.recall("worker fact"), range(20)))
        assert store.count() == 25
        assert sum(o.action == "added" for o in outcomes) == 25
        assert store.integrity_check() == "ok"
    finally:
        store.close()


def test_expire_drops_used_events_older_than_a_year(tmp_path):
    from memory.store.facts import USED_EVENTS_KEEP_S

    clock = _RetentionClock()
    store = MemoryStore(open_database(tmp_path / "m.db", encrypted=False), clock)
    fact = store.add("my dog is called Rex", sensitivity=Sensitivity.LOW).fact
    assert store.recall("dog Rex")
    clock.t += USED_EVENTS_KEEP_S + 1
    assert store.recall("dog Rex")
    store.expire()
    used = [e for e in store.events(fact_id=fact.id) if e.kind is EventKind.USED]
    assert len(used) == 1
    assert store.get(fact.id).use_count == 2
    store.close()


class _RetentionClock:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def now(self) -> float:
        return self.t


# --- a full disk, a read-only file, text that is not text ---------------------------------------


def _fill_the_disk(store: MemoryStore) -> None:
    """Stand-in for a full disk: SQLite's page cap, at the pages the file has now, makes the
    next write that needs a page fail with SQLITE_FULL ("database or disk is full"), the same
    error, from the same place in SQLite, that a full disk gives."""
    conn = store.database.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def _add_until_it_fails(store: MemoryStore) -> None:
    for i in range(2000):
        store.add(f"another fact {i} " + "x" * 300, sensitivity=LOW)


def test_a_full_disk_during_add_is_a_plain_error_and_loses_nothing(store):
    from memory.db import MemoryDiskFullError

    kept = [store.add(f"fact number {i}", sensitivity=LOW).fact for i in range(20)]
    _fill_the_disk(store)
    with pytest.raises(MemoryDiskFullError) as caught:
        _add_until_it_fails(store)
    folder = store.database.path.parent
    assert str(caught.value) == (
        f"The disk holding {folder} is full: the fact was not saved, and nothing already "
        "saved was lost; free some space, then try again."
    )
    assert isinstance(caught.value, MemoryStoreError)
    assert not store.database.conn.in_transaction
    assert {f.id for f in kept} <= {f.id for f in store.facts()}
    assert store.integrity_check() == "ok"
    # Space freed: the store goes on as before.
    store.database.conn.execute("PRAGMA max_page_count = 1073741823")
    assert store.add("written after space was freed", sensitivity=LOW).action == "added"


def test_a_read_only_memory_file_says_so_and_never_calls_the_file_damaged(store):
    """Stand-in for a read-only home: query_only makes SQLite refuse writes with the error a
    read-only file gives (SQLITE_READONLY)."""
    from memory.db import MemoryDiskError

    store.add("my dog is called Rex", sensitivity=LOW)
    store.database.conn.execute("PRAGMA query_only = 1")
    with pytest.raises(MemoryDiskError) as caught:
        store.add("my cat is called Tom", sensitivity=LOW)
    message = str(caught.value)
    assert "read-only" in message
    assert "the fact was not saved" in message
    assert "damaged" not in message
    assert "wrong key" not in message
    store.database.conn.execute("PRAGMA query_only = 0")
    assert [f.text for f in store.facts()] == ["my dog is called Rex"]


def test_text_that_is_not_valid_utf8_is_a_clear_error_not_a_crash(store):
    """`memory add $'bad \\xff utf8'`: Python keeps the byte as a lone surrogate."""
    bad = "bad \udcff utf8"
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        store.add(bad, sensitivity=LOW)
    fact = store.add("my dog is called Rex", sensitivity=LOW).fact
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        store.edit(fact.id, bad)
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        store.add_anchor(bad)
    assert [f.text for f in store.facts()] == ["my dog is called Rex"]
    # The user's own words kept as evidence are stored with the bad byte replaced.
    kept = store.add("my cat is called Tom", sensitivity=LOW, evidence=bad).fact
    assert kept.evidence == "bad ? utf8"


def test_a_megabyte_of_text_is_refused_on_its_length_before_any_detector_reads_it(tmp_path, clock):
    from memory.store.rows import MAX_TEXT_CHARS, check_text

    screened: list[str] = []

    def refuse(text: str) -> str | None:
        screened.append(text)
        return None

    store = _open(tmp_path / "memory.db", False, clock, refuse=refuse)
    huge = "my dog is called Rex " * 50_000
    with pytest.raises(InvalidInputError, match=f"at most {MAX_TEXT_CHARS}"):
        check_text(huge)
    with pytest.raises(InvalidInputError, match="too long"):
        store.add(huge, sensitivity=LOW)
    assert screened == []
    assert check_text("  my dog is called Rex ") == "my dog is called Rex"
    store.close()


# --- listing: saying when there are more --------------------------------------------------------


def test_a_listing_says_how_many_there_are_when_it_stops_at_its_limit(plain):
    for i in range(12):
        plain.add(f"fact number {i}", sensitivity=LOW)
    page = plain.listing(limit=5)
    assert len(page.facts) == 5
    assert page.total == 12
    assert page.more is True
    whole = plain.listing()
    assert (len(whole.facts), whole.total, whole.more) == (12, 12, False)
    assert plain.listing(status="pending").total == 0


# --- reading without the write lock -------------------------------------------------------------


def test_the_start_up_cleanup_and_reads_need_no_write_lock_when_nothing_expired(tmp_path, clock):
    """Every memory command runs expire() first; with nothing due it must only read, so
    `memory list` works while another process holds the write lock."""
    import sqlcipher3  # type: ignore[import-untyped]

    path = tmp_path / "memory.db"
    with _open(path, True, clock) as first:
        first.add("my dog is called Rex", sensitivity=LOW)
    writer = sqlcipher3.connect(str(path), isolation_level=None)
    writer.execute(f"PRAGMA key = \"x'{KEY.hex()}'\"")
    writer.execute("BEGIN IMMEDIATE")
    try:
        store = _open(path, True, clock)
        store.database.conn.execute("PRAGMA busy_timeout = 50")
        assert store.expire() == 0
        assert [f.text for f in store.facts()] == ["my dog is called Rex"]
        store.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_expire_still_deletes_what_is_due(store, clock):
    fact = store.add("the parking code is 4411", sensitivity=LOW, expires_at=clock.t + 60).fact
    clock.advance(61)
    assert store.expire() == 1
    assert store.get(fact.id) is None


# --- recall bookkeeping without an fsync --------------------------------------------------------


def test_recall_bookkeeping_commits_without_a_full_sync_and_adds_still_commit_at_full(plain):
    """SQLite's statement trace shows the synchronous level each commit runs at: FULL fsyncs
    the WAL on commit, NORMAL does not (a power cut may roll back a few use counts, never a
    fact)."""
    plain.add("my dog is called Rex", sensitivity=LOW)
    trace: list[str] = []
    plain.database.conn.set_trace_callback(trace.append)
    try:
        assert plain.recall("dog Rex")
        recall_trace = list(trace)
        trace.clear()
        plain.add("my cat is called Tom", sensitivity=LOW)
        add_trace = list(trace)
    finally:
        plain.database.conn.set_trace_callback(None)

    def level_at_commit(statements: list[str]) -> str:
        level = "FULL"
        for sql in statements:
            if sql.startswith("PRAGMA synchronous"):
                level = sql.split("=")[1].strip()
            if sql == "COMMIT":
                return level
        raise AssertionError("no commit")

    assert level_at_commit(recall_trace) == "NORMAL"
    assert level_at_commit(add_trace) == "FULL"
    assert plain.database.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


# --- deeply nested imports ------------------------------------------------------------------------


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_a_deeply_nested_import_is_a_clear_error_and_writes_nothing(store):
    data = {
        "schema": "chamberlain.memory",
        "schema_version": 1,
        "facts": [{"id": "a", "text": "my dog", "created_at": 1.0, "reasons": _nested(100_000)}],
    }
    with pytest.raises(ImportFormatError, match="nested too deeply"):
        store.import_json(data)
    assert store.count() == 0


def test_a_deeply_nested_import_file_is_a_clear_error_naming_the_file(tmp_path):
    from memory.store.export import read_import

    path = tmp_path / "export.json"
    path.write_text("[" * 100_000, "utf-8")
    with pytest.raises(ImportFormatError) as caught:
        read_import(path)
    assert str(path) in str(caught.value)
    assert "nested too deeply" in str(caught.value)
    path.write_text('{"schema": ', "utf-8")
    with pytest.raises(ImportFormatError, match="not valid JSON"):
        read_import(path)
    assert read_import(_write(tmp_path / "ok.json", '{"a": 1}')) == {"a": 1}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path


def test_recall_still_answers_when_its_use_counts_cannot_be_written(store):
    """A read-only home (query_only stands in for it: SQLite refuses the write with the error
    a read-only file gives): the facts are recalled, only their use is not counted."""
    fact = store.add("my dog is called Rex", sensitivity=LOW).fact
    store.database.conn.execute("PRAGMA query_only = 1")
    [recalled] = store.recall("dog Rex")
    assert recalled.id == fact.id
    assert recalled.use_count == 0
    store.database.conn.execute("PRAGMA query_only = 0")
    assert store.recall("dog Rex")[0].use_count == 1
