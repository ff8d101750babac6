#!/usr/bin/env python3
"""Generates configs/data/simple_english.txt: simple English from a seeded probabilistic grammar.

What it writes: paragraphs of short English sentences built from a lexicon of about 280 common words,
533 word forms in all (names, pronouns, nouns with their plurals, verbs with their -s, past and -ing forms,
adjectives, prepositions, adverbs, time phrases). The grammar has a handful of sentence shapes: statements in the
present (with subject-verb agreement) and the past, copula sentences ("The cat is happy."), progressive
sentences, "there is / there are", sentences joined with "and" / "but" / "because", yes/no and wh-questions
with short answers, two-line dialogues in quotation marks, and small stories in which one character does a
few things in a row. Every paragraph is one line; paragraphs are separated by a blank line.

Why: a tiny character-level transformer trained for about a minute on two cores sees only a few hundred
thousand characters. A natural corpus of 100-200 KB has a vocabulary of thousands of words that each occur a
few times, so such a model learns letter statistics and samples pseudo-words. Here a few hundred words recur
thousands of times in a few sentence shapes, so the same model learns to spell them and to put them in a
plausible order within that minute; that makes the effect of training visible in a sample.

Everything here is written for this project (no text is copied from elsewhere). The output depends only on
the arguments: random.Random(seed) drives every choice, all choices are made from lists in a fixed order,
and the same seed and size give byte-identical output.

Usage (Python 3 standard library only):
  python3 configs/data/make_corpus.py --out configs/data/simple_english.txt     # the shipped corpus (seed 7, 150 KB)
  python3 configs/data/make_corpus.py --seed 3 --size-kb 120 --out other.txt
  python3 configs/data/make_corpus.py --check configs/data/simple_english.txt   # regenerate with the defaults, compare
  python3 configs/data/make_corpus.py --lexicon              # every word form the grammar writes, one a line
  python3 configs/data/make_corpus.py --score sample.txt     # fraction of its words (runs of letters) in the lexicon
"""
import argparse
import random
import re
import sys

DEFAULT_SEED = 7
DEFAULT_SIZE_KB = 150

# ---------------------------------------------------------------------------------------------------------
# Lexicon
# ---------------------------------------------------------------------------------------------------------

# People by name: (name, pronoun) with pronoun "he" or "she".
NAMES = [
    ("Tom", "he"), ("Anna", "she"), ("Sam", "he"), ("Lily", "she"), ("Ben", "he"), ("Mia", "she"),
    ("Max", "he"), ("Emma", "she"), ("Leo", "he"), ("Nora", "she"), ("Jack", "he"), ("Rosa", "she"),
]

# Nouns: (singular, plural, kind). Kinds: "person", "animal", "thing", "food", "place".
NOUNS = [
    ("boy", "boys", "person"), ("girl", "girls", "person"), ("man", "men", "person"),
    ("woman", "women", "person"), ("child", "children", "person"), ("teacher", "teachers", "person"),
    ("farmer", "farmers", "person"), ("friend", "friends", "person"), ("mother", "mothers", "person"),
    ("father", "fathers", "person"), ("sister", "sisters", "person"), ("brother", "brothers", "person"),
    ("baby", "babies", "person"), ("doctor", "doctors", "person"), ("cook", "cooks", "person"),
    ("king", "kings", "person"), ("queen", "queens", "person"), ("baker", "bakers", "person"),
    ("cat", "cats", "animal"), ("dog", "dogs", "animal"), ("bird", "birds", "animal"),
    ("fox", "foxes", "animal"), ("horse", "horses", "animal"), ("cow", "cows", "animal"),
    ("duck", "ducks", "animal"), ("mouse", "mice", "animal"), ("rabbit", "rabbits", "animal"),
    ("frog", "frogs", "animal"), ("bear", "bears", "animal"), ("sheep", "sheep", "animal"),
    ("goat", "goats", "animal"), ("puppy", "puppies", "animal"), ("owl", "owls", "animal"),
    ("ball", "balls", "thing"), ("book", "books", "thing"), ("box", "boxes", "thing"),
    ("cup", "cups", "thing"), ("hat", "hats", "thing"), ("bag", "bags", "thing"),
    ("key", "keys", "thing"), ("lamp", "lamps", "thing"), ("coat", "coats", "thing"),
    ("shoe", "shoes", "thing"), ("kite", "kites", "thing"), ("basket", "baskets", "thing"),
    ("bottle", "bottles", "thing"), ("clock", "clocks", "thing"), ("map", "maps", "thing"),
    ("pen", "pens", "thing"), ("plate", "plates", "thing"), ("spoon", "spoons", "thing"),
    ("stone", "stones", "thing"), ("shell", "shells", "thing"), ("letter", "letters", "thing"),
    ("picture", "pictures", "thing"), ("chair", "chairs", "thing"), ("toy", "toys", "thing"),
    ("boat", "boats", "thing"), ("flower", "flowers", "thing"), ("leaf", "leaves", "thing"),
    ("song", "songs", "thing"), ("story", "stories", "thing"), ("drum", "drums", "thing"),
    ("apple", "apples", "food"), ("cake", "cakes", "food"), ("egg", "eggs", "food"),
    ("pie", "pies", "food"), ("cookie", "cookies", "food"), ("orange", "oranges", "food"),
    ("carrot", "carrots", "food"), ("sandwich", "sandwiches", "food"), ("pear", "pears", "food"),
    ("garden", "gardens", "place"), ("park", "parks", "place"), ("house", "houses", "place"),
    ("kitchen", "kitchens", "place"), ("school", "schools", "place"), ("shop", "shops", "place"),
    ("forest", "forests", "place"), ("river", "rivers", "place"), ("hill", "hills", "place"),
    ("field", "fields", "place"), ("village", "villages", "place"), ("beach", "beaches", "place"),
    ("room", "rooms", "place"), ("farm", "farms", "place"), ("lake", "lakes", "place"),
]

# Places for prepositional phrases: (preposition, noun); the noun is in NOUNS or is one of these extras.
PLACE_EXTRA = ["table", "bed", "tree", "door", "window", "bridge", "road", "wall"]
LOCATIONS = [
    ("in", "garden"), ("in", "park"), ("in", "house"), ("in", "kitchen"), ("at", "school"), ("in", "shop"),
    ("in", "forest"), ("near", "river"), ("on", "hill"), ("in", "field"), ("in", "village"),
    ("on", "beach"), ("in", "room"), ("on", "farm"), ("by", "lake"), ("under", "table"), ("on", "table"),
    ("under", "bed"), ("under", "tree"), ("behind", "tree"), ("by", "door"), ("near", "window"),
    ("on", "bridge"), ("across", "road"), ("behind", "wall"), ("next to", "house"), ("near", "school"),
]
# Where one goes: "to the park".
DESTINATIONS = ["garden", "park", "shop", "school", "forest", "river", "hill", "field", "village", "beach",
                "farm", "lake", "kitchen"]

# Verbs: (base, third person singular, past, -ing).
def _regular(base):
    if base.endswith("e") and not base.endswith("ee"):
        ing = base[:-1] + "ing"
        past = base + "d"
    elif base.endswith("y") and base[-2] not in "aeiou":
        ing = base + "ing"
        past = base[:-1] + "ied"
    else:
        ing = base + "ing"
        past = base + "ed"
    if base.endswith(("s", "sh", "ch", "x", "o")):
        third = base + "es"
    elif base.endswith("y") and base[-2] not in "aeiou":
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    return (base, third, past, ing)


def _verb(base, past=None, ing=None, third=None):
    r = _regular(base)
    return (base, third or r[1], past or r[2], ing or r[3])


# Transitive verbs: (forms, object kinds).
TRANSITIVE = [
    (_verb("see", past="saw", ing="seeing"), ("person", "animal", "thing", "food")),
    (_verb("like"), ("person", "animal", "thing", "food")),
    (_verb("want"), ("thing", "food")),
    (_verb("find", past="found"), ("animal", "thing")),
    (_verb("take", past="took"), ("thing", "food")),
    (_verb("make", past="made"), ("thing", "food")),
    (_verb("hold", past="held"), ("thing", "animal")),
    (_verb("open"), ("thing",)),
    (_verb("carry"), ("thing", "food", "animal")),
    (_verb("buy", past="bought"), ("thing", "food")),
    (_verb("bring", past="brought"), ("thing", "food")),
    (_verb("draw", past="drew"), ("thing", "animal", "person")),
    (_verb("watch"), ("person", "animal")),
    (_verb("need"), ("thing", "food")),
    (_verb("love"), ("person", "animal", "thing")),
    (_verb("help"), ("person",)),
    (_verb("visit"), ("person",)),
    (_verb("call"), ("person", "animal")),
    (_verb("meet", past="met"), ("person",)),
    (_verb("follow"), ("person", "animal")),
    (_verb("eat", past="ate"), ("food",)),
    (_verb("cook"), ("food",)),
    (_verb("wash"), ("thing", "food")),
    (_verb("paint", past="painted"), ("thing",)),
    (_verb("drop", past="dropped", ing="dropping"), ("thing", "food")),
    (_verb("lose", past="lost"), ("thing",)),
    (_verb("feed", past="fed"), ("animal",)),
    (_verb("hug", past="hugged", ing="hugging"), ("person", "animal")),
    (_verb("pick up", past="picked up"), ("thing", "food")),
]
for _i, (_forms, _kinds) in enumerate(TRANSITIVE):  # "pick up" needs its particle after every form
    if _forms[0] == "pick up":
        TRANSITIVE[_i] = (("pick up", "picks up", "picked up", "picking up"), _kinds)

STATIVE = ("see", "like", "want", "need", "love")

# Intransitive verbs, optionally with a location or an adverb.
INTRANSITIVE = [
    _verb("sleep", past="slept"), _verb("run", past="ran", ing="running"), _verb("walk"),
    _verb("sing", past="sang"), _verb("jump"), _verb("play"), _verb("swim", past="swam", ing="swimming"),
    _verb("laugh"), _verb("smile"), _verb("sit", past="sat", ing="sitting"), _verb("wait"), _verb("dance"),
    _verb("work"), _verb("rest"), _verb("cry"), _verb("read", past="read"), _verb("hide", past="hid"),
    _verb("stay"), _verb("listen"), _verb("dig", past="dug", ing="digging"),
]
GO = ("go", "goes", "went", "going")
COME = ("come", "comes", "came", "coming")

ADJECTIVES = [
    "big", "small", "little", "old", "new", "red", "blue", "green", "yellow", "white", "black", "brown",
    "happy", "sad", "tired", "hungry", "warm", "cold", "soft", "long", "tall", "round", "clean", "dirty",
    "quiet", "kind", "good", "nice", "funny", "pretty", "bright", "dark", "heavy", "fast", "slow", "young",
    "busy", "wet", "sweet", "fresh", "brave", "shiny",
]
# Adjectives that suit each kind (for "The cat is hungry." and "a red ball").
ADJ_FOR = {
    "person": ["happy", "sad", "tired", "hungry", "kind", "busy", "young", "old", "tall", "brave", "funny",
               "little", "quiet", "good"],
    "animal": ["big", "small", "little", "old", "young", "happy", "hungry", "tired", "brown", "white",
               "black", "fast", "slow", "wet", "funny", "quiet", "soft"],
    "thing": ["big", "small", "old", "new", "red", "blue", "green", "yellow", "white", "black", "brown",
              "long", "round", "clean", "dirty", "heavy", "pretty", "shiny", "bright", "soft", "wet"],
    "food": ["big", "small", "fresh", "sweet", "warm", "cold", "round", "green", "red", "yellow", "good"],
    "place": ["big", "small", "old", "quiet", "dark", "green", "nice", "warm", "cold", "clean"],
}
ADVERBS = ["quickly", "slowly", "quietly", "happily", "softly", "carefully", "together", "again"]
FREQUENCY = ["often", "always", "never", "sometimes", "usually"]
TIMES_PRESENT = ["every day", "in the morning", "at night", "after school", "on Sunday", "before dinner",
                 "in the evening", "every morning"]
TIMES_PAST = ["yesterday", "last night", "this morning", "on Monday", "after lunch", "one day", "later",
              "in the afternoon"]
NUMBERS = ["two", "three", "four", "five", "six", "many", "some"]
FEELINGS = ["happy", "sad", "tired", "hungry", "glad", "sleepy", "cold", "warm"]
STORY_ENDINGS = [
    "Then {p} went home.", "After that, {p} was very happy.", "That night, {p} slept well.",
    "It was a good day.", "And that was the end of the day.", "Then everyone had dinner together.",
]

# Words that only the templates below write; with the word forms above they make the lexicon.
FUNCTION_WORDS = (
    "a an the this that these those my your his her our their some i you he she it we they me him us them "
    "am is are was were do does did not no yes and but because so then there where what who to very too "
    "can have has had please here mine let look oh see me once upon time named lived everyone "
    "end after that well said asked".split()
)

# ---------------------------------------------------------------------------------------------------------
# Grammar
# ---------------------------------------------------------------------------------------------------------


class Np:
    """A noun phrase: its text and what agreement and pronouns it needs."""

    def __init__(self, text, plural, pronoun, kind, head):
        self.text, self.plural, self.pronoun, self.kind, self.head = text, plural, pronoun, kind, head


class Grammar:
    def __init__(self, rng):
        self.r = rng
        self.by_kind = {}
        for sg, pl, kind in NOUNS:
            self.by_kind.setdefault(kind, []).append((sg, pl))

    # small helpers ------------------------------------------------------------------------------------
    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def chance(self, p):
        return self.r.random() < p

    @staticmethod
    def article(word, definite):
        if definite:
            return "the"
        return "an" if word[0] in "aeiou" else "a"

    # noun phrases --------------------------------------------------------------------------------------
    def noun_phrase(self, kinds, allow_plural=True, allow_name=False, definite=None, adj_p=0.35):
        if allow_name and "person" in kinds and self.chance(0.3):
            name, pron = self.pick(NAMES)
            return Np(name, False, pron, "person", name)
        kind = self.pick(kinds)
        sg, pl = self.pick(self.by_kind[kind])
        plural = allow_plural and self.chance(0.3)
        head = pl if plural else sg
        adj = self.pick(ADJ_FOR[kind]) if self.chance(adj_p) else None
        words = ([adj] if adj else []) + [head]
        if definite is None:
            definite = self.chance(0.6)
        if plural:
            det = self.pick(["the", "the", "some", "two", "three", "many", "my", "our", "their"]) if not definite \
                else self.pick(["the", "the", "the", "these", "those", "my", "our", "your"])
            if det in ("the",) and not definite:
                det = "some"
        else:
            det = self.pick(["the", "the", "the", "this", "that", "my", "your", "his", "her"]) if definite \
                else self.article(words[0], False)
        if kind == "person" and not plural:
            pron = "she" if sg in ("girl", "woman", "mother", "sister", "queen") else \
                "he" if sg in ("boy", "man", "father", "brother", "king") else self.pick(["he", "she"])
        else:
            pron = "they" if plural else ("it" if kind != "person" else "he")
        return Np(" ".join([det] + words), plural, pron, kind, head)

    def subject(self, animate_only=True):
        """A subject: a name, a pronoun or a noun phrase."""
        x = self.r.random()
        if x < 0.12:
            p = self.pick(["I", "you", "we", "they", "he", "she"])
            return Np(p, p in ("I", "you", "we", "they"), p.lower() if p != "I" else "I", "person", p)
        kinds = ["person", "animal"] if animate_only else ["person", "animal", "thing"]
        return self.noun_phrase(kinds, allow_name=True)

    def location(self):
        prep, noun = self.pick(LOCATIONS)
        det = self.pick(["the", "the", "the", "a", "my", "our"])
        if det == "a":
            det = self.article(noun, False)
        if self.chance(0.2):
            kind = "place" if any(n == noun for n, _ in self.by_kind["place"]) else "thing"
            adj = self.pick(ADJ_FOR[kind])
            if det in ("a", "an"):
                det = self.article(adj, False)
            return f"{prep} {det} {adj} {noun}"
        return f"{prep} {det} {noun}"

    # verbs ---------------------------------------------------------------------------------------------
    @staticmethod
    def present(forms, subj):
        third = not subj.plural and subj.text not in ("I", "you")
        return forms[1] if third else forms[0]

    @staticmethod
    def be_present(subj):
        if subj.text == "I":
            return "am"
        return "are" if subj.plural or subj.text == "you" else "is"

    @staticmethod
    def be_past(subj):
        return "were" if subj.plural or subj.text == "you" else "was"

    def object_of(self, kinds):
        if "person" in kinds and self.chance(0.15):
            return self.pick(["me", "him", "her", "us", "them"])
        return self.noun_phrase(list(kinds), allow_name=True).text

    def predicate(self, subj, tense):
        """A verb phrase agreeing with subj, in 'present', 'past' or 'progressive'."""
        x = self.r.random()
        if x < 0.5:
            forms, kinds = self.pick(TRANSITIVE)
            while tense == "progressive" and forms[0] in STATIVE:  # not "is liking", "is needing"
                forms, kinds = self.pick(TRANSITIVE)
            tail = self.object_of(kinds)
            if self.chance(0.3):
                tail += " " + self.location()
        elif x < 0.8:
            forms = self.pick(INTRANSITIVE)
            tail = self.location() if self.chance(0.55) else (self.pick(ADVERBS) if self.chance(0.5) else "")
        else:
            forms = self.pick([GO, GO, COME])
            tail = "to the " + self.pick(DESTINATIONS) if forms is GO else "home"
            if self.chance(0.3):
                tail += " " + self.pick(ADVERBS[:4])
        if tense == "past":
            verb = forms[2]
        elif tense == "progressive":
            verb = self.be_present(subj) + " " + forms[3]
        else:
            verb = self.present(forms, subj)
            if self.chance(0.15):
                verb = self.pick(FREQUENCY) + " " + verb
        return (verb + " " + tail).strip()

    # sentences -----------------------------------------------------------------------------------------
    @staticmethod
    def cap(s):
        return s[0].upper() + s[1:]

    def statement(self, tense=None):
        subj = self.subject()
        tense = tense or self.pick(["present", "present", "past", "past", "progressive"])
        s = subj.text + " " + self.predicate(subj, tense)
        if tense == "past" and self.chance(0.3):
            s = self.cap(self.pick(TIMES_PAST)) + ", " + s
        elif tense == "present" and self.chance(0.25):
            s += " " + self.pick(TIMES_PRESENT)
        return self.cap(s) + "."

    def copula(self):
        if self.chance(0.5):
            subj = self.noun_phrase(["person", "animal", "thing", "food"], allow_name=True, definite=True,
                                    adj_p=0.1)
        else:
            subj = self.subject()
        adj = self.pick(ADJ_FOR[subj.kind])
        be = self.be_present(subj) if self.chance(0.6) else self.be_past(subj)
        mod = self.pick(["", "", "", "very ", "not ", "too "])
        tail = "" if not self.chance(0.3) else " " + self.location()
        return self.cap(f"{subj.text} {be} {mod}{adj}{tail}") + "."

    def there_is(self):
        if self.chance(0.5):
            np = self.noun_phrase(["animal", "thing", "food"], allow_plural=False, definite=False)
            be = self.pick(["is", "was"])
        else:
            kind = self.pick(["animal", "thing", "food"])
            _, pl = self.pick(self.by_kind[kind])
            adj = (self.pick(ADJ_FOR[kind]) + " ") if self.chance(0.3) else ""
            np = Np(f"{self.pick(NUMBERS)} {adj}{pl}", True, "they", kind, pl)
            be = self.pick(["are", "were"])
        return f"There {be} {np.text} {self.location()}."

    def compound(self):
        a = self.statement()[:-1]
        conj = self.pick([", and ", ", but ", " because ", ", so "])
        b = self.statement()[:-1]
        first = b.split(" ", 1)[0].rstrip(",")
        if first != "I" and all(first != n for n, _ in NAMES):  # names and "I" keep their capital
            b = b[0].lower() + b[1:]
        return a + conj + b + "."

    def question(self):
        """A question and, usually, its answer."""
        x = self.r.random()
        subj = self.subject()
        pron = subj.pronoun if subj.pronoun != "I" else "you"
        if x < 0.35:  # yes/no with do
            forms, kinds = self.pick(TRANSITIVE)
            past = self.chance(0.4)
            aux = "did" if past else ("does" if self.present(("do", "does"), subj) == "does" else "do")
            if subj.text == "I":
                aux = "did" if past else "do"
            q = f"{self.cap(aux)} {subj.text} {forms[0]} {self.object_of(kinds)}?"
            ans_subj = {"I": "you", "you": "I"}.get(subj.text, pron)
            ans_aux = aux if ans_subj not in ("I", "you") else ("did" if past else "do")
            if ans_subj in ("he", "she", "it") and not past:
                ans_aux = "does"
            a = self.pick([f"Yes, {ans_subj} {ans_aux}.", f"No, {ans_subj} {ans_aux} not."])
            return q + " " + a
        if x < 0.55:  # where is
            np = self.noun_phrase(["person", "animal", "thing", "food"], definite=True, adj_p=0.3)
            be = "are" if np.plural else "is"
            pr = "They" if np.plural else self.cap(np.pronoun)
            return f"Where {be} {np.text}? {pr} {be} {self.location()}."
        if x < 0.7:  # who
            forms, kinds = self.pick(TRANSITIVE)
            obj = self.object_of(kinds)
            who = self.pick(NAMES)[0]
            past = self.chance(0.5)
            verb = forms[2] if past else forms[1]
            return f"Who {verb} {obj}? {who} did." if past else f"Who {verb} {obj}? {who} does."
        if x < 0.85:  # what does X want
            np = self.subject()
            want = self.pick(["want", "need", "like", "have"])
            if np.text == "I" or np.plural or np.text == "you":
                aux = "do"
            else:
                aux = "does"
            obj = self.noun_phrase(["thing", "food"], definite=False).text
            ans = {"I": "You", "you": "I"}.get(np.text, self.cap(np.pronoun))
            verb = want if ans in ("I", "You", "They", "We") else \
                {"want": "wants", "need": "needs", "like": "likes", "have": "has"}[want]
            if ans == "We":
                verb = want
            return f"What {aux} {np.text} {want}? {ans} {verb} {obj}."
        # is X adjective?
        np = self.noun_phrase(["person", "animal", "thing", "food"], definite=True, adj_p=0.0)
        adj = self.pick(ADJ_FOR[np.kind])
        be = "are" if np.plural else "is"
        pr = "they" if np.plural else np.pronoun
        return f"{self.cap(be)} {np.text} {adj}? " + self.pick([f"Yes, {pr} {be}.", f"No, {pr} {be} not."])

    def dialogue(self):
        a, pa = self.pick(NAMES)
        b, pb = self.pick(NAMES)
        while b == a:
            b, pb = self.pick(NAMES)
        x = self.r.random()
        if x < 0.25:
            np = self.noun_phrase(["thing", "food", "animal"], definite=True, allow_plural=False, adj_p=0.4)
            q = f'"Where is {np.text}?" asked {a}.'
            r = f'"It is {self.location()}," said {b}.'
        elif x < 0.5:
            np = self.noun_phrase(["thing", "food"], definite=True, allow_plural=False, adj_p=0.4)
            q = f'"Can I have {np.text}, please?" asked {a}.'
            r = self.pick([f'"Yes, you can," said {b}.', f'"No, it is mine," said {b}.',
                           f'"Here you are," said {b}.'])
        elif x < 0.7:
            feel = self.pick(FEELINGS)
            q = f'"I am {feel}," said {a}.'
            r = self.pick([f'"Me too," said {b}.', f'"Let us go home," said {b}.',
                           f'"I am not {feel}," said {b}.'])
        elif x < 0.85:
            dest = self.pick(DESTINATIONS)
            q = f'"Do you want to go to the {dest}?" asked {a}.'
            r = self.pick([f'"Yes, I do," said {b}.', f'"No, I want to stay home," said {b}.'])
        else:
            s = self.statement("past")
            q = f'"Look," said {a}. "{s[:-1]}!"'
            r = self.pick([f'"I see it," said {b}.', f'"That is funny," said {b}.', f'"Oh no," said {b}.'])
        return q + " " + r

    def story(self):
        """A small story: one character does a few things in the past tense."""
        if self.chance(0.5):
            kind_np = self.noun_phrase(["person", "animal"], allow_plural=False, definite=False, adj_p=0.6)
            kind_word = kind_np.text.split(" ", 1)[1]
            pron = kind_np.pronoun
            # a name that fits the noun: a girl is not named Tom (animals take any name and stay "it")
            names = [n for n, p in NAMES if kind_np.kind != "person" or p == pron]
            name = self.pick(names)
            art = self.article(kind_word, False)
            intro = self.pick([f"Once upon a time, there was {art} {kind_word} named {name}.",
                               f"There was once {art} {kind_word} named {name}."])
            refs = [name, name, pron]
        else:
            np = self.noun_phrase(["person", "animal"], allow_plural=False, definite=False, adj_p=0.6)
            words = np.text.split(" ", 1)[1]
            intro = self.pick([f"Once upon a time, there was {np.text}.", f"There was once {np.text}.",
                               f"{self.cap(np.text)} lived {self.location()}."])
            pron = np.pronoun
            refs = ["the " + words.split()[-1], "the " + words, pron]
        sentences = [intro]
        home = self.location()
        sentences.append(self.cap(f"{refs[2]} lived {home}.") if " lived " not in intro
                         else self.cap(f"{refs[2]} was very happy there."))
        for _ in range(self.r.randint(2, 4)):
            who = self.pick(refs)
            subj = Np(who, False, pron, "person", who)
            s = who + " " + self.predicate(subj, "past")
            if self.chance(0.3):
                s = self.pick(TIMES_PAST) + ", " + s
            sentences.append(self.cap(s) + ".")
            if self.chance(0.2):
                be = "was"
                sentences.append(self.cap(f"{self.pick(refs)} {be} {self.pick(FEELINGS)}."))
        sentences.append(self.pick(STORY_ENDINGS).format(p=self.pick(refs[1:])))
        text = " ".join(sentences)
        return text[0].upper() + text[1:]

    def paragraph(self):
        x = self.r.random()
        if x < 0.3:
            return self.story()
        if x < 0.45:
            return self.dialogue()
        parts = []
        for _ in range(self.r.randint(2, 5)):
            y = self.r.random()
            if y < 0.4:
                parts.append(self.statement())
            elif y < 0.55:
                parts.append(self.copula())
            elif y < 0.65:
                parts.append(self.there_is())
            elif y < 0.8:
                parts.append(self.compound())
            else:
                parts.append(self.question())
        return " ".join(parts)


def fix_case(text):
    """Capitalises a story ending like 'the fox went home' that a template put at a sentence start."""
    return re.sub(r'(^|[.?!] "?)([a-z])', lambda m: m.group(1) + m.group(2).upper(), text)


def generate(seed, size_kb):
    """The corpus: whole paragraphs until at least size_kb * 1024 bytes, as a str ending in a newline."""
    g = Grammar(random.Random(seed))
    target = size_kb * 1024
    out, n = [], 0
    while n < target:
        p = fix_case(g.paragraph())
        out.append(p)
        n += len(p.encode("utf-8")) + 2
    return "\n\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Lexicon and scoring
# ---------------------------------------------------------------------------------------------------------

WORD = re.compile(r"[A-Za-z]+")


def lexicon():
    """Every word the grammar can write, lower-case, sorted (nothing it cannot write, so that a sampled word
    that is in the lexicon is one the model saw in the corpus)."""
    words = [n.lower() for n, _ in NAMES]
    for sg, pl, kind in NOUNS:
        words += [sg] if kind == "place" else [sg, pl]  # places only occur after a preposition, singular
    words += PLACE_EXTRA
    for forms, _ in TRANSITIVE:
        for f in forms[:3] if forms[0] in STATIVE else forms:  # no "is liking"
            words += f.split()
    for forms in INTRANSITIVE + [GO, COME]:
        words += list(forms)
    words += ADJECTIVES + ADVERBS + FREQUENCY + NUMBERS + FEELINGS + FUNCTION_WORDS
    for group in (TIMES_PRESENT, TIMES_PAST, STORY_ENDINGS):
        for phrase in group:
            words += WORD.findall(phrase.replace("{p}", ""))
    words += [p for p, _ in LOCATIONS for p in p.split()]
    return sorted({w.lower() for w in words})


def score(text, lex):
    """(words in the lexicon, words) where a word is a maximal run of ASCII letters."""
    words = [w.lower() for w in WORD.findall(text)]
    return sum(1 for w in words if w in lex), len(words)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"grammar seed (default {DEFAULT_SEED})")
    ap.add_argument("--size-kb", type=int, default=DEFAULT_SIZE_KB,
                    help=f"stop after the paragraph that reaches this many KiB (default {DEFAULT_SIZE_KB})")
    ap.add_argument("--out", help="write the corpus here (default: standard output)")
    ap.add_argument("--check", metavar="PATH",
                    help="regenerate with the default seed and size and compare with PATH byte for byte")
    ap.add_argument("--lexicon", action="store_true", help="print the lexicon, one word a line")
    ap.add_argument("--score", metavar="PATH",
                    help="print the fraction of words in PATH ('-' = standard input) that are in the lexicon")
    args = ap.parse_args(argv)

    if args.lexicon:
        sys.stdout.write("\n".join(lexicon()) + "\n")
        return 0
    if args.score:
        text = sys.stdin.read() if args.score == "-" else open(args.score, encoding="utf-8").read()
        lex = set(lexicon())
        good, total = score(text, lex)
        frac = good / total if total else 0.0
        bad = [w for w in WORD.findall(text) if w.lower() not in lex]
        print(f"{good}/{total} words in the lexicon ({100 * frac:.1f}%); not in it: {' '.join(bad) or '-'}")
        return 0
    if args.check:
        want = generate(DEFAULT_SEED, DEFAULT_SIZE_KB).encode("utf-8")
        try:
            with open(args.check, "rb") as f:
                have = f.read()
        except OSError as e:
            print(f"make_corpus --check: FAIL: cannot read {args.check}: {e.strerror}")
            return 1
        if have != want:
            i = next((k for k in range(min(len(have), len(want))) if have[k] != want[k]), min(len(have), len(want)))
            print(f"make_corpus --check: FAIL: {args.check} ({len(have)} bytes) differs from the generator's "
                  f"output for seed {DEFAULT_SEED}, {DEFAULT_SIZE_KB} KB ({len(want)} bytes) first at byte {i}; "
                  f"regenerate with: python3 configs/data/make_corpus.py --out {args.check}")
            return 1
        good, total = score(want.decode("utf-8"), set(lexicon()))
        if good != total:
            print(f"make_corpus --check: FAIL: {total - good} words of the corpus are missing from the lexicon")
            return 1
        print(f"make_corpus --check: OK: {args.check} ({len(have)} bytes) is the output for seed {DEFAULT_SEED}, "
              f"{DEFAULT_SIZE_KB} KB")
        return 0

    text = generate(args.seed, args.size_kb)
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
