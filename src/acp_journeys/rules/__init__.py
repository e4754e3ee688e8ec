"""The rules of the game, pure: what the journeys are, what the prompts say, what evidence looks
like, how a verdict follows from it, how baselines and merged results apply.

Rules of this package: no I/O and no import of asyncio, subprocess, socket, http, docker or
jsonschema, and nothing of ours outside `rules/`. Everything here is a function of its
arguments, so `run` and `verify` reach the same verdict from the same evidence.
"""
