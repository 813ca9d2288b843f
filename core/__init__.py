"""What every layer shares and nothing of ours defines twice: the error root, the clock, and
counts and spans in words (`words.py`).

`core` imports nothing of Chamberlain's own (an import contract holds it to that), so the tools,
memory, the broker and the app can all build on it.
"""
