"""The rule registry: adding a rule is one module and one line here.

Rule modules import the whole analysis, so they are imported on first use of
``ALL_RULES`` or ``RULES_BY_CODE``, not when the registry is: a run whose findings all
come from the cache, or a configuration check, needs only the codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, List, Type

from ..lazy import load

if TYPE_CHECKING:  # pragma: no cover
    from .base import Rule

# code -> "module.ClassName" (modules in this package)
REGISTRY: Dict[str, str] = {
    "TLL001": "tll001_graph_tensor_stored.GraphTensorStored",
    "TLL002": "tll002_graph_tensor_accumulated.GraphTensorAccumulated",
    "TLL003": "tll003_redundant_state_copy.RedundantStateCopy",
    "TLL004": "tll004_unbounded_history.UnboundedHistory",
    "TLL005": "tll005_unclosed_figure.UnclosedFigure",
    "TLL006": "tll006_running_stat_with_grad.RunningStatWithGrad",
    "TLL007": "tll007_graph_carried_across_iterations.GraphCarriedAcrossIterations",
    "TLL008": "tll008_retain_graph_in_loop.RetainGraphInLoop",
    "TLL009": "tll009_eval_forward_with_grad.EvalForwardWithGrad",
    "TLL010": "tll010_cycled_data_loader.CycledDataLoader",
    "TLL011": "tll011_output_tensor_on_ctx.OutputTensorOnCtx",
    "TLL012": "tll012_legacy_autograd_function.LegacyAutogradFunction",
    "TLL013": "tll013_hook_registered_per_step.HookRegisteredPerStep",
    "TLL014": "tll014_anomaly_detection_enabled.AnomalyDetectionEnabled",
    "TLL015": "tll015_process_group_per_step.ProcessGroupPerStep",
    "TLL016": "tll016_trace_per_step.TracePerStep",
    "TLL017": "tll017_module_built_per_step.ModuleBuiltPerStep",
}

# Opt-in rules (like ruff's preview rules): not below ``ALL`` or a code prefix, only when
# selected by their full code (``--extend-select TLL011``). A rule stays here until 20 of
# its findings on real code have been read and at least 90 % found right
# (bench/realcode/new_rules_review.md).
OPT_IN: FrozenSet[str] = frozenset({"TLL011", "TLL013", "TLL015", "TLL016", "TLL017"})

RULE_CODES = tuple(REGISTRY)
PARSE_ERROR = "TLL000"
UNUSED_NOQA = "TLL100"  # reported by the engine (engine/noqa.py), not by a rule module

ALL_RULES: List[Type["Rule"]]
RULES_BY_CODE: Dict[str, Type["Rule"]]


def _load() -> List[Type["Rule"]]:
    rules = []
    for code, target in REGISTRY.items():
        rule = load(__name__, target)
        if rule.code != code:
            raise ImportError(f"registry entry {code} names {target}, whose code is {rule.code}")
        rules.append(rule)
    return rules


def __getattr__(name: str):
    if name in ("ALL_RULES", "RULES_BY_CODE"):
        rules = _load()
        globals().update(ALL_RULES=rules, RULES_BY_CODE={rule.code: rule for rule in rules})
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
