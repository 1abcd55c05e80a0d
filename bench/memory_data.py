"""Generate the memory evaluation's data set: long multi-session chats and questions with evidence turns.

    python bench/memory_data.py            # rewrites bench/data/memory_eval/ (deterministic: fixed seed)

Ten conversations between 2-4 people over 2-6 months (15-30 dated sessions,
300-700 turns each) in the importer's JSON Lines format, and questions in
five categories (single_hop, multi_hop, temporal, open_domain, adversarial)
with the ids of their evidence turns. Facts about people's lives (jobs, homes,
pets, trips, family, hobbies, dislikes, purchases, injuries, plans, news told
by a friend) are woven into small talk, some change over time (a move, a new
job), and most kinds recur across people and dates, so every question has
distractors. Questions are written with other words than their evidence
(pet/dog/puppy, employer/company, relocate/move): the generator keeps only
phrasings that share at most half of their content words with every
evidence turn, and asserts it. Stdlib only.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evallib import CATEGORIES, DATA_DIR, MAX_SHARED, NOT_MENTIONED, shared_fraction  # noqa: E402

SEED = 20261122
CONVERSATIONS = 10
DEV_CONVERSATIONS = 6  # conv-00..05 dev, the rest heldout
TARGET = {"single_hop": 22, "multi_hop": 11, "temporal": 13, "open_domain": 5, "adversarial": 11}

NAMES = [
    "Maya",
    "Leo",
    "Priya",
    "Jonas",
    "Aisha",
    "Tom",
    "Sofia",
    "Marcus",
    "Elena",
    "Ravi",
    "Hannah",
    "Diego",
    "Nora",
    "Sam",
    "Chloe",
    "Omar",
    "Lena",
    "Ben",
    "Yuki",
    "Grace",
    "Felix",
    "Zara",
    "Ethan",
    "Ines",
    "Kofi",
    "Mia",
    "Noah",
    "Lucia",
    "Arjun",
    "Clara",
    "Theo",
    "Amara",
    "Oscar",
    "Freya",
    "Hugo",
    "Layla",
    "Isaac",
    "Rosa",
    "Kai",
    "Julia",
]
RELATIVES = [
    "Anna",
    "Daniel",
    "Meera",
    "Lucas",
    "Sara",
    "Pablo",
    "Ruth",
    "Malik",
    "Eva",
    "Tariq",
    "Nina",
    "Carlos",
    "Ingrid",
    "Femi",
    "Bea",
    "Joel",
]
CITIES = [
    "Lisbon",
    "Leeds",
    "Denver",
    "Rotterdam",
    "Austin",
    "Melbourne",
    "Glasgow",
    "Toronto",
    "Porto",
    "Seattle",
    "Manchester",
    "Lyon",
    "Dublin",
    "Boston",
    "Bristol",
    "Hamburg",
    "Valencia",
    "Portland",
    "Oslo",
    "Auckland",
]
JOBS = [
    "nurse",
    "software engineer",
    "chemistry teacher",
    "physiotherapist",
    "graphic designer",
    "accountant",
    "sous chef",
    "architect",
    "paramedic",
    "data analyst",
    "librarian",
    "electrician",
    "marketing manager",
    "vet technician",
    "pharmacist",
    "journalist",
    "civil engineer",
    "UX researcher",
    "dental hygienist",
    "lab technician",
]
COMPANIES = [
    "Brightline Logistics",
    "Northwind Health",
    "Cobalt Labs",
    "St. Mary's Hospital",
    "Juniper Bank",
    "Redwood Studio",
    "Harbor & Finch",
    "Lumen Analytics",
    "Greenleaf Foods",
    "Atlas Insurance",
    "Pinecrest High",
    "Meridian Design",
    "Fjord Software",
    "Sunrise Clinic",
    "Copperpot Bistro",
    "Vantage Media",
    "Keystone Builders",
    "Orbit Telecom",
    "Willow Vet Clinic",
    "Quarry Robotics",
]
ANIMALS = {
    "dog": (
        ["beagle", "golden retriever", "border collie", "dachshund", "corgi", "labrador", "greyhound", "shiba inu"],
        ["puppy", "pup"],
    ),
    "cat": (["maine coon", "siamese", "tabby", "ragdoll", "bengal"], ["kitten", "kitty"]),
    "rabbit": (["lop-eared", "dwarf", "lionhead"], ["bunny"]),
    "parrot": (["african grey", "cockatiel", "budgie"], ["chick", "birdie"]),
}
PET_NAMES = [
    "Biscuit",
    "Pepper",
    "Mochi",
    "Olive",
    "Ziggy",
    "Luna",
    "Waffles",
    "Bean",
    "Pickle",
    "Nacho",
    "Juniper",
    "Clementine",
    "Rufus",
    "Pretzel",
    "Maple",
    "Tofu",
    "Scout",
    "Basil",
    "Gizmo",
    "Noodle",
]
# place, what they did (statement), short answer, question-side paraphrase of the activity
TRIPS = [
    (
        "Lisbon",
        "we ate our weight in custard tarts and walked every single hill",
        "ate custard tarts and walked the hills",
        "for pastries",
    ),
    (
        "the Dolomites",
        "four days of hut-to-hut hiking, my legs are destroyed",
        "hut-to-hut hiking",
        "trekking in the mountains",
    ),
    ("Kyoto", "temples every morning and ramen every night", "visited temples and ate ramen", "on a trip to Japan"),
    (
        "Iceland",
        "we chased waterfalls and saw the northern lights once",
        "saw waterfalls and the northern lights",
        "to see the aurora",
    ),
    ("Barcelona", "beach all day and tapas until midnight", "beach days and tapas", "for a Spanish city break"),
    (
        "Lake Tahoe",
        "mostly kayaking and doing absolutely nothing in a cabin",
        "kayaking and relaxing in a cabin",
        "for a lakeside getaway",
    ),
    ("Edinburgh", "climbed Arthur's Seat in sideways rain", "climbed Arthur's Seat", "in Scotland"),
    ("Mexico City", "tacos, museums, more tacos", "ate tacos and went to museums", "to eat street food in Mexico"),
    ("Copenhagen", "biked everywhere and ate too many pastries", "cycled around the city", "in Denmark"),
    ("Marrakech", "got lost in the souks for hours", "wandered the souks", "in Morocco"),
    ("Vancouver Island", "whale watching!! we saw a pod of orcas", "went whale watching", "to see orcas"),
    ("Prague", "a friend's stag weekend, do not ask", "a stag weekend", "for a bachelor party"),
    ("Crete", "snorkeling and lying on the beach like a lizard", "snorkeling", "on a Greek island holiday"),
    (
        "Montreal",
        "the jazz festival, so much live music",
        "went to the jazz festival",
        "for a music festival in Canada",
    ),
    ("Yosemite", "camped for three nights under the stars", "camping", "for a national park trip"),
    ("Seoul", "karaoke and street food every night", "karaoke and street food", "in South Korea"),
    ("Vienna", "went to the opera for the first time in my life", "went to the opera", "in Austria"),
    ("Cornwall", "surf lessons, I fell off about a hundred times", "took surf lessons", "to learn surfing"),
    ("Budapest", "thermal baths every day, pure bliss", "soaked in the thermal baths", "in Hungary"),
    ("Rome", "ate carbonara twice a day and saw the Colosseum", "saw the Colosseum", "in Italy"),
]
# injury text, short answer, cause text, cause answer
INJURIES = [
    ("sprained my ankle", "a sprained ankle", "playing five-a-side football", "football"),
    (
        "pulled something in my back",
        "a pulled back muscle",
        "carrying a couch up three flights of stairs",
        "moving a couch",
    ),
    ("broke my wrist", "a broken wrist", "falling off my bike on the wet cobbles", "a bike fall"),
    ("tore a ligament in my knee", "a torn knee ligament", "skiing way above my level", "skiing"),
    ("needed four stitches in my hand", "stitches in the hand", "slicing a bagel like an idiot", "cutting a bagel"),
    ("cracked a rib", "a cracked rib", "at my first rugby practice", "rugby"),
    ("got a nasty concussion", "a concussion", "walking into a low beam at the climbing gym", "hitting a beam"),
    ("dislocated my shoulder", "a dislocated shoulder", "during a badminton match", "badminton"),
]
# item, question-side category
PURCHASES = [
    ("a secondhand Subaru Outback", "vehicle"),
    ("a Fujifilm X100V", "camera"),
    ("a Yamaha upright piano", "instrument"),
    ("a standing desk", "piece of office furniture"),
    ("an e-bike", "way of getting around"),
    ("a 3D printer", "gadget"),
    ("a massive sofa bed", "piece of furniture"),
    ("an espresso machine", "kitchen appliance"),
    ("an inflatable kayak", "boat"),
    ("a telescope", "stargazing equipment"),
    ("a vintage record player", "audio gear"),
    ("a sewing machine", "crafting tool"),
    ("a robot vacuum", "cleaning gadget"),
    ("a Nintendo Switch", "games console"),
]
# statement, hobby answer, question phrasing of the pastime, an activity they would like
HOBBIES = [
    ("signed up for a wheel-throwing class, my first bowl looks like a hat", "pottery", "a ceramics workshop"),
    ("been bouldering three evenings a week, my forearms are huge now", "rock climbing", "a trip to a climbing wall"),
    ("started running before breakfast, 5k every morning", "running", "a charity fun run"),
    (
        "my sourdough starter is alive and bubbling, named it Doughy",
        "baking sourdough bread",
        "a gift of artisan flour",
    ),
    ("I'm hooked on chess, playing blitz online every night", "chess", "an evening at a board game cafe"),
    ("bought binoculars and now I wake up at 6 to spot warblers", "birdwatching", "a guided nature reserve walk"),
    ("growing tomatoes and chillies on my balcony, it's a jungle", "gardening", "a visit to a plant nursery"),
    ("learning guitar from youtube, my fingertips are killing me", "playing guitar", "an open mic night"),
    ("doing watercolours every sunday, mostly wonky landscapes", "painting", "an art supply shop voucher"),
    ("joined a salsa class, I have two left feet but it's fun", "salsa dancing", "a Latin dance night"),
    ("knitting my first sweater, one sleeve is longer than the other", "knitting", "a yarn festival"),
    ("doing yoga every evening, my back finally stopped hurting", "yoga", "a meditation retreat"),
    (
        "been going on long road rides on my bike on weekends, 80 km last time",
        "cycling",
        "a tour following the Tour de France route",
    ),
    (
        "got really into astrophotography, shooting Jupiter from the roof",
        "photographing the night sky",
        "a dark-sky stargazing weekend",
    ),
]
# statement, the disliked thing, activity they would not enjoy
DISLIKES = [
    (
        "honestly I'm miserable in cold weather, anything below ten degrees and I'm done",
        "cold weather",
        "a winter holiday in Lapland",
    ),
    ("I get seasick on anything bigger than a bathtub", "boats", "a week-long cruise"),
    ("horror films give me nightmares for weeks, never again", "horror movies", "a slasher movie marathon"),
    ("crowds stress me out so much, I left the concert after twenty minutes", "crowds", "a huge summer music festival"),
    ("spicy food destroys me, even mild salsa", "spicy food", "the extra-hot vindaloo challenge"),
    ("I'm terrified of heights, I couldn't even do the glass floor at the tower", "heights", "skydiving"),
    ("running is torture for me, I'd rather walk ten miles", "running", "a marathon training plan"),
    ("I really can't do early mornings, I'm useless before ten", "early mornings", "a 5am sunrise hike"),
]
# event statement noun, question-side noun
EVENTS = [
    ("my half marathon", "race"),
    ("my piano recital", "performance on stage"),
    ("my driving test", "exam for a licence"),
    ("my thesis defence", "viva"),
    ("the Arctic Monkeys gig", "concert"),
    ("my housewarming", "party at the new place"),
    ("the pottery fair where I have a stall", "craft market"),
    ("my citizenship ceremony", "naturalisation appointment"),
    ("my cousin's wedding", "family wedding"),
    ("the company hackathon", "coding competition"),
]
# family news: statement template, question, answer template; {rel} relative name, {when} relative date
FAMILY = [
    (
        "my sister {rel} got engaged {when}, the ring is ridiculous",
        "Which sibling of {p} is getting married?",
        "sister {rel}",
        "engagement of the sister",
    ),
    (
        "my brother {rel} and his wife had a baby girl {when}!! I'm an aunt/uncle",
        "Which relative of {p} became a parent?",
        "brother {rel}",
        "the birth of the niece",
    ),
    (
        "we threw my dad a surprise party for his 60th {when}",
        "How old did {p}'s father turn?",
        "60",
        "the father's birthday party",
    ),
    (
        "my grandma moved in with us {when}, she's already reorganised the kitchen",
        "Which family member started living with {p}?",
        "grandmother",
        "grandmother moving in",
    ),
    (
        "my mum retired {when} after 35 years teaching maths",
        "What was the career of {p}'s mother?",
        "maths teacher",
        "the mother's retirement",
    ),
    (
        "my cousin {rel} crashed on my sofa {when}, we stayed up talking till 3",
        "Which family member stayed over at {p}'s place?",
        "cousin {rel}",
        "the cousin's visit",
    ),
]
# news told by a friend about someone: statement (about {p}), question, answer
GOSSIP = [
    ("did you all hear {p} got promoted to team lead?", "What new role at work did {p} get?", "team lead"),
    ("{p} is learning Japanese, there are flashcards all over the flat", "Which language is {p} studying?", "Japanese"),
    (
        "{p}'s team won the pub quiz on thursday, carried the whole team apparently",
        "What competition did {p}'s group win?",
        "the pub quiz",
    ),
    (
        "{p} is volunteering at the animal shelter on weekends now",
        "Where does {p} help out on weekends?",
        "the animal shelter",
    ),
    (
        "{p} ran into an old school friend at the airport, small world",
        "Who did {p} bump into while travelling?",
        "an old school friend",
    ),
    ("{p} has gone fully vegan since january, you should see the fridge", "What diet has {p} adopted?", "vegan"),
    (
        "{p} got a scholarship for the evening design course",
        "What did {p} win funding for?",
        "the evening design course",
    ),
]

GREETINGS = [
    "hey everyone",
    "morning all",
    "hiii",
    "evening folks",
    "hey hey",
    "yo",
    "hello hello",
    "good morning!!",
    "hey, anyone around?",
    "hi all, long time",
    "heyy",
    "sup",
    "hello from the couch",
    "afternoon!",
    "hey guys",
    "hi hi",
    "ahoy",
    "hey, back from the dead",
    "good evening :)",
    "morning, coffee in hand",
]
GREETING_REPLIES = [
    "hey {n}!",
    "hi {n} :)",
    "heyyy",
    "oh hey {n}",
    "yo {n}",
    "morning!",
    "hiya",
    "hey you",
    "{n}!! hi",
    "hello stranger",
    "hey, good to see you",
    "hi! how's it going",
    "hey! what's up",
    "look who it is",
    "evening {n}",
]
FAREWELLS = [
    "ok gotta run, talk later",
    "off to bed, night all",
    "right, back to it",
    "speak soon!",
    "gotta go make dinner",
    "later all",
    "bye for now",
    "night night",
    "ok my lunch break is over",
    "catch you later",
    "byeee",
    "ttyl",
    "ok that's my cue, see ya",
    "going to walk, bye",
    "sleep time, night!",
]
FAREWELL_REPLIES = [
    "bye!",
    "night!",
    "later {n}",
    "see ya",
    "take care",
    "byee",
    "have a good one",
    "cya {n}",
    "sleep well",
    "talk soon",
]
REACTIONS = [
    "haha no way",
    "that's awesome",
    "omg",
    "wait really?",
    "love that",
    "hahaha",
    "nice!!",
    "oh wow",
    "that's so cool",
    "amazing",
    "no wayyy",
    "lol classic",
    "I love this",
    "good for you!",
    "wow",
    "that's wild",
    "ha, of course",
    "yesss",
    "stop it haha",
    "oh nice",
    "so jealous",
    "iconic",
    "that's great news",
    "ahh",
    "this is the best thing I've heard all week",
    "ok I'm impressed",
    "hah, typical",
    "oh that's lovely",
    "fair enough",
    "big if true",
    "respect",
    "love it",
    "honestly same",
    "hmm interesting",
    "niiice",
    "oh man",
    "you're kidding",
    "ha! brilliant",
]
SMALLTALK = [
    "it's been raining all day here, I'm so over it",
    "I made pancakes this morning and burned every single one",
    "anyone watching the new season of Severance?",
    "my neighbour is drilling again, third day in a row",
    "I need a holiday so badly",
    "work has been absolutely crazy this week",
    "the heating in my flat broke again",
    "I think I drink too much coffee",
    "just finished a really good book, couldn't put it down",
    "why is it already dark at 5pm",
    "my phone screen cracked this morning, classic",
    "the bus was 40 minutes late",
    "tried a new ramen place near the station, it was decent",
    "I slept eleven hours last night, no regrets",
    "thinking about getting bangs, talk me out of it",
    "the supermarket was out of oat milk AGAIN",
    "I've started three different shows and finished none",
    "my plants are dying and I don't know why",
    "did anyone else get that weird email from the landlord?",
    "I can't believe it's almost the weekend",
    "football was painful to watch last night",
    "made a lasagne big enough for six people, I live alone",
    "I keep forgetting to reply to messages, sorry all",
    "it's so sunny today, finally",
    "the wifi at my place is unusable tonight",
    "my mum keeps sending me minion memes",
    "spent the whole evening fixing my bike chain",
    "I should really go to the gym more",
    "ordered pizza again, third time this week",
    "my sleep schedule is a disaster",
    "the new cafe by the park does amazing cinnamon buns",
    "does anyone have a good podcast recommendation?",
    "I accidentally watched four hours of cooking videos",
    "my inbox is a nightmare",
    "the traffic on the ring road was horrendous",
    "got caught in the rain without an umbrella, soaked",
    "I reorganised my whole wardrobe, feeling productive",
    "there's a fox in my garden every night now",
    "trying to cut down on sugar, day two, it's going badly",
    "I found a tenner in an old coat, best day",
    "my upstairs neighbours have a new puppy and it cries all night",
    "so tired today, meetings all morning",
    "the cinema near me closed down, sad",
    "can't decide what to cook tonight",
    "my laptop fan sounds like a jet",
    "I think I'm getting a cold",
    "finally cleaned the oven, it was a crime scene",
    "any weekend plans, people?",
    "I've been listening to the same album on repeat for a week",
    "the lake was freezing but I swam anyway",
    "my train got cancelled so I worked from a cafe",
    "someone at work brought cake, the day is saved",
    "I tried to do a crossword and gave up after two clues",
    "it's so humid I can't think",
    "my cousin keeps asking me for tech support",
    "I'm rewatching the office for the fifth time",
    "the market had really good strawberries today",
    "somebody parked across my driveway again",
    "I'm trying to learn to cook curry properly",
    "I did absolutely nothing this weekend and it was great",
    "my friend dragged me to a spin class, I'm dying",
    "I've been going to bed at 2am, bad habit",
    "there was a power cut on our street last night",
    "I think my sourdough phase is coming back",
    "the kids next door have a trampoline and they scream with joy all day",
    "booked a dentist appointment finally, adulting",
    "anyone else find mondays extra long lately?",
    "I bought a new plant, it's already looking sad",
    "the queue at the post office was 30 people",
]
ASK_OTHER = [
    "{n}, how's your week going?",
    "how are you doing {n}?",
    "{n} what are you up to this weekend?",
    "{n}, did you end up watching that film?",
    "how's work treating you {n}?",
    "{n} you alive?",
    "what's new with you {n}?",
    "{n}, did you sleep at all?",
    "{n} how was your weekend?",
    "any news {n}?",
    "{n}, how's the family?",
    "you ok {n}? you've been quiet",
    "{n} did you try that place I told you about?",
    "{n}, what are you having for dinner?",
    "{n}, still on for next week?",
    "how was your day {n}?",
]
ANSWERS = [
    "not bad, just busy",
    "honestly pretty tired but ok",
    "all good here!",
    "surviving haha",
    "can't complain",
    "a bit stressed but fine",
    "it's been a slow one",
    "good! nothing exciting though",
    "meh, mondays",
    "yeah not too bad, thanks for asking",
    "long story, but fine now",
    "great actually, weather's been nice",
    "chaotic as usual",
    "eh, could be better",
    "busy busy busy",
    "quiet week, just resting",
    "pretty good, been cooking a lot",
    "good, just catching up on sleep",
    "haven't decided yet",
    "nothing planned, maybe a walk",
    "yes! it was so good",
    "not yet, this weekend maybe",
]
OPENERS = [
    "",
    "",
    "",
    "",
    "honestly ",
    "ngl ",
    "ok so ",
    "omg ",
    "lol ",
    "btw ",
    "guess what, ",
    "update: ",
    "so, ",
    "random but ",
]
FOLLOWUPS = {
    "pet": [
        "omg pics or it didn't happen",
        "I need to meet {x} asap",
        "what a cute name",
        "how's the sleep situation?",
        "ahh I'm so jealous, I want one",
        "is the flat still in one piece?",
    ],
    "trip": [
        "so jealous!!",
        "how was the food?",
        "I've always wanted to go there",
        "was it busy?",
        "did you bring me anything haha",
        "send photos!",
    ],
    "job": ["congrats!!", "that's huge", "do you like it?", "hope the commute is ok", "finally!"],
    "home": ["oh I didn't know that", "how do you like it there?", "ugh rent is mad everywhere"],
    "move": ["noo we'll miss you", "exciting!!", "need help with boxes?", "big change!"],
    "health": ["ouch, feel better", "oh no, take it easy", "did you see a doctor?", "that sounds awful"],
    "family": ["aww that's so nice", "congrats to them!", "that's lovely", "how are they doing?"],
    "hobby": ["that's so cool", "teach me!", "how did you get into that?", "love that for you"],
    "dislike": ["haha same", "fair enough", "really? I love it", "noted, lol"],
    "purchase": ["treat yourself", "nice! was it expensive?", "ooh jealous", "how is it so far?"],
    "event": ["good luck!!", "you'll crush it", "so exciting", "let us know how it goes"],
    "gossip": ["wait what, tell me more", "no way, good for them", "I had no idea!", "that's amazing"],
}
OWNER_CONFIRM = [
    "haha yes it's true",
    "yep! still getting used to it",
    "ok who told you",
    "ha, word travels fast",
    "guilty",
    "it's true, I'm very proud",
]

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def an(noun: str) -> str:
    return ("an " if noun[0].lower() in "aeiou" else "a ") + noun


def fmt_day(d: date) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


def _prev_weekday(d: date, weekday: int) -> date:
    delta = (d.weekday() - weekday) % 7 or 7
    return d - timedelta(days=delta)


def _next_weekday(d: date, weekday: int) -> date:
    delta = (weekday - d.weekday()) % 7 or 7
    return d + timedelta(days=delta)


def past_expression(rng: random.Random, today: date) -> tuple[str, date, str]:
    """A relative past time, the date it means, and the answer as a person would resolve it."""
    choice = rng.randrange(6)
    if choice == 0:
        d = today - timedelta(days=1)
        return "yesterday", d, fmt_day(d)
    if choice == 1:
        d = today - timedelta(days=2)
        return "two days ago", d, fmt_day(d)
    if choice == 2:
        d = _prev_weekday(today, 5)
        return "last weekend", d, f"the weekend of {fmt_day(d)}"
    if choice == 3:
        wd = rng.choice([4, 5, 6])
        d = _prev_weekday(today, wd)
        return f"last {WEEKDAYS[wd]}", d, fmt_day(d)
    if choice == 4:
        d = today - timedelta(days=7)
        return "last week", d, f"the week before {fmt_day(today)}"
    d = today - timedelta(days=3)
    return "a few days ago", d, f"a few days before {fmt_day(today)}"


def future_expression(rng: random.Random, today: date) -> tuple[str, date, str]:
    choice = rng.randrange(5)
    if choice == 0:
        d = today + timedelta(days=1)
        return "tomorrow", d, fmt_day(d)
    if choice == 1:
        wd = rng.choice([4, 5, 6])
        d = _next_weekday(today, wd)
        return f"next {WEEKDAYS[wd]}", d, fmt_day(d)
    if choice == 2:
        d = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
        return "next month", d, d.strftime("%B %Y")
    if choice == 3:
        d = today + timedelta(days=14)
        return "in two weeks", d, f"around {fmt_day(d)}"
    d = today + timedelta(days=rng.randint(9, 25))
    return f"on the {_ordinal(d.day)}", d, fmt_day(d)


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


@dataclass
class Fact:
    kind: str
    owner: str
    session: int
    speaker: str  # who says it (the owner, or a friend for gossip)
    text: str = ""
    turn_id: str = ""
    when: date | None = None  # the date the event happened or will happen
    when_answer: str = ""
    values: dict = field(default_factory=dict)


@dataclass
class Candidate:
    category: str
    phrasings: list[str]
    answer: str
    evidence: list[Fact]


# --- facts ------------------------------------------------------------------------------------------------------


def plan_facts(rng: random.Random, people: list[str], n_sessions: int) -> list[Fact]:
    facts: list[Fact] = []
    early = max(2, n_sessions // 3)
    late_lo, late_hi = n_sessions // 2, n_sessions - 2
    animals = list(ANIMALS)
    trips = rng.sample(TRIPS, min(len(TRIPS), 3 * len(people)))
    hobbies = rng.sample(HOBBIES, 2 * len(people))
    jobs = rng.sample(JOBS, 2 * len(people))
    companies = rng.sample(COMPANIES, 2 * len(people))
    cities = rng.sample(CITIES, 2 * len(people))
    events = rng.sample(EVENTS, min(len(EVENTS), 2 * len(people)))
    purchases = rng.sample(PURCHASES, 2 * len(people))
    injuries = rng.sample(INJURIES, len(people))
    dislikes = rng.sample(DISLIKES, len(people))
    family = rng.sample(FAMILY, len(people))
    gossip = rng.sample(GOSSIP, len(people))
    pet_names = rng.sample(PET_NAMES, len(people))
    for i, p in enumerate(people):

        def add(kind: str, lo: int, hi: int, speaker: str = p, **values: object) -> None:
            facts.append(Fact(kind, p, rng.randint(lo, max(lo, hi)), speaker, values=dict(values)))

        add("job", 0, early, job=jobs[2 * i], company=companies[2 * i])
        add("home", 0, early, city=cities[2 * i])
        if rng.random() < 0.5:
            add("job_change", late_lo, late_hi, job=jobs[2 * i + 1], company=companies[2 * i + 1], old=companies[2 * i])
        if rng.random() < 0.5:
            add("move", late_lo, late_hi, city=cities[2 * i + 1], old=cities[2 * i])
        if rng.random() < 0.75:
            animal = rng.choice(animals)
            add(
                "pet",
                1,
                n_sessions - 1,
                animal=animal,
                breed=rng.choice(ANIMALS[animal][0]),
                young=rng.choice(ANIMALS[animal][1]),
                name=pet_names[i],
            )
        for t in trips[3 * i : 3 * i + rng.randint(2, 3)]:
            add("trip", 1, n_sessions - 1, trip=t)
        add("family", 0, n_sessions - 1, fam=family[i], rel=rng.choice(RELATIVES))
        for h in hobbies[2 * i : 2 * i + rng.randint(1, 2)]:
            add("hobby", 0, n_sessions - 1, hobby=h)
        add("dislike", 0, n_sessions - 1, dislike=dislikes[i])
        for pu in purchases[2 * i : 2 * i + rng.randint(1, 2)]:
            add("purchase", 0, n_sessions - 1, item=pu)
        if rng.random() < 0.7:
            add("health", 0, n_sessions - 1, injury=injuries[i])
        for ev in events[2 * i : 2 * i + rng.randint(1, 2)]:
            add("event", 0, n_sessions - 2, event=ev)
        friend = rng.choice([q for q in people if q != p])
        add("gossip", 1, n_sessions - 1, speaker=friend, gossip=gossip[i])
    return facts


def render_fact(rng: random.Random, f: Fact, today: date) -> str:
    v = f.values
    if f.kind == "job":
        return rng.choice(
            [
                f"another twelve hour shift as {an(v['job'])} at {v['company']}, I'm wiped",
                f"being the only {v['job']} at {v['company']} this week means my phone never stops",
                f"we had a fire drill at {v['company']} today, the whole floor of us {v['job']}s stood in the car park for an hour",
                f"I've been {an(v['job'])} for six years now, the last two at {v['company']}",
                f"{v['company']} is finally giving us {v['job']}s new laptops, only took three years",
            ]
        )
    if f.kind == "job_change":
        expr, d, ans = "on Monday", _next_weekday(today, 0), fmt_day(_next_weekday(today, 0))
        f.when, f.when_answer = d, ans
        return rng.choice(
            [
                f"handed in my notice at {v['old']} today!! starting as {an(v['job'])} at {v['company']} {expr}",
                f"signed the contract, I'm joining {v['company']} as {an(v['job'])}, first day is {expr}",
            ]
        )
    if f.kind == "home":
        return rng.choice(
            [
                f"it's been raining nonstop here in {v['city']}, ten days straight",
                f"rent in {v['city']} went up again, my landlord is having a laugh",
                f"{v['city']} is so nice when the sun is out, walked along the river after dinner",
                f"there's a marathon going through {v['city']} today so my street is closed",
            ]
        )
    if f.kind == "move":
        expr, d, ans = future_expression(rng, today)
        f.when, f.when_answer = d, ans
        return rng.choice(
            [
                f"we got the apartment!! we're leaving {v['old']} and heading to {v['city']} {expr}",
                f"it's official, I'm packing up and going to {v['city']} {expr}, {v['old']} was fun while it lasted",
            ]
        )
    if f.kind == "pet":
        expr, d, ans = past_expression(rng, today)
        f.when, f.when_answer = d, ans
        return rng.choice(
            [
                f"we finally did it, brought home {an(v['breed'])} {v['young']} {expr}! {v['name']} is already chewing everything",
                f"so I rescued {an(v['breed'])} {v['young']} from the shelter {expr}, calling it {v['name']}",
                f"meet {v['name']}, my {v['breed']}! picked up the {v['young']} {expr} and I'm in love",
            ]
        )
    if f.kind == "trip":
        place, did, _, _ = v["trip"]
        expr, d, ans = past_expression(rng, today)
        f.when, f.when_answer = d, ans
        return rng.choice(
            [
                f"just got back from {place} {expr}, {did}",
                f"{place} {expr} was unreal, {did}",
                f"still dreaming about {place}, we flew back {expr}. {did}",
            ]
        )
    if f.kind == "family":
        template = v["fam"][0]
        expr, d, ans = past_expression(rng, today)
        f.when, f.when_answer = d, ans
        return template.format(rel=v["rel"], when=expr)
    if f.kind == "hobby":
        return rng.choice(["new obsession: ", "confession: ", "", ""]) + v["hobby"][0]
    if f.kind == "dislike":
        return v["dislike"][0]
    if f.kind == "purchase":
        expr, d, ans = past_expression(rng, today)
        f.when, f.when_answer = d, ans
        item = v["item"][0]
        return rng.choice(
            [
                f"finally caved and got {item} {expr}, no regrets",
                f"I picked up {item} {expr}, my bank account is crying",
                f"so {expr} I ordered {item} and it arrived today!",
            ]
        )
    if f.kind == "health":
        injury, _, cause, _ = v["injury"]
        expr, d, ans = past_expression(rng, today)
        f.when, f.when_answer = d, ans
        return rng.choice(
            [
                f"ugh I {injury} {expr} {cause}",
                f"so {expr} I {injury}, {cause}. don't laugh",
            ]
        )
    if f.kind == "event":
        expr, d, ans = future_expression(rng, today)
        f.when, f.when_answer = d, ans
        ev = v["event"][0]
        return rng.choice(
            [
                f"{ev} is {expr}, I'm so nervous",
                f"can't hang out {expr}, it's {ev}",
                f"reminder to self: {ev} {expr}. panicking a little",
            ]
        )
    if f.kind == "gossip":
        return v["gossip"][0].format(p=f.owner)
    raise ValueError(f.kind)


# --- questions ----------------------------------------------------------------------------------------------------


def fact_questions(f: Fact, people_facts: dict[str, list[Fact]]) -> list[Candidate]:
    """Single-hop, temporal and open-domain questions about one fact."""
    v, p = f.values, f.owner
    out: list[Candidate] = []

    def c(cat: str, phrasings: list[str], answer: str) -> None:
        out.append(Candidate(cat, phrasings, answer, [f]))

    has = {x.kind for x in people_facts[p]}
    if f.kind == "job" and "job_change" not in has:
        c(
            "single_hop",
            [
                f"What is {p}'s profession?",
                f"What line of work is {p} in?",
                f"What does {p} do for a living?",
                f"What does {p} do at {v['company']}?",
            ],
            v["job"],
        )
        c(
            "single_hop",
            [
                f"Which organisation employs {p}?",
                f"Who is {p}'s employer?",
                f"Where is {p} employed as {an(v['job'])}?",
            ],
            v["company"],
        )
    if f.kind == "job_change":
        c(
            "single_hop",
            [
                f"Which company is {p} joining?",
                f"Who is {p}'s new employer?",
                f"Where is {p} going to work after leaving {v['old']}?",
            ],
            v["company"],
        )
        c(
            "single_hop",
            [
                f"What position will {p} hold in the new role?",
                f"What is {p}'s new occupation?",
                f"What will {p} do at {v['company']}?",
            ],
            v["job"],
        )
        c(
            "temporal",
            [f"When does {p} begin the new position?", f"What day does {p} start the new employment?"],
            f.when_answer,
        )
    if f.kind == "home" and "move" not in has:
        c(
            "single_hop",
            [f"Which city does {p} live in?", f"Where is {p} based?", f"What town is {p}'s home?"],
            v["city"],
        )
    if f.kind == "move":
        c(
            "single_hop",
            [
                f"Which city is {p} relocating to?",
                f"Where is {p}'s new home going to be?",
                f"Where is {p} heading after {v['old']}?",
            ],
            v["city"],
        )
        c("temporal", [f"When is {p} relocating?", f"When does {p}'s move happen?"], f.when_answer)
    if f.kind == "pet":
        a = v["animal"]
        c(
            "single_hop",
            [
                f"What breed is {p}'s {a}?",
                f"What kind of {a} does {p} have?",
                f"What breed is {p}'s new pet?",
                f"What breed is {p}'s {v['young']}?",
            ],
            v["breed"],
        )
        c(
            "single_hop",
            [
                f"What is the name of {p}'s {a}?",
                f"What did {p} name the new pet?",
                f"What is {p}'s pet called?",
                f"What is the name of {p}'s {v['breed']}?",
            ],
            v["name"],
        )
        c(
            "temporal",
            [
                f"When did {p} get the {a}?",
                f"When did {p} adopt {v['name']}?",
                f"When did {v['name']} join {p}'s household?",
            ],
            f.when_answer,
        )
        c(
            "open_domain",
            [f"Would {p} likely need a pet sitter when travelling?", f"Is {p} likely an animal lover?"],
            "yes",
        )
    if f.kind == "trip":
        place, _, did_short, q_act = v["trip"]
        c("single_hop", [f"Where did {p} go {q_act}?", f"Which place did {p} travel to {q_act}?"], place)
        c(
            "single_hop",
            [f"What did {p} do while visiting {place}?", f"How did {p} spend the time in {place}?"],
            did_short,
        )
        c(
            "temporal",
            [f"When did {p} visit {place}?", f"When was {p}'s trip to {place}?", f"When was {p} away in {place}?"],
            f.when_answer,
        )
    if f.kind == "family":
        _, question, answer, gist = v["fam"]
        c("single_hop", [question.format(p=p)], answer.format(rel=v["rel"]))
        c("temporal", [f"When did {gist} happen for {p}?", f"When did {p} mention {gist} took place?"], f.when_answer)
    if f.kind == "hobby":
        _, hobby, liked = v["hobby"]
        c("single_hop", [f"What pastime has {p} picked up?", f"Which hobby is {p} into lately?"], hobby)
        c(
            "open_domain",
            [f"Would {p} likely enjoy {liked}?", f"Would {liked} appeal to {p}?"],
            f"yes, {p} is into {hobby}",
        )
    if f.kind == "dislike":
        _, thing, activity = v["dislike"]
        c(
            "open_domain",
            [f"Would {p} likely enjoy {activity}?", f"Is {activity} a good idea for {p}?"],
            f"no, {p} dislikes {thing}",
        )
        c("single_hop", [f"What does {p} find unbearable?", f"What can {p} not stand?"], thing)
    if f.kind == "purchase":
        item, cat = v["item"]
        c("single_hop", [f"What {cat} did {p} recently buy?", f"Which {cat} did {p} purchase?"], item)
        c(
            "temporal",
            [f"When did {p} buy the {cat}?", f"When did {p} purchase the new {cat}?", f"When did {p} buy {item}?"],
            f.when_answer,
        )
    if f.kind == "health":
        _, injury, _, cause = v["injury"]
        c(
            "single_hop",
            [f"What injury did {p} suffer?", f"How did {p} get hurt?", f"What happened to {p}'s health?"],
            injury,
        )
        c(
            "single_hop",
            [
                f"What was {p} doing when the injury happened?",
                f"What caused {p}'s injury?",
                f"What was {p} doing when {p} got {injury}?",
            ],
            cause,
        )
        c("temporal", [f"When did {p} get injured?", f"When was {p} hurt?"], f.when_answer)
    if f.kind == "event":
        ev, noun = v["event"]
        c(
            "temporal",
            [
                f"When is {p}'s {noun}?",
                f"What is the date of {p}'s {noun}?",
                f"When will {p} have {ev.removeprefix('my ')}?",
            ],
            f.when_answer,
        )
    if f.kind == "gossip":
        _, question, answer = v["gossip"]
        c("single_hop", [question.format(p=p)], answer)
    return out


def multi_hop(facts: list[Fact], people: list[str]) -> list[Candidate]:
    by = {p: [f for f in facts if f.owner == p] for p in people}
    out: list[Candidate] = []
    jobs = Counter(f.values["job"] for f in facts if f.kind == "job")
    for p in people:
        kinds: dict[str, list[Fact]] = {}
        for f in by[p]:
            kinds.setdefault(f.kind, []).append(f)
        job, pet = kinds.get("job", [None])[0], kinds.get("pet", [None])[0]
        if job and pet and jobs[job.values["job"]] == 1:
            out.append(
                Candidate(
                    "multi_hop",
                    [
                        f"What is the pet of the {job.values['job']} in the group called?",
                        f"The friend who works as {an(job.values['job'])} has a pet; what is its name?",
                    ],
                    pet.values["name"],
                    [job, pet],
                )
            )
        if "move" in kinds:
            out.append(
                Candidate(
                    "multi_hop",
                    [f"Which city did {p} live in before relocating?", f"Where was {p}'s home before the move?"],
                    kinds["move"][0].values["old"],
                    [kinds["home"][0], kinds["move"][0]],
                )
            )
        if "job_change" in kinds:
            out.append(
                Candidate(
                    "multi_hop",
                    [
                        f"What did {p} do for a living before switching employers?",
                        f"What was {p}'s occupation before the new position?",
                    ],
                    kinds["job"][0].values["job"],
                    [kinds["job"][0], kinds["job_change"][0]],
                )
            )
        trips = kinds.get("trip", [])
        if len(trips) >= 2:
            a, b = trips[:2]
            out.append(
                Candidate(
                    "multi_hop",
                    [f"Which two places has {p} travelled to?", f"Name two destinations {p} visited."],
                    f"{a.values['trip'][0]} and {b.values['trip'][0]}",
                    [a, b],
                )
            )
        gossip = kinds.get("gossip", [])
        if gossip and pet:
            _, question, answer = gossip[0].values["gossip"]
            out.append(
                Candidate(
                    "multi_hop",
                    [f"What breed of {pet.values['animal']} does the friend known for '{answer}' own?"],
                    pet.values["breed"],
                    [gossip[0], pet],
                )
            )
        if "hobby" in kinds and "health" in kinds:
            out.append(
                Candidate(
                    "multi_hop",
                    [f"Which pastime did the person who had {kinds['health'][0].values['injury'][1]} take up?"],
                    kinds["hobby"][0].values["hobby"][1],
                    [kinds["health"][0], kinds["hobby"][0]],
                )
            )
        if "move" in kinds and "job_change" in kinds:
            out.append(
                Candidate(
                    "multi_hop",
                    [f"Which happened for {p}: a new city, a new employer, or both?"],
                    f"both: {kinds['move'][0].values['city']} and {kinds['job_change'][0].values['company']}",
                    [kinds["move"][0], kinds["job_change"][0]],
                )
            )
    owners: dict[str, list[Fact]] = {}
    for f in facts:
        if f.kind == "pet":
            owners.setdefault(f.values["animal"], []).append(f)
    for animal, fs in owners.items():
        if len(fs) >= 2:
            names = " and ".join(sorted(x.owner for x in fs))
            out.append(
                Candidate(
                    "multi_hop",
                    [f"Who in the group owns {an(animal)}?", f"Which of the friends have {an(animal)} at home?"],
                    names,
                    fs,
                )
            )
    return out


def temporal_pairs(facts: list[Fact], people: list[str]) -> list[Candidate]:
    """'What did X do shortly after ...' and 'which came first' over two dated past facts of one person."""
    gist = {
        "trip": lambda f: (f"the {f.values['trip'][0]} trip", f"went to {f.values['trip'][0]}"),
        "pet": lambda f: (f"getting {f.values['name']}", f"got {an(f.values['breed'])} named {f.values['name']}"),
        "purchase": lambda f: (f"buying the {f.values['item'][1]}", f"bought {f.values['item'][0]}"),
        "health": lambda f: ("getting injured", f"got {f.values['injury'][1]}"),
    }
    out: list[Candidate] = []
    for p in people:
        dated = sorted(((f.when, f) for f in facts if f.owner == p and f.kind in gist and f.when), key=lambda wf: wf[0])
        for (a_when, a), (b_when, b) in zip(dated, dated[1:]):
            gap = (b_when - a_when).days
            if 2 <= gap <= 14:
                ga, _ = gist[a.kind](a)
                _, db = gist[b.kind](b)
                out.append(
                    Candidate(
                        "temporal",
                        [f"What did {p} do in the week or two after {ga}?", f"Shortly after {ga}, what did {p} do?"],
                        db,
                        [a, b],
                    )
                )
            if gap >= 5:
                ga, _ = gist[a.kind](a)
                gb, _ = gist[b.kind](b)
                out.append(Candidate("temporal", [f"Which came first for {p}: {gb} or {ga}?"], ga, [a, b]))
    return out


def adversarial(rng: random.Random, facts: list[Fact], people: list[str]) -> list[Candidate]:
    """Questions about things never said: the wrong person, or the wrong object."""
    out: list[Candidate] = []
    kinds = {p: {f.kind for f in facts if f.owner == p} for p in people}
    animals = {p: {f.values["animal"] for f in facts if f.owner == p and f.kind == "pet"} for p in people}
    places = {f.values["trip"][0] for f in facts if f.kind == "trip"}
    hobbies = {p: {f.values["hobby"][1] for f in facts if f.owner == p and f.kind == "hobby"} for p in people}
    cats = {p: {f.values["item"][1] for f in facts if f.owner == p and f.kind == "purchase"} for p in people}
    for f in facts:
        others = [q for q in people if q != f.owner]
        q = rng.choice(others)
        v = f.values
        if f.kind == "pet":
            if not animals[q]:
                out.append(Candidate("adversarial", [f"What did {q} name the new {v['animal']}?"], NOT_MENTIONED, []))
            other = rng.choice([a for a in ANIMALS if a not in animals[f.owner]])
            out.append(Candidate("adversarial", [f"What breed is {f.owner}'s {other}?"], NOT_MENTIONED, []))
        if f.kind == "health" and "health" not in kinds[q]:
            out.append(
                Candidate(
                    "adversarial", [f"How did {q} get the {v['injury'][1].removeprefix('a ')}?"], NOT_MENTIONED, []
                )
            )
        if f.kind == "job_change" and "job_change" not in kinds[q]:
            out.append(
                Candidate("adversarial", [f"Which company is {q} joining as {an(v['job'])}?"], NOT_MENTIONED, [])
            )
        if f.kind == "trip":
            unseen = [t[0] for t in TRIPS if t[0] not in places]
            out.append(Candidate("adversarial", [f"When did {f.owner} visit {rng.choice(unseen)}?"], NOT_MENTIONED, []))
        if f.kind == "hobby" and v["hobby"][1] not in hobbies[q]:
            out.append(Candidate("adversarial", [f"How long has {q} been into {v['hobby'][1]}?"], NOT_MENTIONED, []))
        if f.kind == "purchase" and v["item"][1] not in cats[q]:
            out.append(Candidate("adversarial", [f"What {v['item'][1]} did {q} recently buy?"], NOT_MENTIONED, []))
        if f.kind == "move" and "move" not in kinds[q]:
            out.append(Candidate("adversarial", [f"Which city is {q} relocating to?"], NOT_MENTIONED, []))
    return out


# --- conversations ----------------------------------------------------------------------------------------------


def build_conversation(rng: random.Random, index: int) -> tuple[list[dict], list[dict]]:
    conv = f"conv-{index:02d}"
    people = rng.sample(NAMES, rng.choice([2, 2, 3, 3, 4]))
    n_sessions = rng.randint(15, 30)
    span = rng.randint(60, 175)
    start = date(2025, 1, 6) + timedelta(days=rng.randint(0, 420))
    offsets = sorted(rng.sample(range(1, span), n_sessions - 2)) if n_sessions > 2 else []
    days = [start] + [start + timedelta(days=o) for o in offsets] + [start + timedelta(days=span)]
    total = rng.randint(330, 660)
    facts = plan_facts(rng, people, n_sessions)
    per_session: dict[int, list[Fact]] = {}
    for f in facts:
        per_session.setdefault(f.session, []).append(f)
    records: list[dict] = []
    for s, day in enumerate(days):
        clock = datetime.combine(day, time(rng.randint(8, 21), rng.randrange(0, 60, 5)), tzinfo=UTC)
        session_turns: list[tuple[str, str]] = []

        def say(speaker: str, text: str) -> int:
            session_turns.append((speaker, text))
            return len(session_turns) - 1

        target = max(8, int(total / n_sessions * rng.uniform(0.7, 1.3)))
        opener = rng.choice(people)
        say(opener, rng.choice(GREETINGS))
        for other in rng.sample([x for x in people if x != opener], rng.randint(1, len(people) - 1)):
            say(other, rng.choice(GREETING_REPLIES).format(n=opener))
        pending = list(per_session.get(s, []))
        rng.shuffle(pending)
        positions: dict[int, Fact] = {}
        while pending or len(session_turns) < target - 2:
            if pending and (rng.random() < 0.45 or len(session_turns) >= target - 4 - 3 * len(pending)):
                f = pending.pop()
                owner = f.owner
                if f.speaker == owner and rng.random() < 0.5:
                    asker = rng.choice([x for x in people if x != owner])
                    say(asker, rng.choice(ASK_OTHER).format(n=owner))
                text = rng.choice(OPENERS) + render_fact(rng, f, day)
                positions[say(f.speaker, text)] = f
                for reactor in rng.sample([x for x in people if x != f.speaker], rng.randint(1, len(people) - 1)):
                    pool = (
                        REACTIONS
                        + [
                            x.format(x=f.values.get("name", "them"))
                            for x in FOLLOWUPS["job" if f.kind == "job_change" else f.kind]
                        ]
                        * 2
                    )
                    say(reactor, rng.choice(pool))
                if f.kind == "gossip":
                    say(owner, rng.choice(OWNER_CONFIRM))
                elif rng.random() < 0.4:
                    say(owner, rng.choice(ANSWERS + ["haha yeah", "thanks!!", "I know right", "yeah it's a lot"]))
            else:
                a = rng.choice(people)
                if rng.random() < 0.5:
                    b = rng.choice([x for x in people if x != a])
                    say(a, rng.choice(ASK_OTHER).format(n=b))
                    say(b, rng.choice(ANSWERS))
                    if rng.random() < 0.5:
                        say(b, rng.choice(OPENERS) + rng.choice(SMALLTALK))
                        say(a, rng.choice(REACTIONS))
                else:
                    say(a, rng.choice(OPENERS) + rng.choice(SMALLTALK))
                    for r in rng.sample([x for x in people if x != a], rng.randint(1, len(people) - 1)):
                        say(r, rng.choice(REACTIONS))
        leaver = rng.choice(people)
        say(leaver, rng.choice(FAREWELLS))
        say(rng.choice([x for x in people if x != leaver]), rng.choice(FAREWELL_REPLIES).format(n=leaver))
        for t, (speaker, text) in enumerate(session_turns, start=1):
            clock += timedelta(seconds=rng.randint(20, 150))
            tid = f"{conv}:D{s + 1}:{t}"
            if t - 1 in positions:
                positions[t - 1].turn_id = tid
                positions[t - 1].text = text
            records.append(
                {
                    "id": tid,
                    "channel": "chat",
                    "author": {"id": f"u-{speaker.lower()}", "name": speaker},
                    "timestamp": clock.isoformat(),
                    "text": text,
                }
            )
    questions = make_questions(rng, conv, facts, people)
    return records, questions


def make_questions(rng: random.Random, conv: str, facts: list[Fact], people: list[str]) -> list[dict]:
    by_person = {p: [f for f in facts if f.owner == p] for p in people}
    candidates: list[Candidate] = []
    for f in facts:
        candidates += fact_questions(f, by_person)
    candidates += multi_hop(facts, people) + temporal_pairs(facts, people) + adversarial(rng, facts, people)
    chosen: list[tuple[Candidate, str]] = []
    seen_q: set[str] = set()
    for category in CATEGORIES:
        pool = [c for c in candidates if c.category == category]
        rng.shuffle(pool)
        taken = 0
        for cand in pool:
            if taken >= TARGET[category]:
                break
            ok = [
                q
                for q in cand.phrasings
                if q not in seen_q and all(shared_fraction(q, e.text) <= MAX_SHARED for e in cand.evidence)
            ]
            if not ok:
                continue
            # Half the time the phrasing that reuses the most evidence words (still within the cap), as people
            # asking about a chat often reuse its key noun; otherwise any allowed phrasing.
            overlap = {x: max((shared_fraction(x, e.text) for e in cand.evidence), default=0.0) for x in ok}
            q = max(ok, key=lambda x: overlap[x]) if rng.random() < 0.5 else rng.choice(ok)
            seen_q.add(q)
            chosen.append((cand, q))
            taken += 1
    split = "dev" if int(conv.split("-")[1]) < DEV_CONVERSATIONS else "heldout"
    return [
        {
            "qid": f"{conv}-q{i:03d}",
            "conv": conv,
            "category": cand.category,
            "question": q,
            "answer": cand.answer,
            "evidence": [e.turn_id for e in cand.evidence],
            "split": split,
        }
        for i, (cand, q) in enumerate(chosen)
    ]


def check(conversations: dict[str, list[dict]], questions: list[dict]) -> None:
    ids = {r["id"]: r for recs in conversations.values() for r in recs}
    assert len(ids) == sum(len(r) for r in conversations.values()), "turn ids are not unique"
    assert len({q["qid"] for q in questions}) == len(questions), "question ids are not unique"
    for q in questions:
        assert q["category"] in CATEGORIES
        assert (q["category"] == "adversarial") == (not q["evidence"]), q["qid"]
        for e in q["evidence"]:
            assert e in ids and e.startswith(q["conv"] + ":"), (q["qid"], e)
            frac = shared_fraction(q["question"], ids[e]["text"])
            assert frac <= MAX_SHARED, (q["qid"], q["question"], ids[e]["text"], frac)


def write_readme(out: Path, conversations: dict[str, list[dict]], questions: list[dict]) -> None:
    counts = Counter((q["split"], q["category"]) for q in questions)
    rows = []
    for cat in CATEGORIES:
        rows.append(
            f"| {cat} | {counts['dev', cat]} | {counts['heldout', cat]} | "
            f"{counts['dev', cat] + counts['heldout', cat]} |"
        )
    dev_n = sum(v for (s, _), v in counts.items() if s == "dev")
    held_n = sum(v for (s, _), v in counts.items() if s == "heldout")
    conv_rows = []
    for conv, recs in conversations.items():
        people = sorted({r["author"]["name"] for r in recs})
        sessions = len({r["id"].split(":")[1] for r in recs})
        first, last = recs[0]["timestamp"][:10], recs[-1]["timestamp"][:10]
        nq = sum(q["conv"] == conv for q in questions)
        split = "dev" if int(conv.split("-")[1]) < DEV_CONVERSATIONS else "heldout"
        conv_rows.append(
            f"| {conv} | {split} | {', '.join(people)} | {sessions} | {len(recs)} | {first} .. {last} | {nq} |"
        )
    text = f"""# Memory evaluation data (generated)

Written by `python bench/memory_data.py` (stdlib only, seed {SEED}); do not edit by hand, change the generator and
re-run it. Used by `python bench/memory_eval.py`.

**Never tune on `heldout`.** Choose every default (fusion weights, thresholds, prompt layout) on `dev`
(conv-00..05) and only report `heldout` (conv-06..09). If heldout numbers are used to pick anything, they stop
meaning anything.

## Files

- `conv-NN.jsonl`: one conversation in `hippobot import`'s JSON Lines format, one message a line:
  `{{"id": "conv-03:D4:12", "channel": "chat", "author": {{"id": "u-maya", "name": "Maya"}},
  "timestamp": "2026-03-14T19:02:00+00:00", "text": "..."}}`. The id is `conv:D<session>:<turn>` (both from 1).
  Sessions are dated days; turns within one are 20-150 s apart.
- `questions.jsonl`: one question a line: `{{"qid", "conv", "category", "question", "answer", "evidence": [turn
  ids], "split": "dev"|"heldout"}}`. Temporal answers are resolved against the session's date ("last Saturday"
  said on 14 March 2026 is "7 March 2026"; "next month" is the month). Adversarial questions ask about something
  never said (another person, another animal, a place nobody visited): evidence `[]`, answer `"{NOT_MENTIONED}"`.

## What is in the conversations

2-4 people per conversation chat about their lives between greetings, small talk and reactions: jobs (and a new
job for some), where they live (and a move for some), pets, trips, family news, hobbies, dislikes, purchases,
injuries, upcoming events, and news one friend tells about another. The same kinds of fact recur for several
people and dates, so every question has distractors. Questions use other words than their evidence
(pet/dog/puppy, employer/company, relocate/move): the generator keeps only phrasings that share at most
{int(MAX_SHARED * 100)} % of their content words (stopwords dropped, plural/possessive folded) with every
evidence turn's text, and asserts it.

## Counts

{len(questions)} questions: {dev_n} dev, {held_n} heldout.

| category | dev | heldout | all |
| --- | --- | --- | --- |
{chr(10).join(rows)}

| conversation | split | people | sessions | turns | dates | questions |
| --- | --- | --- | --- | --- | --- | --- |
{chr(10).join(conv_rows)}
"""
    (out / "README.md").write_text(text, encoding="utf-8")


def main() -> None:
    rng = random.Random(SEED)
    out = DATA_DIR
    out.mkdir(parents=True, exist_ok=True)
    conversations: dict[str, list[dict]] = {}
    questions: list[dict] = []
    for i in range(CONVERSATIONS):
        records, qs = build_conversation(rng, i)
        conversations[f"conv-{i:02d}"] = records
        questions += qs
    check(conversations, questions)
    for conv, records in conversations.items():
        with (out / f"{conv}.jsonl").open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    with (out / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    write_readme(out, conversations, questions)
    counts = Counter(q["category"] for q in questions)
    print(
        f"{len(conversations)} conversations, {sum(len(r) for r in conversations.values())} turns, "
        f"{len(questions)} questions: {dict(counts)}"
    )


if __name__ == "__main__":
    main()
