"""``--jobs N`` reports exactly what ``--jobs 1`` reports, in the same order."""

import os
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine.parallel import SMALL_BATCH, check_files

ROOT = Path(__file__).resolve().parent.parent


def ordered_findings(files, jobs):
    out = []
    for checked in check_files(files, Settings(), jobs=jobs):
        out.append((checked.path, [(d.code, d.start, d.end, d.message, d.fix, d.evidence)
                                   for d in checked.diagnostics], checked.internal_errors))
    return out


def test_fixtures_as_one_project_same_findings_with_one_and_two_workers():
    files = sorted(str(p) for p in (ROOT / "fixtures").rglob("*.py"))
    assert len(files) > SMALL_BATCH  # the pool is really used
    one = ordered_findings(files, 1)
    assert one == ordered_findings(files, 2)
    assert [path for path, *_ in one] == files
    assert sum(len(found) for _, found, _ in one) > 100


def test_unreadable_and_broken_files_are_reported_from_workers(tmp_path):
    for i in range(SMALL_BATCH + 2):
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
