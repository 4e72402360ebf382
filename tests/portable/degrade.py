"""Take Linux's process facilities away, for the portable proofs (docs/portability.md).

`refuse_subreaper()` installs a seccomp filter on this process (inherited by everything it
starts, and it cannot be lifted) under which prctl(PR_SET_CHILD_SUBREAPER) and
prctl(PR_GET_CHILD_SUBREAPER) fail with EPERM, as on a kernel without the feature.
`python -m tests.portable.degrade CMD...` runs CMD so.
Unprivileged: PR_SET_NO_NEW_PRIVS first, as the kernel requires.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 22, 38
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
SECCOMP_MODE_FILTER = 2
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
PRCTL_NR = {"x86_64": 157, "aarch64": 167}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
LD_ABS, JEQ, RET = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _op(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def refuse_subreaper() -> None:
    """From now on prctl(PR_SET/GET_CHILD_SUBREAPER, ...) returns -1 with errno EPERM."""
    machine = platform.machine()
    if machine not in PRCTL_NR:
        raise OSError(f"no seccomp numbers for {machine}")
    program = b"".join(
        [
            _op(LD_ABS, 0, 0, 4),  # seccomp_data.arch
            _op(JEQ, 0, 5, AUDIT_ARCH[machine]),  # another ABI: allow
            _op(LD_ABS, 0, 0, 0),  # seccomp_data.nr
            _op(JEQ, 0, 3, PRCTL_NR[machine]),
            _op(LD_ABS, 0, 0, 16),  # args[0], low word
            _op(JEQ, 2, 0, PR_SET_CHILD_SUBREAPER),
            _op(JEQ, 1, 0, PR_GET_CHILD_SUBREAPER),
            _op(RET, 0, 0, RET_ALLOW),
            _op(RET, 0, 0, RET_EPERM),
        ]
    )
    buf = ctypes.create_string_buffer(program)
    prog = _Filter(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p).value)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


def subreaper_refused() -> bool:
    """Whether prctl(PR_SET_CHILD_SUBREAPER) fails here (tried in a child: it would change us)."""
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        failed = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 and ctypes.get_errno() == 1
        os._exit(0 if failed else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


if __name__ == "__main__":
    refuse_subreaper()
    os.execvp(sys.argv[1], sys.argv[1:])
