"""The app's windows, each rendering models and forwarding the person's choices to the QtSession.

The work itself (reading grants and the audit log, every memory call) runs on the QtSession's io
thread; nothing in a window may block the UI thread, and no dialog is ever `exec()`ed.

- about.py: the About window.
- activity.py: what Chamberlain did, from the audit log.
- confirm.py: the one yes/no question seam (`confirm`), awaited, never `exec()`ed.
- fields.py: settings fields that check what is typed.
- mcp_servers.py: Settings' MCP servers page.
- memory.py: what Chamberlain remembers, and consent for what waits.
- palette.py: the problem and fine colours for light and dark themes.
- permissions.py: the grants in force, and revoking them.
- settings.py: the Settings window.
- tables.py: caption, read-only table and empty-state furniture every list window uses.
- tasks.py: starting a window's async work from a slot (`spawn`), coalesced reloads.
- words.py: capability words, moments and durations.
"""
