"""The index's own traversal visits what ``ast.walk`` visits, in the same order (less the
childless expression contexts), so its facts are those of a walk with ``ast.walk``."""

import ast
from pathlib import Path

import pytest

from torchleaklint.analysis.module_index import walk_nodes

ROOT = Path(__file__).resolve().parent.parent

EVERY_SHAPE = '''
import a.b as c
from .x import (y as z)
@deco(1)
async def f(p, /, q=1, *r, s: int = 2, **t) -> "T":
    global g
    async with m() as (u, *v):
        async for w in aiter(): yield w
    x = [i async for i in y if (j := i)]
    print(f"{x!r:>{width}}", *x, **{"k": lambda: (yield)})
    match x:
        case {"k": [1, *rest]} | Point(x=0) as p if p: pass
        case _: del x[0:1, ...]
    try: raise E from None
    except (A, B) as e: ...
    finally: assert x, "m"
class C(Base, metaclass=M):
    a: int = 1
    b += 1 if c else -d
'''


def sources():
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "torchleaklint").rglob("*.py"))
    return [("every_shape", EVERY_SHAPE)] + [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
                                             for p in files]


@pytest.mark.parametrize("name,text", sources()[:1] + [("all files", None)])
def test_walk_nodes_is_ast_walk_without_contexts(name, text):
    texts = [t for _, t in sources()] if text is None else [text]
    for source in texts:
        tree = ast.parse(source)
        for root in [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr))]:
            expected = [n for n in ast.walk(root) if not isinstance(n, ast.expr_context)]
            got = walk_nodes(root)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
