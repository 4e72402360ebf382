"""The session seen whole: `status` and `report` read every feature's state files.

A layer of its own between the command plumbing and the features: a view may read each
feature's records, and no feature imports a view.
"""
