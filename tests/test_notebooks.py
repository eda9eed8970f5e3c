"""Jupyter notebooks written by nbformat: code cells linted as one module, IPython syntax
skipped, findings located by cell, and --fix writing back a valid notebook with outputs,
metadata and untouched cells exactly as they were."""

from __future__ import annotations

import pytest

import json

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

import torchleaklint

TRAIN_CELL = """\
losses = []
for x, y in loader:
    %time out = model(x)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    losses.append(loss)
print(sum(losses))"""

CELL_LINE = r"^train\.ipynb:cell (\d+):(\d+):(\d+): (TLL\d{3}) "


def make_notebook(path, train=TRAIN_CELL, language="python"):
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": language, "display_name": "Python 3"}
    nb.metadata["custom"] = {"keep": [1, 2, 3]}
    nb.cells = [
        new_markdown_cell("# Training\n%not a magic in markdown"),
        new_code_cell("%matplotlib inline\nimport torch\nimport torch.nn.functional as F\n!pip list | head\n"
                      "files = !ls\nmodel?"),
        new_code_cell("%%bash\necho 'losses.append(loss)'"),
        new_code_cell(train, execution_count=3,
                      outputs=[new_output("stream", name="stdout", text="1.0\n"),
                               new_output("execute_result", data={"text/plain": "2"}, execution_count=3)],
                      metadata={"tags": ["train"]}),
    ]
    nbformat.write(nb, str(path))
    return nb


def cell_findings(out):
    import re

    return [tuple(int(g) if g.isdigit() else g for g in m.groups())
            for m in (re.match(CELL_LINE, line) for line in out.splitlines()) if m]


def test_findings_are_located_by_cell(cli, tmp_path):
    make_notebook(tmp_path / "train.ipynb")
    result = cli("train.ipynb")
    assert result.exit_code == 1
    assert cell_findings(result.stdout) == [(4, 6, 5, "TLL001")]
    data = json.loads(cli("--output-format", "json", "train.ipynb").stdout)
    assert [(d["cell"], d["location"]["row"], d["location"]["column"], d["noqa_row"]) for d in data] == [(4, 6, 5, 6)]
    (edit,) = data[0]["fix"]["edits"]
    assert (edit["location"]["row"], edit["content"]) == (6, ".item()")


def test_evidence_cites_cells(cli, tmp_path):
    make_notebook(tmp_path / "train.ipynb")
    out = cli("--show-evidence", "train.ipynb").stdout
    assert "(cell 4, line 1)" in out  # `losses` is created on line 1 of cell 4


def test_directories_include_notebooks_but_not_checkpoints(cli, tmp_path):
    (tmp_path / "nb").mkdir()
    make_notebook(tmp_path / "nb" / "train.ipynb")
    (tmp_path / "nb" / ".ipynb_checkpoints").mkdir()
    make_notebook(tmp_path / "nb" / ".ipynb_checkpoints" / "train-checkpoint.ipynb")
    out = cli(".").stdout
    assert "nb/train.ipynb:cell 4:6:5: TLL001" in out
    assert "checkpoint" not in out


def test_fix_writes_a_valid_notebook_and_keeps_everything_else(cli, tmp_path):
    path = tmp_path / "train.ipynb"
    make_notebook(path)
    before = nbformat.read(str(path), as_version=4)
    raw_before = path.read_text()
    result = cli("--fix", "train.ipynb")
    assert result.exit_code == 0, result.output
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert after.cells[3].source == TRAIN_CELL.replace("losses.append(loss)", "losses.append(loss.item())")
    assert "%time out = model(x)" in after.cells[3].source
    for i in (0, 1, 2):
        assert after.cells[i] == before.cells[i]
    assert after.cells[3].outputs == before.cells[3].outputs
    assert after.cells[3].metadata == before.cells[3].metadata
    assert after.metadata == before.metadata
    # The file differs from the original in that one source line only (same JSON layout).
    changed = [(a, b) for a, b in zip(raw_before.splitlines(), path.read_text().splitlines()) if a != b]
    assert changed == [('    "    losses.append(loss)\\n",', '    "    losses.append(loss.item())\\n",')]
    assert len(raw_before.splitlines()) == len(path.read_text().splitlines())
    # Idempotent.
    text = path.read_text()
    assert cli("--fix", "train.ipynb").exit_code == 0
    assert path.read_text() == text


def test_fix_inserting_lines_stays_in_its_cell(cli, tmp_path):
    path = tmp_path / "train.ipynb"
    nb = new_notebook()
    nb.cells = [new_code_cell("import matplotlib.pyplot as plt\nimport torch"),
                new_code_cell("def plot(values):\n    fig = plt.figure()\n    plt.plot(values)\n"
                              "    fig.savefig('v.png')"),
                new_code_cell("for epoch in range(3):\n    plot([epoch, 2, 3])")]
    nbformat.write(nb, str(path))
    assert "train.ipynb:cell 2:2:11: TLL005" in cli("train.ipynb").stdout
    assert cli("--fix", "--unsafe-fixes", "train.ipynb").exit_code in (0, 1)
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert "close" in after.cells[1].source
    assert after.cells[0].source == nb.cells[0].source and after.cells[2].source == nb.cells[2].source


def test_diff_shows_the_cell_and_writes_nothing(cli, tmp_path):
    path = tmp_path / "train.ipynb"
    make_notebook(path)
    raw = path.read_bytes()
    result = cli("--diff", "train.ipynb")
    assert result.exit_code == 1
    assert "--- a/train.ipynb:cell 4" in result.stdout
    assert "+    losses.append(loss.item())" in result.stdout
    assert "torchleaklint: notebook cell" not in result.stdout
    assert path.read_bytes() == raw


def test_invalid_notebook_is_tll000_and_untouched(cli, tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_text('{"cells": [\n  {"cell_type": "code",\n')
    result = cli("--fix", "train.ipynb")
    assert result.exit_code == 1
    assert "train.ipynb:3:1: TLL000" in result.stdout and "invalid JSON" in result.stdout
    assert path.read_text() == '{"cells": [\n  {"cell_type": "code",\n'
    path.write_text('{"worksheets": []}')
    assert "TLL000" in cli("train.ipynb").stdout


@pytest.mark.parametrize("cells, problem", [
    ('[{"cell_type": "code", "source": 3}]', "cell 1 has a `source` that is not a string or a list of strings (3)"),
    ('[{"cell_type": "code", "source": ["x = 1\\n", 7]}]',
     'cell 1 has a `source` that is not a string or a list of strings (["x = 1\\n", 7])'),
    ('[{"cell_type": "markdown", "source": "# hi"}, "x = 1"]', "cell 2 is not an object but str"),
    ('[[1, 2]]', "cell 1 is not an object but list"),
    ('[{"cell_type": 4, "source": ""}]', "cell 1 has a `cell_type` that is not a string"),
])
def test_cells_of_the_wrong_shape_are_tll000_not_all_clear(cli, tmp_path, cells, problem):
    path = tmp_path / "odd.ipynb"
    path.write_text('{"cells": %s, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}' % cells)
    raw = path.read_bytes()
    result = cli("--fix", "odd.ipynb")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"odd.ipynb:1:1: TLL000 not a valid notebook: {problem}"
    assert path.read_bytes() == raw


def test_syntax_error_in_a_cell_is_reported_in_that_cell(cli, tmp_path):
    make_notebook(tmp_path / "train.ipynb", train="x = 1\nfor i in range(3)\n    pass")
    out = cli("train.ipynb").stdout
    assert "train.ipynb:cell 4:2:" in out and "TLL000" in out


def test_other_kernel_languages_are_not_python(cli, tmp_path):
    make_notebook(tmp_path / "train.ipynb", language="R")
    result = cli("train.ipynb")
    assert result.exit_code == 0 and "All checks passed!" in result.stdout


def test_noqa_and_add_noqa_in_cells(cli, tmp_path):
    path = tmp_path / "train.ipynb"
    make_notebook(path, train=TRAIN_CELL.replace("losses.append(loss)", "losses.append(loss)  # noqa: TLL001"))
    assert cli("train.ipynb").exit_code == 0
    make_notebook(path)
    result = cli("--add-noqa", "train.ipynb")
    assert result.exit_code == 0 and "Added 1 noqa directive in 1 file." in result.stderr
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert "losses.append(loss)  # noqa: TLL001" in after.cells[3].source
    assert after.cells[1].source.startswith("%matplotlib inline")
    assert cli("train.ipynb").exit_code == 0


def test_python_api_takes_notebook_json(tmp_path):
    make_notebook(tmp_path / "train.ipynb")
    text = (tmp_path / "train.ipynb").read_text()
    (diag,) = torchleaklint.lint_source(text, filename="train.ipynb")
    assert (diag.code, diag.cell, diag.start.line) == ("TLL001", 4, 6)
    fixed = torchleaklint.fix_source(text, filename="train.ipynb")
    nb = nbformat.reads(fixed, as_version=4)
    nbformat.validate(nb)
    assert "losses.append(loss.item())" in nb.cells[3].source
    assert torchleaklint.lint_source(fixed, filename="train.ipynb") == []
