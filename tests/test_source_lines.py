"""Line starts and lines of a source text end lines where the tokenizer does: at ``\\n``,
``\\r\\n`` and a lone ``\\r``, never at ``\\f`` or U+2028 (the oracle: universal-newline
reading that keeps the endings, ``io.StringIO(text, newline="")``)."""

import io
from itertools import accumulate

from hypothesis import given
from hypothesis import strategies as st

from torchleaklint.engine.source import SourceText

PIECES = st.sampled_from(["x = 1", "a", "\n", "\r", "\r\n", "\n\r", "\f", "\u2028", "\x85", "\t", " "])


@given(st.lists(PIECES, max_size=40).map("".join))
def test_line_starts_match_universal_newline_reading(text):
    lines = io.StringIO(text, newline="").readlines()
    expected = [0] + list(accumulate(len(line) for line in lines))
    if lines and not lines[-1].endswith(("\n", "\r")):
        expected.pop()  # the last line has no ending: no line starts after it
    source = SourceText(text)
    assert source.line_starts == expected
    assert source.lines == [line.rstrip("\r\n") for line in lines] + ([""] if expected[-1] == len(text) else [])
