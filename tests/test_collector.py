"""A check run leaves no analysis to the cyclic garbage collector, and the collector's
thresholds are those of the run only while it runs."""

import gc
from pathlib import Path

from torchleaklint.analysis.graph import GraphOracle
from torchleaklint.analysis.module import ModuleAnalysis
from torchleaklint.config import Settings
from torchleaklint.engine import collector
from torchleaklint.engine.parallel import check_files

ROOT = Path(__file__).resolve().parent.parent


def test_analyses_are_freed_without_the_cyclic_collector():
    files = sorted(str(p) for p in (ROOT / "fixtures").rglob("*.py"))
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        found = sum(len(c.diagnostics) for c in check_files(files, Settings(), jobs=1))
        gc.collect()
        cyclic = [o for o in gc.garbage if isinstance(o, (ModuleAnalysis, GraphOracle))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert found > 100  # the rules ran, with callee and caller analyses
    assert cyclic == []


def test_released_analysis_keeps_only_its_index():
    import ast

    analysis = ModuleAnalysis(ast.parse("import torch\nx = torch.ones(1)\n"), "m.py", "m")
    index = analysis.index
    assert analysis.graph is not None
    analysis.release()
    assert analysis.index is index and analysis.path == "m.py"
    assert not hasattr(analysis, "graph")


def test_thresholds_are_restored_after_a_run(tmp_path):
    (tmp_path / "a.py").write_text("import torch\n")
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        run = check_files([str(tmp_path / "a.py")], Settings(), jobs=1)
        next(run)
        assert gc.get_threshold() == (700, 10, collector.FULL_COLLECTION_EVERY)
        list(run)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*saved)
