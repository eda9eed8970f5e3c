"""Naming facts about PyTorch code: import resolution, dotted paths, and the conventions
(loss names, module names) that count as weaker evidence than a traced binding."""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional

TORCH_ROOTS = frozenset(
    {"torch", "pytorch_lightning", "lightning", "transformers", "timm", "torchvision",
     "accelerate", "deepspeed", "torchaudio", "torchtext", "diffusers", "peft", "fairseq",
     "torch_geometric", "dgl", "einops", "apex"}
)

# Conventional names of objects that are nn.Modules (the last identifier of a dotted
# path is split on "_" and camelCase; one of its words must be one of these).
MODULE_WORDS = frozenset(
    {"model", "models", "net", "network", "encoder", "decoder", "actor", "critic", "policy",
     "generator", "discriminator", "backbone", "head", "classifier", "rnn", "lstm", "gru",
     "transformer", "unet", "vae", "autoencoder", "mlp", "cnn", "qnet", "dqn", "netg", "netd"}
)

LOSS_WORDS = frozenset({"loss", "losses", "criterion", "criterium", "objective"})

FUNCTIONAL_LOSSES = frozenset(
    {"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "nll_loss",
     "kl_div", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cosine_embedding_loss",
     "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
     "ctc_loss", "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss",
     "multilabel_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss",
     "multi_margin_loss", "sigmoid_focal_loss"}
)

_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def words(identifier: str) -> List[str]:
    """Split ``netG``, ``q_net`` or ``TextEncoder`` into lower-case words."""
    out: List[str] = []
    for part in identifier.strip("_").split("_"):
        if not part:
            continue
        found = _CAMEL.findall(part)
        out.extend(w.lower() for w in (found or [part]))
    return out


# Names that start with a verb name an action on a model (``prepare_model``, ``get_encoder``),
# not a model.
VERB_WORDS = frozenset({"prepare", "get", "build", "load", "create", "make", "init", "initialize", "set",
                        "compute", "save", "to", "wrap", "unwrap", "convert", "export", "freeze", "unfreeze",
                        "copy", "clone", "update", "reset", "register", "is", "has", "num", "print", "log",
                        "check", "apply", "resize", "tie", "enable", "disable", "setup", "find", "move",
                        "preprocess", "postprocess", "process", "dispatch", "replace", "fuse", "quantize",
                        "dequantize", "prune", "patch", "attach", "detach", "merge", "split", "shard",
                        "offload", "compile", "trace", "script", "validate", "evaluate", "test", "run",
                        "add", "remove", "delete", "write", "read", "parse", "verify", "instantiate",
                        "predict", "infer", "generate", "sample", "encode", "decode", "embed", "score"})


def looks_like_module_name(identifier: str, extra: FrozenSet[str] = frozenset()) -> bool:
    """``extra``: configured ``model-names`` (lower case), identifiers or their last word."""
    ws = words(identifier)
    if extra and (identifier.lower() in extra or (ws and ws[-1] in extra)):
        return True
    while len(ws) > 1 and len(ws[-1]) == 1:
        ws = ws[:-1]  # ``netG``, ``netD``
    if not ws or ws[0] in VERB_WORDS:
        return False
    return ws[-1] in MODULE_WORDS or identifier.lower() in MODULE_WORDS


def looks_like_loss_name(identifier: str, extra: FrozenSet[str] = frozenset()) -> bool:
    """``extra``: configured ``loss-names`` (lower case), identifiers or any of their words."""
    ws = words(identifier)
    if extra and (identifier.lower() in extra or any(w in extra for w in ws)):
        return True
    return any(w in LOSS_WORDS or w.endswith("loss") for w in ws)


def dotted(expr: ast.AST) -> Optional[str]:
    """``self.model.encoder`` for a chain of attributes on a name; None otherwise."""
    parts: List[str] = []
    node = expr
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def last_name(expr: ast.AST) -> Optional[str]:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return None


class ImportMap:
    """Local name -> fully qualified name, from the module's import statements."""

    def __init__(self) -> None:
        self.aliases: Dict[str, str] = {}
        self.star_imported = False  # ``from utils import *``: names of unknown origin
        self.star_modules: List[str] = []  # the modules ``*`` was imported from, in order

    def add(self, node: ast.AST, package: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    self.aliases[root] = root
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg_parts = package.split(".") if package else []
                keep = len(pkg_parts) - (node.level - 1)
                prefix = ".".join(pkg_parts[: max(keep, 0)])
                base = ".".join(p for p in (prefix, base) if p)
            for alias in node.names:
                if alias.name == "*":
                    self.star_imported = True
                    if base and base not in self.star_modules:
                        self.star_modules.append(base)
                    continue
                local = alias.asname or alias.name
                self.aliases[local] = f"{base}.{alias.name}" if base else alias.name

    def qualname(self, expr: ast.AST) -> Optional[str]:
        """Fully qualified name of an imported name or attribute chain, else None."""
        path = dotted(expr)
        if path is None:
            return None
        root, _, rest = path.partition(".")
        target = self.aliases.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def imports_torch(self) -> bool:
        return any(v.split(".")[0] in TORCH_ROOTS for v in self.aliases.values())

    def is_module_alias(self, name: str) -> bool:
        """True for names bound by ``import x`` / ``import x.y as z`` (namespaces, not values)."""
        target = self.aliases.get(name)
        return target is not None and target.split(".")[0] in TORCH_ROOTS | {"numpy", "np", "math"}
