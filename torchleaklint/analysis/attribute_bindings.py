"""What an attribute name denotes across the project: ``model.decoder1`` on an object whose
class is not in view is a submodule when every binding of a name spelled ``decoder1`` in
the linted files is an nn.Module (``self.decoder1 = Decoder(...)``, ``self.step =
nn.LSTMCell(...)``). The answer comes from a recorded project lookup, so an edit that
binds the name elsewhere re-lints only the files that asked."""

from __future__ import annotations

from typing import Optional

from .objects import NN_NOT_MODULES, NON_FORWARD_METHODS, TENSOR_ATTRS_OF_MODULES, ObjectKind


# Methods every tensor and array has: ``x.reshape(n, m)`` on a value of unknown kind is
# that method, whatever a project names a submodule (``self.reshape = nn.Sequential(...)``).
TENSOR_METHODS = frozenset({
    "reshape", "view", "mean", "std", "var", "sum", "prod", "max", "min", "norm", "transpose", "permute",
    "flatten", "squeeze", "unsqueeze", "expand", "repeat", "clamp", "clip", "abs", "exp", "log", "sqrt",
    "softmax", "log_softmax", "argmax", "argmin", "t", "round", "sign", "cumsum", "sort", "topk", "split",
    "chunk", "gather", "scatter", "masked_fill", "matmul", "dot", "pow", "neg", "sigmoid", "tanh", "relu"})


def bound_attribute_kind(project, attr: str) -> Optional[ObjectKind]:
    """The kind every project binding of ``attr`` agrees on (no project function may be
    named so, and no method every tensor has), or None."""
    if project is None or attr in NON_FORWARD_METHODS or attr in TENSOR_ATTRS_OF_MODULES or attr in TENSOR_METHODS:
        return None
    bindings = project.attribute_classes(attr)
    if not bindings or project.functions_named(attr):
        return None
    classes = set()
    for module, name in bindings:
        if name.startswith("torch.nn."):
            short = name.rsplit(".", 1)[-1]
            if not short[:1].isupper() or short in NN_NOT_MODULES:
                return None
            found = ("torch.nn", short)
        else:
            found = project.resolve_class(module, name)
            if found is None or not project.is_module_class(*found):
                return None  # also bound to a class we cannot see, or to a plain object
        classes.add(found)
    module, name = bindings[0]
    loss = all(cls.lower().endswith(("loss", "criterion")) for _, cls in classes)
    only = next(iter(classes)) if len(classes) == 1 else None
    return ObjectKind("loss_module" if loss else "module",
                      f"every `.{attr}` the project binds is an nn.Module (`{name}(...)` in {module})",
                      class_ref=only if only is not None and only[0] != "torch.nn" else None,
                      by_attribute_name=True)
