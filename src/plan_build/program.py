"""The `plan-build` program: the task collection behind invoke.Program, with plan-build's own
core options, no invoke configuration, its own help, and its error handling (one message,
named exit codes, internal errors logged, Ctrl-C is 130; plan_build.outcomes). See
docs/adr/0090. plan_build.main starts it for every command but the direct `status`."""

from __future__ import annotations

import logging
import re
import sys
from typing import Any, cast

from invoke.collection import Collection
from invoke.config import Config
from invoke.exceptions import Exit, ParseError, UnexpectedExit
from invoke.parser.argument import Argument
from invoke.parser.context import ParserContext
from invoke.program import Program

from plan_build import __version__
from plan_build.cli.strict import HELP_FLAGS, FlagForArgument, StrictParser, metavar
from plan_build.core.errors import ExitCode
from plan_build.outcomes import PREFIX, guarded

SHELLS = ("bash", "zsh", "fish")
# (names, value, help) of the only core options; everything else is an unknown option
CORE_OPTIONS: tuple[tuple[tuple[str, str] | tuple[str], str, str], ...] = (
    (("help", "h"), "[COMMAND]", "show this help, or one command's help"),
    (("version", "V"), "", "print plan-build's version"),
    (("list", "l"), "", "list every command with one line about it"),
    (("debug", "d"), "", "on an internal error, also print its traceback"),
    (
        ("print-completion-script",),
        "SHELL",
        "print the tab-completion script for bash, zsh or fish",
    ),
    (("complete",), "", "print completion candidates (the completion script calls this)"),
)


class PlanBuildConfig(Config):
    """Only the collection's own settings: no /etc, ~ or project invoke files, no runtime
    file, no INVOKE_* variables, so a user's invoke setup for other projects never changes
    plan-build. plan-build's own configuration is `.plan-build.yaml` (plan_build.core.config)."""

    prefix = "plan-build"  # file names and the variable prefix are never used (see below)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["lazy"] = True
        super().__init__(*args, **kwargs)

    def load_base_conf_files(self) -> None:
        pass

    def load_system(self, merge: bool = True) -> None:
        pass

    def load_user(self, merge: bool = True) -> None:
        pass

    def load_project(self, merge: bool = True) -> None:
        pass

    def load_runtime(self, merge: bool = True) -> None:
        pass

    def load_shell_env(self) -> None:
        self.merge()


class PlanBuildProgram(Program):
    """One command per run, only plan-build's core options, every command-line mistake a
    usage error (exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("config_class", PlanBuildConfig)
        super().__init__(*args, **kwargs)
        quiet_invoke_debug()

    def run(self, argv: Any = None, exit: bool = True) -> None:
        code = run_guarded(self, argv)
        if exit and code is not None:
            sys.exit(code)
        if code not in (None, 0):
            raise SystemExit(code)

    def core_args(self) -> list[Argument]:
        args = []
        for names, value, text in CORE_OPTIONS:
            if names[0] == "help":
                args.append(Argument(names=names, optional=True, help=text))
            elif value:
                args.append(Argument(names=names, kind=str, default="", help=text))
            else:
                args.append(Argument(names=names, kind=bool, default=False, help=text))
        return args

    def parse_core(self, argv: Any) -> None:
        """Only split off the core options; they act after the whole command line parsed, so
        `--version --dry` is as wrong as `--dry plan`. A lone `--version` answers at once
        (building every command's parser costs ~10 ms, and startup is benchmarked)."""
        self.normalize_argv(argv)
        self.parse_core_args()
        alone = not self.core.unparsed and not self.core.remainder
        if alone and self.args.version.value and not self.args.complete.value:
            self.print_version()
            raise Exit

    def _make_parser(self) -> StrictParser:
        """A parser for the commands this command line names (the parser consults the others
        only to ask whether a word names one), or for all of them when completing: building
        and copying every command's arguments cost each run ~6 ms (issue 15)."""
        ignore = self.config.tasks.ignore_unknown_help
        if self.args.complete.value:
            contexts = self.collection.to_contexts(ignore_unknown_help=ignore)
        else:
            words = {part for token in self.argv for part in token.split("=")}
            contexts = [
                ParserContext(
                    name, aliases, self.collection[name].get_arguments(ignore_unknown_help=ignore)
                )
                for name, aliases in self.collection.task_names.items()
                if name in words or words.intersection(aliases)
            ]
        return StrictParser(initial=self.initial_context, contexts=contexts)

    def parse_tasks(self) -> None:
        try:
            super().parse_tasks()
        except FlagForArgument as exc:
            if exc.token in HELP_FLAGS and exc.command is not None:
                self.print_task_help(exc.command)
                raise Exit from None
            if exc.token in self.initial_context.flags and exc.command is not None:
                raise ParseError(f"{exc.command} needs {exc.argument} before {exc.token}") from None
            raise
        names = [ctx.name for ctx in self.tasks]
        if len(names) > 1:
            raise ParseError(f"run one command at a time (got: {', '.join(map(str, names))})")
        if self.core.remainder and not self.args.complete.value:
            raise ParseError(f"unexpected arguments after --: {self.core.remainder}")

    def parse_cleanup(self) -> None:
        args = self.args
        if args.version.value:
            self.print_version()
            raise Exit
        shell = args["print-completion-script"].value
        if shell:
            if shell not in SHELLS:
                raise ParseError(
                    f"--print-completion-script takes bash, zsh or fish, not {shell!r}"
                )
            from invoke.completion.complete import print_completion_script

            print_completion_script(shell=shell, names=self.binary_names)
            raise Exit
        wanted = args.help.value
        if wanted is True:
            self.print_help()
            raise Exit
        if wanted:
            if wanted not in self.parser.contexts:
                raise ParseError(f"unknown command {wanted}")
            self.print_task_help(wanted)
            raise Exit
        if args.list.value:
            self.list_tasks()
            raise Exit
        if args.complete.value:
            from types import SimpleNamespace

            from invoke.completion.complete import complete

            from plan_build.cli import helptext

            # the command names as --list shows them: each once (`review`, not `review.review`)
            names = SimpleNamespace(
                task_names={n: [] for n, _ in helptext.commands(self.collection)}
            )
            complete(
                names=self.binary_names,
                core=self.core,
                initial_context=self.initial_context,
                collection=cast(Collection, names),
                parser=self._make_parser(),
            )
        if not self.tasks:
            self.no_tasks_given()

    def update_config(self, merge: bool = True) -> None:
        """No run/sudo/timeout overrides and no runtime file: plan-build has no such options."""
        if merge:
            self.config.merge()

    def no_tasks_given(self) -> None:
        from plan_build.cli import helptext

        sys.stdout.write(helptext.overview(self.collection, self.binary))
        raise Exit

    def print_help(self) -> None:
        from plan_build.cli import helptext

        options = [(option_spec(names, value), text) for names, value, text in CORE_OPTIONS]
        sys.stdout.write(helptext.core_help(self.collection, self.binary, options))

    def list_tasks(self) -> None:
        from plan_build.cli import helptext

        sys.stdout.write(helptext.command_list(self.collection))

    def print_task_help(self, name: str) -> None:
        from plan_build.cli import helptext

        task = self.collection[name]  # shown by the name --list uses (`release.status` → release)
        shown = next((n for n, t in helptext.commands(self.collection) if t is task), name)
        args = self.parser.contexts[name].args.values()
        sys.stdout.write(helptext.command_help(self.binary, shown, task, args))


def quiet_invoke_debug() -> None:
    """INVOKE_DEBUG makes invoke call logging.basicConfig at import, which would print every
    debug line (invoke's and plan-build's, with argv and paths) on stderr. Undo exactly that;
    plan-build has -d instead."""
    from invoke.util import LOG_FORMAT

    logging.getLogger("invoke").disabled = True
    root = logging.getLogger()
    ours = [h for h in root.handlers if h.formatter and h.formatter._fmt == LOG_FORMAT]
    for handler in ours:
        root.removeHandler(handler)
    if ours:
        root.setLevel(logging.WARNING)


def option_spec(names: tuple[str, ...], value: str) -> str:
    flags = [("-" if len(n) == 1 else "--") + n for n in sorted(names, key=len)]
    return ", ".join(flags) + (f" {value}" if value else "")


def _wants_traceback(program: Program) -> bool:
    try:
        return bool(program.args.debug.value)
    except (AttributeError, KeyError):  # the core options were not parsed yet
        return False


def run_guarded(program: Program, argv: Any) -> int | None:
    """Run the program and turn every outcome into a message and an exit code."""
    err = sys.stderr

    def run() -> int | None:
        try:
            program.create_config()
            program.parse_core(argv)
            program.parse_collection()
            program.parse_tasks()
            program.parse_cleanup()
            program.update_config()
            program.execute()
        except ParseError as exc:
            msg = usage_message(str(exc))
            err.write(
                f"{PREFIX}: {msg}\n  fix: see '{PREFIX} --help' or '{PREFIX} <command> --help'\n"
            )
            return int(ExitCode.USAGE)
        except Exit as exc:
            if exc.message:
                err.write(f"{exc.message}\n")
            return exc.code
        except UnexpectedExit as exc:  # pragma: no cover - tasks do not use c.run
            return exc.result.exited
        return None

    return guarded(run, err=err, wants_traceback=lambda: _wants_traceback(program))


# short flags people bring from git; plan-build spells its options out
_LONG_FOR = {"-m": "--message"}


def usage_message(msg: str) -> str:
    """invoke's parse messages in plan-build's words."""
    unknown = re.fullmatch(r"No idea what '(.+)' is!", msg)
    if unknown:
        word = unknown.group(1)
        kind = "option" if word.startswith("-") else "command or argument"
        long = _LONG_FOR.get(word)
        return f"unknown {kind} {word}" + (f" (did you mean {long}?)" if long else "")
    needed = re.fullmatch(r"Flag <\w+: (.+)> needed value and was not given one!", msg)
    if needed:
        return f"--{needed.group(1).replace('_', '-')} needs a value"
    missing = re.fullmatch(r"'(.+)' did not receive required positional arguments: (.+)", msg)
    if missing:
        names = [metavar(n.strip("' ")) for n in missing.group(2).split(",")]
        return f"{missing.group(1)} needs {' '.join(names)}"
    return msg


def build_program(binary: str = PREFIX) -> PlanBuildProgram:
    from plan_build.commands import namespace

    return PlanBuildProgram(
        namespace=namespace,
        name="plan-build",
        binary=binary,
        binary_names=[binary],
        version=__version__,
    )
