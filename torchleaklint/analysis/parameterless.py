"""Does a project nn.Module class hold no parameters at all? A tokenizer or text transform
written as an ``nn.Module`` (for TorchScript) stores strings, numbers, vocabularies and
a compiled encoder; calling it records no autograd graph, whatever grad mode is on.

Proven, never guessed: every ``self.<name> = value`` in every method of the class and of
its project base classes stores a value that cannot be a module or a parameter (a
constant, a container or comprehension of such, an argument annotated with a plain
Python type, a builtin or standard-library call, an object of a package's private compiled
extension such as ``pkg._ext.Encoder``), no method registers parameters, buffers or
submodules, and every base outside the project is ``nn.Module`` itself. A layer built where
it is called (``ROIAlign((size, size), 1.0, 0)(masks, rois)``) is judged with the values
that construction passes: an ``__init__`` argument stored as it came is plain when the
call passes a constant, or a name the caller annotates or binds with plain values."""

from __future__ import annotations

import ast
from typing import FrozenSet, Optional, Tuple

from .summaries import argument_of, passed_parameters

MAX_CLASSES = 6
_PLAIN_TYPES = frozenset({"str", "int", "float", "bool", "bytes", "None", "Optional", "List", "Dict", "Tuple", "Set",
                          "list", "dict", "tuple", "set", "Sequence", "Mapping", "Union", "Final"})
# (Buffers hold no parameters: ``register_buffer`` stores tensors autograd does not track.)
_REGISTERS = frozenset({"register_parameter", "register_module", "add_module", "Parameter",
                        "setattr", "__setattr__", "load_state_dict"})
_PLAIN_CALLS = frozenset({"dict", "list", "set", "tuple", "str", "int", "float", "bool", "bytes", "len", "range",
                          "sorted", "zip", "enumerate", "open", "frozenset"})
_STDLIB_ROOTS = frozenset({"json", "re", "os", "collections", "string", "unicodedata", "functools", "itertools",
                           "io", "pathlib", "typing", "math"})
# ``torch.<factory>(...)`` makes a tensor with ``requires_grad=False`` (unless asked); kept on
# ``self`` without ``nn.Parameter`` it is no parameter.
_TENSOR_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "tensor", "as_tensor", "from_numpy", "arange",
                               "linspace", "eye", "zeros_like", "ones_like", "LongTensor", "FloatTensor",
                               "Tensor", "BoolTensor", "IntTensor", "DoubleTensor"})
_NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def holds_no_parameters(project, class_ref: Tuple[str, str], plain_args: FrozenSet[str] = frozenset()) -> bool:
    """``plain_args``: the class's own ``__init__`` arguments known to be plain values."""
    memo = project.memo
    key = ("holds_no_parameters", class_ref, plain_args)
    if key not in memo:
        memo[key] = _holds_no_parameters(project, class_ref, plain_args)
    return memo[key]


def plain_construction_args(caller, class_ref: Tuple[str, str], construction: ast.Call, scope) -> FrozenSet[str]:
    """The ``__init__`` arguments of ``class_ref`` that ``construction``, a call in
    ``scope`` of the module ``caller`` analyses, passes plain values to."""
    analysis = caller.project.analysis(class_ref[0])
    init = next((m for m in analysis.index.methods(class_ref[1]) if m.name == "__init__"), None) if analysis else None
    if init is None or not scope.is_function:
        return frozenset()
    annotated = _plainly_annotated(scope.node)
    passed = {name: argument_of(construction, init, name) for name in passed_parameters(init) + _keyword_only(init)}
    return frozenset(name for name, value in passed.items()
                     if value is not None and _plain(value, annotated, caller.index.imports, scope))


def _keyword_only(func_scope) -> list:
    return [a.arg for a in func_scope.node.args.kwonlyargs]


def _holds_no_parameters(project, class_ref, plain_args=frozenset()) -> bool:
    todo = [class_ref]
    seen = set()
    while todo:
        module, cls = todo.pop()
        if (module, cls) in seen:
            continue
        seen.add((module, cls))
        if len(seen) > MAX_CLASSES:
            return False
        analysis = project.analysis(module)
        if analysis is None or cls not in analysis.index.classes:
            return False
        for base in project.class_table(module, cls) or []:
            found = project.resolve_class(module, base)
            if found is not None:
                todo.append(found)
            elif base not in _NN_MODULE:
                return False  # a library base (nn.Linear, a pretrained model) may hold parameters
        if not _stores_only_plain_values(analysis, cls, plain_args if (module, cls) == tuple(class_ref) else frozenset()):
            return False
    return True


def _stores_only_plain_values(analysis, cls: str, plain_args=frozenset()) -> bool:
    imports = analysis.index.imports
    for method in analysis.index.methods(cls):
        plain_params = _plainly_annotated(method.node)
        if method.name == "__init__":
            plain_params |= plain_args
        for node in ast.walk(method.node):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in _REGISTERS:
                    return False
            targets = ()
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets, value = (node.target,), node.value
            for target in targets:
                for part in ast.walk(target):
                    if (isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)
                            and part.value.id == "self" and not _plain(value, plain_params, imports, method)
                            and not _only_compared(analysis, cls, part.attr)):
                        return False
    return True


def _only_compared(analysis, cls: str, attr: str) -> bool:
    """Is every read of ``self.<attr>`` in the class an operand of a comparison or a truth
    test (``outputs > self.threshold``, ``if n == 1 and self.ignore_zeros:``)? A submodule
    or a parameter is called or computed with, never only tested: whatever the caller
    passed, it holds no parameter here."""
    reads = 0
    for method in analysis.index.methods(cls):
        parents = {}
        for node in ast.walk(method.node):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node, parent in parents.items():
            if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) \
                    and node.value.id == "self" and isinstance(node.ctx, ast.Load):
                reads += 1
                if isinstance(parent, ast.BoolOp):  # ``a and self.flag`` is a test only where it is tested
                    node, parent = parent, parents.get(parent)
                if not (isinstance(parent, ast.Compare) or (
                        isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)) or (
                        isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is node)):
                    return False
    return reads > 0


def _plainly_annotated(func) -> set:
    out = set()
    args = getattr(func, "args", None)
    if args is None:
        return out
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        if arg.annotation is not None and all(_plain_type_part(n) for n in ast.walk(arg.annotation)):
            out.add(arg.arg)
    return out


def _plain_type_part(node) -> bool:
    """A piece of an annotation made of plain Python types only (``Optional[List[str]]``);
    ``nn.Module``, ``torch.Tensor``, a project class or a string annotation is not."""
    if isinstance(node, ast.Name):
        return node.id in _PLAIN_TYPES
    if isinstance(node, ast.Constant):
        return node.value is None
    return isinstance(node, (ast.Subscript, ast.Tuple, ast.BinOp, ast.BitOr, ast.Load))


def _plain(value, params: set, imports, method, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if isinstance(value, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return all(_plain(e, params, imports, method, depth + 1) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(v is None or _plain(v, params, imports, method, depth + 1) for v in value.keys + value.values)
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return True  # built from the method's own plain data (modules are not built in comprehensions here)
    if isinstance(value, ast.Name):
        return value.id in params or _local_plain(value.id, params, imports, method, depth)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        # ``self.joints_idx = cfg.JOINTS_IDX``: a constant (spelled in capitals) of an import
        qual = imports.qualname(value.value) or ""
        return bool(qual) and qual.split(".")[0] != "torch" and value.attr.isupper()
    if isinstance(value, ast.BinOp):
        return _plain(value.left, params, imports, method, depth + 1) and _plain(value.right, params, imports,
                                                                               method, depth + 1)
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Name) and value.func.id in _PLAIN_CALLS:
            return True
        qual = imports.qualname(value.func) or ""
        parts = qual.split(".")
        if parts[0] in _STDLIB_ROOTS:
            return True
        if len(parts) == 2 and parts[0] == "torch" and parts[1] in _TENSOR_FACTORIES:
            return True  # ``self.pose = torch.zeros(shape)``: a plain tensor attribute, not a registered parameter
        # ``pkg._ext.Encoder(...)``: a binding from a package's private compiled extension.
        return len(parts) > 2 and parts[0] != "torch" and any(p.startswith("_") and not p.startswith("__")
                                                               for p in parts[1:-1])
    return False


def _local_plain(name: str, params: set, imports, method, depth: int) -> bool:
    """A local name every assignment of which in the method is plain."""
    values = [node.value for node in ast.walk(method.node) if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    return bool(values) and all(_plain(v, params, imports, method, depth + 1) for v in values)


def called_class(kinds, call: ast.Call, scope, stmt) -> Optional[Tuple[str, str]]:
    """The project class whose instance ``call`` calls, when the analysis knows it."""
    kind = kinds.kind_of(call.func, scope, stmt)
    return kind.class_ref if kind is not None else None

