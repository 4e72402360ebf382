"""The Bash hook's judgement: is this command a commit, a push, an approval, a write into .git,
or a way to throw away the user's uncommitted work? A friendly first layer, not the safety.

Claude Code's PreToolUse hook (startup/gatehook.py) asks `refusal(command, cwd=…)` before every
Bash call. What holds the gate is the sandbox the agent's processes run in (issue 35, docs/adr/
0193): no text, however it is written, can commit there. This module only makes the common
case pleasant: the obvious forms are stopped before they run, with a reason and what to do
instead, and ordinary work is never stopped for naming the words.

The command is parsed by tree-sitter-bash (a maintained grammar, not hand-written splitting)
and judged by what each part *does*:

- every simple command anywhere in the tree (pipelines, lists, subshells, `$(…)`, backticks,
  process substitutions, loop and function bodies) is read as the shell reads it: quotes and
  `\\` removed, variables assigned earlier in the same line filled in, wrappers peeled
  (`env`, `VAR=1`, `timeout 5`, `setsid -f`, `nohup`, `nice`, `sudo -u x`, `xargs`, `uv run`, …);
- `git …` is read with git's global options (`-C dir`, `-c k=v`, `--git-dir=…`); commit, push
  and the other commands that make commits or move a branch are refused, so are an unknown
  subcommand (an alias) and defining an alias; the destructive forms (`reset --hard`, `checkout
  -- .`, `restore` of work-tree files, `stash` but `list`/`show`, `clean -f`) are refused with
  "ask the user";
- plan-build's `commit` and `review.approve`, by any name (`plan-build`, `inv`, `invoke`,
  `python -m plan_build`, the launcher's path);
- text that is a program is judged as one: `sh -c "…"`, `eval '…'`, a here-string or heredoc
  fed to a shell, `su -c`, `watch`, `ssh`, `tmux`, `script -c`, `find -exec`, `git submodule
  foreach`, a script file the command runs (`./x.sh`, `bash x.sh`, `source x`, `python x.py`,
  the `make` target or `npm run` script named), inline interpreter code that starts programs;
- a write into git's own directory (a redirection, `cp`/`mv`/`rm`/`tee`/`touch`/`sed -i`/`dd`
  naming a path inside `.git`) is refused; reading it (`cat .git/HEAD`) is not;
- words that are data are not commands: arguments of `echo`, `printf`, `grep`, `rg`, `sed`,
  `awk` programs that start nothing, heredoc bodies going to files, strings given to programs
  that do not run them;
- where the parse cannot be certain (the command word or git's subcommand built at run time,
  a shell fed from a pipe, a syntax error) it refuses only when the text itself names git or
  plan-build beside a gated word, and says so.

The module is over 400 lines on purpose: one judgement read top to bottom, in one file that the
hook imports alone (every extra module is start-up time in front of a tool call). `split`,
`program_name`, `META`, `OPERATORS` and `REDIRECTS` are live scope's (startup/livescope.py)
reading of what a command writes, kept here unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the hook's start-up is a tool call's wait: no import it does not need
    from collections.abc import Sequence
    from types import ModuleType

    from tree_sitter import Node, Parser

# The parser's pinned distributions (pyproject's dependencies), for the message when it is missing
PARSER_PINS = "tree-sitter==0.26.1 tree-sitter-bash==0.25.1"

# git subcommands that make a commit, move a branch to new commits or send commits away
GATED_GIT = frozenset(
    {
        "commit", "commit-tree", "push", "send-pack", "http-push", "merge", "pull", "rebase",
        "cherry-pick", "revert", "am", "update-ref", "fast-import", "filter-branch",
        "filter-repo", "subtree", "replay", "replace",
    }
)  # fmt: skip
# git commands that do none of that (anything else is an alias or an add-on: refused)
KNOWN_GIT = frozenset(
    {
        "add", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch",
        "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format",
        "checkout", "checkout-index", "cherry", "clean", "clone", "column", "config",
        "count-objects", "describe", "diff", "diff-files", "diff-index", "diff-tree",
        "difftool", "fetch", "for-each-ref", "for-each-repo", "format-patch", "fsck", "gc",
        "get-tar-commit-id", "grep", "hash-object", "help", "index-pack", "init",
        "interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "maintenance",
        "merge-base", "merge-file", "merge-tree", "mergetool", "mktag", "mktree", "mv",
        "name-rev", "notes", "pack-objects", "pack-refs", "patch-id", "prune", "prune-packed",
        "range-diff", "read-tree", "reflog", "remote", "repack", "rerere", "reset", "restore",
        "rev-list", "rev-parse", "rm", "shortlog", "show", "show-branch", "show-index",
        "show-ref", "sparse-checkout", "stash", "status", "stripspace", "submodule", "switch",
        "symbolic-ref", "tag", "unpack-objects", "update-index", "var", "verify-commit",
        "verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree", "lfs",
    }
)  # fmt: skip
# git's global options that take a value as the next word
GIT_VALUE_OPTS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path",
     "--super-prefix", "--list-cmds", "--attr-source"}
)  # fmt: skip
GIT_NAMES = frozenset({"git", "hub"})
# plan-build's commands (Invoke task names) that need the user's own approval
GATED_TASKS = frozenset({"commit", "review.approve", "review-approve"})
PB_NAMES = frozenset({"plan-build", "inv", "invoke", "tasks"})
PB_MODULES = frozenset({"plan_build", "invoke"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "csh",
                    "tcsh", "yash"})  # fmt: skip
INTERPRETERS = frozenset({"python", "perl", "ruby", "node", "nodejs", "deno", "bun", "php",
                          "lua", "tclsh", "awk", "gawk", "mawk", "osascript", "pwsh"})  # fmt: skip
# programs that run a target of a file in the working directory
FILE_RUNNERS = {"make": ("GNUmakefile", "makefile", "Makefile"), "just": ("justfile", "Justfile")}
PACKAGE_RUNNERS = frozenset({"npm", "yarn", "pnpm", "bun"})
# programs that run a string argument as a command line
STRING_RUNNERS = frozenset({"su", "watch", "tmux", "screen", "script", "ssh", "flock", "parallel",
                            "xterm", "entr", "chroot", "runuser"})  # fmt: skip
# programs that never run their arguments: their words are data
DATA = frozenset(
    {
        "echo", "printf", "grep", "egrep", "fgrep", "rg", "ag", "ack", "cat", "tac", "head",
        "tail", "less", "more", "wc", "sort", "uniq", "cut", "tr", "sed", "jq", "yq", "ls",
        "tree", "stat", "file", "du", "df", "diff", "cmp", "comm", "patch", "touch", "mkdir",
        "rmdir", "rm", "cp", "mv", "ln", "chmod", "chown", "tee", "basename", "dirname",
        "realpath", "readlink", "pwd", "cd", "pushd", "popd", "test", "[", "true", "false",
        "exit", "return", "export", "unset", "set", "declare", "local", "read", "column",
        "fmt", "fold", "nl", "od", "xxd", "hexdump", "base64", "md5sum", "sha1sum", "sha256sum",
        "tar", "zip", "unzip", "gzip", "gunzip", "zcat", "curl", "wget", "ps", "pgrep", "pkill",
        "kill", "top", "free", "uptime", "whoami", "id", "date", "sleep", "which", "type",
        "whereis", "man", "help", "history", "alias", "printenv", "uname", "nproc", "locale",
        "lsof", "ss", "openssl", "truncate", "shred", "dd", "install", "rsync", "scp", "pytest",
        "ruff", "mypy", "black", "isort", "flake8", "pylint", "pip", "pip3", "tsc", "eslint",
        "prettier", "sqlite3", "psql", "redis-cli", "gh", "shellcheck", "cal", "bc",
    }
)  # fmt: skip
# writers: every path argument is written, or only the last one (the destination)
WRITE_ALL = frozenset({"rm", "rmdir", "unlink", "shred", "touch", "truncate", "chmod", "chown",
                       "chgrp", "mkdir", "tee"})  # fmt: skip
WRITE_LAST = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
MAX_DEPTH = 6
MAX_SCRIPT = 256 * 1024
MAX_TEXT = 1024 * 1024

_GIT_WORD = re.compile(
    r"(?<![\w.])(?:git|hub|dulwich|pygit2|nodegit|libgit2|jgit|gitoxide)(?![\w.])", re.IGNORECASE
)
_GITLIB = re.compile(r"dulwich|pygit2|nodegit|libgit2|isomorphic-git|simple-git|\bimport git\b|"
                     r"from git import|jgit|go-git|gitoxide", re.IGNORECASE)  # fmt: skip
_GIT_GATED = re.compile(
    r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in sorted(GATED_GIT)) + r")(?![\w-])",
    re.IGNORECASE,
)
_PB_WORD = re.compile(r"(?<![\w.-])(?:plan[-_]build|inv|invoke|tasks\.py)(?![\w])", re.IGNORECASE)
_PB_GATED = re.compile(r"(?<![\w.-])(?:commit|review[.-]approve)(?![\w-])", re.IGNORECASE)
_ALIAS = re.compile(r"(?<![\w.])alias\.", re.IGNORECASE)
_DECODE = re.compile(r"base64|b64decode|fromhex|unhexlify|\\x[0-9a-f]{2}|\\[0-7]{3}|chr\(|xxd|"
                     r"\brev\b|\btr\b|rot13|atob|Buffer\.from", re.IGNORECASE)  # fmt: skip
_SPAWN = re.compile(r"subprocess|os\.system|popen|exec|spawn|system\(|child_process|`|"
                    r"\bsh\b|\bbash\b|Command\(", re.IGNORECASE)  # fmt: skip
_GATED_WORD = re.compile(
    r"(?<![\w.-])(?:"
    + "|".join(re.escape(w) for w in sorted(GATED_GIT | GATED_TASKS))
    + r")(?![\w-])",
    re.IGNORECASE,
)
_CAT_FILE = re.compile(
    r"^(?:\$\(\s*(?:cat\s+|<\s*)([^\s;|&()$`]+)\s*\)|`\s*cat\s+([^\s;|&`$]+)\s*`)$"
)
_SHELL_FILE = re.compile(r"^#!.*\b(?:sh|bash|dash|zsh|ksh)\b")
# live scope's shell words (startup/livescope.py)
META = re.compile(r"[\s;&|()<>`$]")
PUNCTUATION = ";&|()<>\n"
OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "\n", "(", ")", "!", "{", "}"})
REDIRECTS = frozenset({"<", ">", ">>", "<<", "<<-", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|"})

ASK_FIRST = (
    "Ask the user before discarding anything: say what would be lost and why. To see what is "
    "at stake use `git status` or `git diff`; to undo an edit of your own, edit the file back."
)
GIT_DIR_ADVICE = (
    "git's own files are the user's: read them if you need to, and ask the user to make any "
    "change to the repository's state in a terminal outside Claude Code."
)


class Refusal:
    """What was found, in one sentence, and what to do instead (None: the hook's own advice
    to ask the user). A plain class: dataclasses costs the hook 10 ms."""

    __slots__ = ("advice", "reason")

    def __init__(self, reason: str, advice: str | None = None) -> None:
        self.reason = reason
        self.advice = advice

    def __repr__(self) -> str:
        return f"Refusal({self.reason!r})"


class ParserUnavailable(Exception):
    """tree-sitter or its bash grammar cannot be loaded by the Python running the hook."""


def refusal(command: str, *, cwd: str | None = None) -> Refusal | None:
    """Why `command` may not run inside the agent, or None when plan-build sees no gated act.
    Raises ParserUnavailable when the shell parser cannot load (the hook then refuses)."""
    if len(command) > MAX_TEXT or "\0" in command:
        return Refusal("the command is too long or holds a NUL byte for plan-build to read")
    return _Judge(cwd).line(command, 0)


_PARSER: list[Parser] = []


def parser() -> Parser:
    """tree-sitter's parser for bash, loaded once. The packages' own `__init__` modules import
    `typing` and `importlib.resources` (25 ms in front of every Bash call), so their compiled
    bindings are loaded alone, from the first directory on sys.path that holds them."""
    if not _PARSER:
        try:
            core, bash = _binding("tree_sitter"), _binding("tree_sitter_bash")
            _PARSER.append(core.Parser(core.Language(bash.language())))
        except Exception as exc:
            raise ParserUnavailable(
                f"plan-build's Bash check cannot load its shell parser ({type(exc).__name__}: "
                f"{exc}); install {PARSER_PINS} into the Python that runs plan-build"
            ) from exc
    return _PARSER[0]


def _binding(package: str) -> ModuleType:
    name = f"{package}._binding"
    if name in sys.modules:
        return sys.modules[name]
    from importlib.machinery import PathFinder

    for entry in sys.path:
        folder = os.path.join(entry or ".", package)
        spec = PathFinder.find_spec(name, [folder]) if os.path.isdir(folder) else None
        if spec is not None and spec.loader is not None:
            module = spec.loader.create_module(spec)
            if module is not None:
                spec.loader.exec_module(module)
                sys.modules[name] = module
                return module
    import importlib  # an unexpected layout: the package's own way

    importlib.import_module(package)
    return sys.modules[name]


def lexical(text: str) -> Refusal | None:
    """A gated pair named anywhere in `text`, quoted or not: for text plan-build cannot parse
    or see run."""
    for git in _GIT_WORD.finditer(text):
        sub = _GIT_GATED.search(text, git.end()) or _GIT_GATED.search(text, 0, git.start())
        if sub is not None:
            return Refusal(
                f"it names `{git.group(0)}` and `{sub.group(0)}`, and plan-build cannot tell "
                "for certain that it does not run them"
            )
    for pb in _PB_WORD.finditer(text):
        task = _PB_GATED.search(text, pb.end()) or _PB_GATED.search(text, 0, pb.start())
        if task is not None:
            return Refusal(
                f"it names `{pb.group(0)}` and `{task.group(0)}`, and plan-build cannot tell "
                "for certain that it does not run them"
            )
    return None


def program_name(word: str) -> str:
    """How a command word is compared: its last path part, lower case (macOS file names are
    case-insensitive), without a leading `\\`, a version (`python3.12`) or an extension."""
    name = word.rsplit("/", 1)[-1].lstrip("\\").lower()
    name = re.sub(r"\.(pyz|py|exe|sh|cmd|bat)$", "", name)
    name = name.replace("_", "-")
    if name.startswith(("python", "perl", "ruby", "node", "php", "lua", "pypy")):
        name = re.sub(r"(?<=[a-z])[0-9][0-9.]*$", "", name)
    return name


def split(text: str) -> list[str] | None:
    """Shell words and operators by hand, command substitutions opened up; None when it cannot
    be split (an open quote). Live scope's reading of what a command writes; the gate itself
    reads the parse tree."""
    opened = text.replace("`", "\n").replace("$(", "\n(").replace("<(", "\n(").replace(">(", "\n(")
    lex = shlex.shlex(opened, posix=True, punctuation_chars=PUNCTUATION)
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        tokens = list(lex)
    except ValueError:
        return None
    out: list[str] = []
    for tok in tokens:  # shlex runs punctuation together (`\n(`, `;(`): part what no shell joins
        if tok and all(c in PUNCTUATION for c in tok) and tok not in OPERATORS | REDIRECTS:
            out += list(tok)
        else:
            out.append(tok)
    return out


def in_git_dir(path: str) -> bool:
    """Whether `path` is git's own directory or inside it (`.git`, `./.git/refs`, `/r/.git/x`)."""
    return ".git" in path.replace("\\", "/").split("/")


def _unquoted(text: str) -> str:
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _double_quoted(text: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


# Where a node stands in the walk: (node, parent, the type of the node before it, its statement)
_Place = tuple["Node", "Node | None", str, "Node | None"]
# A word as the shell will see it: its value (None when it is only known at run time) and its text
Word = tuple[str | None, str]


class _Judge:
    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.read: set[str] = set()
        self.vars: dict[str, str | None] = {}
        self.in_git = False  # after `cd .git` in this command line
        # the bytes of each command line being read, innermost last: a node's text is read from
        # here, not from the tree, whose source had its four-byte characters replaced
        self.sources: list[bytes] = []

    # ------------------------------------------------------------------ the tree

    def line(self, text: str, depth: int) -> Refusal | None:
        """Every part of a command line, in order."""
        if depth > MAX_DEPTH:
            found = lexical(text)
            if found is None:
                return None
            return Refusal(f"it nests commands deeper than plan-build reads; {found.reason}")
        source = text.encode("utf-8", "replace")
        self.sources.append(source)
        try:
            return self.walk(parser().parse(_parseable(source)).root_node, text, depth)
        finally:
            self.sources.pop()

    def text(self, node: Node) -> str:
        return self.sources[-1][node.start_byte : node.end_byte].decode("utf-8", "replace")

    def gap(self, start: int, end: int, quoted: bool) -> str:
        if end <= start:
            return ""
        raw = self.sources[-1][start:end].decode("utf-8", "replace")
        return _double_quoted(raw) if quoted else _unquoted(raw)

    def walk(self, root: Node, text: str, depth: int) -> Refusal | None:
        # (node, its parent, the type of the node before it, its top-level statement): kept on
        # the way down, because tree-sitter finds a node's parent by walking from the root
        stack: list[_Place] = [(root, None, "", None)]
        while stack:
            node, parent, before, top = stack.pop()
            kind = node.type
            found = None
            if kind == "command" and parent is not None:
                found = self.command(node, parent, before, top or node, depth)
            elif kind == "variable_assignment" and parent is not None and parent.type != "command":
                self.assign(node)
            elif kind == "file_redirect":
                found = self.redirect(node)
            if found is not None:
                return found
            below: list[_Place] = []
            previous = before if kind == "redirected_statement" else ""  # its body's pipe
            for child in node.children:
                below.append((child, node, previous, top or child))
                previous = child.type
            stack.extend(reversed(below))
        if root.has_error:
            found = lexical(text)
            if found is not None:
                return Refusal(f"plan-build could not parse it as a shell would: {found.reason}")
        return None

    def assign(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is not None and name.type == "variable_name":
            self.vars[self.text(name)] = self.value(value) if value is not None else ""

    def redirect(self, node: Node) -> Refusal | None:
        """`> .git/refs/heads/main`, `>> .git/hooks/x`: a write into git's own directory."""
        op = next((c.type for c in node.children if not c.is_named), "")
        target = node.child_by_field_name("destination")
        if (
            op not in WRITE_REDIRECTS
            or target is None
            or target.type in ("number", "file_descriptor")
        ):
            return None
        value = self.value(target)
        path = value if value is not None else self.text(target)
        if in_git_dir(path) or (self.in_git and not path.startswith("/")):
            return Refusal(f"it writes into git's own directory ({path})", GIT_DIR_ADVICE)
        return None

    def value(self, node: Node) -> str | None:
        """What the shell makes of one word: quotes and escapes removed, known variables
        filled in; None when only the run can tell."""
        kind = node.type
        text = self.text(node)
        if kind in ("word", "number", "command_name", "extglob_pattern"):
            if kind == "command_name" and node.named_child_count == 1:
                return self.value(node.named_children[0])
            return _unquoted(text)
        if kind == "raw_string":
            return text[1:-1]
        if kind == "ansi_c_string":
            try:
                return text[2:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
            except (UnicodeError, ValueError):
                return None
        if kind in ("string", "translated_string", "concatenation"):
            return self.joined(node)
        if kind in ("simple_expansion", "expansion"):
            names = node.named_children
            if len(names) == 1 and names[0].type == "variable_name":
                return self.vars.get(self.text(names[0]))
            return None
        if kind == "command_substitution":  # $(which git), $(command -v git)
            return _looked_up(text.strip("$()` \n").split())
        return None

    def joined(self, node: Node) -> str | None:
        """A quoted string or a word in parts: the literal text between its parts kept."""
        quoted = node.type != "concatenation"
        start = node.start_byte + {"string": 1, "translated_string": 2}.get(node.type, 0)
        end = node.end_byte - (1 if quoted else 0)
        parts: list[str] = []
        for child in node.named_children:
            if child.type == "string_content":
                continue
            parts.append(self.gap(start, child.start_byte, quoted))
            part = self.value(child)
            if part is None:
                return None
            parts.append(part)
            start = child.end_byte
        parts.append(self.gap(start, end, quoted))
        return "".join(parts)

    def words(self, node: Node) -> list[Word]:
        words: list[Word] = []
        name = node.child_by_field_name("name")
        if name is not None:
            words.append((self.value(name), self.text(name)))
        for child in node.children_by_field_name("argument"):
            words.append((self.value(child), self.text(child)))
        return words

    def command(
        self, node: Node, parent: Node, before: str, top: Node, depth: int
    ) -> Refusal | None:
        """One simple command, with what feeds it: a heredoc or here-string, or a pipe."""
        words = self.words(node)
        if not words:
            return None
        stdin: str | None = None  # the program text a heredoc or here-string gives it
        redirects = [c for c in node.children if c.type.endswith("redirect")]
        if parent.type == "redirected_statement":
            redirects += [c for c in parent.children if c.type.endswith("redirect")]
        for r in redirects:
            if r.type == "herestring_redirect" and r.named_child_count:
                stdin = self.value(r.named_children[0]) or self.text(r.named_children[0])
            elif r.type == "heredoc_redirect":
                body = next((c for c in r.named_children if c.type == "heredoc_body"), None)
                stdin = self.text(body) if body is not None else ""
        piped = self.text(top) if before in ("|", "|&") else None
        return self.simple(words, depth, stdin=stdin, piped=piped)

    # ------------------------------------------------------------------ one simple command

    def simple(
        self,
        words: Sequence[Word],
        depth: int,
        *,
        stdin: str | None = None,
        piped: str | None = None,
        scan: bool = True,
    ) -> Refusal | None:
        at, xargs, inline = _after_wrappers(words)
        if inline is not None:  # env -S '…', flock -c '…'
            return self.line(inline, depth + 1)
        if at >= len(words):
            return None
        value, raw = words[at]
        args = list(words[at + 1 :])
        if value is None:
            return _built_at_run_time(raw, " ".join(w[1] for w in words[at:]))
        head = program_name(value)
        if head in GIT_NAMES or (head.startswith("git-") and head[4:] in GATED_GIT):
            return self.git(value, head, args, depth, xargs=xargs)
        if head in PB_NAMES:
            return _pb_task(args)
        builtin = {"eval": self.eval, "cd": self.cd, "find": self.find_exec}.get(head)
        if builtin is not None:
            return builtin(args, depth)
        found = self.writes(head, args)
        if found is not None or head in DATA:
            return found
        if head in SHELLS or head in INTERPRETERS or head in ("source", "."):
            return self.interpreter(head, args, depth, stdin=stdin, piped=piped, xargs=xargs)
        if head in FILE_RUNNERS:
            return self.make(head, args, depth)
        if head in PACKAGE_RUNNERS:
            return self.package_script(head, args, depth)
        return self.other(value, head, args, depth, scan=scan)

    def cd(self, args: list[Word], _depth: int) -> Refusal | None:
        target = next((v for v, _ in args if v is not None and not v.startswith("-")), "")
        self.in_git = in_git_dir(target)
        return None

    def other(
        self, value: str, head: str, args: list[Word], depth: int, *, scan: bool
    ) -> Refusal | None:
        """A program plan-build does not know: a string it runs as a command line (`ssh h
        '…'`, `watch '…'`), a script file it is, or `git push` among its words."""
        if head in STRING_RUNNERS:
            for v, _ in args:
                if v is not None and META.search(v):
                    found = self.line(v, depth + 1)
                    if found is not None:
                        return found
        found = self.script(value, depth, runner=None) if "/" in value else None
        if found is not None:  # ./x.sh, bin/release: the file is the program
            return found
        if scan:  # an unknown program given `git push` as its words may well run it
            for i, (v, _) in enumerate(args):
                name = program_name(v) if v is not None else ""
                if name in GIT_NAMES or name in PB_NAMES or name.startswith("git-"):
                    found = self.simple(args[i:], depth, scan=False)
                    if found is not None:
                        return found
        return None

    def git(
        self, value: str, head: str, args: list[Word], depth: int, *, xargs: bool
    ) -> Refusal | None:
        """`git [global options] <subcommand> …` as git reads it."""
        if head.startswith("git-"):
            return Refusal(f"`{value}` is git's {head[4:]}, which {_what(head[4:])}")
        i, alias = _git_subcommand(args)
        if alias is not None:
            return Refusal(f"it defines a git alias (`{alias}`), which could commit")
        if i >= len(args):
            if xargs:
                return Refusal(
                    "xargs gives git its subcommand from its input, which plan-build cannot see"
                )
            return None
        sub_value, sub_raw = args[i]
        if sub_value is None:
            return Refusal(f"its git subcommand is built at run time (`{sub_raw}`)")
        sub = sub_value.lower()
        rest = [v for v, _ in args[i + 1 :]]
        if sub in GATED_GIT:
            return Refusal(f"`git {sub}` {_what(sub)}")
        if _destroys(sub, [w for w in rest if w is not None], self.cwd):
            shown = " ".join(["git", sub_value, *(w for w in rest if w is not None)])
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return Refusal(
                f"`{shown}` would throw away the user's uncommitted work (changes never "
                "committed cannot be got back)",
                ASK_FIRST,
            )
        if sub == "hash-object" and ({"commit", "-tcommit", "--type=commit"} & set(rest)):
            return Refusal("`git hash-object -t commit` makes commits")
        if sub == "reset" and "--soft" in rest:
            return Refusal("`git reset --soft` moves the branch (commits without the word)")
        if sub == "config" and any(_ALIAS.search(w or "") for w in rest) and not set(rest) & READS:
            return Refusal("it defines a git alias, which could commit or push")
        if sub == "submodule" and "foreach" in rest:
            program = " ".join(w for w in rest[rest.index("foreach") + 1 :] if w is not None)
            return self.line(program, depth + 1)
        if sub not in KNOWN_GIT:
            return Refusal(
                f"`git {sub_value}` is not a git command plan-build knows (an alias or an add-on "
                "could commit or push); use git's own command name"
            )
        return None

    def eval(self, args: list[Word], depth: int) -> Refusal | None:
        if all(v is not None for v, _ in args):
            return self.line(" ".join(v or "" for v, _ in args), depth + 1)
        for _, raw in args:  # eval "$(cat x)": the file's text
            file = _CAT_FILE.match(raw.strip('"'))
            if file is not None:
                return self.script(file.group(1) or file.group(2), depth, runner="sh")
        text = " ".join(raw for _, raw in args)
        gated = _GATED_WORD.search(text)
        if gated is not None:
            return Refusal(f"it evals text built at run time that names `{gated.group(0)}`")
        return None

    def writes(self, head: str, args: list[Word]) -> Refusal | None:
        """A program writing a path inside .git (`rm -rf .git` throws away the history too)."""
        paths = [v if v is not None else raw for v, raw in args]
        positional = [p for p in paths if not p.startswith("-")]
        if head in WRITE_ALL:
            targets = positional
        elif head in WRITE_LAST:
            targets = positional[-1:] if len(positional) > 1 else []
        elif head in ("sed", "perl") and any(re.match(r"-[a-zA-Z]*i", p) for p in paths):
            scripts = [i + 1 for i, p in enumerate(paths) if re.fullmatch(r"-[a-zA-Z]*[ef]", p)]
            files = [p for i, p in enumerate(paths) if i not in scripts and p[:1] != "-"]
            targets = files if scripts else files[1:]
        elif head == "dd":
            targets = [p[3:] for p in paths if p.startswith("of=")]
        else:
            return None
        for path in targets:
            if path.rstrip("/") in (".git", "./.git") and head in ("rm", "shred"):
                return Refusal(
                    f"`{head} {path}` would delete the repository: its history and the user's "
                    "uncommitted work with it",
                    ASK_FIRST,
                )
            if in_git_dir(path) or (self.in_git and not path.startswith("/")):
                return Refusal(f"it writes into git's own directory ({path})", GIT_DIR_ADVICE)
        return None

    def interpreter(
        self,
        head: str,
        args: list[Word],
        depth: int,
        *,
        stdin: str | None,
        piped: str | None,
        xargs: bool,
    ) -> Refusal | None:
        """A shell or interpreter: its program from `-c`, a file, a heredoc or a pipe."""
        values = [v for v, _ in args]
        shell = head in SHELLS or head in ("source", ".")
        flag = next(
            (i for i, v in enumerate(values) if v is not None and _code_flag(head, v)), None
        )
        if flag is None and head in ("awk", "gawk", "mawk") and "-f" not in values:
            flag = next((i - 1 for i, v in enumerate(values) if v and not v.startswith("-")), None)
        if flag is not None:
            value, raw = args[flag + 1] if flag + 1 < len(args) else (None, "")
            if not shell:
                return _code(head, value if value is not None else raw)
            if value is not None:  # xargs sh -c '{}': its input is the program too
                found = self.line(value, depth + 1)
                return found or (_unseen(head, piped) if xargs and piped else None)
            file = _CAT_FILE.match(raw.strip('"'))
            return self.script(file.group(1) or file.group(2), depth, runner="sh") if file else None
        if "-m" in values and values.index("-m") + 1 < len(values) and not shell:
            return self.module(head, args[values.index("-m") + 1 :], depth)
        files = [w for w in args if w[0] is None or not w[0].startswith("-")]
        if files and files[0][0] not in ("-", "/dev/stdin"):
            file_value, file_raw = files[0]
            if file_value is not None:
                return self.script(file_value, depth, runner=head)
            file = _CAT_FILE.match(file_raw.replace("<(", "$(", 1))
            if file is not None:  # source <(cat x)
                return self.script(file.group(1) or file.group(2), depth, runner=head)
            return _unseen(head, file_raw)
        if stdin is not None:
            return self.line(stdin, depth + 1) if shell else _code(head, stdin)
        if piped is not None or xargs:  # the program comes from another command's output
            return _unseen(head, piped or "")
        return None

    def module(self, head: str, args: list[Word], depth: int) -> Refusal | None:
        """`python -m NAME …`: plan-build's own, or the module's file in the directory."""
        name = args[0][0] or ""
        if name in PB_MODULES:
            return _pb_task(args[1:])
        for path in (f"{name.replace('.', '/')}.py", f"{name.replace('.', '/')}/__main__.py"):
            found = self.script(path, depth, runner=head)
            if found is not None:
                return found
        return None

    def find_exec(self, args: list[Word], depth: int) -> Refusal | None:
        """`find … -exec git commit \\;`: the words up to `;` or `+` are a command."""
        values = [v for v, _ in args]
        for i, v in enumerate(values):
            if v in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(values)) if values[j] in (";", "+")), None)
                found = self.simple(args[i + 1 : end], depth)
                if found is not None:
                    return found
        return None

    def make(self, head: str, args: list[Word], depth: int) -> Refusal | None:
        """`make [target…]`, `just [recipe…]`: the recipes of the targets named (or the first)
        and of what they depend on."""
        values = [v or "" for v, _ in args]
        if {"-n", "--dry-run", "--just-print", "--recon", "-l", "--list"} & set(values):
            return None
        folder, files, targets = self.cwd or ".", list(FILE_RUNNERS[head]), []
        i = 0
        while i < len(values):
            v = values[i]
            if v in ("-f", "--file", "--makefile", "--justfile") and i + 1 < len(values):
                files, i = [values[i + 1]], i + 2
            elif v in ("-C", "--directory", "--working-directory") and i + 1 < len(values):
                folder, i = os.path.join(folder, values[i + 1]), i + 2
            elif v.startswith("-") or "=" in v:
                i += 1
            else:
                targets.append(v)
                i += 1
        for name in files:
            text = _read(os.path.join(folder, name))
            if text is None:
                continue
            recipes = _recipes(text, targets, tabs_only=head == "make")
            found = self.line(recipes.replace("$$", "$"), depth + 1) if recipes else None
            if found is not None:
                return Refusal(f"{name}'s recipe: {found.reason}", found.advice)
            return None
        return None

    def package_script(self, head: str, args: list[Word], depth: int) -> Refusal | None:
        """`npm test`, `npm run NAME`, `yarn NAME`, `pnpm NAME`: the script package.json names
        (with its pre- and post- scripts)."""
        words = [v or "" for v, _ in args if not (v or "").startswith("-")]
        if words[:1] in (["run"], ["run-script"]):
            words = words[1:]
        elif head == "npm" and words[:1] not in (["test"], ["t"], ["start"], ["stop"], ["restart"]):
            return None
        if not words:
            return None
        name = "test" if words[0] == "t" else words[0]
        text = _read(os.path.join(self.cwd or ".", "package.json"))
        try:
            scripts = json.loads(text or "{}").get("scripts") or {}
        except (ValueError, AttributeError):
            return None
        if not isinstance(scripts, dict):
            return None
        for key in (f"pre{name}", name, f"post{name}"):
            body = scripts.get(key)
            found = self.line(body, depth + 1) if isinstance(body, str) else None
            if found is not None:
                return Refusal(f"package.json's `{key}` script: {found.reason}", found.advice)
        return None

    def script(self, path: str, depth: int, *, runner: str | None) -> Refusal | None:
        """A file the command runs, read (first 256 KiB) and judged: a shell script as a
        command line, other code by what it names."""
        if "$" in path or path in self.read:
            return None
        full = path if os.path.isabs(path) or self.cwd is None else os.path.join(self.cwd, path)
        text = _read(full)
        if text is None:
            return None
        self.read.add(path)
        shell = runner in SHELLS or runner in ("source", ".", "sh")
        if shell or (runner is None and (_SHELL_FILE.search(text[:200]) or path.endswith(".sh"))):
            found = self.line(text, depth + 1)
        elif runner is None and not text.startswith("#!"):
            found = self.line(text, depth + 1)  # no interpreter line: the shell runs it
        else:
            found = _code(runner or "the script", text)
        if found is not None:
            return Refusal(f"the file it runs ({path}): {found.reason}", found.advice)
        return None


# ------------------------------------------------------------------ small readings


# tree-sitter-bash 0.25.1 reads past its buffer (SIGSEGV on Linux) when a `{` is followed by a
# four-byte UTF-8 character (tree-sitter/tree-sitter-bash#337). Such a character is a plain word
# character to bash, so the parser is given two two-byte word characters in its place: the byte
# offsets stay the same, and every text is read from the original bytes.
_FOUR_BYTE = re.compile(rb"[\xf0-\xf7][\x80-\xbf]{3}")
_STAND_IN = "\u00df\u00df".encode()


def _parseable(source: bytes) -> bytes:
    return _FOUR_BYTE.sub(_STAND_IN, source)


def _read(path: str) -> str | None:
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            return fh.read(MAX_SCRIPT).decode("utf-8", "replace")
    except OSError:
        return None


READS = frozenset({"--get", "--get-all", "--get-regexp", "-l", "--list", "get"})


def _git_subcommand(args: Sequence[Word]) -> tuple[int, str | None]:
    """(index of git's subcommand after its global options, an alias the options define)."""
    i = 0
    while i < len(args):
        word = args[i][0]
        if word is None:
            break
        if word in GIT_VALUE_OPTS:
            option = (args[i + 1][0] if i + 1 < len(args) else "") or ""
            if word in ("-c", "--config-env") and _ALIAS.search(option):
                return i, f"{word} {option}"
            i += 2
            continue
        if not word.startswith("-"):
            break
        if word.startswith(("-c", "--config-env=")) and _ALIAS.search(word):
            return i, word
        i += 1
    return i, None


def _looked_up(words: list[str]) -> str | None:
    """The program `$(which git)` or `$(command -v git)` names."""
    if len(words) == 2 and words[0] in ("which", "type"):
        return words[1]
    if len(words) == 3 and words[:2] in (["command", "-v"], ["type", "-P"]):
        return words[2]
    return None


def _built_at_run_time(raw: str, text: str) -> Refusal | None:
    gated = _GATED_WORD.search(text)
    if gated is None:
        return None
    return Refusal(
        f"its program is built at run time (`{raw}`) and it names `{gated.group(0)}`, so "
        "plan-build cannot tell what it runs"
    )


def _pb_task(args: Sequence[Word]) -> Refusal | None:
    gated = next((v for v, _ in args if v is not None and v.lower() in GATED_TASKS), None)
    if gated is not None:
        return Refusal(f"it runs plan-build's `{gated}`, which needs the user")
    return None


def _code(head: str, text: str) -> Refusal | None:
    """Inline or file code for an interpreter: refused when it starts programs and names a
    commit or push, uses a git library to commit, or runs text it decodes."""
    spawns = _SPAWN.search(text) is not None
    if spawns and lexical(text):
        return Refusal(f"its {head} code starts a program and names a commit, push or approval")
    if _GITLIB.search(text) and _GIT_GATED.search(text):
        return Refusal(f"its {head} code uses a git library to commit or push")
    if spawns and _DECODE.search(text) and head not in ("awk", "gawk", "mawk"):
        return Refusal(f"its {head} code runs programs from text it decodes")
    return None


def _unseen(head: str, context: str) -> Refusal | None:
    """A program that comes from another command's output: refused when the command line
    names a gated act or decodes what it feeds in."""
    found = lexical(context)
    if found is not None:
        return Refusal(f"it feeds {head} a program plan-build cannot see, and {found.reason}")
    if re.search(r"base64\s+(-d|--decode)|xxd\s+-r|\brev\b|\bopenssl\b.*\s-d\b", context):
        return Refusal(f"it feeds {head} a program it decodes, which plan-build cannot see")
    return None


def _destroys(sub: str, words: list[str], cwd: str | None) -> bool:
    """Whether `git <sub> <words>` throws away uncommitted work in the work tree."""
    shorts = "".join(w[1:] for w in words if re.fullmatch(r"-[A-Za-z]+", w))
    options = set(words)
    if sub == "reset":
        return "--hard" in options
    if sub == "stash":
        action = next((w for w in words if not w.startswith("-")), "push")
        return action not in ("list", "show", "create", "store")
    if sub == "clean":
        return "f" in shorts or "--force" in options
    if sub == "switch":
        return bool({"--discard-changes", "--force"} & options) or "f" in shorts
    if sub == "restore":
        staged = "S" in shorts or "--staged" in options
        return not staged or "W" in shorts or "--worktree" in options
    return sub == "checkout" and _checkout_destroys(words, shorts, cwd)


def _checkout_destroys(words: list[str], shorts: str, cwd: str | None) -> bool:
    """`git checkout` with paths (or `-f`) overwrites them; with a branch it keeps changes."""
    options = set(words)
    if "f" in shorts or "--force" in options:
        return True
    if "--" in words:
        return words.index("--") + 1 < len(words)
    if {"-b", "-B", "--orphan"} & options:
        return False
    for w in words:
        if w.startswith("-"):
            continue
        if w in (".", ":/") or "*" in w:
            return True
        if cwd is not None and os.path.exists(os.path.join(cwd, w)):
            return True  # a path in the work tree, not a branch
    return False


_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*([^;#]*)(?:;(.*))?$")


def _recipes(text: str, targets: list[str], *, tabs_only: bool) -> str:
    """The recipe lines of `targets` (the first target when none is named) and of what they
    depend on, from a Makefile (`tabs_only`) or a justfile."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    first: str | None = None
    current: list[str] = []
    for line in text.replace("\\\n", " ").splitlines():
        if line[:1] == "\t" or (not tabs_only and line[:1] == " " and line.strip()):
            for name in current:
                rules[name][1].append(line.strip().lstrip("@-+ "))
            continue
        rule = _RULE.match(line)
        if rule is None:
            if line.strip() and not line.lstrip().startswith("#"):
                current = []
            continue
        names = rule.group(1).split()
        current = names if tabs_only else names[:1]
        for name in current:
            rule_of = rules.setdefault(name, ([], []))
            rule_of[0].extend(rule.group(2).replace("|", " ").split())
            if rule.group(3):
                rule_of[1].append(rule.group(3).strip())
            if first is None and not name.startswith("."):
                first = name
    todo = list(targets) or ([first] if first else [])
    seen: set[str] = set()
    lines: list[str] = []
    while todo and len(seen) < 200:
        name = todo.pop(0)
        if name in seen or name not in rules:
            continue
        seen.add(name)
        todo += rules[name][0]
        lines += rules[name][1]
    return "\n".join(lines)


# the options that make an interpreter's next word its program text
CODE_FLAGS = {
    "python": "c", "pypy": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep",
    "deno": "e", "bun": "e", "php": "r", "lua": "e", "osascript": "e", "pwsh": "c",
    "tclsh": "",
}  # fmt: skip
LONG_CODE_FLAGS = ("--eval", "--print", "--command", "-Command")


def _code_flag(head: str, arg: str) -> bool:
    if arg.startswith("--") or arg == "-Command":
        return arg.split("=", 1)[0] in LONG_CODE_FLAGS
    letters = "c" if head in SHELLS else CODE_FLAGS.get(head, "ce")
    return re.fullmatch(r"-[A-Za-z]+", arg) is not None and any(c in arg[1:] for c in letters)


WRAPPERS = frozenset(
    {"env", "timeout", "setsid", "nohup", "nice", "ionice", "chrt", "taskset", "command",
     "exec", "sudo", "doas", "xargs", "time", "stdbuf", "unbuffer", "flock", "nsenter",
     "unshare", "firejail", "systemd-run", "caffeinate", "builtin", "uv", "uvx", "npx",
     "pipx", "poetry", "pdm", "hatch", "run", "exec-env", "!"}
)  # fmt: skip
TAKES_ONE = frozenset({"timeout", "flock", "chrt", "taskset"})  # a positional before the program
# options of a wrapper that take the next word as their value
WRAPPER_VALUES = {
    "env": {"-u", "--unset", "-C", "--chdir"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p", "--class", "--classdata"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"},
    "doas": {"-u", "-C"},
    "xargs": {"-I", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "--arg-file", "--delimiter",
              "--max-args", "--max-lines", "--max-procs", "--max-chars"},
    "stdbuf": {"-i", "-o", "-e"},
    "flock": {"-w", "--timeout", "-E", "--conflict-exit-code"},
    "time": {"-f", "--format", "-o", "--output"},
    "systemd-run": {"-p", "--property", "-E", "--setenv", "-u", "--unit", "-M", "-H",
                    "--description", "--slice", "--uid", "--gid", "--working-directory"},
    "exec": {"-a"},
    "caffeinate": {"-t", "-w"},
    "uv": {"--with", "--python", "-p", "--project", "--directory", "--env-file", "--extra",
           "--group", "--package", "--index", "--from"},
    "uvx": {"--with", "--python", "-p", "--from", "--index"},
    "nsenter": {"-t", "--target", "-S", "-G"},
}  # fmt: skip
_VALUE = re.compile(r"^(?:\d+(?:\.\d+)?[smhd]?|[A-Za-z_][A-Za-z0-9_]*=.*)$")


def _after_wrappers(words: Sequence[Word]) -> tuple[int, bool, str | None]:
    """(index of the program a chain of wrappers runs, whether xargs is among them, a command
    line a wrapper takes as one string: `env -S '…'`, `flock -c '…'`)."""
    i = 0
    while i < len(words) and "=" in (words[i][0] or "") and _VALUE.match(words[i][0] or ""):
        i += 1  # VAR=value before the command word
    xargs = False
    while i < len(words) and words[i][0] is not None:
        name = program_name(words[i][0] or "")
        if name not in WRAPPERS:
            break
        xargs = xargs or name == "xargs"
        i, inline = _wrapper_options(name, words, i + 1)
        if inline is not None:
            return len(words), xargs, inline or None
    return i, xargs, None


def _wrapper_options(name: str, words: Sequence[Word], i: int) -> tuple[int, str | None]:
    """(index after one wrapper's options, a command line it takes as a string: "" when it
    runs nothing, `command -v`)."""
    need = name in TAKES_ONE
    takes = WRAPPER_VALUES.get(name, set())
    while i < len(words):
        word = words[i][0]
        if word is None:
            break
        if (name, word) in STRING_OPTIONS:
            return i, (words[i + 1][0] if i + 1 < len(words) else None) or ""
        if name == "env" and word.startswith(("-S", "--split-string=")):
            return i, word.split("=", 1)[-1] if "=" in word else word[2:]
        if name == "command" and word in ("-v", "-V"):
            return i, ""  # a look-up: nothing runs
        if word in takes:
            i += 2
        elif word.startswith("-"):
            i += 1
        elif need or _VALUE.match(word):
            need = False
            i += 1
        else:
            break
    return i, None


STRING_OPTIONS = frozenset(
    {("env", "-S"), ("env", "--split-string"), ("flock", "-c"), ("flock", "--command")}
)


def _what(sub: str) -> str:
    if sub in ("push", "send-pack", "http-push"):
        return "sends commits away"
    if sub in ("commit", "commit-tree", "am", "fast-import", "subtree", "replay"):
        return "makes commits"
    return "makes commits or moves a branch"
