"""Ending a session: the baseline, the intended change, verification, the commit."""
