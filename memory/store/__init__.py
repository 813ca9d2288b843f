"""The fact store: what Chamberlain remembers, and the user's control over all of it.

``MemoryStore`` (in ``facts``) is one class assembled from the modules below; import each name
from the module that holds it (this package re-exports nothing).

- ``facts``: ``MemoryStore``; a fact's life from add, through consent and edits, to forgetting,
  and reading facts (listing, search, history, events).
- ``recall``: the facts that best match a message, and the full-text queries recall and
  search run.
- ``anchors``: the user's pinned notes, in order, and the prompt text within a budget.
- ``export``: the export formats (JSON, Markdown), import validation, and the store's export
  and import.
- ``connection``: the lock, read and write transactions, driver errors as the user's, the
  event log and scrubbing after a deletion: what every other part writes through.
- ``rows``: the columns of a stored fact or anchor, conversions, ids, and the text checks and
  digests every written text goes through.
- ``errors``: the errors the store raises beyond ``memory.db``'s.
"""
