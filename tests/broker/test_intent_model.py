"""The learned intent classifier: stable features, the shipped weights, clear errors, and a
training script that reproduces its file byte for byte."""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.intent_model import training_script
from broker.router.intent_model import (
    MAX_CHARS,
    MAX_WEIGHTS_BYTES,
    IntentModel,
    IntentModelError,
    bucket,
    feature_names,
    features,
    normalise,
    readable,
)
from broker.types import Intent

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "resources" / "intent_model.json"
SCRIPT = REPO / "scripts" / "train_intent_model.py"
# It grew from 1.1 to 1.9 MB when the tuning dialogues' first turns (some 3700 messages) joined
# its training data, and to 2.7 MB with their later turns that change the intent (some 5900
# more); it loads in ~27 ms here (19 ms at 1.9 MB; docs/BENCHMARKS.md, round 7). 2.9 MB with
# issue 24's blind sets, 27 ms once the packed arrays were checked in C (issue 24, round 2); the
# cap leaves room for a few more sets before its load time must be looked at again.
SIZE_CAP = 3_500_000

# One obvious message per intent, written for this test and in none of the data files.
OBVIOUS: dict[str, Intent] = {
    "could you write a short poem about the sea": Intent.CHAT_ONLY,
    "search the web for the opening hours of the city library": Intent.LOOKUP_SEARCH,
    "open https://example.net/blog and summarise it": Intent.BROWSE_ONCE,
    "figure out why my laptop gets so hot when it is idle": Intent.ONE_SHOT_DISCOVERY,
    "describe what is showing on my screen at this moment": Intent.SCREEN_OBSERVE,
    "list the files in ~/Documents/scans": Intent.FILE_TASK,
    "run `uname -r`": Intent.SYSTEM_TASK,
    "what did i tell you my godmother is called": Intent.MEMORY_READ,
    "please remember that my godmother is called Ottilie": Intent.MEMORY_WRITE,
}


@pytest.fixture(scope="module")
def model() -> IntentModel:
    return IntentModel.load()


def test_the_obvious_messages_are_in_no_data_file() -> None:
    """Otherwise the next test would only show that the model remembers its training data."""
    data = [REPO / "tests" / "broker" / "router_corpus.py"]
    data += sorted((REPO / "tests" / "broker" / "data").glob("*.jsonl"))
    everything = "\n".join(path.read_text("utf-8").lower() for path in data)
    for text in OBVIOUS:
        assert text.lower() not in everything, text


@pytest.mark.parametrize(("text", "intent"), OBVIOUS.items())
def test_the_shipped_weights_route_an_obvious_message_to_its_intent(
    model: IntentModel, text: str, intent: Intent
) -> None:
    prediction = model.predict(text)
    assert prediction.intent is intent, prediction.ranked[:3]
    assert prediction.ranked[0] == (prediction.intent, prediction.probability)
    assert {i for i, _ in prediction.ranked} == set(Intent)
    assert sum(p for _, p in prediction.ranked) == pytest.approx(1.0)


def test_the_same_text_gets_the_same_prediction_every_time(model: IntentModel) -> None:
    text = "hey can u check whats taking up all the room on my drive"
    first = model.predict(text)
    again = IntentModel.load().predict(text)
    assert again.ranked == first.ranked
    assert again.explain(10) == first.explain(10)


def test_feature_hashing_is_the_same_in_another_process_and_never_uses_hash(
    model: IntentModel,
) -> None:
    """Python's hash() of a str changes with PYTHONHASHSEED; the buckets must not."""
    text = "Whats on my screen rn? https://example.org ~/notes.txt"
    names = feature_names(text)
    code = (
        "import json, sys\n"
        "from broker.router.intent_model import IntentModel, bucket, feature_names\n"
        "text = sys.argv[1]\n"
        "model = IntentModel.load()\n"
        "print(json.dumps({'buckets': [bucket(n, 2**18) for n in feature_names(text)],\n"
        "                  'ranked': [[i.value, p] for i, p in model.predict(text).ranked]}))\n"
    )
    results = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-c", code, text],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        results.append(json.loads(done.stdout))
    assert results[0] == results[1]
    assert results[0]["buckets"] == [bucket(name, 2**18) for name in names]
    here = [[intent.value, p] for intent, p in model.predict(text).ranked]
    assert results[0]["ranked"] == here
    # Pinned: the shipped weights were trained with these buckets. If the hash changes, every
    # weight lands in the wrong place; retrain and update this value deliberately.
    assert bucket("w\x1fresearch", 2**18) == 189011


def test_features_are_lowercased_nfkc_and_word_bounded() -> None:
    names = {readable(name) for name in feature_names("ＷＩＦＩ What's")}
    assert 'word "wifi"' in names  # NFKC folds full-width letters, and it is lowercased
    assert 'word "whats"' in names  # "what's" and "whats" are one word
    assert 'chars " wif"' in names
    assert 'words "wifi whats"' in names
    assert not any(name.startswith("chars") and "i w" in name for name in names)
    vector = features("ＷＩＦＩ What's", word_weight=2.0)
    assert sum(v * v for v in vector.values()) == pytest.approx(1.0)


def test_only_the_first_max_chars_of_a_long_paste_are_read(model: IntentModel) -> None:
    head = "remember that my locker code is 1234 " * 100
    long = head[:MAX_CHARS] + "run `rm -rf /` now " * 5000
    assert model.predict(long).ranked == model.predict(head[:MAX_CHARS]).ranked


def test_a_message_with_no_words_still_gets_a_prediction(model: IntentModel) -> None:
    for text in ("", "   ", "?!…"):
        prediction = model.predict(text)
        assert prediction.intent in Intent
        assert 0.0 < prediction.probability <= 1.0


def test_explain_names_the_real_features_that_pushed_towards_the_intent(
    model: IntentModel,
) -> None:
    text = "please remember that my godmother is called Ottilie"
    prediction = model.predict(text)
    top = prediction.explain(5)
    assert len(top) == 5
    present = {readable(name) for name in feature_names(text)}
    assert all(name in present for name, _ in top), top
    pushes = [push for _, push in top]
    assert pushes == sorted(pushes, reverse=True)
    assert all(push > 0 for push in pushes)
    assert any("remember" in name for name, _ in prediction.explain(10))


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, "utf-8")
    return path


def _shipped() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(SHIPPED.read_text("utf-8"))
    return loaded


def _packed(data: dict[str, Any], **changes: object) -> dict[str, Any]:
    """The shipped file with its packed weights changed; `rows` follows `buckets` unless given."""
    weights = dict(data["weights"])
    weights.update(changes)
    if "buckets" in changes and "rows" not in changes:
        weights["rows"] = len(base64.b64decode(str(changes["buckets"]))) // 4
        if "values" not in changes:
            weights["values"] = _floats([0.0] * 9 * weights["rows"])
    return {**data, "weights": weights}


def _ids(buckets: list[int]) -> str:
    return base64.b64encode(struct.pack(f"<{len(buckets)}I", *buckets)).decode()


def _floats(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def _cut(packed: str) -> str:
    raw = base64.b64decode(packed)
    return base64.b64encode(raw[:-2]).decode()


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda d: SHIPPED.read_text("utf-8")[:5000], "not valid JSON"),
        (lambda d: {"hello": "world"}, "is not a chamberlain-intent-model file"),
        (lambda d: {**d, "version": 99}, "format version 99"),
        (lambda d: {**d, "intents": ["chat_only", "file_task"]}, "trained for the intents"),
        (
            lambda d: {**d, "features": {**d["features"], "char_ngrams": [2, 4]}},
            "made for other features",
        ),
        (lambda d: {**d, "weights": [[0, 1.0, 2.0]]}, "has no weights"),
        (lambda d: _packed(d, values="not base64!"), r"damaged weights \(values"),
        (lambda d: _packed(d, rows=d["weights"]["rows"] + 1), "for .* rows of 9"),
        (lambda d: _packed(d, values=_cut(d["weights"]["values"])), "damaged weights"),
        (lambda d: _packed(d, buckets=_ids([5, 5])), "distinct, ascending and below"),
        (lambda d: _packed(d, buckets=_ids([10**9])), "distinct, ascending and below"),
        (
            lambda d: _packed(d, buckets=_ids([1]), values=_floats([math.nan] * 9)),
            "not a finite number",
        ),
        (
            lambda d: _packed(d, buckets=_ids([1, 2]), values=_floats([0.5] * 8 + [math.inf] * 10)),
            "not a finite number",
        ),
        (
            # An inf and a -inf: their sum is not a number either.
            lambda d: _packed(
                d, buckets=_ids([1, 2]), values=_floats([math.inf] + [0.0] * 16 + [-math.inf])
            ),
            "not a finite number",
        ),
        (lambda d: _packed(d, buckets=_ids([1, 3, 2])), "distinct, ascending and below"),
        (lambda d: {**d, "bias": [0.0] * 9 + ["x"]}, "invalid bias"),
        (lambda d: {**d, "temperature": -1}, "invalid temperature"),
    ],
)
def test_a_damaged_or_foreign_weight_file_is_a_clear_error(
    tmp_path: Path, damage: object, says: str
) -> None:
    assert callable(damage)
    path = _write(tmp_path / "model.json", damage(_shipped()))
    with pytest.raises(IntentModelError, match=says) as raised:
        IntentModel.load(path)
    assert str(path) in str(raised.value)


def test_a_missing_weight_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(IntentModelError, match=r"cannot be read.*train_intent_model\.py"):
        IntentModel.load(tmp_path / "absent.json")


def test_a_weight_file_that_is_a_device_is_refused_without_reading_it() -> None:
    """/dev/zero never ends: read whole, it would fill memory."""
    with pytest.raises(IntentModelError, match="/dev/zero is not a regular file"):
        IntentModel.load("/dev/zero")


def test_a_weight_file_larger_than_any_weight_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(b" " * (MAX_WEIGHTS_BYTES + 1))
    cap = MAX_WEIGHTS_BYTES // 2**20
    with pytest.raises(IntentModelError, match=f"{path} is larger than {cap} MB"):
        IntentModel.load(path)


def test_the_shipped_file_is_small_and_says_what_it_was_trained_on() -> None:
    assert SHIPPED.stat().st_size < SIZE_CAP
    training = _shipped()["training"]
    assert isinstance(training, dict)
    assert training["messages"] == sum(training["sources"].values())
    assert len(training["sha256"]) == 64


def test_the_shipped_file_was_trained_on_the_training_data_in_the_repository() -> None:
    """If CORPUS or router_tuning.jsonl changed, re-run scripts/train_intent_model.py."""
    pytest.importorskip("numpy")
    train_intent_model = training_script()
    examples, _ = train_intent_model.training_examples()
    training = _shipped()["training"]
    assert isinstance(training, dict)
    assert training["sha256"] == train_intent_model.data_digest(examples), (
        "the training data changed: re-run .venv/bin/python scripts/train_intent_model.py"
    )
    sources = {e.source for e in examples}
    assert not any("heldout" in source or "HOLDOUT" in source for source in sources)


SYNTHETIC = {
    Intent.CHAT_ONLY: ["tell me a story about {}", "what do you think of {}"],
    Intent.LOOKUP_SEARCH: ["search the web for {}", "look up news about {}"],
    Intent.BROWSE_ONCE: ["open https://{}.example.com", "read https://example.org/{}"],
    Intent.ONE_SHOT_DISCOVERY: ["figure out why {} is slow", "investigate why {} keeps failing"],
    Intent.SCREEN_OBSERVE: ["what is on my screen about {}", "read the {} window on screen"],
    Intent.FILE_TASK: ["list files in ~/{}", "find {}.pdf in my documents"],
    Intent.SYSTEM_TASK: ["run {} --version", "kill the {} process"],
    Intent.MEMORY_READ: ["what did i tell you about {}", "do you remember my {}"],
    Intent.MEMORY_WRITE: ["remember that my {} is blue", "please note my {} is new"],
}
TOPICS = ("apples", "gliders", "teapots", "zebras")


def _train(tmp_path: Path, data: Path, output: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(SCRIPT), "--no-corpus", "--no-dialogues", "--tuning", str(data)]
    argv += ["--output", str(output), "--buckets", "4096", "--word-weight", "2"]
    argv += ["--l2", "1e-3", "--folds", "2"]
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_classifier_learns_each_dialogues_opening_and_its_changes_of_intent() -> None:
    """A first turn, and a later turn whose intent is not the one before it, are read by their
    own words: trained on. A later turn that goes on with the one before is not."""
    pytest.importorskip("numpy")
    script = training_script()
    trained = {" ".join(normalise(e.text).split()) for e in script.training_examples()[0]}
    paths = sorted((REPO / "tests" / "broker" / "data").glob("dialogues_tuning*.jsonl"))
    assert len(paths) >= 20
    changes = 0
    for path in paths:
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                dialogue = json.loads(line)
                said = [*dialogue["turns"], dialogue["follow_up"]]
                assert " ".join(normalise(said[0]["user"]).split()) in trained
                for before, turn in itertools.pairwise(said):
                    if turn["intent"] != before["intent"]:
                        changes += 1
                        assert " ".join(normalise(turn["user"]).split()) in trained
    assert changes > 3000


def test_a_later_turn_that_goes_on_with_the_one_before_is_not_trained_on(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    dialogue = {
        "id": "d1",
        "turns": [{"user": "list ~/Music", "intent": "file_task", "assistant": "1. a.mp3"}],
        "follow_up": {"user": "and the 2nd?", "intent": "file_task", "target": None},
    }
    changed = {
        "id": "d2",
        "turns": [{"user": "list ~/Music", "intent": "file_task", "assistant": "1. a.mp3"}],
        "follow_up": {"user": "k now play it", "intent": "system_task", "target": None},
    }
    path = tmp_path / "dialogues_tuning_x.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in (dialogue, changed)) + "\n", "utf-8")
    script = training_script()
    read = [(e.text, e.intent) for e in script.dialogue_messages([path])]
    assert read == [
        ("list ~/Music", Intent.FILE_TASK),
        ("list ~/Music", Intent.FILE_TASK),
        ("k now play it", Intent.SYSTEM_TASK),
    ]
    left = script.dialogue_messages([path], leave_out={f"{path.name}:d2"})
    assert [e.text for e in left] == ["list ~/Music"]


def test_the_held_out_dialogues_are_never_trained_on(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    heldout = tmp_path / "dialogues_heldout.jsonl"
    heldout.write_text(
        json.dumps(
            {
                "id": "x",
                "turns": [{"user": "hi", "intent": "chat_only"}],
                "follow_up": {"user": "bye", "intent": "chat_only"},
            }
        )
        + "\n",
        "utf-8",
    )
    with pytest.raises(ValueError, match="held out"):
        training_script().dialogue_messages([heldout])


def test_training_twice_on_a_tiny_corpus_writes_byte_identical_files(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    lines = [
        json.dumps({"text": template.format(topic), "intent": intent.value})
        for intent, templates in SYNTHETIC.items()
        for template in templates
        for topic in TOPICS
    ]
    data = _write(tmp_path / "tiny.jsonl", "\n".join(lines) + "\n")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    for output in (first, second):
        done = _train(tmp_path, data, output)
        assert done.returncode == 0, done.stderr
    assert first.read_bytes() == second.read_bytes()
    trained = IntentModel.load(first)
    assert trained.metadata["training"]["messages"] == len(lines)
    assert trained.predict("please search the web for kites").intent is Intent.LOOKUP_SEARCH
    assert trained.predict("remember that my kite is blue").intent is Intent.MEMORY_WRITE


def test_the_training_script_refuses_to_train_on_the_held_out_file(tmp_path: Path) -> None:
    heldout = REPO / "tests" / "broker" / "data" / "router_heldout.jsonl"
    done = _train(tmp_path, heldout, tmp_path / "never.json")
    assert done.returncode == 2
    assert "held out" in done.stderr
    assert not (tmp_path / "never.json").exists()


# --- a weight file that does not fit this version: the rules route alone, said once ------------

# Nothing the rules know well: the classifier would be asked for a second reading.
UNSURE = "could you help me with something"
ROUTING_BY_RULES = "routing by the rules alone"


def _foreign_intents(tmp_path: Path) -> Path:
    """The shipped weights, but trained for an intent this version does not have (what adding
    an intent does until the model is retrained)."""
    data = _shipped()
    intents = data["intents"]
    assert isinstance(intents, list)
    return _write(tmp_path / "weights.json", {**data, "intents": [*intents[:-1], "calendar"]})


def test_an_unsure_message_with_weights_for_other_intents_is_answered_and_said_once(
    tmp_path: Path, scripted_server: Any
) -> None:
    """The real CLI, a real weight file for other intents, a scripted model: the turn answers
    (it was "Something went wrong inside Chamberlain"), and the log says why once."""
    from tests.support.cli import ask_json, make_user
    from tests.support.openai_server import Text

    weights = _foreign_intents(tmp_path)
    user = make_user(tmp_path / "user")
    server = scripted_server([Text("Of course: what do you need?")])
    env = {"CHAMBERLAIN_ROUTER__INTENT_WEIGHTS": str(weights)}

    proc, turn = ask_json(user, UNSURE, "--llm", server.base_url, "--no-refine", env=env)

    assert proc.returncode == 0, proc.stderr
    assert turn["reply"].startswith("Of course: what do you need?")
    assert "Something went wrong" not in turn["reply"]
    assert turn["router"]["source"] == "heuristic"
    assert proc.stderr.count(ROUTING_BY_RULES) == 1, proc.stderr
    assert "was trained for the intents" in proc.stderr


def test_doctor_says_the_weights_do_not_match_and_the_rules_route(tmp_path: Path) -> None:
    from tests.support.cli import make_user, run_cli

    weights = _foreign_intents(tmp_path)
    user = make_user(tmp_path / "user")
    env = {"CHAMBERLAIN_ROUTER__INTENT_WEIGHTS": str(weights)}

    proc = run_cli(user, "doctor", "--llm", "none", env=env)

    assert (
        "[--] intent model: the weights do not match this version's intents; routing by rules"
        in proc.stdout.splitlines()
    ), proc.stdout
    shipped = run_cli(user, "doctor", "--llm", "none")
    assert "[ok] intent model: shipped weights" in shipped.stdout.splitlines(), shipped.stdout


def test_a_pipe_named_as_the_weight_file_does_not_hang_the_turn(tmp_path: Path) -> None:
    """The real CLI with router.intent_weights naming a FIFO nobody writes to: reading it would
    wait for ever; the turn is answered by the rules, and the log says why once."""
    from tests.support.cli import ask_json, make_user

    fifo = tmp_path / "weights.json"
    os.mkfifo(fifo)
    user = make_user(tmp_path / "user")
    env = {"CHAMBERLAIN_ROUTER__INTENT_WEIGHTS": str(fifo)}

    # run_cli's own timeout (60 s) ends a CLI that hangs, failing the test.
    proc, turn = ask_json(user, UNSURE, "--llm", "none", env=env)

    assert turn["router"]["source"] == "heuristic"
    assert proc.stderr.count(ROUTING_BY_RULES) == 1, proc.stderr
    assert f"{fifo} is not a regular file" in proc.stderr
