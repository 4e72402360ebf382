"""A scripted Interaction for tests: each question takes the next answer, and every question
asked is recorded, so a test can assert what the user would have been asked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from plan_build.core.interact import Choice, match_choice, no_terminal


@dataclass
class ScriptedInteraction:
    """Answers from a script: each question takes the next answer."""

    answers: list[str] = field(default_factory=list)
    interactive: bool = True
    asked: list[str] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)

    def _next(self, question: str) -> str:
        if not self.interactive:
            raise no_terminal(question)
        self.asked.append(question)
        if not self.answers:
            raise AssertionError(f"unexpected question: {question}")
        return self.answers.pop(0)

    def choose(self, question: str, choices: Sequence[Choice], default: str) -> str:
        key = match_choice(self._next(question), choices, default)
        if key is None:
            raise AssertionError(f"scripted answer is not a choice for: {question}")
        return key

    def confirm(self, question: str, *, default: bool = False) -> bool:
        return (
            self.choose(question, [Choice("y", "yes"), Choice("n", "no")], "y" if default else "n")
            == "y"
        )

    def type_words(self, question: str, words: str) -> bool:
        return self._next(question).strip() == words

    def edit(self, text: str, *, suffix: str = ".md") -> str:
        if not self.edits:
            raise AssertionError("unexpected edit")
        return self.edits.pop(0)
