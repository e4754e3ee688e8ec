"""The registry wing: every agent of an ACP registry through the journeys (`acp-journeys registry`).

Rules of this package: it reads a registry (`source`), installs each agent once into a cache of
its own (`install`, the one place that runs npm, pip or uv and unpacks archives), picks its recipe
(`recipes`) and its shard (`shards`), and hands each installed agent to `acp-journeys run` itself
(`runs`): there is no second runner. It stands above `runner.py` and below `cli/`; it never
decides a verdict (the judge does) and never renders a page (output/html/dashboard.py does).
"""
