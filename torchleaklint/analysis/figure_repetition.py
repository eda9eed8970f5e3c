"""Is a plotting function known to run more than once? A loop around it (in the function,
or in a caller at any depth), or a method a framework calls on every step, epoch or log
interval (``on_validation_epoch_end``, ``log_images``, ``training_step``). A function
nothing in the linted files is seen to repeat (a notebook helper, an uncalled utility, a
report made once at the end of a script) keeps a handful of figures at most."""

from __future__ import annotations

from typing import Optional

from .module_index import Scope
from .names import words
from .repetition import repeated_call_site

# Methods frameworks call again and again: per step, per batch, per epoch, per log interval.
REPEATED_METHOD_WORDS = frozenset({"step", "epoch", "batch", "iteration", "iter", "log", "logging", "update",
                                   "callback", "hook", "end", "begin", "start", "visualize", "visualise",
                                   "validation", "validate", "eval", "evaluate", "train", "test", "forward",
                                   "call", "plot", "show", "display", "summary", "summarize", "record"})


def repetition_seen(analysis, scope: Scope) -> Optional[str]:
    """Why the function may make its figure again and again, or None when nothing shows it."""
    if not scope.is_function:
        return None
    if scope.class_name and (scope.name.startswith("on_") or set(words(scope.name)) & REPEATED_METHOD_WORDS):
        return f"`{scope.name}` is a method run per step, epoch or log interval"
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
