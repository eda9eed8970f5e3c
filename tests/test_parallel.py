"""``--jobs N`` reports exactly what ``--jobs 1`` reports, in the same order; each file is
parsed once per run; small runs start no worker processes."""

import os
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine import parallel, parsed
from torchleaklint.engine.parallel import RunStats, check_files

ROOT = Path(__file__).resolve().parent.parent


def ordered_findings(files, jobs, stats=None):
    out = []
    for checked in check_files(files, Settings(), jobs=jobs, stats=stats):
        out.append((checked.path, [(d.code, d.start, d.end, d.message, d.fix, d.evidence)
                                   for d in checked.diagnostics], checked.internal_errors))
    return out


@pytest.fixture
def always_parallel(monkeypatch):
    """Workers for any amount of work, so that small trees exercise them."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)


def test_fixtures_as_one_project_same_findings_with_one_and_two_workers(always_parallel):
    files = sorted(str(p) for p in (ROOT / "fixtures").rglob("*.py"))
    one = ordered_findings(files, 1)
    stats = RunStats()
    assert one == ordered_findings(files, 2, stats)
    assert stats.processes == 2  # the workers were really used
    assert [path for path, *_ in one] == files
    assert sum(len(found) for _, found, _ in one) > 100


def test_unreadable_and_broken_files_are_reported_from_workers(tmp_path, always_parallel):
    for i in range(10):
        (tmp_path / f"m{i}.py").write_text("import torch\n\ndef f(model, xs):\n    out = []\n"
                                          "    for x in xs:\n        loss = model(x).sum()\n"
                                          "        loss.backward()\n        out.append(loss)\n    return out\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "bad.py").write_bytes(b"x = '\xff'\n")
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    one = ordered_findings(files, 1)
    assert one == ordered_findings(files, 2)
    codes = {Path(path).name: [c for c, *_ in found] for path, found, _ in one}
    assert codes["broken.py"] == ["TLL000"] and codes["bad.py"] == ["TLL000"]
    assert codes["m0.py"] == ["TLL001"]


@pytest.mark.skipif(not os.environ.get("TORCHLEAKLINT_CORPUS"),
                    reason="set TORCHLEAKLINT_CORPUS to a corpus built by bench/corpus.py")
def test_corpus_slice_same_findings_with_one_and_two_workers():
    src = Path(os.environ["TORCHLEAKLINT_CORPUS"]) / "src"
    files = []
    for package in ("pytorch_lightning", "timm", "stable_baselines3"):
        files += sorted(str(p) for p in (src / package).rglob("*.py"))[:150]
    assert ordered_findings(files, 1) == ordered_findings(files, 2)


# A small package whose modules call each other's functions and classes: every lint looks
# other modules up, which parsed them again before they were kept for the whole run.
PACKAGE = {
    "__init__.py": "",
    "nets.py": "import torch.nn as nn\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n",
    "losses.py": "import torch.nn.functional as F\n\ndef compute(model, x, y):\n"
                 "    return F.mse_loss(model(x), y)\n",
    "train.py": "import torch\nfrom .losses import compute\nfrom .nets import Net\n\nhistory = []\n\n"
                "def train(xs, ys, opt):\n    model = Net()\n    for x, y in zip(xs, ys):\n"
                "        loss = compute(model, x, y)\n        loss.backward()\n        opt.step()\n"
                "        history.append(loss)\n",
}


def write_package(root: Path, copies: int) -> list:
    for i in range(copies):
        for name, text in PACKAGE.items():
            path = root / f"pkg{i}" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return sorted(str(p) for p in root.rglob("*.py"))


def test_each_file_is_parsed_once_per_run(tmp_path):
    files = write_package(tmp_path, 3)
    stats = RunStats()
    found = ordered_findings(files, 1, stats)
    # The package is really linted (the workers test below compares the findings).
    assert [c for _, diags, _ in found for c, *_ in diags].count("TLL001") == 3
    assert (stats.files, stats.parses, stats.processes) == (12, 12, 1)


def test_workers_parse_each_file_once_and_report_the_same(tmp_path, always_parallel):
    files = write_package(tmp_path, 6)
    one = ordered_findings(files, 1)
    stats = RunStats()
    assert ordered_findings(files, 2, stats) == one
    assert stats.processes == 2
    # Each worker parses the files it was given and keeps them for pass 2; a module is
    # parsed a second time only when the other worker looks it up.
    assert len(files) <= stats.parses < 1.5 * len(files)


def test_past_the_bound_modules_are_parsed_again_with_the_same_findings(tmp_path, monkeypatch):
    files = write_package(tmp_path, 3)
    one = ordered_findings(files, 1)
    monkeypatch.setattr(parsed, "KEPT_SOURCE_CHARACTERS", 1)  # one module kept at a time
    stats = RunStats()
    assert ordered_findings(files, 1, stats) == one
    assert stats.parses > len(files)


def test_small_runs_start_no_workers(tmp_path):
    files = write_package(tmp_path, 3)
    stats = RunStats()
    ordered_findings(files, 2, stats)
    assert stats.processes == 1
