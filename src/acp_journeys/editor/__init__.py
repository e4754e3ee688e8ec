"""The editor's side of the ACP wire: the connection to one agent process, the session that
answers its requests, the permission policy and the 7 journey scripts.

Rules of this package: it drives an agent through `acp_journeys.launch`'s public seam and the
sans-IO `protocol/`, and records evidence in `rules/`'s types; it never judges (the judge does)
and never prints (the output does).
"""
