"""What a run needs of the file system, checked before any work and named when it fails mid-run.

:func:`check_run_directory` refuses, before any work, a run directory that cannot hold a run: a path naming a file,
a file where one of the run's directories should be, a directory that cannot be written (read-only file system, no
permission) or a file system with no room.  :func:`file_system_error` turns an ``OSError`` met mid-run (a full disk,
say), wherever it is in the chain of exceptions, into one line naming the path and the problem, and :func:`writing`
makes a failed write that names no file name the path it was writing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import re
import shutil
from collections.abc import Iterator


class RunDirectoryError(ValueError):
    """A run directory cannot be used as asked: its message is one line naming the path and the problem."""


#: Directories of a run directory: a file under one of these names stops the run before it starts.
RUN_SUBDIRECTORIES = ("checkpoints", "replay", "games", "figures", "tb")


#: Operating-system errors of a write that fails: no room, no quota, read-only, no permission, a device error, a
#: file where a directory should be (or the reverse), a file too large.
WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO,
                            errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.EFBIG})


#: A file system with less room than this cannot take a checkpoint: the run is refused before it starts.
MINIMUM_FREE_BYTES = 1 << 20


def describe_os_error(error: OSError) -> str:
    """``"<strerror> (<ERRNO name>)"`` of an ``OSError``, e.g. ``"No space left on device (ENOSPC)"``."""
    name = errno.errorcode.get(error.errno or 0)
    reason = error.strerror or str(error)
    return f"{reason} ({name})" if name else reason


def check_run_directory(workdir: str | pathlib.Path, flag: str = "--workdir") -> pathlib.Path:
    """``workdir`` if a run can be written there; reads only (the directory is not created).

    Raises :class:`RunDirectoryError` naming the path when it is a file, when a file stands where one of its
    directories (or of the run's own, :data:`RUN_SUBDIRECTORIES`) should be, when the first existing directory on the
    way cannot be written (read-only file system, permission) or when its file system has less than
    :data:`MINIMUM_FREE_BYTES` free.
    """
    workdir = pathlib.Path(workdir)
    if workdir.exists() and not workdir.is_dir():
        raise RunDirectoryError(f"{flag} {workdir} is a file, not a directory")
    for name in RUN_SUBDIRECTORIES:
        path = workdir / name
        if path.exists() and not path.is_dir():
            raise RunDirectoryError(f"{path} is a file where the run keeps a directory; move it aside")
    existing = workdir
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise RunDirectoryError(f"{flag} {workdir} cannot be created: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        problem = "is on a read-only file system" if _read_only(existing) else "is not writable (permission denied)"
        what = f"{existing} {problem}" if existing == workdir else f"{workdir} cannot be created: {existing} {problem}"
        raise RunDirectoryError(f"{flag} {what}")
    free = shutil.disk_usage(existing).free
    if free < MINIMUM_FREE_BYTES:
        raise RunDirectoryError(f"{flag} {workdir}: no space left on its file system ({free} bytes free at "
                                f"{existing})")
    return workdir


def _read_only(path: pathlib.Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


def os_error_in(error: BaseException) -> OSError | None:
    """The first ``OSError`` in ``error``'s chain (itself, its causes and contexts), preferring one that names a
    file; None when there is none."""
    chain, seen = [], set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    errors = [item for item in chain if isinstance(item, OSError)]
    named = [item for item in errors if item.filename]
    return (named or errors or [None])[0]


def file_system_error(error: BaseException, workdir: str | pathlib.Path) -> str | None:
    """One line for a file-system failure met while running in ``workdir`` — the path, the problem and what a rerun
    does — or None when ``error`` is not one: no ``OSError`` of :data:`WRITE_FAILURES` in its chain nor such an
    operating-system error number in its message (:func:`os_error_of`).  A missing file is not one: it is reported
    as the input it is."""
    os_error = os_error_in(error) or os_error_of(error, workdir)
    if os_error is None or os_error.errno not in WRITE_FAILURES:
        return None
    return (f"writing {os_error.filename or workdir} failed: {describe_os_error(os_error)}; the checkpoints saved "
            f"before are kept, and a rerun on {workdir} resumes from the newest complete one")


#: How tensorstore (orbax's writer) gives the operating system's error number inside its own error's message.
TENSORSTORE_ERROR_CODE = re.compile(r"os_error_code='(\d+)'")


def os_error_of(error: BaseException, path: str | pathlib.Path) -> OSError | None:
    """``error`` as an ``OSError`` naming ``path`` when it is a file-system failure that names no file: an
    ``OSError`` without a file name (a failed write or flush), or a writer's own error that carries the operating
    system's error number in its message (tensorstore's ``os_error_code='28'``); None otherwise."""
    if isinstance(error, OSError):
        return None if error.filename else type(error)(error.errno, error.strerror or str(error), str(path))
    match = TENSORSTORE_ERROR_CODE.search(str(error))
    if match is None:
        return None
    number = int(match.group(1))
    return OSError(number, os.strerror(number), str(path))


@contextlib.contextmanager
def writing(path: str | pathlib.Path) -> Iterator[None]:
    """Raises a file-system failure of the block that names no file as an ``OSError`` naming ``path``
    (:func:`os_error_of`), so that the error says where it happened; other errors pass unchanged."""
    try:
        yield
    except Exception as error:
        named = os_error_of(error, path)
        if named is None:
            raise
        raise named from error


__all__ = ["MINIMUM_FREE_BYTES", "RUN_SUBDIRECTORIES", "RunDirectoryError", "TENSORSTORE_ERROR_CODE", "WRITE_FAILURES", "check_run_directory", "describe_os_error", "file_system_error", "os_error_in", "os_error_of", "writing"]
