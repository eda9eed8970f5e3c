"""Calls of a model's own methods when the model's class is not known at the call.

``model.infer(x)`` in an evaluation function whose ``model`` is a parameter: the analysis
knows ``model`` is an nn.Module (it calls ``model.eval()``, or is named like one) but not
which class, so the method cannot be resolved through the class hierarchy. The project's
module classes that define a method of that name can: when few do, and every one returns
values with an autograd graph (its body runs submodules), the call runs a forward pass.
"""

from __future__ import annotations

import ast
from typing import Optional

from .objects import BUILTIN_METHOD_NAMES, NON_FORWARD_METHODS
from .summaries import CallSummary, summary_for

MAX_CLASSES = 3  # more module classes defining the name: too common to say which runs


def model_method_evidence(analysis, call: ast.Call, scope, stmt) -> Optional[object]:
    """Evidence that ``receiver.method(...)`` on a model of unknown class returns a graph."""
    project = analysis.project
    func = call.func
    if project is None or not isinstance(func, ast.Attribute):
        return None
    method = func.attr
    if method.startswith("_") or method in NON_FORWARD_METHODS or method in BUILTIN_METHOD_NAMES:
        return None
    kinds = analysis.graph.kinds
    receiver = kinds.kind_of(func.value, scope, stmt)
    if receiver is None or receiver.kind != "module" or receiver.class_ref is not None:
        return None
    refs = []
    for ref in project.functions_named(method):
        owner, _, name = ref.qualname.rpartition(".")
        if name != method or not owner or "." in owner or not project.is_module_class(ref.module, owner):
            continue
        refs.append(ref)
    if not refs or len(refs) > MAX_CLASSES:
        return None
    summaries = [summary_for(project, ref) for ref in refs]
    if any(summary is None for summary in summaries):
        return None
    return every_candidate(CallSummary(ast.unparse(func), summaries, True, call=call, caller=analysis.graph,
                                       stmt=stmt))


def every_candidate(summary: CallSummary) -> Optional[object]:
    """What a call's summary proves it returns. A call resolved by method name alone to
    several functions proves a graph only when every candidate returns one."""
    if not summary.ambiguous:
        return summary.whole()
    found = None
    for one in summary.summaries:
        evidence = CallSummary(summary.callee, [one], False, call=summary.call, caller=summary.caller,
                               stmt=summary.stmt).whole()
        if evidence is None:
            return None
        found = found or evidence
    return found
