"""pytest plugin: ``@pytest.mark.no_graph_leak(steps=50)`` fails a test whose body leaks per call.

The marked test's body is one training step: the plugin calls it ``steps`` times with the
same fixture values under ``torchleaklint.watch`` and fails with the growth report when
autograd graphs, tensors or figures grow per step after the warm-up. Unlike a check that
memory is freed at the end of a test, a loop that is fixed passes: growth is what fails.
"""

from __future__ import annotations

import pytest

DEFAULT_KINDS = ("graph", "tensors", "figures")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "no_graph_leak(steps=50, warmup=5, kinds=('graph', 'tensors', 'figures')): call the test body "
        "`steps` times under torchleaklint.watch and fail when the given kinds of objects grow per step")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    marker = pyfuncitem.get_closest_marker("no_graph_leak")
    if marker is None:
        return None
    from .watch import Watch

    steps = int(marker.kwargs.get("steps", 50))
    warmup = int(marker.kwargs.get("warmup", 5))
    kinds = tuple(marker.kwargs.get("kinds", DEFAULT_KINDS))
    if steps < warmup + 3:
        raise pytest.UsageError(f"no_graph_leak: steps={steps} must exceed warmup={warmup} by at least 3")
    names = pyfuncitem._fixtureinfo.argnames
    arguments = {name: pyfuncitem.funcargs[name] for name in names}
    with Watch(label=pyfuncitem.name, every=1, warmup=warmup, trace_sites=True) as watch:
        for _ in range(steps):
            pyfuncitem.obj(**arguments)
            watch.step()
    report = watch.report()
    leaks = [f for f in report.findings if f.kind in kinds]
    if leaks:
        lines = [f"{pyfuncitem.name}: memory grows per call over {steps} calls (after {warmup} warm-up calls):"]
        lines += [f"  {f.message()}" for f in leaks]
        pytest.fail("\n".join(lines), pytrace=False)
    return True
