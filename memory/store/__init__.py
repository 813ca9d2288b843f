"""The fact store: what Chamberlain remembers, and the user's control over all of it.

- ``facts``: ``MemoryStore``, adding, consent, supersede, editing, forgetting and reading facts.
- ``export``: the export formats (JSON, Markdown) and import validation.

Importers import from the module that holds a name; this package re-exports nothing.
"""
