"""The command line: one module per command (`run`, `verify`, `report`, `list`, `init`, `merge`,
`schema`, `mcp-server`, `registry`, `dashboard`, and `action`, the GitHub Action's steps); this module builds the parser from them and dispatches.

Rules of this package: parse, wire, print, pick the exit code. 0: every journey passed. 1: a
journey failed (or verify found a failing result). 2: the run could not be done or the input is
bad, with a message and no traceback. 130/143: stopped by Ctrl-C/SIGTERM (a partial result.json
is still written). A command module imports what it needs when it runs, so `verify` never loads
a launcher and `--help` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from typing import Sequence

from acp_journeys import __version__
from acp_journeys.cli import init, mcp_server, merge, report, run, schema, verify
from acp_journeys.cli import action, dashboard, listing, registry
from acp_journeys.cli.common import EXIT_USAGE, UsageError
from acp_journeys.output.logtext import one_line

# In the order of `acp-journeys --help`.
COMMANDS = {"run": run, "verify": verify, "report": report, "init": init, "merge": merge,
            "registry": registry, "dashboard": dashboard, "mcp-server": mcp_server, "list": listing,
            "schema": schema, "action": action}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="acp-journeys",
        description="Drive an ACP agent through Rondar's user journeys and judge what it does.")
    top.add_argument("--version", action="version", version=f"acp-journeys {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    # Agent text may hold lone surrogates (JSON allows "\ud800"): print them escaped, never crash.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return COMMANDS[args.command].run(args)
    except UsageError as exc:
        print(f"acp-journeys: error: {one_line(str(exc))}", file=sys.stderr)  # it may quote a result.json
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as Unix tools do on SIGPIPE.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # our bug: one line, never a traceback, and exit 2 (never the agent's fault)
        print(f"acp-journeys: internal error: {_one_line(exc, show_message=args.command != 'run')} (please "
              "report it at https://github.com/rondar/acp-journeys/issues with the command you ran)",
              file=sys.stderr)
        return EXIT_USAGE


def _one_line(exc: BaseException, show_message: bool) -> str:
    """The error and where in our code it happened; not the message of `run`, which may hold a
    secret that no redactor saw."""
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f" at {os.path.basename(frame.tb_frame.f_code.co_filename)}:{frame.tb_lineno}" if frame else ""
    message = " ".join(str(exc).split())[:300] if show_message else ""
    return one_line(f"{type(exc).__name__}{where}{': ' + message if message else ''}")


if __name__ == "__main__":
    raise SystemExit(main())
