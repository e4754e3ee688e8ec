"""What the agent talks to besides the editor: the rondar MCP server (`mcp_hub`) and the
model stub (`model_stub/`).

Rules of this package: a service may use `rules/` and `protocol/`; it knows no journey script,
no launcher and no output format.
"""
