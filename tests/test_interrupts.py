"""Every long command stops on the same signals, and the commit's critical stretch holds them."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from plan_build.core import interrupts


@pytest.mark.parametrize("sig", interrupts.STOPPING)
def test_each_stopping_signal_interrupts_like_ctrl_c_and_says_which(sig: signal.Signals) -> None:
    before = signal.getsignal(sig)

    def signal_self() -> None:
        os.kill(os.getpid(), sig)
        threading.Event().wait(0.5)

    with pytest.raises(KeyboardInterrupt) as caught, interrupts.stopping():
        signal_self()
    expected = "Ctrl-C" if sig == signal.SIGINT else sig.name
    assert interrupts.signal_name(caught.value) == expected
    assert signal.getsignal(sig) == before  # the handler is put back


def test_a_bare_keyboard_interrupt_reads_as_ctrl_c() -> None:
    assert interrupts.signal_name(KeyboardInterrupt()) == "Ctrl-C"


def test_held_back_signals_are_reported_not_raised() -> None:
    with interrupts.held_back() as caught:
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(0.2)
    assert caught == [signal.SIGTERM]


def test_outside_the_main_thread_both_are_harmless_no_ops() -> None:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            with interrupts.stopping(), interrupts.held_back() as caught:
                assert caught == []
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert errors == []
