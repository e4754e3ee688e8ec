"""acp-journeys: drives an ACP agent through Rondar's user journeys and judges what it does.

Importing the package is cheap on purpose: heavy parts (mcp, docker, jsonschema, pillow) load
only where they are used.
"""

__version__ = "0.1.0"
