"""Which of the persona scorer's words and cues came from an evaluation split (issue 31, item 2).

For every list entry and every regex cue of the evidence scorer (the data files in memory/persona/lexicon/,
and any string list still written in memory/persona/evidence.py), this finds what it shares with the
evaluation splits (bench/data/persona/seen*.json, heldout14.json, and the dev / seen / seen2 splits inside bench/persona_eval.py) and NOT with the training data (bench/data/persona/train_*.json,
outcomes*.json, and persona_eval.py's fills and chat lines, which the training scripts use too):

- an entry of 4 or more words: its 4-word n-grams found in a split's text;
- an entry of 1-3 words: the entry itself, as a whole word sequence;
- a regex cue: its literal word sequences (the cue expanded over its alternatives, optional parts and small
  character classes; what a class like ``\\w+`` or ``\\d`` stands for breaks a sequence, and a word cut by one
  matches as a prefix or suffix: ``\\bidiot\\w*`` matches "idiots"), each matched as above.

A split's text is every template with its ``{placeholders}`` as breaks, its topic names and its outcome phrases.
What an entry also shares with the training data is left out: it may have come from there. The table lists
entry, list, what it shares, and the splits; a word shared only with evaluation splits is a candidate, not a
proof (a common word can be in a split by chance), and the history of evidence.py says more.

    .venv/bin/python -m bench.persona_overlap [--json F] [--lists] [--no-history]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast
from dataclasses import dataclass, field
from pathlib import Path

try:  # Python 3.11+
    import re._constants as _c  # type: ignore[import-not-found]
    import re._parser as _parser  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_constants as _c
    import sre_parse as _parser

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "persona"
EVIDENCE = ROOT / "memory" / "persona" / "evidence.py"
LEXICON = ROOT / "memory" / "persona" / "lexicon"
PERSONA_EVAL = ROOT / "bench" / "persona_eval.py"
NGRAM = 4
_MAX_VARIANTS = 4096  # per cue: more than this and the rest of it counts as a break

# The splits written inside bench/persona_eval.py: (split, the names of its module-level literals).
INLINE_SPLITS = {
    "dev": ("DEV_TOPICS", "DEV_EVIDENCE", "DEV_PRESSURE"),
    "seen": ("SEEN_TOPICS", "SEEN_EVIDENCE", "SEEN_PRESSURE"),
    "seen2": ("SEEN2_TOPICS", "SEEN2_EVIDENCE", "SEEN2_PRESSURE"),
}
# The fills every template takes ({adj}, {pop}, {uni}, {name}) and the chat lines between messages: the
# training scripts (bench/train_persona_probes.py, train_persona_stance.py) use them too, so they count as
# shared with the training data, not as an evaluation split.
FILLS = ("ADJ", "FILLER", "POPS", "UNIS", "NAMES")

BREAK = None  # in a regex's expansion: something that is not a literal word


@dataclass(frozen=True)
class Pattern:
    """One literal word sequence of an entry: its words; the first word may be a suffix, the last a prefix."""

    words: tuple[str, ...]
    suffix_first: bool = False
    prefix_last: bool = False


@dataclass
class Entry:
    text: str  # as written: a word, a phrase, a sentence or a regex
    list_name: str
    regex: bool = False
    patterns: list[Pattern] = field(default_factory=list)


@dataclass(frozen=True)
class Hit:
    entry: Entry
    shared: str  # the n-gram or phrase it shares
    splits: tuple[str, ...]
    pattern: Pattern  # the same, as words


# --- words ---------------------------------------------------------------------------------------------------


def words_of(text: str) -> list[list[str]]:
    """Lowercase word runs of ``text``: a placeholder ("{t}") or a sentence mark breaks a run, so no n-gram spans
    one. Apostrophes and hyphens inside a word stay ("didn't", "peer-reviewed")."""
    runs: list[list[str]] = []
    text = text.replace("\u2019", "'").lower()
    for part in re.split(r"\{[^{}]*\}|[.!?;:\n]+", text):
        words = re.findall(r"[a-z0-9]+(?:['-][a-z0-9]+)*", part)
        if words:
            runs.append(words)
    return runs


def _ngrams(words: Sequence[str], n: int) -> Iterator[tuple[str, ...]]:
    for i in range(len(words) - n + 1):
        yield tuple(words[i : i + n])


class Corpus:
    """The word runs of a set of named texts, indexed for n-gram and phrase look-ups."""

    def __init__(self, texts: Mapping[str, Iterable[str]]) -> None:
        self.runs: dict[str, list[list[str]]] = {
            name: [r for t in ts for r in words_of(t)] for name, ts in texts.items()
        }
        self._grams: dict[tuple[str, ...], set[str]] = {}
        self._at: dict[str, list[tuple[str, int, int]]] = {}  # word -> (text name, run, position)
        for name, runs in self.runs.items():
            for r, run in enumerate(runs):
                for g in _ngrams(run, NGRAM):
                    self._grams.setdefault(g, set()).add(name)
                for i, w in enumerate(run):
                    self._at.setdefault(w, []).append((name, r, i))

    def gram(self, gram: tuple[str, ...]) -> set[str]:
        return self._grams.get(gram, set())

    def phrase(self, p: Pattern) -> set[str]:
        """The texts holding ``p`` as a whole word sequence (its first word as a suffix / last as a prefix
        where the cue cuts them)."""
        n = len(p.words)
        whole = [k for k in range(n) if not ((k == 0 and p.suffix_first) or (k == n - 1 and p.prefix_last))]
        if whole:
            k = whole[0]
            starts = [(name, r, i - k) for name, r, i in self._at.get(p.words[k], [])]
        else:  # one cut word: every word it begins or ends
            starts = [at for w, ats in self._at.items() if _matches([w], p) for at in ats]
        found = set()
        for name, r, i in starts:
            run = self.runs[name][r]
            if name not in found and i >= 0 and i + n <= len(run) and _matches(run[i : i + n], p):
                found.add(name)
        return found


def _matches(window: Sequence[str], p: Pattern) -> bool:
    for k, (w, want) in enumerate(zip(window, p.words)):
        if w == want:
            continue
        first, last = k == 0, k == len(p.words) - 1
        if last and p.prefix_last and w.startswith(want):
            continue
        if first and p.suffix_first and w.endswith(want):
            continue
        return False
    return True


# --- regex cues ----------------------------------------------------------------------------------------------


def _expand(items: Sequence[tuple[object, object]], budget: list[int]) -> list[list[str | None]]:
    """Every literal string ``items`` (a parsed regex) can match, as pieces: characters, or BREAK for what is
    not literal. Alternatives multiply; past the budget a part counts as a break."""
    out: list[list[str | None]] = [[]]
    for op, av in items:
        options = _options(op, av, budget)
        if len(out) * len(options) > budget[0]:
            options = [[BREAK]]
        out = [a + b for a in out for b in options]
    return out


def _options(op: object, av: object, budget: list[int]) -> list[list[str | None]]:
    if op is _c.LITERAL:
        return [[chr(av)]]  # type: ignore[arg-type]
    if op is _c.AT or op in (_c.ASSERT, _c.ASSERT_NOT):
        return [[]]  # \b, ^, $ and look-arounds match no text
    if op is _c.SUBPATTERN:
        return _expand(av[-1], budget)  # type: ignore[index]
    if op is _c.BRANCH:
        return [x for alt in av[1] for x in _expand(alt, budget)]  # type: ignore[index]
    if op is _c.IN:
        chars: list[str] = []
        for iop, iav in av:  # type: ignore[attr-defined]
            if iop is _c.LITERAL:
                chars.append(chr(iav))
            elif iop is _c.CATEGORY and iav is _c.CATEGORY_SPACE:
                chars.append(" ")
            else:
                return [[BREAK]]
        return [[ch] for ch in dict.fromkeys(chars)] if len(chars) <= 4 else [[BREAK]]
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
        lo, hi, item = cast(tuple[int, int, Any], av)
        inner = _expand(item, budget)
        if (lo, hi) == (0, 1):
            return [[], *inner]
        if (lo, hi) == (1, 1):
            return inner
        if inner == [[" "]]:
            return [[" "]]  # "\s+", "\s*" between words: a space
        return [[BREAK]] if lo == 0 else [x + [BREAK] for x in inner]
    return [[BREAK]]  # \w, \d, ".", [^...], back-references


def regex_patterns(pattern: str) -> list[Pattern]:
    """The literal word sequences of a regex cue, each at most once."""
    try:
        parsed = _parser.parse(pattern, re.I)
    except re.error:
        return []
    out: dict[Pattern, None] = {}
    for pieces in _expand(list(parsed), [_MAX_VARIANTS]):
        segments: list[tuple[str, bool, bool]] = []  # text, after a break, before a break
        current, after_break = "", False
        for piece in [*pieces, BREAK]:
            if piece is BREAK:
                if current.strip():
                    segments.append((current, after_break, True))
                current, after_break = "", True
            else:
                current += piece
        for k, (seg, after, _before) in enumerate(segments):
            before = k < len(segments) - 1 or pieces[-1:] == [BREAK]  # a break follows this segment
            for run in words_of(seg):
                out[
                    Pattern(
                        tuple(run),
                        suffix_first=after and bool(re.match(r"\w", seg)),
                        prefix_last=before and bool(re.search(r"\w$", seg)),
                    )
                ] = None
    return list(out)


# --- the scorer's entries ------------------------------------------------------------------------------------


def text_patterns(text: str) -> list[Pattern]:
    return [Pattern(tuple(run)) for run in words_of(text)]


def entry(text: str, list_name: str, regex: bool) -> Entry:
    return Entry(text, list_name, regex, regex_patterns(text) if regex else text_patterns(text))


def lexicon_entries(folder: Path) -> list[Entry]:
    """The entries of memory/persona/lexicon/: ``*.txt`` one entry a line (``#`` comments), a regex list when
    its name starts with ``cues_`` or its header says ``regex``."""
    return lexicon_file_entries({p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))})


def lexicon_file_entries(files: Mapping[str, str]) -> list[Entry]:
    """The entries of lexicon files given as {name without ".txt": text}."""
    out: list[Entry] = []
    for stem, text in sorted(files.items()):
        lines = text.splitlines()
        header = " ".join(line for line in lines if line.startswith("#")).lower()
        regex = stem.startswith("cues_") or "format: regex" in header
        out += [entry(line.strip(), stem, regex) for line in lines if line.strip() and not line.startswith("#")]
    return out


_REGEX_CALLS = {"_rx", "compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "split"}


def source_entries(source: str) -> list[Entry]:
    """String lists written in Python source (evidence.py): set / tuple / list / dict literals of strings, a
    ``set("...".split())``, tuples of words, and regexes (an argument of ``_rx`` or ``re.*``, or a string with
    a backslash escape). Docstrings, log lines, f-strings and dict keys are not entries."""
    tree = ast.parse(source)
    out: list[Entry] = []

    def add(node: ast.AST, name: str, regex: bool = False) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            is_rx = regex or "\\b" in value or "(?:" in value
            out.append(entry(value, name, is_rx))
        elif (
            isinstance(node, ast.Tuple)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
            and len(node.elts) == 2
            and name.endswith("PAIRS")
        ):
            out.append(entry(" ".join(e.value for e in node.elts), name, False))  # type: ignore[attr-defined]
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List)):
            for e in node.elts:
                add(e, name, regex)
        elif isinstance(node, ast.Starred):
            return  # a list spliced in is counted where it is defined
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                key = k.value if isinstance(k, ast.Constant) else k.id if isinstance(k, ast.Name) else "?"
                if isinstance(v, (ast.Set, ast.Tuple, ast.List, ast.Call)):
                    add(v, f"{name}[{str(key).lower()}]", regex)
        elif isinstance(node, ast.BinOp):
            add(node.left, name, regex)
            add(node.right, name, regex)
        elif isinstance(node, ast.Call):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if (
                fname in ("set", "frozenset")
                and node.args
                and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Attribute)
                and node.args[0].func.attr == "split"
                and isinstance(node.args[0].func.value, ast.Constant)
            ):
                for word in str(node.args[0].func.value.value).split():
                    out.append(entry(word, name, False))
            elif fname in _REGEX_CALLS:
                if node.args:  # the pattern(s); the rest of a re.sub / re.search are not cues
                    for a in node.args if fname == "_rx" else node.args[:1]:
                        add(a, name, True)
            elif fname in ("set", "frozenset", "tuple", "list"):
                for a in node.args:
                    add(a, name, regex)

    for stmt in tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if targets and isinstance(targets[0], ast.Name):
            add(value, targets[0].id)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _function_entries(stmt, out, add)
    return out


def _function_entries(scope: ast.AST, out: list[Entry], add: Callable[..., None]) -> None:
    """Inside a function: literal sets / tuples of words used in a test (``x in {...}``) and regex patterns."""
    name = f"in {getattr(scope, 'name', '?')}()"
    for node in ast.walk(scope):
        if isinstance(node, ast.Compare):
            for comp in node.comparators:
                if isinstance(comp, (ast.Set, ast.Tuple, ast.List)) and len(comp.elts) > 1:
                    add(comp, name)
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "re"
                and func.attr in _REGEX_CALLS
                and node.args
            ):
                add(node.args[0], name, True)


# --- the splits ----------------------------------------------------------------------------------------------


def _strings(data: object, skip_keys: frozenset[str] = frozenset({"kind"})) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for k, v in data.items():
            if k in skip_keys:
                continue
            if isinstance(v, dict) and all(isinstance(x, (dict, list)) for x in v.values()) and k == "topics":
                yield from v  # topic names are the keys
            yield from _strings(v, skip_keys)
    elif isinstance(data, (list, tuple)):
        for x in data:
            yield from _strings(x, skip_keys)


def json_texts(path: Path) -> list[str]:
    return list(_strings(json.loads(path.read_text(encoding="utf-8"))))


def inline_split_texts(source: str, splits: Mapping[str, Sequence[str]] = INLINE_SPLITS) -> dict[str, list[str]]:
    """The splits written in persona_eval.py, by their module-level literals (read, never imported)."""
    values: dict[str, object] = {}
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            try:
                values[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except ValueError:
                continue
    return {
        split: [s for n in names if n in values for s in _strings(_keys_too(values[n]))]
        for split, names in splits.items()
    }


def _keys_too(value: object) -> object:
    """A topic table {name: (good, bad)} or an evidence table {+1: [...]}: the string keys are text too."""
    if isinstance(value, dict):
        return [[k for k in value if isinstance(k, str)], list(value.values())]
    return value


def evaluation_texts(data: Path = DATA, persona_eval: Path = PERSONA_EVAL) -> dict[str, list[str]]:
    texts = {p.stem: json_texts(p) for p in sorted(data.glob("seen*.json"), key=_split_order)}
    if (data / "heldout14.json").exists():
        texts["heldout14"] = json_texts(data / "heldout14.json")
    if persona_eval.exists():
        texts = {**inline_split_texts(persona_eval.read_text(encoding="utf-8")), **texts}
    return texts


def training_texts(data: Path = DATA, persona_eval: Path = PERSONA_EVAL) -> dict[str, list[str]]:
    texts = {p.stem: json_texts(p) for p in sorted([*data.glob("train_*.json"), *data.glob("outcomes*.json")])}
    if persona_eval.exists():
        texts.update(inline_split_texts(persona_eval.read_text(encoding="utf-8"), {"fills": FILLS}))
    return texts


def _split_order(p: Path) -> tuple[int, str]:
    digits = re.sub(r"\D", "", p.stem)
    return (int(digits) if digits else 0, p.stem)


# --- overlap -------------------------------------------------------------------------------------------------


def overlaps(
    entries: Sequence[Entry], evaluation: Mapping[str, Iterable[str]], training: Mapping[str, Iterable[str]]
) -> list[Hit]:
    """Per entry, what it shares with an evaluation split and not with any training text."""
    ev, tr = Corpus(evaluation), Corpus(training)
    hits: list[Hit] = []
    for e in entries:
        shared: dict[Pattern, set[str]] = {}
        for p in e.patterns:
            if len(p.words) >= NGRAM and not (p.prefix_last or p.suffix_first):
                for g in dict.fromkeys(_ngrams(p.words, NGRAM)):
                    found = ev.gram(g)
                    if found and not tr.gram(g):
                        shared.setdefault(Pattern(g), set()).update(found)
            else:  # a short entry, or a long one with a word cut at an end: the whole sequence, as a phrase
                found = ev.phrase(p)
                if found and not tr.phrase(p):
                    shared.setdefault(p, set()).update(found)
        order = list(evaluation)
        for p, splits in shared.items():
            hits.append(Hit(e, _show(p), tuple(sorted(splits, key=order.index)), p))
    return hits


def _show(p: Pattern) -> str:
    words = list(p.words)
    if p.suffix_first:
        words[0] = "…" + words[0]
    if p.prefix_last:
        words[-1] += "…"
    return " ".join(words)


# --- history -------------------------------------------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def _family(e: Entry, p: Pattern) -> str:
    return "regex" if e.regex else "sentence" if len(p.words) >= NGRAM else "word"


class _Holdings:
    """What a version of the scorer holds, per family: word entries as written, every run of up to 8 words
    inside a regex cue's sequences, and the 4-grams of sentences."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.word: set[tuple[str, ...]] = set()
        self.regex: set[tuple[str, ...]] = set()
        self.sentence: set[tuple[str, ...]] = set()
        for e in entries:
            for p in e.patterns:
                family = _family(e, p)
                if family == "word":
                    self.word.add(p.words)
                elif family == "sentence":
                    self.sentence.update(_ngrams(p.words, NGRAM))
                else:
                    n = len(p.words)
                    self.regex.update(p.words[i:j] for i in range(n) for j in range(i + 1, min(n, i + 8) + 1))

    def holds(self, h: Hit) -> bool:
        return h.pattern.words in getattr(self, _family(h.entry, h.pattern))


def history(hits: Sequence[Hit]) -> dict[int, tuple[str, str, bool]]:
    """Per hit (by index): the first commit whose scorer held what it shares, and the first whose evaluation
    splits (any ``seen*`` / ``heldout*`` file, the splits in persona_eval.py) held it, as "hash date", "" for
    never, and whether the scorer took it in at or after an evaluation split held it (if not, the scorer had it
    first and it did not come from there). Commits in topological order, oldest first."""
    paths = ["memory/persona/evidence.py", "memory/persona/lexicon", "bench/persona_eval.py", "bench/data/persona"]
    commits = _git(
        "rev-list", "--reverse", "--topo-order", "--format=%h %ad", "--date=short", "HEAD", "--", *paths
    ).splitlines()
    commits = [c for c in commits if not c.startswith("commit ")]
    scorer_first: dict[int, str] = {}
    eval_first: dict[int, str] = {}
    for line in commits:
        commit = line.split()[0]
        files = _git("ls-tree", "-r", "--name-only", commit, "--", *paths).splitlines()
        show = {
            f: _git("show", f"{commit}:{f}")
            for f in files
            if f.endswith((".py", ".txt")) or re.search(r"/(seen|heldout)[^/]*\.json$", f)
        }
        entries = source_entries(show["memory/persona/evidence.py"]) if "memory/persona/evidence.py" in show else []
        entries += lexicon_file_entries(
            {Path(f).stem: t for f, t in show.items() if f.startswith("memory/persona/lexicon/") and f.endswith(".txt")}
        )
        holdings = _Holdings(entries)
        texts: dict[str, list[str]] = {}
        if "bench/persona_eval.py" in show:
            texts.update(inline_split_texts(show["bench/persona_eval.py"]))
        for f, t in show.items():
            if f.endswith(".json"):
                texts[Path(f).stem] = list(_strings(json.loads(t)))
        corpus = Corpus(texts)
        for i, h in enumerate(hits):
            if i not in scorer_first and holdings.holds(h):
                scorer_first[i] = line
            if i not in eval_first and (
                corpus.gram(h.pattern.words)
                if len(h.pattern.words) == NGRAM and not (h.pattern.prefix_last or h.pattern.suffix_first)
                else corpus.phrase(h.pattern)
            ):
                eval_first[i] = line
    out = {}
    for i in range(len(hits)):
        scorer, evaluation = scorer_first.get(i, ""), eval_first.get(i, "")
        # Not in any commit: added in the working tree, after every split.
        late = bool(evaluation) and (not scorer or commits.index(scorer) >= commits.index(evaluation))
        out[i] = (scorer, evaluation, late)
    return out


def scorer_entries(evidence: Path = EVIDENCE, lexicon: Path = LEXICON) -> list[Entry]:
    out = lexicon_entries(lexicon) if lexicon.is_dir() else []
    if evidence.exists():
        out += source_entries(evidence.read_text(encoding="utf-8"))
    return out


def table(hits: Sequence[Hit], first: Mapping[int, tuple[str, str, bool]] | None = None) -> str:
    head = ("entry", "list", "shared", "split(s)")
    rows = [head + (("in the scorer since", "in a split since", "origin") if first is not None else ())]
    for i, h in enumerate(hits):
        text = h.entry.text if len(h.entry.text) <= 60 else h.entry.text[:57] + "..."
        row: tuple[str, ...] = (text, h.entry.list_name, h.shared, ", ".join(h.splits))
        if first is not None:
            scorer, evaluation, late = first[i]
            row += (scorer or "(uncommitted)", evaluation, "evaluation" if late else "scorer first")
        rows.append(row)
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(f"{c:<{w}}" for c, w in zip(r, widths)).rstrip() for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", type=Path, help="also write the hits as JSON")
    p.add_argument("--lists", action="store_true", help="print the entry and cue counts per list")
    p.add_argument(
        "--no-history",
        action="store_true",
        help="skip the git history columns (when each entry "
        "entered the scorer and when what it shares entered an evaluation split)",
    )
    args = p.parse_args(argv)
    entries = scorer_entries()
    hits = overlaps(entries, evaluation_texts(), training_texts())
    first = None if args.no_history else history(hits)
    lists: dict[str, list[Entry]] = {}
    for e in entries:
        lists.setdefault(e.list_name, []).append(e)
    print(
        f"{len(entries)} entries in {len(lists)} lists ({sum(e.regex for e in entries)} regex cues); "
        f"{len({id(h.entry) for h in hits})} entries share something with an evaluation split and not with the "
        f"training data ({len(hits)} rows)\n"
    )
    if args.lists:
        for name, es in lists.items():
            print(f"  {name:<34}{len(es):>5}{' (regex)' if any(e.regex for e in es) else ''}")
        print()
    if first is not None:
        late = {id(h.entry) for i, h in enumerate(hits) if first[i][2]}
        print(
            f"{len(late)} of them took it in at or after an evaluation split held it (origin: evaluation); the "
            "others held it before any split did (origin: scorer first)\n"
        )
    print(table(hits, first) if hits else "(none)")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "entry": h.entry.text,
                        "list": h.entry.list_name,
                        "regex": h.entry.regex,
                        "shared": h.shared,
                        "splits": list(h.splits),
                        **(
                            {
                                "scorer_since": first[i][0],
                                "split_since": first[i][1],
                                "origin": "evaluation" if first[i][2] else "scorer first",
                            }
                            if first is not None
                            else {}
                        ),
                    }
                    for i, h in enumerate(hits)
                ],
                indent=1,
            ),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
