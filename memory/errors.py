"""The memory package's exceptions: one base, specific children carrying ids."""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Base of every error raised by the memory stack."""


class ScopeError(MemoryStoreError):
    """A query without a scope, or one that would cross scopes."""


class InvalidInput(MemoryStoreError):
    """Input refused before anything was written (empty, too long, malformed)."""


class ImportFileError(InvalidInput):
    """An import file with problems; ``problems`` lists (line number, reason)."""

    def __init__(self, path: str, problems: list[tuple[int, str]]) -> None:
        self.path = path
        self.problems = problems
        shown = "; ".join(f"line {n}: {why}" for n, why in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        super().__init__(f"{path}: {len(problems)} malformed record(s), nothing imported: {shown}{more}")
