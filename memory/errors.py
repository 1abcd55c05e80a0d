"""The memory package's exceptions: one base, specific children carrying ids."""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Base of every error raised by the memory stack."""


class ScopeError(MemoryStoreError):
    """A query without a scope, or one that would cross scopes."""


class InvalidInput(MemoryStoreError):
    """Input refused before anything was written (empty, too long, malformed)."""


class ImportFileError(InvalidInput):
    """An import file with problems; ``problems`` lists (line number, reason), line 0 for the whole file.

    A DiscordChatExporter file is one JSON document: its problems carry the
    message's number instead, and their reason says so ("message 3: ...").
    """

    def __init__(self, path: str, problems: list[tuple[int, str]]) -> None:
        self.path = path
        self.problems = problems
        shown = "; ".join(
            why if n == 0 or why.startswith("message ") else f"line {n}: {why}" for n, why in problems[:10]
        )
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        if all(n == 0 for n, _ in problems):  # the file as a whole (missing, empty, not UTF-8, too big)
            super().__init__(f"{path}: nothing imported: {shown}")
        else:
            super().__init__(f"{path}: {len(problems)} malformed record(s), nothing imported: {shown}{more}")
