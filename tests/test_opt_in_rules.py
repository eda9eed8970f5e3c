"""Opt-in rules: off under ``ALL`` and code prefixes, on when named by their full code,
silenced by any ignore that covers them, and listed as opt-in by ``torchleaklint rules``."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from torchleaklint import lint_source
from torchleaklint.cli import main
from torchleaklint.config import Settings, expand_selector
from torchleaklint.rules import ALL_RULES, OPT_IN, REGISTRY

HOOK_PER_STEP = textwrap.dedent("""
    import torch
    for x, y in loader:
        model.encoder.register_forward_hook(save_activation)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
""")


def test_opt_in_codes_are_registered_rules():
    assert OPT_IN and OPT_IN <= set(REGISTRY)


@pytest.mark.parametrize("selector", ["ALL", "TLL", "TLL0", "TLL01"])
def test_all_and_prefixes_leave_opt_in_rules_out(selector):
    codes = expand_selector(selector)
    assert not codes & OPT_IN
    assert codes  # the default rules under the prefix are still there


@pytest.mark.parametrize("code", sorted(OPT_IN))
def test_a_full_code_selects_an_opt_in_rule(code):
    assert expand_selector(code) == {code}
    assert code in Settings(extend_select=(code,)).enabled_codes()
    assert code not in Settings().enabled_codes()


@pytest.mark.parametrize("code", sorted(OPT_IN))
def test_an_ignore_prefix_silences_a_selected_opt_in_rule(code):
    assert code not in Settings(extend_select=(code,), ignore=(code[:5],)).enabled_codes()


def test_default_run_is_quiet_and_selected_run_reports():
    assert "TLL013" in OPT_IN
    assert [d for d in lint_source(HOOK_PER_STEP, settings=Settings()) if d.code == "TLL013"] == []
    found = lint_source(HOOK_PER_STEP, settings=Settings(extend_select=("TLL013",)))
    assert [d.code for d in found if d.code == "TLL013"] == ["TLL013"]


def test_rules_command_marks_opt_in_rules():
    result = CliRunner().invoke(main, ["rules", "--output-format", "json"])
    assert result.exit_code == 0
    listed = {row["code"]: row["default"] for row in json.loads(result.output)}
    assert listed == {rule.code: rule.code not in OPT_IN for rule in ALL_RULES}
