"""The same findings and messages in every process: string hashing differs between Python
processes (PYTHONHASHSEED), so nothing the analysis answers may depend on the order of a
set of names. The project below has one recurrent controller called once per step from
two runners in different files; which runner the message names used to vary by process."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "hash_order_project"


def test_findings_do_not_depend_on_string_hashing(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(DATA, project)
    outputs = set()
    for seed in range(1, 7):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        proc = subprocess.run([sys.executable, "-m", "torchleaklint", "check", "--no-cache", "-q", "."],
                              cwd=project, env=env, capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        assert "TLL007" in proc.stdout
        outputs.add(proc.stdout)
    assert len(outputs) == 1
