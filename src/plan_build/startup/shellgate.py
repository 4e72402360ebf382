"""Which shell commands an agent may not run: a commit, a push, an approval, through any wrapper.

Claude Code's PreToolUse hook (startup/gatehook.py) asks `refusal(command)` before every Bash
call. Standard library only, and nothing of plan_build: the hook is its own short-lived
program, and its start-up is most of a tool call's wait.

The test is structural first, then lexical, and fails closed:

- the command line is split as a shell splits it (quotes, `\\`, `;`, `&&`, `||`, `|`, `&`,
  newlines, subshells); `$(…)`, backticks and process substitution become commands of their
  own; every word that itself looks like a command line (`bash -c "…"`, `su -c`, `ssh host
  "…"`, `watch "…"`, a here-string) is split again, to a fixed depth;
- in every simple command, *any* word naming git (`git`, `/usr/bin/git`, `git-commit`, `hub`)
  or plan-build (`plan-build`, `plan_build`, `inv`, `invoke`, the launcher, its zipapp) is
  read with the words after it, so no prefix hides it (`env`, `VAR=1`, `timeout 5`, `setsid
  -f`, `nohup`, `nice`, `command`, `exec`, `sudo`, `xargs`, `uv run`, or one not listed);
- git's global options are read as git reads them (`-C dir`, `-c k=v`, `--git-dir=…`), and a
  subcommand that is not a git command plan-build knows (an alias, an add-on) is refused, as
  is defining an alias;
- a program that cannot be seen is refused: text piped into a shell or an interpreter, a
  command word built at run time (`$x commit`), `eval` of anything but literal text, inline
  code (`python -c`) that mentions a gated word;
- a script file the command runs (`bash x.sh`, `./x.sh`, `source x`, `python x.py`, `make`,
  `npm run x`), after any wrappers, is read (first 256 KiB) and judged the same way; a shell
  started with no program it can see (`bash <(…)`, `sh -c "$(cat x)"`) is refused;
- finally the text as a whole: a git word beside a gated git subcommand, or a plan-build word
  beside a gated task, anywhere in it, is refused: plan-build cannot tell for certain that it
  is only mentioned. The reason says how to search or write such text without Bash.

The module is over 400 lines on purpose: one judgement read top to bottom, in one file that the
hook imports alone (every extra module is start-up time in front of a tool call).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the hook's start-up is a tool call's wait: no import it does not need
    from collections.abc import Iterator, Sequence

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
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "csh",
                    "tcsh", "yash"})  # fmt: skip
INTERPRETERS = frozenset({"python", "perl", "ruby", "node", "nodejs", "deno", "bun", "php",
                          "lua", "tclsh", "awk", "gawk", "mawk", "osascript", "pwsh"})  # fmt: skip
# programs that run a file named in the working directory
FILE_RUNNERS = {"make": ("Makefile", "makefile", "GNUmakefile"), "just": ("justfile",)}
PACKAGE_RUNNERS = frozenset({"npm", "yarn", "pnpm", "bun"})
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
_GIT_STATE = re.compile(
    r"\.git/+(?:refs|HEAD|packed-refs|plan-build|index\b|hooks|config\b)|packed-refs"
)
_DYNAMIC = re.compile(r"[$`]|\beval\b|<<")
_GATED_WORD = re.compile(
    r"(?<![\w.-])(?:"
    + "|".join(re.escape(w) for w in sorted(GATED_GIT | GATED_TASKS))
    + r")(?![\w-])",
    re.IGNORECASE,
)
META = re.compile(r"[\s;&|()<>`$]")
_SHELL_FILE = re.compile(r"^#!.*\b(?:sh|bash|dash|zsh|ksh)\b")
PUNCTUATION = ";&|()<>\n"
OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "\n", "(", ")", "!", "{", "}"})
REDIRECTS = frozenset({"<", ">", ">>", "<<", "<<-", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"})


class Refusal:
    """What was found, in one sentence (a plain class: dataclasses costs the hook 10 ms)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Refusal({self.reason!r})"


def refusal(command: str, *, cwd: str | None = None) -> Refusal | None:
    """Why `command` may not run inside the agent, or None when plan-build sees no gated act."""
    if len(command) > MAX_TEXT or "\0" in command:
        return Refusal("the command is too long or holds a NUL byte for plan-build to read")
    found = _Judge(cwd).command_line(command, 0)
    if found is None and _GIT_STATE.search(command):
        found = Refusal("it names git's own refs or plan-build's state inside .git")
    if found is None and _DYNAMIC.search(command):
        found = lexical(command)
    return found


def lexical(text: str) -> Refusal | None:
    """A gated pair named anywhere in `text`, quoted or not."""
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
    """Shell words and operators, command substitutions opened up; None when it cannot be
    split (an open quote)."""
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


def simple_commands(tokens: Sequence[str]) -> Iterator[tuple[list[str], str | None, str | None]]:
    """(words, here-string or heredoc word, what precedes it: `|` when data is piped in)."""
    words: list[str] = []
    here: str | None = None
    piped: str | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in REDIRECTS or (
            tok.isdigit() and i + 1 < len(tokens) and tokens[i + 1] in REDIRECTS
        ):
            if tok.isdigit():
                i += 1
                tok = tokens[i]
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            if tok == "<<<":
                here = target
            elif tok == "<" and target:
                here = f"<{target}"
            elif tok in ("<<", "<<-"):
                here = "<<"  # a heredoc: its lines follow as commands of their own
            i += 2
            continue
        if tok in OPERATORS:
            if words:
                yield words, here, piped
            words, here = [], None
            piped = tok if tok in ("|", "|&") else None
            i += 1
            continue
        words.append(tok)
        i += 1
    if words:
        yield words, here, piped


class _Judge:
    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.read: set[str] = set()

    def command_line(self, text: str, depth: int) -> Refusal | None:
        if depth > MAX_DEPTH:
            return lexical(text) and Refusal("it nests commands deeper than plan-build reads")
        tokens = split(text)
        if tokens is None:
            return lexical(text)
        for words, here, piped in simple_commands(tokens):
            found = self.simple(words, here, piped, depth)
            if found is not None:
                return found
        return None

    def simple(
        self, words: list[str], here: str | None, piped: str | None, depth: int
    ) -> Refusal | None:
        named = gated_names(words)
        if named is not None:
            return named
        first = _first_word(words)
        head = program_name(words[first]) if first < len(words) else ""
        if head == "eval":
            if any("$" in w or "\n" in w for w in words[first + 1 :]):
                return Refusal("it evals text built at run time, which plan-build cannot see")
            return self.command_line(" ".join(words[first + 1 :]), depth + 1)
        # the program may stand after wrappers (`env`, `timeout 5`, `nohup`, `nice -n 5`)
        at = _after_wrappers(words, first)
        head = program_name(words[at]) if at < len(words) else ""
        raw = words[at] if at < len(words) else ""
        unseen = self.unseen_program(head, words[at + 1 :], here, piped, depth)
        if unseen is None and "/" in raw:  # ./x.sh, bin/release: the file is the program
            unseen = self.script(raw, depth, shell_script=False)
        if unseen is not None:
            return unseen
        for word in words:  # `bash -c "…"`, `ssh host "…"`, `watch "…"`: split again
            if META.search(word):
                found = self.command_line(word, depth + 1)
                if found is not None:
                    return found
        if here is not None and not here.startswith("<"):
            return self.command_line(here, depth + 1)
        return None

    def unseen_program(
        self, head: str, args: list[str], here: str | None, piped: str | None, depth: int
    ) -> Refusal | None:
        """A shell or interpreter whose program comes from stdin, a file or inline code."""
        if head in SHELLS or head in INTERPRETERS or head in ("source", "."):
            return self.interpreter(head, args, here, piped, depth)
        if head in FILE_RUNNERS:
            for name in FILE_RUNNERS[head]:
                found = self.script(name, depth, shell_script=True)
                if found is not None:
                    return found
            return None
        if head in PACKAGE_RUNNERS:
            return self.package_script(args, depth)
        return None

    def interpreter(
        self, head: str, args: list[str], here: str | None, piped: str | None, depth: int
    ) -> Refusal | None:
        inline = [a for a in args if not a.startswith("-") or a in ("-", "/dev/stdin")]
        code_flag = head in ("awk", "gawk", "mawk") or any(_code_flag(head, a) for a in args)
        if code_flag and head in INTERPRETERS:
            text = " ".join(args)
            if lexical(text) or (_DECODE.search(text) and _SPAWN.search(text)):
                return Refusal(f"its inline {head} code may run a gated command")
            if _GITLIB.search(text) and _GATED_WORD.search(text):
                return Refusal(f"its inline {head} code uses a git library to commit or push")
        code = next((a for a in inline if a.strip()), "") if code_flag else ""
        if code.startswith(("$", "\n")) or (code_flag and head in SHELLS and not code):
            return Refusal(f"its {head} program is built at run time (a substitution)")
        if code_flag:
            return None
        if "-m" in args and args.index("-m") + 1 < len(args):  # `python -m tool`: its file
            module = args[args.index("-m") + 1].replace(".", "/")
            for path in (f"{module}.py", f"{module}/__main__.py"):
                found = self.script(path, depth, shell_script=False)
                if found is not None:
                    return found
            return None
        from_stdin = piped is not None or (here is not None and here[:1] == "<" and here != "<<")
        if not inline or inline[0] in ("-", "/dev/stdin"):
            if from_stdin:
                return Refusal(f"it feeds {head} a program plan-build cannot see (from stdin)")
            if here is None:
                return Refusal(f"it starts {head} without a program plan-build can see")
            return None
        return self.script(inline[0], depth, shell_script=head not in INTERPRETERS)

    def package_script(self, args: list[str], depth: int) -> Refusal | None:
        """`npm run NAME`, `npm test`, `yarn NAME`, `pnpm NAME`: the script package.json names."""
        words = [a for a in args if not a.startswith("-")]
        if words[:1] in (["run"], ["run-script"]):
            words = words[1:]
        if not words:
            return None
        try:
            full = os.path.join(self.cwd or ".", "package.json")
            with open(full, "rb") as fh:
                scripts = json.loads(fh.read(MAX_SCRIPT)).get("scripts") or {}
        except (OSError, ValueError, AttributeError):
            return None
        body = scripts.get(words[0]) if isinstance(scripts, dict) else None
        if not isinstance(body, str):
            return None
        found = self.command_line(body, depth + 1)
        return Refusal(f"package.json's `{words[0]}` script: {found.reason}") if found else None

    def script(self, path: str, depth: int, *, shell_script: bool) -> Refusal | None:
        """A file the command runs, read and judged as a command line."""
        if "$" in path or path in self.read:
            return None
        full = path if os.path.isabs(path) or self.cwd is None else os.path.join(self.cwd, path)
        try:
            if not os.path.isfile(full):
                return None
            with open(full, "rb") as fh:
                data = fh.read(MAX_SCRIPT)
        except OSError:
            return None
        self.read.add(path)
        text = data.decode("utf-8", "replace")
        if shell_script or _SHELL_FILE.search(text[:200]) or path.endswith(".sh"):
            code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
            found = self.command_line(code, depth + 1) or lexical(text)
        elif _SPAWN.search(text) or _GITLIB.search(text):
            found = lexical(text)
            if found is None and _DECODE.search(text):
                found = Refusal(
                    "it runs programs from text it decodes, which plan-build cannot read"
                )
        else:
            found = None
        if found is not None:
            return Refusal(f"the file it runs ({path}): {found.reason}")
        return None


def gated_names(words: list[str]) -> Refusal | None:
    """Any word of a simple command that names git or plan-build, read with what follows it
    (so no prefix, known or not, hides it), or a command word built at run time."""
    for i, word in enumerate(words):
        name = program_name(word)
        if "$" in word and i == _first_word(words):
            text = " ".join(words)
            if (
                _GATED_WORD.search(text)
                or _DECODE.search(text)
                or any("$" in w for w in words[i + 1 :])
            ):
                return Refusal(f"its program is built at run time (`{word}`)")
        if name in GIT_NAMES or (name.startswith("git-") and name[4:] in GATED_GIT):
            found = git_refusal(words[i:], name)
            if found is not None:
                return found
        if name in PB_NAMES:
            gated = next((w for w in words[i + 1 :] if w.lower() in GATED_TASKS), None)
            if gated is not None:
                return Refusal(f"it runs plan-build's `{gated}`, which needs the user")
    return None


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
     "unshare", "firejail", "systemd-run", "runuser", "caffeinate", "builtin", "then", "do",
     "else", "!", "uv", "uvx", "npx", "pipx", "poetry", "pdm", "hatch", "run", "exec-env"}
)  # fmt: skip
TAKES_ONE = frozenset({"timeout", "flock", "chrt", "taskset"})  # a positional before the program
_VALUE = re.compile(r"^(?:\d+(?:\.\d+)?[smhd]?|[A-Za-z_][A-Za-z0-9_]*=.*)$")


def _after_wrappers(words: Sequence[str], i: int) -> int:
    """The index of the program a chain of wrappers runs (`timeout 5 nice -n 3 bash x.sh`)."""
    while i < len(words) and program_name(words[i]) in WRAPPERS:
        need = program_name(words[i]) in TAKES_ONE
        i += 1
        while i < len(words):
            if words[i].startswith("-"):
                i += 1
            elif need:
                need = False
                i += 1
            elif _VALUE.match(words[i]):
                i += 1
            else:
                break
    return i


def _first_word(words: Sequence[str]) -> int:
    """The index of the command word, after `VAR=value` assignments."""
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]):
        i += 1
    return i


def git_refusal(words: Sequence[str], name: str) -> Refusal | None:
    """`git [global options] <subcommand> …` as git reads it."""
    if name.startswith("git-"):
        return Refusal(f"`{words[0]}` is git's {name[4:]}, which {_what(name[4:])}")
    i = 1
    while i < len(words):
        word = words[i]
        if word in GIT_VALUE_OPTS:
            value = words[i + 1] if i + 1 < len(words) else ""
            if word in ("-c", "--config-env") and _ALIAS.search(value):
                return Refusal(f"it defines a git alias (`-c {value}`), which could commit")
            i += 2
            continue
        if word.startswith("-"):
            if word.startswith(("-c", "--config-env=")) and _ALIAS.search(word):
                return Refusal(f"it defines a git alias (`{word}`), which could commit")
            i += 1
            continue
        break
    if i >= len(words):
        return None
    sub = words[i].lower()
    rest = words[i + 1 :]
    if sub in GATED_GIT:
        return Refusal(f"`git {sub}` {_what(sub)}")
    if sub == "hash-object" and "commit" in rest:
        return Refusal("`git hash-object -t commit` makes commits")
    if "$" in sub or "`" in sub:
        return Refusal(f"its git subcommand is built at run time (`{words[i]}`)")
    reading = ("--get", "--get-all", "--get-regexp", "-l", "--list", "get")
    if sub == "config" and any(_ALIAS.search(w) for w in rest) and not set(rest) & set(reading):
        return Refusal("it defines a git alias, which could commit or push")
    if sub not in KNOWN_GIT:
        return Refusal(
            f"`git {words[i]}` is not a git command plan-build knows (an alias or an add-on "
            "could commit or push)"
        )
    return None


def _what(sub: str) -> str:
    if sub in ("push", "send-pack", "http-push"):
        return "sends commits away"
    if sub in ("commit", "commit-tree", "am", "fast-import", "subtree", "replay"):
        return "makes commits"
    return "makes commits or moves a branch"
