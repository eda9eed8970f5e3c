"""Is a plotting function known to run more than once? A call in a loop (in its own file,
or by a caller at any depth), a method (its object's users, often a framework, call it
per request, step or epoch through calls the linted files do not show), or a function
named for, or handed, the step, epoch or episode it runs in. A module-level function
nothing in the linted files is seen to repeat (a notebook helper, an uncalled utility, a
report made once at the end of a script) keeps a handful of figures at most."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope
from .names import words
from .repetition import repeated_call_site


def repetition_seen(analysis, scope: Scope) -> Optional[str]:
    """Why the function may make its figure again and again, or None when nothing shows it."""
    if not scope.is_function:
        return None
    if scope.class_name:
        # A method runs on an object's behalf, often called by a framework (per request,
        # step, epoch or log interval) through calls the linted files do not show.
        return f"`{scope.name}` is a method, which its object's users may call again and again"
    local = _looped_in_own_module(analysis, scope)
    if local is not None:
        return local
    if set(words(scope.name)) & COUNTER_WORDS:
        return f"`{scope.name}` is named for the step, epoch or episode it runs in"
    counter = next((p for p in scope.params if set(words(p)) & COUNTER_WORDS), None)
    if counter is not None:
        return f"`{scope.name}` is handed the step, epoch or episode it runs in (`{counter}`)"
    return repeated_call_site(analysis, scope)


# A function told which step, epoch or episode it runs in (``plot_calibration(probs,
# labels, epoch, out_dir)``) is called once per step, epoch or episode.
COUNTER_WORDS = frozenset({"epoch", "epochs", "step", "steps", "iteration", "iter", "itr", "episode", "batch",
                           "niter", "nepoch", "global"})


def _looped_in_own_module(analysis, scope: Scope) -> Optional[str]:
    """A call of the function by its name, inside a loop, in its own file (``if eps % 20 ==
    0: plot(rewards)`` in the script's episode loop): there the name is this function,
    however many other files define one of the same name."""
    index = analysis.index
    for other in index.scopes:
        for call, stmt in other.calls:
            if isinstance(call.func, ast.Name) and call.func.id == scope.name:
                ctx = index.ctx(stmt)
                if ctx is not None and ctx.loops and (other is scope.parent or not other.defs_of(scope.name)):
                    return f"called in a loop at line {call.lineno}"
    return None
