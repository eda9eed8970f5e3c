"""Worker processes that keep what they parsed, for both passes of a check run.

A pool that forgets its workers' state between passes makes every file parsed twice at
least: once for its symbol table (pass 1), once more for its findings (pass 2) in
whichever process picks it up. Here each worker lives for the whole run: pass 1 hands it
chunks of consecutive files on demand (so the load stays balanced) and it keeps each
module it parsed; pass 2 sends every file back to the worker that parsed it, so its own
lint and the lookups of its neighbours (same package, same chunk) reuse that tree.

One pipe per worker carries (how, kind, payload) messages: ``map`` is answered with one
list, ``each`` with one message per item as soon as it is done, ``ask`` with one value,
``tell`` not at all. A
handler is ``function(state, payload)`` with ``state`` a dict the worker keeps from
message to message. The parent yields results in the order of the items it was given.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence

Handler = Callable[[dict, Any], Optional[Iterable]]


class WorkerError(RuntimeError):
    """A worker process ended without answering (killed, or out of memory)."""


class Workers:
    """``jobs`` long-lived worker processes serving ``handlers`` (kind -> handler)."""

    def __init__(self, jobs: int, handlers: Dict[str, Handler]) -> None:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._conns: List[Connection] = []
        self._procs = []
        try:
            for _ in range(jobs):
                parent_end, child_end = context.Pipe()
                proc = context.Process(target=_serve, args=(child_end, handlers), daemon=True)
                proc.start()
                child_end.close()
                self._conns.append(parent_end)
                self._procs.append(proc)
        except BaseException:
            self.close()
            raise

    def map(self, kind: str, items: Sequence, chunk: int) -> Iterator:
        """(worker, result) for each of ``items``, in order; chunks of ``chunk`` items go
        to whichever worker is free, so a slow chunk does not hold the others up."""
        chunks = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        busy: Dict[int, int] = {}  # worker -> the chunk it is working on
        idle = list(range(len(self._conns)))
        done: Dict[int, tuple] = {}
        sent = following = 0
        while following < len(chunks):
            while idle and sent < len(chunks):
                worker = idle.pop(0)
                self._send(worker, ("map", kind, chunks[sent]))
                busy[worker] = sent
                sent += 1
            for conn in wait([self._conns[w] for w in busy]):
                worker = self._conns.index(conn)
                index = busy.pop(worker)
                try:
                    done[index] = (worker, self._receive(worker))
                except WorkerError:
                    raise
                except Exception as exc:  # raised when its chunk's turn comes, as a pool does
                    done[index] = (worker, exc)
                idle.append(worker)
            while following in done:
                worker, results = done.pop(following)
                if isinstance(results, BaseException):
                    raise results
                for result in results:
                    yield worker, result
                following += 1

    def map_assigned(self, kind: str, items: Sequence, assigned: Sequence[int]) -> Iterator:
        """The result for each of ``items``, in order; item ``i`` is handled by worker
        ``assigned[i]``, which answers each of its items as soon as it is done."""
        queues: List[List[int]] = [[] for _ in self._conns]
        for i, worker in enumerate(assigned):
            queues[worker].append(i)
        for worker, queue in enumerate(queues):
            if queue:
                self._send(worker, ("each", kind, [items[i] for i in queue]))
        answered = [0] * len(self._conns)
        results: Dict[int, Any] = {}
        for i in range(len(items)):
            while i not in results:
                # Read whatever is ready: every worker goes on working meanwhile.
                pending = [self._conns[w] for w in range(len(queues)) if answered[w] < len(queues[w])]
                for conn in wait(pending):
                    worker = self._conns.index(conn)
                    results[queues[worker][answered[worker]]] = self._receive(worker)
                    answered[worker] += 1
            yield results.pop(i)

    def tell(self, kind: str, payload: Any) -> None:
        """Send every worker the same message, which it does not answer."""
        for worker in range(len(self._conns)):
            self._send(worker, ("tell", kind, payload))

    def ask(self, kind: str) -> List[Any]:
        """Every worker's answer to ``kind``, in worker order."""
        for worker in range(len(self._conns)):
            self._send(worker, ("ask", kind, None))
        return [self._receive(worker) for worker in range(len(self._conns))]

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("stop", None, None))
            except (OSError, ValueError):
                pass
            conn.close()
        for proc in self._procs:
            # An idle worker exits at once; one still busy (the run was interrupted, or
            # failed in the parent) is not waited for.
            proc.join(timeout=1)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        self._conns, self._procs = [], []

    def _send(self, worker: int, message: tuple) -> None:
        try:
            self._conns[worker].send(message)
        except OSError as exc:
            raise WorkerError(f"a worker process exited unexpectedly ({exc.strerror or exc})") from None

    def _receive(self, worker: int) -> Any:
        try:
            status, payload = self._conns[worker].recv()
        except (EOFError, OSError):
            raise WorkerError("a worker process exited unexpectedly") from None
        if status == "error":
            raise payload
        return payload


def _serve(conn: Connection, handlers: Dict[str, Handler]) -> None:
    state: dict = {}
    while True:
        try:
            how, kind, payload = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if how == "stop":
            return
        try:
            answer = handlers[kind](state, payload)
            if how == "map":
                answer = list(answer)
            elif how == "each":
                for item in answer:
                    if not _reply(conn, ("ok", item)):
                        return
                continue
        except KeyboardInterrupt:
            return
        except Exception as exc:  # re-raised in the parent, as a process pool does
            answer = exc
            how = "error"
        if how in ("map", "ask") and not _reply(conn, ("ok", answer)):
            return
        if how == "error" and not _reply(conn, ("error", answer)):
            return


def _reply(conn: Connection, message: tuple) -> bool:
    """Send ``message``; False when the parent is gone (interrupted, or failed itself)."""
    try:
        conn.send(message)
    except (OSError, EOFError):
        return False
    except Exception:  # an answer that does not pickle (an exception, say): say what it was
        error = message[1]
        conn.send(("error", RuntimeError(f"{type(error).__name__}: {error}")))
    return True
