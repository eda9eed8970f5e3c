"""Property tests: for generated and mutated programs, linting never raises, a fix never
produces code that does not parse, and fixing is idempotent.

Programs come from ``hypothesmith`` (generated from Python's grammar and from libcst's
node types) and from the positive fixtures with lines deleted, duplicated, re-indented or
interleaved with noise. CI runs a bounded number of examples (well under a minute);
``TORCHLEAKLINT_FUZZ=long python -m pytest tests/test_fuzz.py -s`` runs many more and
prints examples per second.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from torchleaklint.config import Settings
from torchleaklint.engine.fix import fix_source, parses
from torchleaklint.engine.lint import LintSession
from torchleaklint.engine.source import SourceText

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated code warns a lot
LONG = os.environ.get("TORCHLEAKLINT_FUZZ") == "long"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE_TEXTS = sorted(
    p.read_text(encoding="utf-8") for p in FIXTURES.glob("TLL*/positive/*.py") if not p.name.endswith(".fixed.py"))
NOISE = [
    "", "pass", "# noqa", "# noqa: TLL001", "x = (", ")", '"""', "'''", "\\", "\t", "\x0c", "break", "continue",
    "return loss", "yield loss", "loss = loss + 1", "losses.append(loss)", "total += loss", "del losses",
    "losses = []", "losses.clear()", "with torch.no_grad():", "    pass", "else:", "try:", "except Exception:",
    "loss.backward()", "loss.backward(retain_graph=True)", "optimizer.step()", "plt.figure()", "model.eval()",
    "@torch.no_grad()", "def f(self):", "class A(nn.Module):", "global losses", "lambda: loss", "async def g():",
    "await loss", "match loss:", "    case _:", "loss: torch.Tensor = model(x)", "(loss := model(x))",
    "import torch", "from torch import *", "print(f'{loss=}')", "x = 'é' * 3  # größe", "if True: losses.append(loss)",
]
EXAMPLES = Counter()
SECONDS = Counter()


def budget(ci: int, long: int):
    return settings(max_examples=long if LONG else ci, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module", autouse=True)
def rate_report():
    yield
    for name in sorted(EXAMPLES):
        rate = EXAMPLES[name] / SECONDS[name] if SECONDS[name] else 0.0
        print(f"\n{name}: {EXAMPLES[name]} examples in {SECONDS[name]:.1f} s ({rate:.1f}/s)", end="")


def check_program(text: str, name: str) -> None:
    """Linting does not raise; fixes keep the program parsing; a second fix changes nothing."""
    started = time.perf_counter()
    try:
        session = LintSession(Settings())
        session.register("fuzz.py", text)
        result = session.lint_text(SourceText(text), "fuzz.py")
        assert result.internal_errors == [], result.internal_errors
        valid = parses(text) is None
        outcome = fix_source(session, "fuzz.py", SourceText(text), unsafe=True)
        if not valid:
            assert outcome.text == text, "a file that does not parse was changed"
            if any(d.code == "TLL000" for d in result.diagnostics):
                return
            # CPython accepts it and libcst does not (or the reverse): fixes must still be refused.
            return
        assert outcome.error is None, outcome.error
        assert parses(outcome.text) is None
        if compiles(text):  # CPython's compile-time checks too (`break` outside a loop, …)
            assert compiles(outcome.text), "the fixed program no longer compiles"
        again_session = LintSession(Settings())
        again_session.register("fuzz.py", outcome.text)
        again = fix_source(again_session, "fuzz.py", SourceText(outcome.text), unsafe=True)
        assert again.applied == 0 and again.text == outcome.text, "fixing is not idempotent"
    finally:
        EXAMPLES[name] += 1
        SECONDS[name] += time.perf_counter() - started


def compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "fuzz.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


@st.composite
def mutated_fixture(draw):
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 5))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        op = draw(st.sampled_from(["delete", "duplicate", "noise", "noise", "indent", "dedent", "crlf", "swap"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "noise":
            junk = draw(st.one_of(st.sampled_from(NOISE), st.text(max_size=12)))
            lines.insert(i, indent + junk.replace("\r", "").replace("\n", "") + "\n")
        elif op == "indent":
            lines[i] = "    " + line
        elif op == "dedent":
            lines[i] = line[4:] if line.startswith("    ") else line.lstrip("\t")
        elif op == "crlf":
            lines[i] = line.rstrip("\r\n") + "\r\n"
        elif op == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "".join(lines)


@st.composite
def fixture_with_generated_code(draw, generated):
    """A positive fixture with a generated module spliced in at a top-level line break."""
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).splitlines(keepends=True)
    tops = [i for i, l in enumerate(lines) if l.strip() and not l[0].isspace() and not l.startswith(("#", ")", "]"))]
    at = draw(st.sampled_from(tops)) if tops else 0
    code = draw(generated)
    if code and not code.endswith("\n"):
        code += "\n"
    return "".join(lines[:at]) + code + "".join(lines[at:])


@budget(ci=50, long=3000)
@given(hypothesmith.from_grammar())
def test_grammar_generated_programs(text):
    check_program(text, "grammar")


@budget(ci=15, long=1000)
@given(hypothesmith.from_node())
def test_libcst_generated_programs(text):
    check_program(text, "libcst nodes")


@budget(ci=200, long=20000)
@given(mutated_fixture())
def test_mutated_fixtures(text):
    check_program(text, "mutated fixtures")


@budget(ci=40, long=3000)
@given(fixture_with_generated_code(hypothesmith.from_grammar()))
def test_fixtures_with_generated_code(text):
    check_program(text, "fixture + generated")


def test_every_fixture_survives_each_single_line_deletion():
    """Exhaustive over the shortest fixture of each rule (every fixture in a long run):
    each line deleted in turn."""
    shortest = {}
    for path in sorted(FIXTURES.glob("TLL*/positive/*.py")):
        rule = path.parent.parent.name
        if path.name.endswith(".fixed.py"):
            continue
        size = len(path.read_text(encoding="utf-8").splitlines())
        key = path if LONG else rule
        if key not in shortest or size < shortest[key][0]:
            shortest[key] = (size, path)
    seen = set()
    for _, path in shortest.values():
        seen.add(path.parent.parent.name)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for i in range(len(lines)):
            check_program("".join(lines[:i] + lines[i + 1:]), "single-line deletions")
    from torchleaklint.rules import REGISTRY

    assert seen == set(REGISTRY)  # every rule's fixtures were mutated


# --- safe fixes on values with several origins, run for real ---------------------------
# A value that is a tensor on one branch and a number on another (`loss if c else 0`,
# `loss or 0`, a name that a branch rebinds to a float, a helper that returns 0.0 on some
# calls): a fix labelled safe must keep the program running and computing the same
# numbers. Each generated program is run with real PyTorch before and after plain --fix.

BRANCH_PROGRAM = """\
import torch
import torch.nn.functional as F


def helper(v, step):
    if step % 3 == 0:
        return 0.0
    return v * 2


torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
total = 0
history = []
for step in range(6):
    x = torch.randn(8, 4)
    y = torch.randn(8, 1)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
{rebind}    {store}
result = (float(total), [float(h) for h in history])
"""
LEAVES = ["loss", "loss", "0", "0.0", "loss * 2", "loss.mean()", "helper(loss, step)", "F.mse_loss(model(x), y)"]
CONDITIONS = ["step % 2 == 0", "step > 2", "len(history) % 2", "total"]


@st.composite
def branchy_value(draw, depth=0):
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(LEAVES))
    a, b = draw(branchy_value(depth + 1)), draw(branchy_value(depth + 1))
    shape = draw(st.sampled_from(["ifexp", "ifexp", "or", "and", "paren"]))
    if shape == "ifexp":
        return f"({a} if {draw(st.sampled_from(CONDITIONS))} else {b})"
    if shape == "paren":
        return f"({a})"
    return f"({a} {shape} {b})"


@st.composite
def branchy_program(draw):
    value = draw(branchy_value())
    store = draw(st.sampled_from(["total += {}", "total = total + {}", "history.append({})"])).format(value)
    rebind = draw(st.sampled_from(["", "", "    if step % 4 == 3:\n        loss = 0.0\n"]))
    return BRANCH_PROGRAM.format(store=store, rebind=rebind)


def run_program(text: str):
    namespace = {"__name__": "fuzzed"}
    exec(compile(text, "fuzz.py", "exec"), namespace)
    total, history = namespace["result"]
    return (total, *history)  # flat: pytest.approx does not compare nested sequences


def safe_fix(text: str) -> str:
    session = LintSession(Settings())
    session.register("fuzz.py", text)
    outcome = fix_source(session, "fuzz.py", SourceText(text), unsafe=False)
    assert outcome.error is None, outcome.error
    return outcome.text


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True")
@budget(ci=60, long=3000)
@given(branchy_program())
def test_safe_fixes_of_values_with_several_origins_keep_the_program_working(text):
    started = time.perf_counter()
    try:
        try:
            before = run_program(text)
        except (AttributeError, TypeError):  # e.g. `loss.mean()` after a branch set loss = 0.0
            assume(False)
        fixed = safe_fix(text)
        try:
            after = run_program(fixed)
        except Exception as exc:  # the fix broke a working program
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- before\n{text}\n--- after safe fixes\n{fixed}")
        assert after == pytest.approx(before, rel=1e-5, abs=1e-6), fixed
        if fixed != text:
            EXAMPLES["values with several origins, safely fixed"] += 1
    finally:
        EXAMPLES["values with several origins, run"] += 1
        SECONDS["values with several origins, run"] += time.perf_counter() - started


def test_the_branch_generator_reaches_safe_fixes_and_refusals():
    """The property above is not vacuous: among fixed examples of this class, some get a
    safe fix (applied by plain --fix) and some only an unsafe one."""
    examples = {
        "total += loss if step % 2 == 0 else 0": "total += loss.item() if step % 2 == 0 else 0",
        "total = total + (loss.mean() if step > 2 else 0.0)": "total = total + (loss.mean().item() if step > 2 else 0.0)",
        "history.append(loss if step > 2 else 0.0)": None,  # `float(h)` alone does not prove numeric use
        "total += (loss or 0)": None,
        "total += helper(loss, step)": None,
    }
    for store, expected in examples.items():
        text = BRANCH_PROGRAM.format(store=store, rebind="")
        fixed = safe_fix(text)
        if expected is None:
            assert fixed == text, fixed
            session = LintSession(Settings())
            session.register("fuzz.py", text)
            unsafe = fix_source(session, "fuzz.py", SourceText(text), unsafe=True)
            assert unsafe.text != text  # offered, but only as unsafe
        else:
            assert fixed == text.replace(store, expected)
        assert run_program(fixed) == pytest.approx(run_program(text), rel=1e-5, abs=1e-6)
