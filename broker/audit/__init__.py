"""The audit log (being split into modules; this re-export lasts one commit)."""

from broker.audit.writer import *  # noqa: F403
from broker.audit.writer import _cannot_write  # noqa: F401
