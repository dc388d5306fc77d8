"""Worker processes end with their parent.

``brain serve --workers N`` spawns workers that share the parent's listening socket. If
the parent is killed outright (SIGKILL, an OOM kill), nothing tells the workers: they
would keep serving and holding the port, and the next ``brain serve`` could not bind it.
On Linux the kernel sends the worker SIGTERM when its parent dies (``PR_SET_PDEATHSIG``),
which uvicorn handles as an orderly stop; elsewhere, and as a second line, a thread
notices the parent's pid changing within ``POLL_S`` and ends the worker, at the latest
``GRACE_S`` later.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger(__name__)
PR_SET_PDEATHSIG = 1
POLL_S = 1.0
# How long an orderly stop may take once the parent is gone, seconds.
GRACE_S = 10.0


def end_with_parent(parent: int) -> None:
    """Arrange for this process to get SIGTERM when ``parent``, the process that
    started it, dies. ``parent`` comes from the parent itself, not from ``getppid()``
    here: a worker still importing when its parent was killed would otherwise take
    its new parent for the one to outlive and never stop."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
                log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
        except (OSError, AttributeError):
            log.warning("prctl unavailable: watching the parent process instead")
    # The parent may have died before prctl took effect; and on other systems this is
    # the only watch.
    threading.Thread(target=_watch, args=(parent,), name="brain-parent-watch", daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    log.warning("parent process %d is gone: stopping this worker", parent)
    os.kill(os.getpid(), signal.SIGTERM)
    # An orderly stop can hang (a lifespan task that does not end); an orphan must not.
    time.sleep(GRACE_S)
    log.warning("still running %.0f s after its parent died: exiting now", GRACE_S)
    os._exit(1)
