"""The ``.gitignore`` reader used outside git keeps the files git keeps: a tree with nested
``.gitignore`` files, negations, folder-only patterns and anchored globs is walked by
discovery outside any work tree, and the same tree made a git repository is asked with
``git ls-files -co --exclude-standard``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from torchleaklint.engine.discover import discover
from torchleaklint.engine.gitignore import GitignoreRules

from .snippets import TLL001_SRC

IGNORES = {
    ".gitignore": "\n".join([
        "# build output and generated code",
        "build/",
        "*.gen.py",
        "!keep.gen.py",
        "/root_only.py",
        "legacy.py/",  # folders only: files called legacy.py stay
        "docs/**/tmp_*.py",
        "cache",
        "!cache/",  # ... but a folder of that name is taken back
        "vendored/*",
        "!vendored/ours.py",
        "scratch_?.py",
        "[ab]_old.py",
        "",
    ]),
    "pkg/.gitignore": "local.py\n*.py\n!api.py\n!__init__.py\nsub/\n",
    # Deeper patterns come after their parents': this folder takes its files back.
    "pkg/deep/.gitignore": "!*.py\nsecret.py\n",
    # A sibling's patterns apply to that sibling only.
    "one/.gitignore": "x.py\n/anchored.py\n",
    "one/inner/.gitignore": "!x.py\n",
}
FILES = [
    "a.py", "build/out.py", "src/build/out.py", "x.gen.py", "keep.gen.py", "sub/keep.gen.py", "sub/y.gen.py",
    "root_only.py", "sub/root_only.py", "legacy.py", "sub/legacy.py", "old/legacy.py/inside.py",
    "docs/tmp_a.py", "docs/x/tmp_b.py", "docs/x/y/tmp_c.py", "docs/x/keep.py", "src/docs/x/tmp_d.py",
    "cache/c.py", "vendored/theirs.py", "vendored/ours.py", "vendored/deeper/z.py",
    "scratch_1.py", "scratch_10.py", "a_old.py", "c_old.py",
    "pkg/__init__.py", "pkg/api.py", "pkg/local.py", "pkg/impl.py", "pkg/sub/s.py", "pkg/other/o.py",
    "pkg/deep/d.py", "pkg/deep/secret.py", "pkg/deep/more/m.py", "pkg/deep/sub/t.py",
    "one/x.py", "one/anchored.py", "one/inner/x.py", "one/inner/anchored.py", "two/x.py", "two/anchored.py",
]


def build(root: Path) -> None:
    for name, text in IGNORES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(TLL001_SRC)


def git_keeps(root: Path) -> list:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"],
                         check=True, capture_output=True, text=True).stdout
    return sorted(line for line in out.splitlines() if line.endswith(".py"))


def walked(root: Path) -> list:
    return sorted(os.path.relpath(p, root).replace(os.sep, "/") for p in discover([str(root)]))


@pytest.fixture
def trees(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git not available")
    plain, checkout = tmp_path / "plain", tmp_path / "checkout"
    build(plain)
    build(checkout)
    return plain, checkout


def test_nested_gitignores_outside_git_keep_what_git_keeps(trees):
    plain, checkout = trees
    expected = git_keeps(checkout)
    # The tree is meant to exercise each kind of pattern: some of each are kept and dropped.
    assert {"keep.gen.py", "sub/root_only.py", "legacy.py", "pkg/api.py", "pkg/deep/d.py",
            "pkg/deep/more/m.py", "one/inner/x.py", "two/x.py", "vendored/ours.py", "scratch_10.py"} <= set(expected)
    assert not {"x.gen.py", "root_only.py", "old/legacy.py/inside.py", "docs/x/y/tmp_c.py", "pkg/impl.py",
                "pkg/sub/s.py", "pkg/deep/secret.py", "one/x.py", "vendored/deeper/z.py"} & set(expected)
    assert walked(plain) == expected
    # Inside the work tree, git's own answer is used; the two walks agree.
    assert walked(checkout) == expected


def test_a_git_folder_that_git_cannot_read_falls_back_to_the_gitignore_files(trees):
    """The folder is walked while git lists it; when git then fails (here an invalid
    ``.git`` file), the files are walked again with the ``.gitignore`` files' rules."""
    plain, checkout = trees
    expected = git_keeps(checkout)
    (plain / ".git").write_text("not a git directory\n")
    assert walked(plain) == expected


def test_a_folders_patterns_stop_at_its_end(tmp_path):
    """Patterns of a folder entered earlier in the walk do not reach its siblings."""
    rules = GitignoreRules()
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / ".gitignore").write_text("x.py\n")
    assert rules.enter(str(tmp_path), "") is False  # no .gitignore here: nothing to leave
    assert rules.enter(str(tmp_path / "one"), "one") is True
    assert rules.ignored("one/x.py", is_dir=False)
    rules.leave()
    assert not rules.ignored("two/x.py", is_dir=False)
