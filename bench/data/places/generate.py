"""Generate the places evaluation's server history and held-out questions (deterministic, no downloads).

    .venv/bin/python -m bench.data.places.generate     # writes history.jsonl and questions.json next to this file

A server of 13 topic channels and #general. Two topics are spread over two channels (containers: #devops and
#linux; SQL: #databases and #python-help). Twenty people chat, ask in #general where to go and move, and work
through 39 how-to problems (three per channel): the asker asks, a helper sometimes suggests something that does
not work ("still the same error"), then the fix, then "thanks, that worked!". The history uses each problem's
``ask`` wording; ``questions.json`` holds what was never in the history: held-out "where do I ask about X"
questions and held-out rewordings of the problems (plus a small dev set of where-questions, the only one looked
at while choosing constants).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 13
START = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)

# channel: (short topic for "where do I ask about ...", chatter lines, problems)
# problem: (id, ask (history), held-out rewording, a suggestion that fails, the fix)
CHANNELS: dict[str, tuple[str, list[str], list[tuple[str, str, str, str, str]]]] = {
    "python-help": (
        "python",
        [
            "Python 3.13 removed a bunch of old modules, check your imports",
            "type hints with generics got so much nicer in recent python versions",
            "I finally moved my scripts from pandas to polars, much faster",
            "anyone else using SQLAlchemy 2.0 style queries with their postgres database?",
        ],
        [
            (
                "py-venv",
                "pip install fails with externally-managed-environment on Debian, what do I do?",
                "Debian refuses to let pip install packages system wide, error says the environment is externally managed",
                "Reinstall python from the official website.",
                "Create a virtual environment with `python3 -m venv .venv`. Activate it and run pip inside it.",
            ),
            (
                "py-import",
                "ModuleNotFoundError for my own package when I run the tests with pytest",
                "pytest cannot import my local package modules, it says no module named after my project",
                "Rename the tests folder.",
                "Install the project in editable mode with `pip install -e .`. Run pytest from the project root.",
            ),
            (
                "py-sqlalchemy",
                "SQLAlchemy says QueuePool limit of size 5 overflow 10 reached, connection timed out",
                "my python app runs out of database connections in the SQLAlchemy pool under load",
                "Restart the database server.",
                "Close sessions with a context manager. Raise pool_size on create_engine if you really need more.",
            ),
        ],
    ),
    "javascript": (
        "javascript and node",
        [
            "bun is getting really good for small node scripts",
            "the new React compiler removes most of my useMemo calls",
            "ESM versus CommonJS is still the most confusing part of node",
            "TypeScript 5 decorators finally landed, nice",
        ],
        [
            (
                "js-esm",
                "node says cannot use import statement outside a module",
                "SyntaxError about import statements outside a module when running my node script",
                "Downgrade node to version 12.",
                'Add "type": "module" to package.json. Or rename the file to .mjs.',
            ),
            (
                "js-cors",
                "my fetch from the React app is blocked by CORS policy, no Access-Control-Allow-Origin header",
                "browser blocks my frontend calling my express API because of a missing allow origin header",
                "Disable web security in Chrome.",
                "Add the cors middleware to the express server with `app.use(cors())`. Set the origin to your frontend URL.",
            ),
            (
                "js-hook",
                "React warns that useEffect has a missing dependency and my component loops forever",
                "my React component re-renders in an infinite loop from a useEffect",
                "Remove the dependency array entirely.",
                "Wrap the callback in useCallback. Add it to the dependency array instead of recreating it on each render.",
            ),
        ],
    ),
    "linux": (
        "linux and the shell",
        [
            "systemd timers are so much nicer than cron once you get used to them",
            "I switched my laptop to Fedora, the gnome defaults are great",
            "tmux plus a good bashrc makes the terminal home",
            "docker on linux without desktop is so much lighter than on a mac",
        ],
        [
            (
                "lx-perm",
                "permission denied when running my shell script even though I own it",
                "bash says permission denied executing a script I just wrote",
                "Run it with sudo.",
                "Make it executable with `chmod +x script.sh`. Check the partition is not mounted noexec.",
            ),
            (
                "lx-service",
                "my systemd service fails to start with status 203/EXEC",
                "systemctl shows my unit failing with 203 EXEC when it starts",
                "Reboot the machine.",
                "Use an absolute path in ExecStart. Add a shebang line to the script and reload with `systemctl daemon-reload`.",
            ),
            (
                "lx-docker-sock",
                "docker says permission denied while trying to connect to the docker daemon socket",
                "got permission denied on /var/run/docker.sock when I run docker ps without root",
                "Chmod 777 the socket.",
                "Add your user to the docker group with `sudo usermod -aG docker $USER`. Log out and back in.",
            ),
        ],
    ),
    "devops": (
        "docker and kubernetes",
        [
            "we moved our CI to GitHub Actions runners on kubernetes",
            "multi-stage docker builds cut our image size by 80 percent",
            "helm charts are fine until you need to debug templating",
            "anyone tried podman as a docker replacement in production?",
        ],
        [
            (
                "dk-port",
                "my docker container runs but I cannot reach the web app from the host browser",
                "the app inside my container is up but localhost in the browser gets connection refused",
                "Use the host network driver on macOS.",
                "Publish the port with `-p 8080:8080`. Make the app listen on 0.0.0.0 instead of 127.0.0.1.",
            ),
            (
                "k8s-crash",
                "my kubernetes pod is stuck in CrashLoopBackOff",
                "pod keeps restarting with crash loop back off status in the cluster",
                "Delete the namespace and start over.",
                "Read the logs of the last crash with `kubectl logs --previous`. Check the liveness probe path and delay.",
            ),
            (
                "dk-disk",
                "docker filled my disk, no space left on device during builds",
                "builds fail because docker used all the disk space with old images",
                "Buy a bigger disk.",
                "Run `docker system prune -a` to remove unused images. Add --volumes if old volumes are safe to drop.",
            ),
        ],
    ),
    "databases": (
        "SQL and databases",
        [
            "postgres 17 incremental backups look really promising",
            "pgvector with an HNSW index made our semantic search fast",
            "always look at EXPLAIN ANALYZE before adding indexes",
            "SQLite is underrated for small apps",
        ],
        [
            (
                "db-slow",
                "a postgres query on a big table got very slow, sequential scan everywhere",
                "my SQL query does a full seq scan on a large postgres table and takes seconds",
                "Increase the server RAM.",
                "Run EXPLAIN ANALYZE on the query. Create an index on the filtered column and run ANALYZE on the table.",
            ),
            (
                "db-conn",
                "too many connections error from postgres when the app scales up",
                "postgres refuses new clients, says sorry too many clients already",
                "Set max_connections to 10000.",
                "Put pgbouncer in front of postgres in transaction mode. Lower the pool size of each app instance.",
            ),
            (
                "db-lock",
                "an ALTER TABLE on production hangs forever waiting for a lock",
                "my schema migration is blocked on a lock and stalls the whole postgres database",
                "Kill the postgres server process.",
                "Set a lock_timeout before the migration. Find the blocking session in pg_stat_activity and end it.",
            ),
        ],
    ),
    "git-help": (
        "git",
        [
            "git switch and git restore are much clearer than checkout",
            "interactive rebase is my favourite git feature",
            "we squash merge every pull request now",
            "conventional commits made our changelog automatic",
        ],
        [
            (
                "git-push",
                "git push is rejected with non-fast-forward, updates were rejected",
                "pushing my branch fails because the remote contains work I do not have",
                "Delete the remote branch.",
                "Pull with rebase using `git pull --rebase`. Resolve conflicts and push again.",
            ),
            (
                "git-undo",
                "I committed to the wrong branch, how do I move the commit?",
                "made a commit on main that should have gone on my feature branch",
                "Copy the files by hand and commit again.",
                "Create the branch at this commit with `git branch feature`. Reset main with `git reset --hard HEAD~1`.",
            ),
            (
                "git-secret",
                "I accidentally committed a password to the repository history",
                "leaked an API key in an old git commit, how do I get it out of history",
                "Add the file to .gitignore.",
                "Rotate the secret first. Rewrite the history with git filter-repo and force push.",
            ),
        ],
    ),
    "gaming": (
        "PC gaming",
        [
            "the new Zelda is the best open world in years",
            "Steam Deck OLED screen is gorgeous",
            "anyone up for a co-op session tonight?",
            "elden ring DLC bosses are brutal",
        ],
        [
            (
                "gm-stutter",
                "my games stutter every few seconds even with a good GPU",
                "constant micro stutters in every game despite a fast graphics card",
                "Lower the resolution to 720p.",
                "Turn off the overlay of Discord and Steam. Update the GPU driver with a clean install.",
            ),
            (
                "gm-controller",
                "my Xbox controller is not detected by Steam games",
                "Steam does not see my wireless xbox gamepad",
                "Buy a new controller.",
                "Enable Xbox configuration support in Steam controller settings. Re-pair the controller over bluetooth.",
            ),
            (
                "gm-launch",
                "the game crashes on launch with a DirectX error",
                "DirectX error and crash to desktop right when the game starts",
                "Reinstall Windows.",
                "Verify the game files in Steam. Install the DirectX end-user runtime and the latest Visual C++ redistributables.",
            ),
        ],
    ),
    "music-production": (
        "music production and audio",
        [
            "Ableton 12 has great new MIDI tools",
            "finished my first EP this weekend",
            "analog synths are a money pit but so fun",
            "mixing on headphones is hard without a reference",
        ],
        [
            (
                "mu-latency",
                "there is a big delay when I play my MIDI keyboard through the DAW",
                "latency between pressing keys and hearing sound in Ableton",
                "Use the built-in laptop speakers.",
                "Lower the buffer size to 128 samples. Use the ASIO driver of your audio interface.",
            ),
            (
                "mu-clip",
                "my mix sounds distorted and clips on the master",
                "master channel goes red and the track distorts when I export",
                "Turn up the monitors.",
                "Lower the channel faders so the master peaks below -6 dB. Put a limiter last on the master.",
            ),
            (
                "mu-crackle",
                "crackling and pops in the audio when I record",
                "clicks and crackles in my recordings from the audio interface",
                "Replace the microphone.",
                "Increase the buffer size while recording. Set the sample rate of the interface and the DAW to the same value.",
            ),
        ],
    ),
    "baking": (
        "baking and bread",
        [
            "my sourdough finally got an open crumb",
            "rye bread is so underrated",
            "laminated dough for croissants took me three tries",
            "anyone else bake with a dutch oven?",
        ],
        [
            (
                "bk-starter",
                "my sourdough starter smells like acetone and barely rises",
                "starter smells like nail polish remover and does not double anymore",
                "Throw it away and buy dried yeast.",
                "Feed it twice a day at a 1:5:5 ratio. Keep it somewhere warm around 24 degrees.",
            ),
            (
                "bk-dense",
                "my bread comes out dense and gummy inside",
                "loaves are heavy and sticky in the middle after baking",
                "Add more flour to the dough.",
                "Proof it longer until it springs back slowly. Bake until the inside reaches 96 degrees and cool it fully.",
            ),
            (
                "bk-flat",
                "my loaf spreads flat in the oven instead of rising",
                "dough collapses and bakes into a pancake shape",
                "Use more yeast.",
                "Shape it with more surface tension. Proof in a banneton and score it before baking.",
            ),
        ],
    ),
    "photography": (
        "photography and cameras",
        [
            "golden hour at the beach yesterday was unreal",
            "the 35mm prime never leaves my camera",
            "shooting film again, the colours are lovely",
            "Lightroom masking tools are a game changer",
        ],
        [
            (
                "ph-blur",
                "my handheld photos are blurry indoors",
                "indoor shots without a tripod come out soft and blurry",
                "Clean the lens.",
                "Raise the shutter speed to at least 1/100. Increase ISO and open the aperture to compensate.",
            ),
            (
                "ph-focus",
                "autofocus keeps hunting and missing moving subjects",
                "my camera focus misses when my dog runs toward me",
                "Switch to manual focus.",
                "Set continuous autofocus AF-C. Use a zone area and enable subject tracking.",
            ),
            (
                "ph-noise",
                "my night photos are full of grainy noise",
                "lots of grain in low light pictures at night",
                "Buy a new camera body.",
                "Use a tripod and a lower ISO with a longer exposure. Shoot raw and apply noise reduction in Lightroom.",
            ),
        ],
    ),
    "fitness": (
        "fitness and training",
        [
            "hit a new deadlift PR today",
            "zone 2 cardio changed my endurance",
            "rest days are training days too",
            "anyone doing a marathon this autumn?",
        ],
        [
            (
                "ft-plateau",
                "my bench press has not gone up in two months",
                "stuck at the same bench weight for weeks, no progress",
                "Train bench every day.",
                "Run a deload week at 60 percent. Then use double progression with more volume on the triceps.",
            ),
            (
                "ft-knee",
                "my knees hurt after running more than 5k",
                "knee pain shows up after longer runs",
                "Run through the pain.",
                "Shorten your stride and raise the cadence. Add strength work for the hips and increase distance slowly.",
            ),
            (
                "ft-sore",
                "I am sore for days after every leg workout",
                "muscle soreness lasts for days after training legs",
                "Stop training legs.",
                "Reduce the volume to a few hard sets. Sleep more and eat enough protein.",
            ),
        ],
    ),
    "gardening": (
        "gardening and plants",
        [
            "my tomatoes are finally ripening",
            "composting changed my garden",
            "monstera put out a new leaf",
            "raised beds are worth it",
        ],
        [
            (
                "gd-yellow",
                "the leaves of my tomato plants are turning yellow from the bottom",
                "lower leaves on the tomatoes go yellow and die",
                "Paint the leaves green.",
                "Remove the affected lower leaves. Water at the base in the morning and feed with a nitrogen fertiliser.",
            ),
            (
                "gd-overwater",
                "my houseplant has mushy roots and droopy leaves",
                "indoor plant droops and the roots look brown and soft",
                "Water it more often.",
                "Repot it in fresh, well-draining soil. Cut the rotten roots and let the soil dry between waterings.",
            ),
            (
                "gd-aphids",
                "aphids are all over my roses",
                "tiny green bugs covering the rose buds",
                "Spray with bleach.",
                "Wash them off with a strong jet of water. Spray insecticidal soap and encourage ladybirds.",
            ),
        ],
    ),
    "homelab": (
        "home networking and wifi",
        [
            "set up pi-hole and my whole network is ad free",
            "wifi 7 routers are still too expensive",
            "my homelab now runs proxmox on a mini PC",
            "tailscale makes remote access so easy",
        ],
        [
            (
                "hl-dns",
                "websites do not load but ping to 8.8.8.8 works",
                "I can ping IP addresses but no domain names resolve on my network",
                "Replace the ethernet cable.",
                "Set the DNS server to 1.1.1.1 in the router. Flush the DNS cache with `ipconfig /flushdns`.",
            ),
            (
                "hl-wifi",
                "my wifi keeps dropping every few minutes",
                "wireless connection disconnects constantly at home",
                "Move closer to the neighbours.",
                "Switch the router to a less crowded channel. Update the router firmware.",
            ),
            (
                "hl-port",
                "I cannot reach my home server from outside with port forwarding",
                "port forward on my router does not work from the internet",
                "Turn off the firewall everywhere.",
                "Check whether your ISP uses CGNAT. Use a tunnel like tailscale or ask the ISP for a public IP.",
            ),
        ],
    ),
}
SPREAD = {"devops": "linux", "databases": "python-help"}  # a topic also discussed in the second channel

WHERE_DEV = {
    "python-help": ["where do I ask about python packages?"],
    "javascript": ["where can I get help with node?"],
    "linux": ["where do I ask about bash scripts?"],
    "devops": ["where should I ask about docker?"],
    "databases": ["where do I ask about postgres?"],
    "git-help": ["where do I ask git questions?"],
    "gaming": ["where do people talk about video games?"],
    "music-production": ["where do I ask about my DAW?"],
    "baking": ["where do I ask about sourdough?"],
    "photography": ["where do I ask about my camera?"],
    "fitness": ["where can I ask about workouts?"],
    "gardening": ["where do I ask about my plants?"],
    "homelab": ["where do I ask about my router?"],
}
WHERE_HELDOUT = {
    "python-help": ["which channel is for pip and virtualenv trouble?", "I have a question about pytest fixtures"],
    "javascript": ["who here knows React hooks well?", "question about npm and package.json scripts"],
    "linux": ["where can I ask about systemd units and journalctl?", "help with file permissions and chmod"],
    "devops": ["best channel for kubernetes deployment questions?", "where to ask about docker compose files"],
    "databases": ["where do I ask about indexes and slow SQL queries?", "question about database migrations and locks"],
    "git-help": ["where can I ask about a messy merge conflict?", "how do I rebase my branch, who can help?"],
    "gaming": ["where do I ask about fps drops in games?", "which channel for steam and controllers?"],
    "music-production": ["where do I ask about mixing and mastering?", "question about my audio interface settings"],
    "baking": ["where can I ask about proofing dough?", "who can help with my croissant lamination?"],
    "photography": [
        "where do I ask about shutter speed and aperture?",
        "question about editing raw files in Lightroom",
    ],
    "fitness": ["where can I ask about my running plan?", "who can help me with squat form?"],
    "gardening": ["where do I ask about tomato diseases?", "question about repotting a monstera"],
    "homelab": ["where can I ask about my pi-hole DNS setup?", "help with a VLAN on my home network"],
}
PEOPLE = [
    "ana",
    "bob",
    "cy",
    "dee",
    "eli",
    "fay",
    "gus",
    "hal",
    "ivy",
    "jo",
    "kai",
    "lu",
    "max",
    "nia",
    "oz",
    "pia",
    "quin",
    "rae",
    "sam",
    "tia",
]
THANKS = ["thanks, that worked!", "that did it, thank you so much", "works now, thanks!", "perfect, thanks, solved"]
STILL = ["still the same error", "didn't work, same problem", "no luck, still broken"]


def generate() -> tuple[list[dict], dict]:
    rng = random.Random(SEED)
    messages: list[dict] = []
    t = START
    n = 0

    def say(author: str, channel: str, text: str, *, reply_to: str | None = None, gap: float = 2.0) -> str:
        nonlocal t, n
        n += 1
        t += timedelta(minutes=gap)
        mid = f"m{n:05d}"
        rec = {
            "id": mid,
            "channel": channel,
            "author": {"id": f"u-{author}", "name": author},
            "timestamp": t.isoformat(),
            "text": text,
        }
        if reply_to:
            rec["reply_to"] = reply_to
        messages.append(rec)
        return mid

    # chatter: every channel's own talk, spread topics also in their second channel
    for channel, (_, chatter, _problems) in CHANNELS.items():
        for line in chatter:
            say(rng.choice(PEOPLE), channel, line, gap=7)
    for home, other in SPREAD.items():
        for _, ask, _, _, _ in CHANNELS[home][2]:
            say(rng.choice(PEOPLE), other, "someone mentioned this earlier: " + ask.rstrip("?"), gap=9)
    # the solved threads, in a shuffled order across channels
    threads = [(channel, p) for channel, (_, _, problems) in CHANNELS.items() for p in problems]
    rng.shuffle(threads)
    stats = {}
    for channel, (pid, ask, _, wrong, fix) in threads:
        asker, helper = rng.sample(PEOPLE, 2)
        t += timedelta(hours=3)  # one thread at a time (the asker's moves stay within it)
        detour, attempts = False, 1
        if rng.random() < 0.5:  # a newcomer asks in #general first and is sent on
            q = say(asker, "general", f"where do I ask about {CHANNELS[channel][0]}? {ask}")
            say(helper, "general", f"try #{channel}, people there know this well", reply_to=q)
            detour = True
        q = say(asker, channel, ask, gap=3)
        if rng.random() < 0.6:
            say(helper, channel, wrong, reply_to=q)
            say(asker, channel, rng.choice(STILL))
            attempts += 1
        say(helper, channel, fix, reply_to=q)
        say(asker, channel, rng.choice(THANKS))
        stats[pid] = {"detour": detour, "attempts": attempts}
    return messages, stats


def questions(steps: dict) -> dict:
    problems = [
        {
            "problem": pid,
            "channel": channel,
            "text": heldout,
            **steps[pid],
            "channels": sorted({channel, SPREAD.get(channel, channel)}),
        }
        for channel, (_, _, ps) in CHANNELS.items()
        for pid, _, heldout, _, _ in ps
    ]
    where = {
        split: [
            {"text": q, "channel": channel, "channels": sorted({channel, SPREAD.get(channel, channel)})}
            for channel, qs in table.items()
            for q in qs
        ]
        for split, table in (("dev", WHERE_DEV), ("heldout", WHERE_HELDOUT))
    }
    return {"where": where, "problems": problems}


def main() -> None:
    messages, steps = generate()
    with (HERE / "history.jsonl").open("w", encoding="utf-8") as f:
        for m in messages:
            f.write(json.dumps(m, ensure_ascii=False) + "\n")
    (HERE / "questions.json").write_text(
        json.dumps(questions(steps), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{len(messages)} messages, {len(steps)} solved threads, {len(CHANNELS)} topic channels")


if __name__ == "__main__":
    main()
