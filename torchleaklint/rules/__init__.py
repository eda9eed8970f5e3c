"""The rule registry: adding a rule is one module and one line here."""

from __future__ import annotations

from typing import Dict, List, Type

from .base import Rule
from .tll001_graph_tensor_stored import GraphTensorStored
from .tll002_graph_tensor_accumulated import GraphTensorAccumulated
from .tll003_redundant_state_copy import RedundantStateCopy
from .tll004_unbounded_history import UnboundedHistory
from .tll005_unclosed_figure import UnclosedFigure
from .tll006_running_stat_with_grad import RunningStatWithGrad
from .tll007_graph_carried_across_iterations import GraphCarriedAcrossIterations
from .tll008_retain_graph_in_loop import RetainGraphInLoop
from .tll009_eval_forward_with_grad import EvalForwardWithGrad

ALL_RULES: List[Type[Rule]] = [
    GraphTensorStored,
    GraphTensorAccumulated,
    RedundantStateCopy,
    UnboundedHistory,
    UnclosedFigure,
    RunningStatWithGrad,
    GraphCarriedAcrossIterations,
    RetainGraphInLoop,
    EvalForwardWithGrad,
]

PARSE_ERROR = "TLL000"

RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
