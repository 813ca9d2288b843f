"""How many tool-schema tokens each model call carries, with the policy gate and without it.

    python -m bench.schema_tokens [--json]

For every intent in ``resources/policy.toml``: the tool schemas the executor's tool loop sends
with each model call (``ToolManual.openai_schema()`` for the tools the policy gate allowed),
against what it would send if every registered tool were exposed (``builtin_registry()``).

Sizes are exact bytes of the ``tools`` array as the openai SDK puts it on the wire (compact JSON,
``separators=(",", ":")``, ``ensure_ascii=False``, UTF-8). Tokens are an ESTIMATE: characters / 4,
the usual rule of thumb for English and JSON with BPE tokenizers. No tokenizer is available
offline here (tiktoken downloads its BPE files at run time), and the model server renders the
schemas through its own chat template anyway, so the true count differs by model; the ratio
between the two columns is what the gate changes, and it does not depend on the tokenizer.

The "projected" columns count tool *names*: the policy table already names tools that are not
registered yet (web, screen, commands). They have no schema to measure, so only their number is
reported, never a guessed size. Direct actions send no tools, and an intent that allows none
sends none (the executor passes ``tools=None``). The figures are per model call; a tool loop
that takes N steps sends the same tools N times. A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from broker.executor import SYSTEM_PROMPT
from broker.policy import PolicyTable, decide, load_policy_table
from broker.settings import PolicyOverrides
from broker.types import Intent, RouterOutput
from tools.registry import ToolRegistry, builtin_registry

CHARS_PER_TOKEN = 4


def wire_json(tools: list[dict[str, Any]]) -> str:
    """The ``tools`` value exactly as the openai SDK serialises a request body."""
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def schemas(registry: ToolRegistry, names: list[str] | None) -> list[dict[str, Any]]:
    """What the executor sends for these tool names (None: every registered tool)."""
    return [manual.openai_schema() for manual in registry.manuals(names)]


def size(tools: list[dict[str, Any]]) -> dict[str, int]:
    if not tools:
        return {"tools": 0, "chars": 0, "bytes": 0, "tokens_est": 0}
    text = wire_json(tools)
    return {
        "tools": len(tools),
        "chars": len(text),
        "bytes": len(text.encode("utf-8")),
        "tokens_est": round(len(text) / CHARS_PER_TOKEN),
    }


def measure(
    registry: ToolRegistry | None = None, table: PolicyTable | None = None
) -> dict[str, Any]:
    registry = registry if registry is not None else builtin_registry()
    table = table if table is not None else load_policy_table()
    capabilities = {tool.name: tool.capability for tool in registry}
    everything = size(schemas(registry, None))
    named = table.named_tools() | set(capabilities)
    intents: dict[str, Any] = {}
    for intent in Intent:
        decision = decide(RouterOutput(intent=intent), table, capabilities, PolicyOverrides())
        gated = size(schemas(registry, decision.allowed_tools))
        row = table.intents[intent]
        intents[intent.value] = {
            "allowed_tools": decision.allowed_tools,
            "gated": gated,
            "all_registered": everything,
            "ratio_bytes": round(gated["bytes"] / everything["bytes"], 3),
            "projected_allowed_names": sorted(row.allowed),
            "projected_allowed": len(row.allowed),
            "projected_all": len(named),
        }
    per_tool = {m.name: size([m.openai_schema()])["bytes"] for m in registry.manuals(None)}
    return {
        "chars_per_token": CHARS_PER_TOKEN,
        "registered_tools": registry.names(),
        "per_tool_bytes": per_tool,
        "policy_named_tools": sorted(named),
        "unregistered_named_tools": sorted(named - set(capabilities)),
        "system_prompt_chars": len(SYSTEM_PROMPT),
        "intents": intents,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        "tool schemas sent per model call: bytes exact (compact JSON, as the openai SDK sends "
        f"it); tokens ~= chars / {report['chars_per_token']} (an estimate, no tokenizer)",
        f"registered tools: {', '.join(report['registered_tools'])}",
        "per tool bytes: "
        + ", ".join(f"{name} {n}" for name, n in report["per_tool_bytes"].items()),
        f"(for scale: the tool loop's system prompt is {report['system_prompt_chars']} chars)",
        "",
        f"{'intent':<20}{'gated':>6}{'bytes':>7}{'~tok':>6}{'all':>5}{'bytes':>7}{'~tok':>6}"
        f"{'ratio':>7}   projected names: gated/all",
    ]
    for name, row in report["intents"].items():
        g, a = row["gated"], row["all_registered"]
        lines.append(
            f"{name:<20}{g['tools']:>6}{g['bytes']:>7}{g['tokens_est']:>6}"
            f"{a['tools']:>5}{a['bytes']:>7}{a['tokens_est']:>6}{row['ratio_bytes']:>7.2f}"
            f"   {row['projected_allowed']}/{row['projected_all']}"
        )
    lines += [
        "",
        "projected: tools the policy table names, registered or not "
        f"({len(report['policy_named_tools'])}); not registered yet, so not measured: "
        + ", ".join(report["unregistered_named_tools"]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.schema_tokens",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = measure()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
