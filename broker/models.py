"""Which models there are to choose from, and choosing one: `chamberlain models list|use NAME`.

The catalogue is the embedded model (when it is installed) and every model a local server on its
usual loopback port lists (one short GET of /models each; nothing else is contacted). Choosing
writes `llm.url` and `llm.model` to settings.json, so the choice lasts; "auto" goes back to
finding a server at each start. A model id comes from a server: untrusted text, shown and
matched, never interpreted.

This module must never contact anything but the loopback ports in `endpoints.PROBE_PORTS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from broker.llm.endpoints import local_servers
from broker.settings import Settings, save_settings
from core.errors import ConfigError, Remedy


class ModelChoiceError(ConfigError, ValueError):
    """The name matches no model, or more than one, in the catalogue."""


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    # "embedded", or the server's name ("Ollama", "LM Studio", ...)
    backend: str
    # the base URL, or "embedded"
    url: str
    # the one llm.url and llm.model would now pick
    current: bool = False

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def catalog(settings: Settings, timeout_s: float = 0.3) -> list[CatalogEntry]:
    """Every model to choose from, the current choice marked."""
    from broker.llm.embedded import MODEL_NAME, embedded_problem

    url, chosen = settings.llm.url.strip(), settings.llm.model
    entries: list[CatalogEntry] = []
    if embedded_problem() is None:
        entries.append(CatalogEntry(MODEL_NAME, "embedded", "embedded", url.lower() == "embedded"))
    for server in local_servers(timeout_s):
        for index, name in enumerate(server.models):
            here = url.rstrip("/") == server.base_url
            # No model named: the server's first one is what a request gets.
            current = here and (name == chosen or (chosen is None and index == 0))
            entries.append(CatalogEntry(name, server.name, server.base_url, current))
    if url.lower() == "auto" and entries:
        # What "auto" picks now: the first server that answers (its model, or its first one),
        # else the embedded model.
        servers = [e for e in entries if e.backend != "embedded"]
        if servers:
            first = [e for e in servers if e.url == servers[0].url]
            pick = next((e for e in first if e.name == chosen), first[0])
        elif settings.llm.embedded_fallback:
            pick = entries[0]
        else:
            return entries
        entries = [replace(e, current=e is pick) for e in entries]
    return entries


def choose(home: Path, settings: Settings, name: str, timeout_s: float = 0.3) -> str:
    """Make `name` the model from now on (saved); returns what was chosen, in words.

    "auto" (a local server at each start, else the embedded model), "embedded", or a model id a
    local server lists; "SERVER/ID" or a base URL prefix picks among servers listing the same id.
    """
    wanted = name.strip()
    if not wanted:
        raise ModelChoiceError("give a model name", remedy=Remedy.LIST_MODELS)
    if wanted.lower() in ("auto", "embedded", "none"):
        settings.llm.url, settings.llm.model = wanted.lower(), None
        save_settings(home, settings)
        return {
            "auto": "a local server when one answers, else the embedded model",
            "embedded": "the embedded model",
            "none": "no model (clear requests still work)",
        }[wanted.lower()]
    entries = [e for e in catalog(settings, timeout_s) if e.backend != "embedded"]
    matches = [e for e in entries if e.name == wanted]
    if not matches and "/" in wanted:
        server, _, model = wanted.partition("/")
        matches = [e for e in entries if e.name == model and server.lower() == e.backend.lower()]
    if not matches:
        offered = ", ".join(sorted({e.name for e in entries})) or "none found"
        raise ModelChoiceError(
            f"no local server lists a model named {wanted!r} (models found: {offered}; "
            "or use 'embedded' or 'auto')"
        )
    if len(matches) > 1:
        where = ", ".join(f"{e.backend} ({e.url})" for e in matches)
        raise ModelChoiceError(
            f"{wanted!r} is listed by more than one server: {where}; "
            f"name one as SERVER/{wanted}, e.g. {matches[0].backend}/{wanted}"
        )
    entry = matches[0]
    settings.llm.url, settings.llm.model = entry.url, entry.name
    save_settings(home, settings)
    return f"{entry.name} on {entry.backend} at {entry.url}"
