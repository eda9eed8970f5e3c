"""Shared fixtures."""

import pytest
from click.testing import CliRunner

from torchleaklint.cli import main


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Invoke the CLI with the temporary folder as the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    # A neutral pyproject.toml so that no stray configuration above tmp_path leaks in.
    (tmp_path / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(main, [str(a) for a in args])
        assert "Traceback" not in result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke
