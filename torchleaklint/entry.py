"""The console script (``torchleaklint``): the command line, then, after a check, a quick
end of the process.

A check run leaves a large heap behind: every syntax tree and index kept for the files'
callers, the project's tables, the memos of the analyses (1.4 million objects in one
process on pytorch-lightning). The interpreter's normal exit takes that heap apart object
by object and runs a cyclic collection over it: measured there, about a quarter of a
single-process cold run's CPU, spent after the report is written. Once a check has
written its report, saved the cache and stopped its workers, nothing of the heap is
needed, so the process flushes its streams and ends at once (``os._exit``), as mypy does.

Other commands (the language server, ``verify``, which runs programs of its own) exit the
normal way, and so does the command line when it is called in-process (``CliRunner`` in
the tests) or run as a module (``python -m torchleaklint``, also through ``runpy`` by a
program that goes on after it): only :func:`console` ends the process. A console script
being profiled or traced (cProfile, coverage) exits the normal way too: those write their
results at the normal exit.
"""

from __future__ import annotations

import os
import sys

_check_finished = False


def check_finished() -> None:
    """Called by ``check`` once its report is out: the heap may be dropped without teardown."""
    global _check_finished
    _check_finished = True


def console() -> None:
    from .cli import main

    try:
        main()
    except SystemExit as exc:
        code = exc.code
        observed = sys.getprofile() is not None or sys.gettrace() is not None
        if not _check_finished or observed or not (code is None or type(code) is int):
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            raise exc from None  # a closed pipe: the normal exit reports it as it always has
        os._exit(code or 0)
