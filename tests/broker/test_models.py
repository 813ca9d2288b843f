"""Choosing a model: the catalogue of local servers' models and the embedded one, `models use`.

Local servers are real HTTP servers on 127.0.0.1 (the scripted OpenAI server), found through the
same probe "auto" uses, pointed at their ports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from broker.llm import endpoints
from broker.llm.embedded import MODEL_NAME, embedded_problem
from broker.models import ModelChoiceError, catalog, choose
from broker.settings import Settings, load_settings
from tests.support.cli import run_cli
from tests.support.openai_server import Raw, free_port

needs_embedded = pytest.mark.skipif(
    embedded_problem() is not None, reason=f"embedded model not installed: {embedded_problem()}"
)


@pytest.fixture
def two_servers(scripted_server, monkeypatch):
    ollama = scripted_server(models=["llama3.2", "qwen2.5:7b"])
    studio = scripted_server(models=["qwen2.5:7b", "phi-4"])
    monkeypatch.setattr(
        endpoints,
        "PROBE_PORTS",
        [("Ollama", ollama.port), ("LM Studio", studio.port), ("vLLM", free_port())],
    )
    return ollama, studio


@needs_embedded
def test_the_catalogue_lists_the_embedded_model_and_every_servers_models(two_servers) -> None:
    ollama, _ = two_servers
    entries = catalog(Settings())
    assert [(e.name, e.backend) for e in entries] == [
        (MODEL_NAME, "embedded"),
        ("llama3.2", "Ollama"),
        ("qwen2.5:7b", "Ollama"),
        ("qwen2.5:7b", "LM Studio"),
        ("phi-4", "LM Studio"),
    ]
    # "auto" picks the first server that answers, its first model.
    assert [e.name for e in entries if e.current] == ["llama3.2"]
    assert entries[1].url == f"http://127.0.0.1:{ollama.port}/v1"


def test_using_a_model_saves_its_server_and_name(tmp_path: Path, two_servers) -> None:
    _, studio = two_servers
    said = choose(tmp_path, Settings(), "phi-4")
    saved = load_settings(tmp_path)
    assert (saved.llm.url, saved.llm.model) == (f"http://127.0.0.1:{studio.port}/v1", "phi-4")
    assert "phi-4 on LM Studio" in said
    assert [e.name for e in catalog(saved) if e.current] == ["phi-4"]


def test_a_name_two_servers_list_must_say_which(tmp_path: Path, two_servers) -> None:
    with pytest.raises(
        ModelChoiceError,
        match=r"more than one server: Ollama .*, LM Studio .*; name one as SERVER/qwen2\.5:7b",
    ):
        choose(tmp_path, Settings(), "qwen2.5:7b")
    assert not (tmp_path / "settings.json").exists()  # nothing saved on a bad choice
    choose(tmp_path, Settings(), "LM Studio/qwen2.5:7b")
    assert load_settings(tmp_path).llm.model == "qwen2.5:7b"


def test_an_unknown_name_says_what_there_is_and_saves_nothing(tmp_path: Path, two_servers) -> None:
    with pytest.raises(
        ModelChoiceError, match=re.escape("models found: llama3.2, phi-4, qwen2.5:7b")
    ):
        choose(tmp_path, Settings(), "gpt-9")
    assert not (tmp_path / "settings.json").exists()


def test_auto_embedded_and_none_are_choices_too(tmp_path: Path) -> None:
    for name, url in (("embedded", "embedded"), ("none", "none"), ("AUTO", "auto")):
        choose(tmp_path, Settings(), name)
        saved = load_settings(tmp_path)
        assert (saved.llm.url, saved.llm.model) == (url, None)


def test_a_hostile_model_list_is_cut_and_cleaned(scripted_server, monkeypatch) -> None:
    data = [{"id": "good"}, {"id": "bad\x1b[31m"}, {"id": 7}, {"id": ""}, {"id": "x" * 500}]
    data += [{"id": f"m{n}"} for n in range(1000)]
    body = json.dumps({"object": "list", "data": data}).encode()
    server = scripted_server(models_answer=Raw(body=body))
    monkeypatch.setattr(endpoints, "PROBE_PORTS", [("Ollama", server.port)])
    names = [e.name for e in catalog(Settings(llm={"url": "none"})) if e.backend == "Ollama"]
    assert names[0] == "good"
    assert len(names) == endpoints.MAX_LISTED_MODELS
    assert all(name.isprintable() and 0 < len(name) <= 200 for name in names)


@needs_embedded
def test_the_command_line_lists_and_chooses(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    used = run_cli(user, "models", "use", "embedded")
    assert used.returncode == 0, used.stderr
    listed = run_cli(user, "models", "list", "--json")
    entries = json.loads(listed.stdout)
    assert {
        "name": MODEL_NAME,
        "backend": "embedded",
        "url": "embedded",
        "current": True,
    } in entries
    unknown = run_cli(user, "models", "use", "no-such-model")
    assert unknown.returncode == 2
    assert "no local server lists a model named 'no-such-model'" in unknown.stderr


def test_a_local_server_that_tells_its_context_gets_requests_cut_to_it(scripted_server) -> None:
    from broker.session import connect_model

    listing = {"object": "list", "data": [{"id": "qwen", "max_model_len": 32768}]}
    server = scripted_server(models_answer=Raw(body=json.dumps(listing)))
    choice = connect_model(Settings(), server.base_url, "qwen")
    assert choice.model is not None
    assert choice.model.context_tokens == 32768  # type: ignore[attr-defined]


@pytest.mark.parametrize("told", ["lots", 1, -5, True, 10**12])
def test_a_context_told_wrongly_is_ignored_and_a_configured_one_wins(
    scripted_server, told: object
) -> None:
    """A server saying 1 token would make every request "not fit": only 512 and up is taken;
    what it says otherwise counts as saying nothing (the assumed context)."""
    from broker.llm.budget import ASSUMED_CONTEXT_TOKENS
    from broker.session import connect_model

    listing = {"object": "list", "data": [{"id": "qwen", "max_model_len": told}]}
    server = scripted_server(models_answer=Raw(body=json.dumps(listing)))
    told = connect_model(Settings(), server.base_url, "qwen").model
    assert told is not None
    assert told.context_tokens == ASSUMED_CONTEXT_TOKENS  # type: ignore[attr-defined]
    configured = connect_model(Settings(llm={"context_tokens": 4096}), server.base_url, "qwen")
    assert configured.model.context_tokens == 4096  # type: ignore[union-attr]
