"""The rule registry: adding a rule is one module and one line here."""

from __future__ import annotations

from typing import Dict, List, Type

from .base import Rule
from .tll001_graph_tensor_stored import GraphTensorStored
from .tll002_graph_tensor_accumulated import GraphTensorAccumulated

ALL_RULES: List[Type[Rule]] = [
    GraphTensorStored,
    GraphTensorAccumulated,
]

PARSE_ERROR = "TLL000"

RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
