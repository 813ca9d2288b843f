"""Running the real `chamberlain` CLI in a subprocess, as a user would, against a fake home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# A headless machine with no keyring: the memory database is keyed by this passphrase.
PASSPHRASE = "correct horse battery staple"


def cli_env(user: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `run_cli` gives the CLI (HOME=user, Chamberlain's home in it), for a
    test that starts the CLI itself (to read its output as bytes, say)."""
    full_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(user),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "CHAMBERLAIN_HOME": str(user / ".chamberlain"),
        "CHAMBERLAIN_MEMORY_PASSPHRASE": PASSPHRASE,
        "CHAMBERLAIN_MEMORY__EXTRACT": "false",
        # "auto" does not fall back to the embedded model unless a test says so.
        "CHAMBERLAIN_LLM__EMBEDDED_FALLBACK": "false",
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    return {k: v for k, v in full_env.items() if v is not None}


def run_cli(
    user: Path, *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`chamberlain ARGS` with HOME=user and the Chamberlain home at user/.chamberlain.

    Model proposals for memory are off unless a test turns them on, so scripted model turns are
    spent only on what the test scripts.
    """
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=user,
        env=cli_env(user, env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def ask_json(
    user: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = run_cli(user, "ask", *args, "--json", env=env)
    assert proc.stdout, proc.stderr
    return proc, json.loads(proc.stdout)


def audit_events(user: Path) -> list[dict[str, Any]]:
    path = user / ".chamberlain" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def make_user(root: Path) -> Path:
    """A fake user's home directory with Documents and a private ~/.ssh."""
    (root / "Documents").mkdir(parents=True)
    (root / "Documents" / "plan.txt").write_text("Buy milk\nCall the bank\n")
    (root / "Documents" / "budget.csv").write_text("rent,900\nfood,300\n")
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecretkey\n")
    return root
