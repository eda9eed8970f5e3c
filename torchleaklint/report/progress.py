"""A progress bar on stderr for long runs, only when stderr is a terminal (never in
pipes or CI logs, where it would be noise)."""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator, Optional

# Below this many files a run is quick enough that a bar would only flicker.
MIN_FILES = 20


@contextlib.contextmanager
def progress_bar(total: int, no_color: bool, enabled: bool = True) -> Iterator[Optional[Callable[[str], None]]]:
    stream = sys.stderr
    if not enabled or total < MIN_FILES or not (hasattr(stream, "isatty") and stream.isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=stream, no_color=no_color, highlight=False)
    columns = (TextColumn("Linting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[path]}", style="dim"))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("lint", total=total, path="")
        started = [0]

        def advance(path: str) -> None:
            if started[0]:
                bar.advance(task)
            started[0] += 1
            bar.update(task, path=path)

        yield advance
