"""memory/store/recall.py: which facts a message recalls, in what order, and what a recall
counts as used (and at what sync level), on real SQLite files in both modes.
"""

from __future__ import annotations

import pytest

from memory.store.facts import MemoryStore
from memory.store.recall import build_match_query
from memory.types import EventKind, Fact, FactStatus, Sensitivity
from tests.support.memory_store import DAY, kinds

LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


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
    assert kinds(store, facts["dog"].id) == [EventKind.ADD, EventKind.USED, EventKind.USED]
    # Facts that were not returned were not used.
    assert store.get(facts["peanuts"].id).use_count == 0


def test_search_is_not_a_use(store):
    facts = _seed(store)
    assert store.search("dog")[0].id == facts["dog"].id
    assert store.get(facts["dog"].id).use_count == 0
    assert EventKind.USED not in kinds(store, facts["dog"].id)


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
    assert kinds(store, fact.id)[-1] is EventKind.EXPIRE
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


# --- use counts without an fsync, or not at all --------------------------------------------------


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
