"""Command lines: parse them with the real bash grammar, and decide what the rules say about them.

`parse_command` (`parse`) turns one line into the argv of each stage of a pipeline, exactly as it
will be executed; `assess_command` (`assess`) adds the rules: hard-deny (refused whatever the
user says), read-only (a session grant covers it), or anything else (asks once, showing the
normalised argv).

How a line is read. tree-sitter-bash gives the structure; every node type other than a plain
command, a `|` pipeline and quoted or unquoted words is refused, with a reason naming the
construct (`;`, `&&`, `$( )`, redirections, assignments, …). Then every byte of the line must be
accounted for: each is inside a command word, a `|`, or a space or tab between them, so nothing
the grammar might have tolerated can slip past. Each word is then unquoted by the package's own
strict decoder, which refuses what it would have to expand: variables, globs (`*`, `?`, `[`),
braces, `~` anywhere but alone or before `/`. Quoted text is always literal, so
`find . -name '*.txt'` passes the pattern on to find.

Globs are refused rather than expanded: expanding them here would show the user one argv in the
prompt and run another if the folder changes in between, and passing them literally would
silently do something other than what a shell user meant. Quoting says "literally" explicitly.

Rules are matched on what the program will do, not on how the line is spelled: program names
are reduced to their base name (`/bin/rm`, `\\rm`, `'r''m'` are all `rm`); options are read the
way GNU getopt reads them (clusters, `--long` abbreviations, options after operands, `--`);
paths are resolved (`~`, `..`, symlinks) before they are compared; arguments are also checked in
their NFKC form, so `－rf` and `／` count as `-rf` and `/`; wrappers (`env`, `nice`, `timeout`,
`nohup`, `stdbuf`, `time`, `command`, `exec`, `busybox`) are unwrapped and the program inside is
checked too.

This package must never run anything, never expand anything a shell would expand, and never
accept a line it cannot account for byte by byte. When in doubt it refuses, or classifies a
command as one that asks: never as read-only.

Modules, in the order a line meets them:

- `characters`: which characters a line and an argument may hold; the NFKC fold.
- `grammar`: the tree-sitter-bash reading: refused constructs, stages, words, byte coverage.
- `words`: a word unquoted the way bash would, nothing expanded; which words name a program.
- `parse`: `parse_command`, the argv of each stage; `argv_text`, the form prompts show.
- `options`: a program's options read the way GNU getopt reads them, conservatively.
- `paths`: `RuleContext`, and what an argument's path leads to (dangerous, own, private, device).
- `wrappers`: `unwrap`, every program a stage runs; wrappers that hide one are refused.
- `code_runners`: shells, interpreters, awk and `find -exec` given code on the line.
- `kinds`: which commands run code the line does not show, and which need the network.
- `hard_deny`: the commands refused whatever the person says.
- `readonly`: the read-only allowlist a session grant covers.
- `locate`: where a program really is, on the PATH a command gets.
- `assess`: `assess_command` and `command_target`, every rule applied to one line.
"""
