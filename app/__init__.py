"""Chamberlain's front ends: the desktop app (Qt) and the headless CLI.

Importing this package turns our dependencies' telemetry off before anything else (see
tools/telemetry.py): whichever front end starts — `chamberlain`, `python -m app.cli`, the app —
the switch is in the environment before any dependency can load, and in that of every program it
starts with its environment. Nothing else may happen here.
"""

from tools import telemetry

telemetry.switch_off()
