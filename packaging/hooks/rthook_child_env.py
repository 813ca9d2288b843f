"""PyInstaller runtime hook: programs Chamberlain starts see the user's environment, not ours.

The bootloader points LD_LIBRARY_PATH at the bundle's own libraries (saving the user's value in
LD_LIBRARY_PATH_ORIG) so this process loads them. The dynamic loader has read it by now; left in
os.environ, it would be inherited by every child (xdg-open, the browser it starts, a keyring
helper) and make a system program load the bundle's libstdc++ or libssl instead of its own. The
command sandbox and MCP servers rebuild their environment from an allowlist anyway; this covers
the rest. It must never change what this process itself loads.
"""

import os

_orig = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
if _orig is not None:
    os.environ["LD_LIBRARY_PATH"] = _orig
else:
    os.environ.pop("LD_LIBRARY_PATH", None)
