"""The security corpus: attacks on the tools, each refused or asked about, audited, never run."""
