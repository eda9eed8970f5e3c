"""Is autograd recording at a statement? ``no_grad``/``inference_mode`` blocks and
decorators, ``set_grad_enabled(False)``, Lightning's evaluation hooks, and functions
whose every caller in the linted tree runs them with grad disabled."""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from .call_arity import call_fits
from .callers import method_of_an_object
from .module_index import Scope, calls_named, grad_off_call
from .process_grad_off import constructor_switches_grad_off, entry_switches_grad_off
from .project import LIGHTNING_NO_GRAD_HOOKS, MAX_CALL_SITES, FunctionRef
from .self_calls import calls_another_hierarchy

MAX_CALLER_DEPTH = 4


class GradMode:
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self._memo = {}

    def stmt_off(self, stmt) -> Optional[str]:
        """Why the statement runs without autograd, or None when grad may be on."""
        ctx = self.analysis.index.ctx(stmt)
        if ctx is None:
            return None
        if ctx.grad_off:
            return f"inside `{ctx.grad_off}`"
        return self.scope_off(ctx.scope)

    def scope_off(self, scope: Scope, depth: int = 0) -> Optional[str]:
        key = id(scope.node)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # cycle guard: recursion through callers sees "grad on"
        reason = self._scope_off(scope, depth)
        self._memo[key] = reason
        return reason

    def _scope_off(self, scope: Scope, depth: int) -> Optional[str]:
        if not scope.is_function:
            return None
        index = self.analysis.index
        for deco in scope.decorators:
            reason = grad_off_call(deco, index.imports)
            if reason:
                return f"decorated with `@{reason}`"
            reason = self._project_decorator_off(deco, scope)
            if reason:
                return reason
        project = self.analysis.project
        if scope.class_name and scope.name in LIGHTNING_NO_GRAD_HOOKS:
            if project is not None and project.is_lightning_class(index.module_name, scope.class_name):
                return f"`{scope.name}` is a Lightning hook that runs under no_grad"
        reason = constructor_switches_grad_off(self.analysis, scope) or entry_switches_grad_off(self.analysis, scope)
        if reason:
            return reason
        if scope.parent is not None and scope.parent.is_function:
            # A nested function usually runs inside its parent's context.
            outer = self.scope_off(scope.parent, depth)
            if outer:
                return outer
        if project is None or depth >= MAX_CALLER_DEPTH:
            return None
        sites = project.call_sites_of(index.module_name, scope.name)
        judged = {}  # caller -> (reaches the method, its fitting calls all under no_grad)
        if scope.class_name and len(sites) <= 4 * MAX_CALL_SITES:
            sites = self._reaching(sites, scope, judged)
            if not sites:
                # Every importer calls the method of another class: the method is reached by
                # dispatch on objects the program builds by name (``for e in self.evaluators:
                # e.evaluate(...)``), at calls of that name anywhere in the project.
                sites = project.call_sites(scope.name)
                if len(sites) <= 4 * MAX_CALL_SITES:
                    sites = self._reaching(sites, scope, judged)
        elif not scope.class_name and sites:
            sites = [site for site in sites if self._may_call_function(site, scope)]
        if not sites or len(sites) > MAX_CALL_SITES:
            return None  # no caller, or a name too common to follow
        if scope.class_name:
            sites = [(site[0], site[1], True) if not site[2] and self._judge(site, scope, judged)[1] else site
                     for site in sites]
        own_is_test = project.is_test_module(index.module_name)
        unguarded_tests = [site for site in sites if not site[2] and not own_is_test and project.is_test_module(site[0])]
        if len(unguarded_tests) == len(sites):
            return None  # only tests call it (with grad on): nothing says grad is off in a run
        for module, caller, off in sites:
            if off or (module, caller, off) in unguarded_tests:
                continue  # under no_grad there; or a test, which calls it once outside any run
            if caller == module:
                return None  # called by a module's top-level code, which runs with grad on
            found = project.scope_for(FunctionRef(module, caller))
            if found is None:
                return None
            analysis, caller_scope = found
            if caller_scope is scope or not analysis.grad.scope_off(caller_scope, depth + 1):
                return None
        return f"every call of `{scope.name}` in the linted files runs under no_grad"

    def _may_call_function(self, site, scope: Scope) -> bool:
        """Can a call in the site's caller reach the module-level function ``scope``: a call
        by its bare name, or through a module (``utils.inference(x)``)? ``model.inference(x)``
        is a method of an object, not this function."""
        found = self.analysis.project.scope_for(FunctionRef(site[0], site[1]))
        if found is None:
            return True
        caller_analysis, caller_scope = found
        calls = [call for call, _ in calls_named(caller_scope, scope.name)]
        return not calls or any(not method_of_an_object(caller_analysis, scope, call, self.analysis.index.module_name)
                                 for call in calls)

    def _reaching(self, sites, scope: Scope, judged: dict):
        """The sites whose caller may reach the method (judged once per caller). A site under
        no_grad is judged too: a caller that cannot reach the method says nothing of it."""
        return [site for site in sites if self._judge(site, scope, judged)[0]]

    def _judge(self, site, scope: Scope, judged: dict) -> Tuple[bool, bool]:
        """For the caller of ``site``, judged once: can it reach the method, and does every
        call there that can reach it run under no_grad?"""
        key = site[:2]
        if key not in judged:
            judged[key] = self._judge_caller(*key, scope)
        return judged[key]

    def _judge_caller(self, module: str, caller: str, scope: Scope) -> Tuple[bool, bool]:
        """Not reached: a caller whose calls of the name cannot fit the method's parameters
        (``self.model.eval()`` is no call of ``Evaluator.eval(self, inputs, model)``), or
        that runs ``self.<name>(...)`` in a class unrelated to the method's (``ERM.update``
        calling ``self.predict(x)`` never runs another algorithm's ``predict``) or calls it
        on objects of such a class (``evaluators = GroupEvaluator(opt)`` then
        ``evaluators.evaluate(...)`` in a script). Grad-off: every call that can reach it
        (``self.evaluator.eval(inputs, model)``) sits under no_grad, in a function."""
        found = self.analysis.project.scope_for(FunctionRef(module, caller))
        if found is None:
            return True, False
        caller_analysis, caller_scope = found
        calls = list(calls_named(caller_scope, scope.name))
        fitting = [stmt for call, stmt in calls if call_fits(scope, call)]
        if calls and not fitting:
            return False, False
        if calls_another_hierarchy(caller_analysis, caller_scope, scope.name, self.analysis, scope.class_name):
            return False, False
        index = caller_analysis.index
        off = caller != module and bool(fitting) and all(
            index.ctx(stmt) is not None and index.ctx(stmt).grad_off for stmt in fitting)
        return True, off

    def _project_decorator_off(self, deco, scope: Scope) -> Optional[str]:
        """``@smart_inference_mode()``: a project decorator (or decorator factory) whose body
        applies ``torch.inference_mode``/``torch.no_grad`` to the function it wraps."""
        target = deco.func if isinstance(deco, ast.Call) else deco
        kinds = self.analysis.graph.kinds
        project = self.analysis.project
        if project is None or not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        found = kinds.only_callee(target, scope, None)
        if found is None:
            return None
        analysis, decorator = found
        imports = analysis.index.imports
        applied = None
        for node in ast.walk(decorator.node):
            if isinstance(node, (ast.Name, ast.Attribute)):
                qual = imports.qualname(node) or ""
                if qual in ("torch.enable_grad", "torch.set_grad_enabled"):
                    return None  # it may also switch grad on: not decided here
                if qual in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                            "torch.autograd.grad_mode.no_grad"):
                    applied = qual.rsplit(".", 1)[-1]
        if applied is None:
            return None
        return f"decorated with `@{ast.unparse(deco)}`, a project decorator that applies `torch.{applied}`"
