"""Operator actions on a world beyond repair: retention (`gc`), bulk actions by filter
(`bulk`), and the audit record every one of them writes (`audit`).

Each action is a dry run unless asked to apply, counts before it acts, refuses without a
reason, works in bounded transactions under a time budget, and records what it did in
wfctl's audit log inside the very transaction that did it.
"""
