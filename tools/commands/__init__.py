"""Command lines: read with the real bash grammar, and judged by the rules.

- `assess`: `parse_command`, `assess_command` and the rules they apply (hard-deny, read-only,
  anything else asks).
"""
