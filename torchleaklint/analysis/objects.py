"""What object a name denotes (an ``nn.Module``, a loss module, an instance of a
project class) and which project functions a call can reach."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from .module_index import Scope
from .names import dotted, last_name, looks_like_module_name
from .project import FunctionRef
from .summaries import CallSummary, parameter_defaults, summary_for

MAX_NAME_CANDIDATES = 3
STRONG = "strong"
CONVENTION = "convention"

NN_NOT_MODULES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Module", "init",
                            "functional", "utils", "UninitializedParameter", "Buffer"})
MODULE_PASSTHROUGH_METHODS = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float",
                                        "double", "bfloat16", "requires_grad_", "apply",
                                        "share_memory", "to_empty", "type"})
MODULE_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
                             "torch.nn.parallel.DataParallel", "torch.compile", "copy.deepcopy",
                             "torch.jit.script", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
                             "torch.distributed.fsdp.FullyShardedDataParallel"})
# The wrappers' class names, for code that has no import map at hand (``nn.DataParallel(m)``).
PARALLEL_WRAPPERS = frozenset({"DataParallel", "DistributedDataParallel"})
FORWARD_METHODS = frozenset({"forward", "encode", "decode", "forward_features", "forward_head",
                             "encode_image", "encode_text", "get_image_features",
                             "get_text_features", "embed", "forward_train"})
NON_FORWARD_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "load_state_dict",
                                 "to", "cuda", "cpu", "eval", "train", "zero_grad", "apply", "modules",
                                 "children", "named_modules", "named_children", "buffers",
                                 "named_buffers", "half", "float", "double", "bfloat16",
                                 "requires_grad_", "generate", "save_pretrained", "from_pretrained",
                                 "register_buffer", "register_parameter", "register_forward_hook",
                                 "register_full_backward_hook", "register_forward_pre_hook",
                                 "add_module", "get_submodule", "get_parameter", "extra_repr",
                                 "num_parameters", "print_trainable_parameters", "resize_token_embeddings",
                                 "get_input_embeddings", "get_output_embeddings", "tie_weights",
                                 "gradient_checkpointing_enable", "share_memory", "type", "item",
                                 "size", "numel", "dim", "detach", "tolist", "numpy", "eq", "argmax",
                                 "get_config", "save", "load", "init_weights", "reset_parameters"})
MODULE_ONLY_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "modules", "children",
                                 "named_modules", "register_forward_hook"})
TENSOR_ATTRS_OF_MODULES = frozenset({"weight", "bias", "running_mean", "running_var", "config",
                                     "training", "device", "dtype"})
# Methods of builtin containers: resolving ``x.update(...)`` to a project method by name
# alone would confuse ``dict.update`` with ``AverageMeter.update``.
BUILTIN_METHOD_NAMES = frozenset(dir(dict) + dir(list) + dir(set) + dir(str)) | {"step", "zero_grad", "log"}


@dataclass(frozen=True)
class ObjectKind:
    kind: str  # module | loss_module | instance
    why: str
    strength: str = STRONG
    class_ref: Optional[Tuple[str, str]] = None
    reduction_none: bool = False
    by_attribute_name: bool = False  # known only from what the project binds to attributes so named
    # Every project class the object may be an instance of, when branches build different
    # ones (``model = Transformer(...)`` or ``Seq2Seq(...)``); ``class_ref`` is the first.
    alternatives: Tuple[Tuple[str, str], ...] = ()

    @property
    def classes(self) -> Tuple[Tuple[str, str], ...]:
        if self.alternatives:
            return self.alternatives
        return (self.class_ref,) if self.class_ref is not None else ()

    @property
    def is_module(self) -> bool:
        return self.kind in ("module", "loss_module")

    @property
    def is_loss_module(self) -> bool:
        return self.kind == "loss_module"


DATA_PARALLEL_APPLY = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


class ObjectKinds:
    MAX_DEPTH = 12

    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self._busy: set = set()

    @property
    def project(self):
        return self.analysis.project

    # -- kinds --------------------------------------------------------------------------
    def kind_of(self, expr, scope: Scope, stmt, depth: int = 0) -> Optional[ObjectKind]:
        if depth > self.MAX_DEPTH:
            return None
        if isinstance(expr, ast.Subscript):
            base = self.kind_of(expr.value, scope, stmt, depth + 1)
            if base is not None and base.is_module:
                return base
            return self._element_kind(expr.value, scope, stmt, depth + 1)  # ``self.agents[i]``
        if isinstance(expr, ast.Call):
            return self.value_kind(expr, scope, stmt, depth + 1)
        key = dotted(expr)
        if key is None:
            return None
        if key == "self" and scope.class_name and self.project is not None:
            if self.project.is_module_class(self.index.module_name, scope.class_name):
                return ObjectKind("module", f"`{scope.class_name}` derives from nn.Module",
                                  class_ref=(self.index.module_name, scope.class_name))
            return ObjectKind("instance", f"instance of `{scope.class_name}`",
                              class_ref=(self.index.module_name, scope.class_name))
        guard = (id(scope.node), key, id(stmt))
        if guard in self._busy:
            return None
        self._busy.add(guard)
        try:
            found = self._kind_from_defs(key, scope, stmt, depth)
        finally:
            self._busy.discard(guard)
        if found is not None:
            return found
        if isinstance(expr, ast.Attribute):
            owner = self.kind_of(expr.value, scope, stmt, depth + 1)
            if owner is not None and owner.class_ref is not None and owner.strength == STRONG:
                found = self._attribute_kind(owner, expr.attr, depth)
                if found is not None:
                    return found
            if not _self_attribute(expr) and self.index.imports.qualname(expr) is None \
                    and not self._numpy_attribute(expr.value, scope):
                from .attribute_bindings import bound_attribute_kind

                found = bound_attribute_kind(self.project, expr.attr)  # (``F.softmax`` is a library function)
                if found is not None:
                    return found
        used = self._used_as_module(key, scope)
        if used is not None:
            return ObjectKind("module", used)
        name = last_name(expr)
        extra = self.project.model_names if self.project is not None else frozenset()
        if (name and self.index.torch_aware and looks_like_module_name(name, extra) and not name[:1].isupper()
                and not self.is_project_callable(expr, scope) and self._origin_unknown(key, scope, stmt)):
            return ObjectKind("module", f"`{key}` is named like a model", CONVENTION)
        return None

    def _attribute_kind(self, owner: ObjectKind, attr: str, depth: int) -> Optional[ObjectKind]:
        """``model.decoder1`` where ``model`` is an instance of a project class: what the
        class's constructor binds to ``self.decoder1``."""
        project = self.project
        for ref in project.methods_in_hierarchy(owner.class_ref[0], owner.class_ref[1], "__init__"):
            found = project.scope_for(ref)
            if found is None:
                continue
            analysis, init = found
            for d in init.defs_of(f"self.{attr}"):
                kind = analysis.graph.kinds._def_kind(d, init, depth + 1)
                if kind is not None:
                    return replace(kind, why=f"`{attr}` of {owner.why}, {kind.why}")
        return None

    def _used_as_module(self, key, scope) -> Optional[str]:
        """``key.eval()``, ``key.parameters()``… only nn.Modules have these methods."""
        memo = self.__dict__.setdefault("_module_use", {})
        shared = key.startswith("self.") and scope.class_name is not None
        cache = memo.get((id(scope.node), shared))
        if cache is None:
            cache = {}
            scopes = [scope]
            if shared:  # object state is shared by the methods; a local name is the function's own
                scopes = self.index.methods(scope.class_name) or [scope]
            for other in scopes:
                for call, _ in other.calls:
                    func = call.func
                    if isinstance(func, ast.Attribute) and func.attr in MODULE_ONLY_METHODS:
                        target = func.value
                        while (isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute)
                               and target.func.attr in MODULE_PASSTHROUGH_METHODS):
                            target = target.func.value  # ``model.to(device).eval()``
                        owner = dotted(target)
                        if owner and owner not in cache:
                            cache[owner] = f"`{owner}.{func.attr}()` is called at line {call.lineno}"
            memo[(id(scope.node), shared)] = cache
        if key.startswith("self.") or scope.class_name is None:
            return cache.get(key)
        return cache.get(key) if any(key == c for c in cache) else None

    def _origin_unknown(self, key, scope, stmt) -> bool:
        """Naming conventions stand in only for values whose origin is not in view:
        parameters, globals, attributes set from parameters or unknown calls."""
        defs = self.analysis.flow.reaching(scope, key, stmt)
        if not defs and key.startswith("self.") and scope.class_name:
            defs = [d for m in self.index.methods(scope.class_name) for d in m.defs_of(key)]
        for d in defs:
            if d.kind in ("param", "import", "def"):
                continue
            value = d.value
            if d.kind == "assign" and d.index is None and isinstance(value, ast.Call) \
                    and not (last_name(value.func) or "x")[:1].isupper():
                continue  # ``model = build_model(cfg)``
            if d.kind == "assign" and isinstance(value, ast.Name):
                continue  # ``self.model = model``
            if d.kind == "assign" and d.index is not None and isinstance(value, ast.Tuple) \
                    and d.index < len(value.elts) and isinstance(value.elts[d.index], ast.Name):
                continue  # ``self.q_net, self.target = q_net, target``
            return False
        return True

    def _kind_from_defs(self, key, scope, stmt, depth) -> Optional[ObjectKind]:
        flow = self.analysis.flow
        defs = flow.reaching(scope, key, stmt)
        owner = scope
        if not defs:
            if key.startswith("self.") and scope.class_name:
                for method in self.index.methods(scope.class_name):
                    for d in method.defs_of(key):
                        kind = self._def_kind(d, method, depth)
                        if kind is not None:
                            return kind
                return None
            parent = scope.parent
            while parent is not None and not defs:
                defs = parent.defs_of(key)
                owner = parent
                parent = parent.parent
        for i, d in enumerate(defs):
            kind = self._def_kind(d, owner, depth)
            if kind is not None:
                if kind.class_ref is not None:
                    # ``model = Transformer(...)`` in one branch, ``Seq2Seq(...)`` in the other
                    classes = list(kind.classes)
                    for other in (self._def_kind(e, owner, depth) for e in defs[i + 1:]):
                        for cls in (other.classes if other is not None else ()):
                            if cls not in classes:
                                classes.append(cls)
                    if len(classes) > 1:
                        return replace(kind, alternatives=tuple(classes))
                return kind
        return None

    def _element_kind(self, container, scope: Scope, stmt, depth: int) -> Optional[ObjectKind]:
        """What every element of a list built of instances of one project class is
        (``self.agents = [DDPGAgent(...) for _ in range(n)]``), or None."""
        key = dotted(container)
        if key is None or depth > self.MAX_DEPTH:
            return None
        defs = [(d, scope) for d in self.analysis.flow.reaching(scope, key, stmt)]
        if not defs and key.startswith("self.") and scope.class_name:
            defs = [(d, method) for method in self.index.methods(scope.class_name) for d in method.defs_of(key)]
        found = None
        for d, where in defs:
            if d.kind != "assign" or d.index is not None:
                return None
            value = d.value
            elements = [value.elt] if isinstance(value, ast.ListComp) else (
                list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [])
            if not elements:
                return None
            for element in elements:
                kind = self.value_kind(element, where, d.stmt, depth + 1) if isinstance(element, ast.Call) else None
                if kind is None or kind.class_ref is None or kind.strength != STRONG:
                    return None
                if found is not None and found.class_ref != kind.class_ref:
                    return None
                found = found or kind
        return found

    def _def_kind(self, d, scope, depth) -> Optional[ObjectKind]:
        if d.kind == "param":
            ann = getattr(d.stmt, "annotation", None)
            if ann is not None and _class_default(scope.node, d.key):
                return None  # ``mid_activation: nn.Module = nn.ReLU``: it holds a class; calling it builds a layer
            if ann is not None:
                qual = self.index.imports.qualname(ann) or dotted(ann) or ""
                if qual.endswith(("nn.Module", "LightningModule", "PreTrainedModel")):
                    return ObjectKind("module", f"annotated `{qual}`")
                cls = self.resolve_class(ann, scope)
                if cls is not None and self.project is not None:
                    if self.project.is_module_class(*cls):
                        return ObjectKind("module", f"annotated `{cls[1]}`, an nn.Module")
                    return ObjectKind("instance", f"annotated `{cls[1]}`", class_ref=cls)
            return None
        if d.kind == "for" and d.value is not None:
            base = self.kind_of(d.value, scope, d.stmt, depth + 1)
            if base is not None and base.is_module:
                return base
            value = d.value
            if d.index == 1 and d.arity == 2 and isinstance(value, ast.Call) and value.args \
                    and isinstance(value.func, ast.Name) and value.func.id == "enumerate":
                return self._element_kind(value.args[0], scope, d.stmt, depth + 1)  # ``for i, agent in enumerate(self.agents)``
            return self._element_kind(value, scope, d.stmt, depth + 1) if d.index is None else None
        if d.kind in ("assign", "with") and d.value is not None and d.index is None:
            return self.value_kind(d.value, scope, d.stmt, depth + 1)
        return None

    def value_kind(self, value, scope: Scope, stmt, depth: int = 0) -> Optional[ObjectKind]:
        if isinstance(value, ast.IfExp):
            return (self.value_kind(value.body, scope, stmt, depth + 1)
                    or self.value_kind(value.orelse, scope, stmt, depth + 1))
        if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
            return self.kind_of(value, scope, stmt, depth + 1)
        if not isinstance(value, ast.Call):
            return None
        func = value.func
        qual = self.index.imports.qualname(func) or ""
        if qual.startswith("torch.nn.") and qual.count(".") == 2:
            short = qual.rsplit(".", 1)[-1]
            if short.endswith("Loss"):
                return ObjectKind("loss_module", f"bound to `{dotted(func)}(...)`",
                                  reduction_none=_reduction_none(value))
            if short[:1].isupper() and short not in NN_NOT_MODULES:
                return ObjectKind("module", f"bound to `{dotted(func)}(...)`")
            return None
        if qual in MODULE_WRAPPERS and value.args:
            return self.kind_of(value.args[0], scope, stmt, depth + 1)
        if qual in ("timm.create_model", "torch.hub.load") or qual.startswith("torchvision.models."):
            return ObjectKind("module", f"built by `{dotted(func)}(...)`")
        if isinstance(func, ast.Attribute):
            if func.attr == "from_pretrained":
                owner = last_name(func.value) or ""
                not_model = ("Tokenizer", "Processor", "Config", "FeatureExtractor", "ImageProcessor")
                if any(word in owner for word in not_model):
                    return None
                if "Model" in owner or owner.startswith("Auto") or owner.endswith(("LM", "ForSequenceClassification")):
                    return ObjectKind("module", f"loaded by `{owner}.from_pretrained(...)`")
            if func.attr in MODULE_PASSTHROUGH_METHODS:
                base = self.kind_of(func.value, scope, stmt, depth + 1)
                if base is not None and base.is_module:
                    return base
                return None
        cls = self.resolve_class(func, scope)
        if cls is not None and self.project is not None:
            module, name = cls
            if self.project.is_module_class(module, name):
                kind = "loss_module" if name.lower().endswith(("loss", "criterion")) else "module"
                # The class is kept so that calls of its own methods (``model.act(obs)``,
                # ``net.get_loss(...)``) resolve to their summaries.
                return ObjectKind(kind, f"an instance of `{name}`, which derives from nn.Module", class_ref=cls)
            return ObjectKind("instance", f"an instance of `{name}`", class_ref=cls)
        return self._built_by_factory(func, scope, stmt)

    def _built_by_factory(self, func, scope: Scope, stmt) -> Optional[ObjectKind]:
        """``self.net = make_mlp(...)``: a project function that returns an nn.Module (or an
        instance of a project class) builds one. Only callees resolved by their name, an
        import or ``self`` are followed, never a method guessed from its name alone."""
        if self.project is None or not self._resolved_callee(func):
            return None
        for ref in self.resolve_functions(func, scope, stmt):
            summary = summary_for(self.project, ref)
            built = summary.returned_kind() if summary is not None else None
            if built is not None:
                what = "an nn.Module" if built.is_module else f"an instance of `{built.class_ref[1]}`"
                return replace(built, why=f"built by `{dotted(func)}(...)`, which returns {what} ({summary.where})")
        return None

    def _resolved_callee(self, func) -> bool:
        if isinstance(func, ast.Name):
            return True
        if not isinstance(func, ast.Attribute):
            return False
        owner = dotted(func.value) or ""
        return owner == "self" or owner.split(".")[0] in self.index.imports.aliases

    # -- calls --------------------------------------------------------------------------
    def module_call(self, call: ast.Call, scope: Scope, stmt):
        from .graph import Evidence

        func = call.func
        if isinstance(func, ast.Attribute) and (func.attr in NON_FORWARD_METHODS or func.attr.startswith("__")):
            return None
        qual = self.index.imports.qualname(func)
        if qual in DATA_PARALLEL_APPLY and call.args:
            # ``nn.parallel.data_parallel(netG, inputs, gpus)`` runs ``netG``'s forward
            kind = self.kind_of(call.args[0], scope, stmt)
            if kind is not None and kind.kind == "module":
                return Evidence(f"output of the module `{dotted(call.args[0]) or 'module'}` run by "
                                f"`{dotted(func)}` ({kind.why})", call.lineno, strength=kind.strength)
            return None
        if qual is not None and not self._rebound_import(func, scope, stmt):
            return None  # a library function or constructor (``torchvision.models.resnet50(...)``), not a model
        kind = self.kind_of(func, scope, stmt)
        if kind is not None and kind.by_attribute_name and not (call.args or call.keywords):
            return None  # ``module.module()``: a forward takes inputs; a name-only guess needs them
        if kind is not None and kind.strength == CONVENTION and isinstance(func, ast.Attribute) \
                and _self_attribute(func) and scope.class_name and self.project is not None \
                and self.project.methods_in_hierarchy(self.index.module_name, scope.class_name, func.attr):
            return None  # ``self.describe_network(net)``: a method of the class, not a submodule
        if kind is not None and kind.kind == "module":
            if kind.strength == CONVENTION and isinstance(func, ast.Attribute) and not _self_attribute(func):
                base = self.kind_of(func.value, scope, stmt)
                if base is not None and base.kind == "module":
                    return None  # ``policy.act(obs)``: a method of a model, not a submodule call
            return Evidence(f"output of the module `{dotted(func) or 'module'}` ({kind.why})", call.lineno,
                            strength=kind.strength)
        if isinstance(func, ast.Attribute) and func.attr in FORWARD_METHODS:
            base = self.kind_of(func.value, scope, stmt)
            if base is not None and base.kind == "module" and not self._fitting_methods_grad_off(call):
                return Evidence(f"output of `{dotted(func)}` ({base.why})", call.lineno, strength=base.strength)
        return None

    def _numpy_attribute(self, expr, scope: Scope) -> bool:
        """``self.observations`` where its class binds it to a NumPy array somewhere
        (``self.observations = np.zeros(...)``): ``self.observations.mean(0)`` is the array's
        method, whatever other classes bind to an attribute named ``mean``."""
        if not (isinstance(expr, ast.Attribute) and _self_attribute(expr) and scope.class_name):
            return False
        key = dotted(expr)
        for method in self.index.methods(scope.class_name):
            for d in method.defs.get(key, ()):
                value = d.value
                if isinstance(value, ast.Call) and (self.index.imports.qualname(value.func) or "").split(".")[0] == "numpy":
                    return True
        return False

    def _fitting_methods_grad_off(self, call: ast.Call) -> bool:
        """``model.state_encoder.encode(obs, extra, return_tensor=True)`` on an object of
        unknown class: every project method of that name whose parameters take these
        arguments is decorated ``@torch.no_grad()``, so the call records nothing."""
        from .call_arity import arguments_fit
        from .module_index import grad_off_call

        project = self.project
        if project is None:
            return False
        refs = [ref for ref in project.functions_named(call.func.attr) if "." in ref.qualname]
        if not refs or len(refs) > 8:
            return False
        fitting = 0
        for ref in refs:
            found = project.scope_for(ref)
            if found is None:
                return False
            analysis, method = found
            if not arguments_fit(method, call):
                continue
            fitting += 1
            if not any(grad_off_call(deco, analysis.index.imports) for deco in getattr(method.node, "decorator_list", ())):
                return False
        return fitting > 0

    def _rebound_import(self, func, scope: Scope, stmt) -> bool:
        """``import model`` then ``model = model.NCF(...)``: the name now holds an object."""
        if not isinstance(func, ast.Name):
            return False
        defs = self.analysis.flow.reaching(scope, func.id, stmt)
        if not defs and scope.parent is not None:
            defs = self.index.module_scope.defs_of(func.id)
        return any(d.kind not in ("import", "def") for d in defs)

    def resolve_class(self, func, scope: Scope) -> Optional[Tuple[str, str]]:
        if self.project is None:
            return None
        key = dotted(func)
        if key is None:
            return None
        return self.project.resolve_class(self.index.module_name, key)

    def resolve_functions(self, func, scope: Scope, stmt, arity: int = 0) -> List[FunctionRef]:
        project = self.project
        if project is None:
            return []
        module = self.index.module_name
        if isinstance(func, ast.Name):
            table = project.tables.get(module)
            if table is not None:
                # A function nested in this one (or an enclosing one) shadows a module-level one.
                outer = scope.qualname if scope.is_function else ""
                while outer in table.functions:
                    if f"{outer}.{func.id}" in table.functions:
                        return [FunctionRef(module, f"{outer}.{func.id}")]
                    outer = outer.rpartition(".")[0]
                if func.id in table.functions:
                    return [FunctionRef(module, func.id)]
            target = self.index.imports.aliases.get(func.id)
            if target:
                found = project.resolve_symbol(project.local_target(module, target))
                if found and found[1] in project.tables[found[0]].functions:
                    return [FunctionRef(*found)]
            elif self.index.imports.star_modules and not scope.defs_of(func.id):
                found = project.star_symbol(module, func.id)  # ``from utils import *``
                if found and found[1] in project.tables[found[0]].functions:
                    return [FunctionRef(*found)]
            return []
        if not isinstance(func, ast.Attribute):
            return []
        method = func.attr
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "self" and scope.class_name:
            return project.methods_in_hierarchy(module, scope.class_name, method)
        owner_key = dotted(owner)
        if owner_key and owner_key.split(".")[0] in self.index.imports.aliases:
            qual = self.index.imports.qualname(func)
            found = project.resolve_symbol(project.local_target(module, qual)) if qual else None
            if found and found[1] in project.tables[found[0]].functions:
                return [FunctionRef(*found)]
            return []
        if isinstance(owner, ast.Call) and not isinstance(owner.func, ast.Name):
            made_by = self.kind_of(owner.func, scope, stmt)
            if made_by is not None and made_by.is_module:
                # ``self.style(z).mean(0)``: a method of a module's output, a tensor, not of
                # some project class that happens to define ``mean``
                return []
        kind = self.kind_of(owner, scope, stmt)
        if kind is not None:
            if kind.class_ref is not None:
                found = []
                for cls in kind.classes:
                    found.extend(ref for ref in project.methods_in_hierarchy(cls[0], cls[1], method)
                                 if ref not in found)
                return found
            if kind.strength != CONVENTION:
                return []
            # ``model.validation_step(batch)`` on a parameter named like a model: its class
            # is unknown, so the project's methods of that name are the candidates.
        if method in BUILTIN_METHOD_NAMES and arity < 2:
            return []
        candidates = [ref for ref in project.functions_named(method) if "." in ref.qualname]
        if scope.class_name and isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) \
                and owner.value.id == "self":
            # ``self.env.step(a)`` in ``Agent``: an object the instance holds is not the instance
            own = module, scope.class_name + "."
            candidates = [ref for ref in candidates
                          if not (ref.module == own[0] and ref.qualname.startswith(own[1]))]
        if arity >= 2:
            # ``a, b = obj.update(batch)``: only methods that return that many values fit.
            fitting = []
            for ref in candidates:
                summary = summary_for(project, ref)
                if summary is not None and summary.can_unpack(arity):
                    fitting.append(ref)
            candidates = fitting
        if len(candidates) > MAX_NAME_CANDIDATES:
            return []  # too common a method name to guess the receiver's class from
        return candidates

    def only_callee(self, func, scope: Scope, stmt) -> Optional[Tuple[object, Scope]]:
        """(analysis, scope) of the one project function a call of ``func`` reaches, or None
        when it reaches none, several, or one whose file cannot be read."""
        refs = self.resolve_functions(func, scope, stmt)
        return self.project.scope_for(refs[0]) if len(refs) == 1 else None

    def is_project_callable(self, func, scope: Scope) -> bool:
        if self.project is None:
            return False
        if isinstance(func, ast.Name):
            if self.resolve_class(func, scope) is not None:
                return True
            return bool(self.resolve_functions(func, scope, None))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return bool(scope.class_name and self.project.methods_in_hierarchy(
                self.index.module_name, scope.class_name, func.attr))
        return False

    def call_summary(self, call: ast.Call, scope: Scope, stmt, arity: int, oracle=None) -> Optional[CallSummary]:
        refs = self.resolve_functions(call.func, scope, stmt, arity)
        if not refs and isinstance(call.func, ast.Name) and call.func.id in scope.params:
            from .passed_callables import passed_call_methods

            refs = passed_call_methods(self.analysis, scope, call.func.id) or []  # ``loss_compute(out, y)``
        if not refs:
            return None
        by_name = not (isinstance(call.func, ast.Name) or (
            isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "self"))
        summaries = [s for s in (summary_for(self.project, ref) for ref in refs) if s is not None]
        if arity >= 2:
            summaries = [s for s in summaries if s.can_unpack(arity)]
        if not summaries:
            return None
        return CallSummary(dotted(call.func) or "call", summaries, by_name and len(refs) > 1,
                           call=call, caller=oracle or self.analysis.graph, stmt=stmt)


def _self_attribute(func) -> bool:
    return isinstance(func.value, ast.Name) and func.value.id == "self"


def _reduction_none(call: ast.Call) -> bool:
    return any(k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value == "none"
               for k in call.keywords)


def _class_default(func, name: str) -> bool:
    """Is the parameter's default a class (``nn.ReLU``, ``Linear``), not an instance?"""
    default = parameter_defaults(func).get(name)
    return isinstance(default, (ast.Name, ast.Attribute)) and (dotted(default) or "").rsplit(".", 1)[-1][:1].isupper()
