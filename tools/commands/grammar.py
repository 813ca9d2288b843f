"""The bash grammar (tree-sitter-bash): which constructs a line may hold, and where its words are.

Every node type other than a plain command, a `|` pipeline and quoted or unquoted words is
refused, with a reason naming the construct (`;`, `&&`, `$( )`, redirections, assignments, …).
`check_coverage` then holds every byte of the line to account: each is inside a command word, a
`|`, or a space or tab between them, so nothing the grammar might have tolerated can slip past.
`refuse` words every refusal the command rules make.

This module must never run or expand anything, and never accept a construct it has no reason
for: a node that is not a plain command, pipeline or word is refused.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import tree_sitter
import tree_sitter_bash

from tools.manual import ToolError, ToolRefused

_parser_lock = threading.Lock()
_parser: tree_sitter.Parser | None = None


def parse_tree(source: bytes) -> tree_sitter.Tree:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return _parser.parse(source)


_HIDDEN_COMMAND = "runs a hidden command whose output becomes part of this one"
_NO_REDIRECT = (
    "output comes back to Chamberlain, and files are named as arguments (e.g. `sort -o FILE`)"
)
NODE_REASONS: dict[str, str] = {
    "command_substitution": f"command substitution ($( ) or backticks) {_HIDDEN_COMMAND}",
    "process_substitution": f"process substitution (<( ) or >( )) {_HIDDEN_COMMAND}",
    "subshell": "a subshell ( … ) runs commands inside a shell; run the command itself",
    "compound_statement": "a command group { … } runs several commands",
    "redirected_statement": f"redirections (>, >>, <, 2>&1, &>) are not supported: {_NO_REDIRECT}",
    "file_redirect": f"redirections (>, >>, <, 2>&1, &>) are not supported: {_NO_REDIRECT}",
    "heredoc_redirect": "a here-document (<<) feeds hidden input to the command",
    "herestring_redirect": "a here-string (<<<) feeds hidden input to the command",
    "variable_assignment": (
        "a variable assignment (NAME=value) changes how the program behaves without showing it; "
        "Chamberlain does not set variables for commands"
    ),
    "variable_assignments": "variable assignments (NAME=value) are not supported",
    "simple_expansion": (
        "variable expansion ($NAME) is not done: Chamberlain runs no shell; write the value itself"
    ),
    "expansion": "variable expansion (${…}) is not done: Chamberlain runs no shell",
    "arithmetic_expansion": "arithmetic expansion $(( )) is not done: Chamberlain runs no shell",
    "brace_expression": "brace expansion ({a..b}, {x,y}) is not done; write each argument",
    "negated_command": "`!` negation is shell syntax; run the command itself",
    "function_definition": "defining a shell function is not supported",
    "if_statement": "control flow (if) needs a shell; run one command",
    "for_statement": "control flow (for) needs a shell; run one command",
    "c_style_for_statement": "control flow (for) needs a shell; run one command",
    "while_statement": "control flow (while/until) needs a shell; run one command",
    "case_statement": "control flow (case) needs a shell; run one command",
    "test_command": "a [[ ]] or [ ] test is shell syntax; run a program",
    "declaration_command": "declare/export/local/readonly/typeset are shell builtins",
    "unset_command": "unset is a shell builtin",
    "comment": "a comment (#) hides text from the command that runs; remove it",
    "translated_string": 'a $"…" locale string is shell syntax',
    "extglob_pattern": "extended glob patterns are not expanded",
    "array": "arrays are shell syntax",
    "heredoc_body": "a here-document (<<) feeds hidden input to the command",
}
_SEPARATOR_REASONS: dict[str, str] = {
    ";": "`;` runs a second command after the first; run one command (or a pipeline) at a time",
    "&": "`&` runs a command in the background, where nothing can time it out or show it",
    "&&": "`&&` chains a second command; run one command (or a pipeline) at a time",
    "||": "`||` chains a second command; run one command (or a pipeline) at a time",
    ";;": "`;;` is shell syntax",
    "|&": "`|&` also pipes error output (a redirection); use a plain `|`",
    "\n": "a new line starts another command",
}
_WORD_NODES = frozenset(
    {"word", "number", "raw_string", "string", "ansi_c_string", "concatenation"}
)


def refuse(reason: str) -> ToolRefused:
    return ToolRefused(f"refused: {reason}")


def _first_forbidden(node: tree_sitter.Node) -> str | None:
    """The reason for the first construct (in source order, outermost first) that is refused."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.type == "ERROR":
            return "part of the command could not be read as a plain command"
        if current.is_missing:
            return "the command is incomplete (a quote or bracket is not closed)"
        if current.type == "list":
            ops = [c.type for c in current.children if not c.is_named]
            op = next((o for o in ops if o in _SEPARATOR_REASONS), "&&")
            return _SEPARATOR_REASONS[op]
        reason = NODE_REASONS.get(current.type)
        if reason is not None:
            return reason
        stack.extend(reversed(current.children))
    return None


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def stage_nodes(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The `command` nodes of the one command or pipeline the line holds; refuses the rest."""
    for child in root.children:
        if not child.is_named:
            raise refuse(_SEPARATOR_REASONS.get(child.type, f"`{child.type}` is shell syntax"))
    reason = _first_forbidden(root)
    if reason is not None:
        raise refuse(reason)
    statements = root.named_children
    if root.has_error:
        raise refuse("part of the command could not be read as a plain command")
    if not statements:
        raise ToolError("the command is empty; say which program to run")
    if len(statements) > 1:
        raise refuse("the line holds more than one command; run one at a time")
    top = statements[0]
    if top.type == "command":
        return [top]
    if top.type != "pipeline":
        raise refuse(f"a `{top.type}` is shell syntax; run one command or a pipeline")
    stages: list[tree_sitter.Node] = []
    for child in top.children:
        if child.is_named:
            if child.type != "command":
                raise refuse(f"a `{child.type}` inside a pipeline is shell syntax")
            stages.append(child)
        elif child.type != "|":
            raise refuse(_SEPARATOR_REASONS.get(child.type, f"`{child.type}` is shell syntax"))
    return stages


def stage_words(command: tree_sitter.Node) -> list[tree_sitter.Node]:
    words: list[tree_sitter.Node] = []
    for child in command.children:
        if not child.is_named:
            if child.type == "$":
                raise refuse(
                    'a `$` expansion ($NAME, $"…" locale strings, $( )) is not done: Chamberlain '
                    "runs no shell"
                )
            raise refuse(f"`{child.type}` is shell syntax that Chamberlain does not run")
        if child.type == "command_name":
            inner = child.named_children
            if len(inner) != 1 or inner[0].type not in _WORD_NODES or words:
                raise refuse("the program name is not a plain word")
            words.append(child)
        elif child.type in _WORD_NODES:
            if not words:
                raise refuse("the command has no program name")
            words.append(child)
        else:
            raise refuse(NODE_REASONS.get(child.type, f"a `{child.type}` is shell syntax"))
    if not words:
        raise refuse("the command has no program name")
    return words


def check_coverage(source: bytes, spans: list[Span]) -> None:
    """Every byte is inside an accepted word or `|`, or is a space or tab between them."""
    position = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < position:
            raise refuse("the command could not be split into words unambiguously")
        gap = source[position : span.start]
        if gap.strip(b" \t"):
            raise refuse(f"{gap.decode('utf-8', 'replace').strip()!r} is shell syntax")
        position = span.end
    if source[position:].strip(b" \t"):
        raise refuse(f"{source[position:].decode('utf-8', 'replace').strip()!r} is shell syntax")
