"""The ACP wire, sans-IO: bytes in, messages out. Nothing here reads a pipe or starts a process."""
