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
from hypothesis import HealthCheck, given, settings
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
    assert len(seen) == 9
