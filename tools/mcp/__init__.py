"""MCP servers as tool sources: their settings, how their tools are named and classified, the
transport that caps what a server may send, and the hub that keeps the connections.

An MCP tool is one more `tools.manual.Tool`: the broker's policy gate shows it by its category,
and `broker/runner.py` runs it with a permission token like any builtin tool.
"""
