"""Where a rule's documentation lives."""

DOCS_BASE = "https://github.com/torchleaklint/torchleaklint/blob/main/docs/rules"


def rule_url(code: str) -> str:
    return f"{DOCS_BASE}/{code}.md"
