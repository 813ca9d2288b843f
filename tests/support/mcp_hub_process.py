"""A real Chamberlain session, as the desktop app holds one, with its MCP servers connected,
waiting to be killed: `python tests/support/mcp_hub_process.py HOME [--supervisor|--bare]`.

It opens the session on HOME's settings.json (the servers in `mcp.servers`), connects every
server as the app does at start, prints "ready" and the servers' states on one line, and then
waits for ever. For servers whose settings say `"sandbox": false`, `--supervisor` starts them
under tools/mcp/supervise.py even where bubblewrap works, to try the fallback; `--bare` starts
them directly, uncontained (as the installed bundle must where bubblewrap cannot help), for a
benchmark's baseline. Never imported
by the product.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main() -> None:
    from broker.session import Session
    from broker.settings import load_settings
    from tools.mcp import lifetime
    from tools.mcp import sandbox as server_sandbox

    home = Path(sys.argv[1])
    # For servers whose settings turn their sandbox off (the only ones these two concern).
    if "--supervisor" in sys.argv[2:]:
        chosen = lifetime.supervised("asked for by the test")
        server_sandbox.containment = lambda: chosen  # type: ignore[assignment]
    elif "--bare" in sys.argv[2:]:
        bare = lifetime.Containment("none", why_not_better="asked for by the test")
        server_sandbox.containment = lambda: bare  # type: ignore[assignment]
    session = Session(home=home, settings=load_settings(home))
    assert session.mcp is not None, "no MCP servers in the settings"
    session.mcp.start()
    session.mcp.ensure()
    states = " ".join(f"{s.name}={s.state}" for s in session.mcp.status())
    print(f"ready {states}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
