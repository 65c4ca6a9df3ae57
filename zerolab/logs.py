"""Logging set-up for the command-line entry points: our INFO lines, libraries' warnings only, and libraries' errors
as one short line each (their tracebacks only at DEBUG level).

A library that fails in a thread of its own logs the failure with its traceback before the error reaches the
command, which then reports it in one ``error:`` line: orbax (through absl) logs each failed write of a checkpoint
on a full disk with a traceback, and asyncio logs the tasks it abandoned.  :class:`OneLineLibraryErrors` keeps the
first line of each such record, cut to :data:`LIBRARY_MESSAGE_LIMIT` characters.
"""

from __future__ import annotations

import logging

QUIET_LIBRARIES = ("absl", "orbax", "jax", "tensorstore", "matplotlib", "chess.engine")
#: Loggers whose records :class:`OneLineLibraryErrors` shortens (the quiet libraries and asyncio's).
SHORTENED_LOGGERS = QUIET_LIBRARIES + ("asyncio",)
LIBRARY_MESSAGE_LIMIT = 300


class OneLineLibraryErrors(logging.Filter):
    """Turns a library's record into one line: no traceback, the message's first line, at most
    :data:`LIBRARY_MESSAGE_LIMIT` characters.  Records of the project's own loggers pass unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(SHORTENED_LOGGERS):
            return True
        message = record.getMessage()
        first_line = message.splitlines()[0] if message else ""
        if len(first_line) > LIBRARY_MESSAGE_LIMIT:
            first_line = first_line[:LIBRARY_MESSAGE_LIMIT] + " …"
        record.msg, record.args, record.exc_info, record.exc_text, record.stack_info = first_line, None, None, None, None
        return True


def configure_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
    if level > logging.DEBUG:
        for handler in logging.getLogger().handlers:
            if not any(isinstance(existing, OneLineLibraryErrors) for existing in handler.filters):
                handler.addFilter(OneLineLibraryErrors())
