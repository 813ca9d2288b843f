"""memory/store/facts.py: adding and dedupe, slots and supersede, edits and consent, forgetting
for good, expiry, and reading facts back (listing, search, history).

Real SQLite files in tmp_path (plaintext where a test reads the file's raw bytes, both modes
where encryption could change the behaviour). Time comes from a manual clock.
"""

from __future__ import annotations

import pytest

from core.clock import ManualClock
from memory.db import open_database
from memory.store.errors import (
    FactNotFoundError,
    FactStateError,
    InvalidInputError,
)
from memory.store.facts import USED_EVENTS_KEEP_S, MemoryStore
from memory.types import EventKind, Fact, FactSource, FactStatus, Sensitivity
from tests.support.memory_store import DAY, KEY, holds, kinds, open_store

LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


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
    assert kinds(store, fact.id) == [EventKind.ADD]


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
    assert kinds(store, first.id) == [EventKind.ADD, EventKind.CONFIRM]


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


def test_past_expiry_is_refused(store, clock):
    with pytest.raises(InvalidInputError, match="already past"):
        store.add("a fact", sensitivity=LOW, expires_at=clock.now() - 1)


# --- slots, supersede, edits, consent ------------------------------------------------------------


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
    assert kinds(store, paris.id) == [EventKind.ADD, EventKind.SUPERSEDE]
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
    assert EventKind.CONFIRM in kinds(store, new.fact.id)


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
    assert kinds(store, new.id) == [EventKind.EDIT]
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
    assert kinds(store, pending.id) == [EventKind.ADD, EventKind.REJECT]


# --- forgetting, for good ------------------------------------------------------------------------


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
    store = open_store(path, False, clock)
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
    assert holds(path, "QXDELTAMARK")

    _forget_each_way(store, how, target, clock)

    # Already gone while the store is still open (a crash now would not bring it back) ...
    assert holds(path, "QXDELTAMARK") == []
    store.close()
    # ... and after closing, from the main file, the WAL and the shared-memory file.
    assert holds(path, "QXDELTAMARK") == []
    for marker in kept:
        assert holds(path, marker), f"{marker} was lost"
    # The events record the deletion with a digest, not the text.
    reopened = open_store(path, False, clock)
    try:
        assert reopened.get(target.id) is None
        assert reopened.recall("QXDELTAMARK clinic") == []
        assert reopened.integrity_check() == "ok"
    finally:
        reopened.close()


def test_forget_removes_every_version_of_a_fact(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = open_store(path, False, clock)
    first = store.add("my home city is QXOLDTOWN", sensitivity=LOW, slot="user.home_city").fact
    second = store.add("my home city is QXMIDTOWN", sensitivity=LOW, slot="user.home_city").fact
    third = store.edit(second.id, "my home city is QXNEWTOWN")
    keep = store.add("I like QXKEEPER biscuits", sensitivity=LOW).fact

    assert store.forget(second.id) == 3
    store.close()
    for marker in ("QXOLDTOWN", "QXMIDTOWN", "QXNEWTOWN"):
        assert holds(path, marker) == [], marker
    assert holds(path, "QXKEEPER")
    store = open_store(path, False, clock)
    try:
        assert [store.get(i) for i in (first.id, second.id, third.id)] == [None] * 3
        assert store.get(keep.id) is not None
        assert store.forget("no-such-id") == 0
    finally:
        store.close()


def test_forget_all_removes_facts_and_anchors(tmp_path, clock):
    path = tmp_path / "memory.db"
    store = open_store(path, False, clock)
    _marked(store)
    store.add_anchor("always answer in QXANCHORMARK style")
    assert store.forget_all() == 3
    assert store.facts(include_superseded=True) == []
    assert store.anchors() == []
    assert store.recall("QXALPHAMARK") == []
    store.close()
    for marker in ("QXALPHAMARK", "QXBRAVOMARK", "QXCHARLIEMARK", "QXANCHORMARK"):
        assert holds(path, marker) == [], marker


def test_forget_category_takes_only_that_category(store):
    facts = _marked(store)
    assert store.forget_category("people") == 1
    assert store.get(facts["QXBRAVOMARK"].id) is None
    assert store.count() == 2
    assert store.forget_category("nothing here") == 0


# --- expiry, and the start-up cleanup that needs no write lock -----------------------------------


def test_the_start_up_cleanup_and_reads_need_no_write_lock_when_nothing_expired(tmp_path, clock):
    """Every memory command runs expire() first; with nothing due it must only read, so
    `memory list` works while another process holds the write lock."""
    import sqlcipher3  # type: ignore[import-untyped]

    path = tmp_path / "memory.db"
    with open_store(path, True, clock) as first:
        first.add("my dog is called Rex", sensitivity=LOW)
    writer = sqlcipher3.connect(str(path), isolation_level=None)
    writer.execute(f"PRAGMA key = \"x'{KEY.hex()}'\"")
    writer.execute("BEGIN IMMEDIATE")
    try:
        store = open_store(path, True, clock)
        store.database.conn.execute("PRAGMA busy_timeout = 50")
        assert store.expire() == 0
        assert [f.text for f in store.facts()] == ["my dog is called Rex"]
        store.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_expire_still_deletes_what_is_due(store, clock):
    fact = store.add("the parking code is 4411", sensitivity=LOW, expires_at=clock.now() + 60).fact
    clock.advance(61)
    assert store.expire() == 1
    assert store.get(fact.id) is None


def test_expire_drops_used_events_older_than_a_year(tmp_path):
    clock = ManualClock(1_800_000_000.0)
    store = MemoryStore(open_database(tmp_path / "m.db", encrypted=False), clock)
    fact = store.add("my dog is called Rex", sensitivity=Sensitivity.LOW).fact
    assert store.recall("dog Rex")
    clock.advance(USED_EVENTS_KEEP_S + 1)
    assert store.recall("dog Rex")
    store.expire()
    used = [e for e in store.events(fact_id=fact.id) if e.kind is EventKind.USED]
    assert len(used) == 1
    assert store.get(fact.id).use_count == 2
    store.close()


# --- reading -------------------------------------------------------------------------------------


def test_facts_filter_by_status_sensitivity_and_category(store):
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
