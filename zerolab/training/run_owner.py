"""One owner per run directory: an operating-system lock on ``<workdir>/owner.lock`` held while a run writes
(:class:`RunDirectoryOwner`); a second writer is refused with :class:`RunDirectoryBusyError` naming the holder.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import time

from zerolab.training.file_system import RunDirectoryError


class RunDirectoryBusyError(RunDirectoryError):
    """Another process owns the run directory (:class:`RunDirectoryOwner`); the message names it."""


#: The file whose lock marks a run directory's owner (its text says who holds it).
OWNER_FILE = "owner.lock"


class RunDirectoryOwner:
    """One owner per run directory: an exclusive ``flock`` on ``<workdir>/owner.lock``, held while a run writes.

    A second process that asks for a directory another holds gets :class:`RunDirectoryBusyError` naming the holder
    (pid, host, start time and command, which the holder writes into the file when it starts writing) and has written
    nothing.  The lock is the operating system's, so it goes with its process, however that ends (``kill -9``
    included): a stale file is no owner.  Within one process a directory may be claimed again (an experiment's
    launcher, then the training run it starts in the same directory): the claims nest and the lock is released with
    the outermost.

    Use :meth:`claim` (a context manager).  ``claim(create=False)`` locks a directory that already has an owner file
    (nothing is written, so a run refused by a later check leaves the directory as it was; a directory without one has
    had no owner since owners were recorded); :meth:`take`, once the caller is about to write, locks it if it is not
    yet (making the directory's owner file) and records this process as the owner.
    """

    _held: dict[str, list] = {}  # the process's own claims: real path -> [open owner file, depth]

    def __init__(self, workdir: str | pathlib.Path, flag: str = "--workdir"):
        self.workdir = pathlib.Path(workdir)
        self.flag = flag
        self._locked = False
        self._recorded = False

    @contextlib.contextmanager
    def claim(self, create: bool = True):
        """Holds the directory for the ``with`` block (made and recorded first where ``create``; see the class)."""
        try:
            if create:
                self.workdir.mkdir(parents=True, exist_ok=True)
                self.take()
            elif (self.workdir / OWNER_FILE).exists():
                self._lock(create=False)
            yield self
        finally:
            self.release()

    def take(self) -> None:
        """Locks the directory (it must exist) unless this claim holds it, and records this process as its owner;
        :class:`RunDirectoryBusyError` if another process holds it."""
        if not self._locked:
            self._lock(create=True)
        if self._recorded:
            return
        import socket

        handle, depth = self._held[os.path.realpath(self.workdir)]
        if depth == 1:  # the outermost claim of this process records it
            started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            command = " ".join(os.path.basename(part) if index == 0 else part for index, part in enumerate(sys.argv))
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {started} ({command})\n")
            handle.flush()
        self._recorded = True

    def _lock(self, create: bool) -> None:
        import fcntl

        key = os.path.realpath(self.workdir)
        held = self._held.get(key)
        if held is not None:  # this process holds it already: nest
            held[1] += 1
            self._locked = True
            return
        handle = open(self.workdir / OWNER_FILE, "a+" if create else "r+")  # noqa: SIM115 - open while held
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunDirectoryBusyError(f"{self.flag} {self.workdir} is in use by {holder}: one run at a time writes a "
                                        f"run directory; wait for it to end or stop it, then run again") from None
        self._held[key] = [handle, 1]
        self._locked = True

    def release(self) -> None:
        """Gives the claim up (the lock goes with the process's last claim on the directory)."""
        if not self._locked:
            return
        self._locked = self._recorded = False
        key = os.path.realpath(self.workdir)
        held = self._held.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            del self._held[key]
            held[0].close()  # closing the file releases the flock


__all__ = ["OWNER_FILE", "RunDirectoryBusyError", "RunDirectoryOwner"]
