"""Obviously fake credentials that still match the scanners' patterns.

They are assembled at run time so no source file holds a token-shaped literal (plan-build's own
verify scans this repository too). None of them was ever issued by anyone.
"""

from __future__ import annotations


def github_token() -> str:
    """`ghp_` + 36 characters: the shape of a GitHub personal access token."""
    return "ghp_" + "Fake" * 9


def aws_key() -> str:
    """`AKIA` + 16 characters: the shape of an AWS access key id."""
    return "AKIA" + "FAKE" + "TEST" + "ONLY" + "2468"
