"""Run command lines through the real `system_execute` (targets, then run, as the runner calls
it) and print what each did as JSON: for the network tests, as root in the test process or as
the user nobody in a process of its own (`python -m tests.support.network_probe`).

    python -m tests.support.network_probe HOME CWD '["curl …", "…"]'

Prints one JSON object: `results` (per line: refused, exit code, stdout, stderr) and `helpers`
(the user-mode networking processes still running under this process afterwards).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from tools.manual import ToolError, ToolRefused
from tools.registry import ToolConfig
from tools.system import make_system_tools

HELPER_NAMES = ("slirp4netns", "pasta", "passt", "passt.avx2")


def helpers_left(within_s: float = 3.0) -> list[str]:
    """The user-mode networking processes this process started that still run `within_s` after
    the command ended: a killed helper takes some ms to exit (its tap device is unregistered),
    and is reaped off the command's path; one never ended stays."""
    end = time.monotonic() + within_s
    while True:
        left = []
        for child in psutil.Process().children(recursive=True):
            try:
                if child.name() in HELPER_NAMES and child.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{child.pid} {child.name()} {child.status()}")
            except psutil.NoSuchProcess:
                continue
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def run_lines(home: Path, cwd: Path, lines: list[str], **config: Any) -> list[dict[str, Any]]:
    tool = make_system_tools(ToolConfig(**config), home=home, opener=lambda _target: None)[0]
    results: list[dict[str, Any]] = []
    for line in lines:
        arguments = {"command": line, "cwd": str(cwd)}
        try:
            tool.targets(arguments)
            data = tool.run(arguments).data
        except ToolRefused as exc:
            results.append({"line": line, "refused": str(exc)})
            continue
        except ToolError as exc:
            results.append({"line": line, "error": str(exc)})
            continue
        results.append(
            {
                "line": line,
                "refused": None,
                "exit_code": data["exit_code"],
                "exit_codes": data["exit_codes"],
                "stdout": data["stdout"],
                "stderr": data["stderr"],
            }
        )
    return results


def main(argv: list[str]) -> int:
    home, cwd, lines = Path(argv[0]), Path(argv[1]), json.loads(argv[2])
    config = json.loads(argv[3]) if len(argv) > 3 else {}
    results = run_lines(home, cwd, lines, **config)
    print(json.dumps({"results": results, "helpers": helpers_left()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
