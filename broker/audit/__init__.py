"""The audit log: an append-only, hash-chained record of every stage of every turn.

Import from the module that holds a name; this package re-exports nothing.

- events     what the log records: the event names (part of the format), event data, a fault
- redaction  what an event's data becomes first: secrets blanked, content digested, sizes capped
- format     a record line's bytes: canonical JSON, the hash chain, what a cut append leaves
- macs       what the install's audit key signs (head, anchor, acknowledgement), and the limits
- files      where the head, lock and anchor lie; the lock readers share; reading from the end
- errors     AuditWriteError: an event that could not be written, said in one sentence
- sidecars   writing the head (in place, every append) and the anchor (once per log)
- recovery   what a writer finds when the files are not as it left them, and where it goes on
- writer     AuditLog: appends events, records interrupted appends, takes acknowledgements
- verify     checks the chain, the head and the anchor; an interrupted append is not an edit
- tail       the newest records, oldest first, reading only the end of the file
"""
