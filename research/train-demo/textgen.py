"""Danish sentence generator for the demo model: templates over a closed
vocabulary (numbers, dates and times, weather, directions, everyday
phrases, Danish towns and names).

Every sentence is written the way it is spoken (<|noitn|>: numbers as
words) with capitalisation and punctuation (<|pnc|>).

Splits are decided by a hash of the normalised sentence text, so that
held-out sentences can be generated at any time without the training
set at hand:  bucket = md5(norm(sentence)) % 100;  0..7 test, 8..9 dev,
10..99 train.  A two-sentence utterance belongs to a split only when
both of its sentences do.
"""

import hashlib
import re

ONES = ["nul", "en", "to", "tre", "fire", "fem", "seks", "syv", "otte", "ni", "ti",
        "elleve", "tolv", "tretten", "fjorten", "femten", "seksten", "sytten", "atten", "nitten"]
TENS = {20: "tyve", 30: "tredive", 40: "fyrre", 50: "halvtreds", 60: "tres",
        70: "halvfjerds", 80: "firs", 90: "halvfems"}
ORDINALS = ["", "første", "anden", "tredje", "fjerde", "femte", "sjette", "syvende", "ottende",
            "niende", "tiende", "ellevte", "tolvte", "trettende", "fjortende", "femtende",
            "sekstende", "syttende", "attende", "nittende", "tyvende", "enogtyvende",
            "toogtyvende", "treogtyvende", "fireogtyvende", "femogtyvende", "seksogtyvende",
            "syvogtyvende", "otteogtyvende", "niogtyvende", "tredivte", "enogtredivte"]
MONTHS = [("januar", 31), ("februar", 28), ("marts", 31), ("april", 30), ("maj", 31),
          ("juni", 30), ("juli", 31), ("august", 31), ("september", 30), ("oktober", 31),
          ("november", 30), ("december", 31)]
WEEKDAYS = ["mandag", "tirsdag", "onsdag", "torsdag", "fredag", "lørdag", "søndag"]
TOWNS = ["København", "Aarhus", "Odense", "Aalborg", "Esbjerg", "Randers", "Kolding", "Horsens",
         "Vejle", "Roskilde", "Herning", "Silkeborg", "Næstved", "Fredericia", "Viborg", "Køge",
         "Holstebro", "Taastrup", "Slagelse", "Hillerød", "Sønderborg", "Svendborg", "Hjørring",
         "Holbæk", "Frederikshavn", "Ringsted", "Haderslev", "Skive", "Nykøbing", "Ikast",
         "Helsingør", "Aabenraa", "Thisted", "Kalundborg", "Nyborg", "Middelfart", "Grenaa",
         "Skagen", "Ribe", "Tønder", "Varde", "Lemvig", "Struer", "Hobro", "Ringkøbing",
         "Billund", "Rønne", "Faaborg", "Sorø", "Vordingborg", "Ebeltoft", "Skanderborg", "Odder",
         "Brønderslev", "Frederikssund", "Hørsholm", "Greve", "Ballerup", "Lyngby", "Gentofte",
         "Maribo", "Nakskov", "Marstal", "Assens", "Bogense", "Kerteminde", "Løgstør",
         "Mariager", "Præstø", "Stege", "Dragør", "Hundested", "Rudkøbing", "Nexø", "Esrum"]
REGIONS = ["Nordjylland", "Sønderjylland", "Midtjylland", "Vestjylland", "Østjylland", "Sjælland",
           "Fyn", "Lolland", "Falster", "Bornholm", "Hovedstaden", "Møn", "Langeland", "Djursland",
           "Himmerland", "Thy", "Vendsyssel", "Salling", "Mors", "Als"]
NAMES = ["Anders", "Mette", "Lars", "Sofie", "Peter", "Anne", "Jens", "Kirsten", "Mads", "Ida",
         "Søren", "Freja", "Niels", "Camilla", "Henrik", "Emma", "Rasmus", "Louise", "Morten",
         "Laura", "Jesper", "Maria", "Thomas", "Julie", "Christian", "Line", "Frederik", "Karen",
         "Mikkel", "Hanne", "Ole", "Birgitte", "Jonas", "Signe", "Oliver", "Astrid"]
STREETS = ["Storegade", "Vestergade", "Østergade", "Nørregade", "Søndergade", "Kirkevej",
           "Skolevej", "Bygaden", "Havnegade", "Stationsvej", "Strandvejen", "Møllevej",
           "Parkvej", "Skovvej", "Engvej", "Bakkevej", "Algade", "Torvet", "Jernbanegade",
           "Bredgade"]
PLACES = ["banegården", "apoteket", "biblioteket", "rådhuset", "stranden", "havnen", "hospitalet",
          "posthuset", "kirken", "skolen", "supermarkedet", "museet", "parken", "torvet",
          "lufthavnen", "busstationen", "politistationen", "tandlægen", "bageren", "slagteren",
          "kiosken", "tankstationen", "biografen", "svømmehallen", "hotellet", "restauranten"]
LANDMARKS = ["kirken", "skolen", "lyskrysset", "rundkørslen", "tankstationen", "bageren",
             "stationen", "parken", "broen", "det gule hus", "den store bygning", "vandtårnet"]
DIRS = ["nord", "syd", "øst", "vest", "nordøst", "nordvest", "sydøst", "sydvest"]
LR = ["venstre", "højre"]
W_ADJ = ["solrigt", "skyet", "overskyet", "regnfuldt", "blæsende", "tåget", "koldt", "varmt",
         "lunt", "køligt", "vådt", "tørt", "diset", "gråt", "klart", "fugtigt", "stille",
         "frostklart", "ustadigt", "mildt"]
W_NOUN = ["regn", "sne", "sol", "tåge", "frost", "torden", "hagl", "slud", "blæst", "skyer",
          "solskin", "storm", "regnbyger", "snebyger", "isslag", "glatte veje", "skybrud", "kuling"]
WIND_ADJ = ["svag", "jævn", "frisk", "hård", "kraftig", "let"]
SHOWERS = ["byger", "regnbyger", "snebyger", "tordenbyger", "haglbyger"]
SHOWER_ADJ = ["lette", "kraftige", "spredte", "enkelte", "voldsomme"]
DAYPARTS = ["i eftermiddag", "i aften", "i nat", "i morgen", "i løbet af dagen", "i formiddag",
            "i morgen tidlig", "i weekenden", "hen under aften", "sidst på dagen"]
WHEN = ["i morgen", "i aften", "senere", "efter frokost", "om en time", "i eftermiddag",
        "i overmorgen", "i næste uge", "om lidt", "lige nu", "i weekenden"]
CLOTHES = ["paraplyen", "jakken", "huen", "handskerne", "solbrillerne", "regntøjet",
           "halstørklædet", "gummistøvlerne", "solcremen", "vinterfrakken"]
MEALS = ["morgenmad", "frokost", "aftensmad", "kaffe", "kage"]
# (singular with article, plural)
ITEMS = [("et æble", "æbler"), ("en banan", "bananer"), ("en appelsin", "appelsiner"),
         ("et rundstykke", "rundstykker"), ("en bolle", "boller"), ("en kop kaffe", "kopper kaffe"),
         ("en kop te", "kopper te"), ("et glas vand", "glas vand"), ("en flaske vin", "flasker vin"),
         ("et brød", "brød"), ("en liter mælk", "liter mælk"), ("et kilo kartofler", "kilo kartofler"),
         ("en pakke smør", "pakker smør"), ("et stykke ost", "stykker ost"), ("en avis", "aviser"),
         ("en billet", "billetter"), ("et frimærke", "frimærker"), ("en pose", "poser"),
         ("en kage", "kager"), ("en øl", "øl"), ("en sodavand", "sodavand"), ("en is", "is"),
         ("et æg", "æg"), ("en tomat", "tomater"), ("en agurk", "agurker"),
         ("en gulerod", "gulerødder"), ("et løg", "løg"), ("en pizza", "pizzaer"),
         ("en sandwich", "sandwich"), ("en croissant", "croissanter"),
         ("en tandbørste", "tandbørster"), ("et håndklæde", "håndklæder"),
         ("en paraply", "paraplyer"), ("en blomst", "blomster"), ("en bog", "bøger"),
         ("en pære", "pærer"), ("en citron", "citroner"), ("et stykke chokolade", "stykker chokolade")]
GROCERIES = ["mælk", "brød", "smør", "ost", "kaffe", "te", "æg", "æbler", "bananer", "kartofler",
             "tomater", "agurker", "gulerødder", "løg", "boller", "rundstykker", "blomster",
             "vin", "øl", "juice", "yoghurt", "havregryn", "pasta", "ris", "sukker", "mel", "salt",
             "peber", "honning", "marmelade", "rugbrød", "leverpostej", "pålæg", "kylling", "fisk",
             "laks", "oksekød", "frikadeller", "pølser", "citroner", "pærer", "chokolade", "tandpasta",
             "sæbe", "kiks", "jordbær", "hindbær", "blåbær", "fløde", "skyr"]
GREETINGS = ["Hej", "Godmorgen", "Goddag", "Godaften", "Godnat", "Farvel", "Hejsa", "Velkommen",
             "Tak", "Tusind tak", "Mange tak", "Undskyld", "Tillykke", "Vi ses", "Hej med dig",
             "Hav en god dag", "God weekend", "God tur", "Kom godt hjem", "Sov godt"]
PHRASES = ["Mange tak for hjælpen", "Undskyld, jeg forstod det ikke", "Kan du gentage det",
           "Det er helt i orden", "Hav en god dag", "God weekend", "Vi ses i morgen",
           "Det lyder godt", "Jeg er lidt forsinket", "Selvfølgelig", "Ja tak", "Nej tak",
           "Måske senere", "Hvordan går det", "Det går fint, tak", "Hvad hedder du", "Hvor bor du",
           "Hvad laver du i dag", "Jeg har travlt", "Det var hyggeligt at se dig", "Velbekomme",
           "Skål", "Tillykke med fødselsdagen", "Godt nytår", "Glædelig jul", "Rigtig god sommer",
           "Pas på dig selv", "Sov godt", "Kom godt hjem", "God tur", "God fornøjelse",
           "Det er jeg ked af", "Jeg forstår", "Det ved jeg ikke", "Kan du hjælpe mig",
           "Hvor er toilettet", "Må jeg betale med kort", "Hvad koster det", "Jeg er sulten",
           "Jeg er træt", "Det var en dejlig dag", "Kan du tale lidt langsommere",
           "Jeg kommer om lidt", "Vent lige et øjeblik", "Det er en god idé", "Jeg glæder mig",
           "Hvad synes du", "Det er fint med mig", "Jeg ringer tilbage", "Er du klar"]
QUESTIONS = {"Kan du gentage det", "Hvordan går det", "Hvad hedder du", "Hvor bor du",
             "Hvad laver du i dag", "Kan du hjælpe mig", "Hvor er toilettet",
             "Må jeg betale med kort", "Hvad koster det", "Kan du tale lidt langsommere",
             "Hvad synes du", "Er du klar"}


def cardinal(n):
    """0 <= n < 1000000 as spoken Danish (et hundrede og femogtyve)."""
    if n < 20:
        return ONES[n]
    if n < 100:
        t, u = (n // 10) * 10, n % 10
        return TENS[t] if u == 0 else ONES[u] + "og" + TENS[t]
    if n < 1000:
        h, r = n // 100, n % 100
        s = ("et" if h == 1 else ONES[h]) + " hundrede"
        return s if r == 0 else s + " og " + cardinal(r)
    th, r = n // 1000, n % 1000
    s = ("et" if th == 1 else cardinal(th)) + " tusind"
    if r == 0:
        return s
    return s + (" og " if r < 100 else " ") + cardinal(r)


def hour12(h):
    return "et" if h == 1 else ONES[h] if h < 20 else cardinal(h)


class Gen:
    def __init__(self, rng):
        self.r = rng

    def c(self, seq):
        return seq[self.r.randrange(len(seq))]

    def n(self, lo, hi):
        return self.r.randint(lo, hi)

    # --- slots
    def time(self):
        r = self.r.random()
        h = self.n(1, 12)
        h2 = h % 12 + 1
        if r < 0.2:
            return "klokken " + hour12(h)
        if r < 0.35:
            return "klokken halv " + hour12(h2)
        if r < 0.45:
            return "kvart over " + hour12(h)
        if r < 0.55:
            return "kvart i " + hour12(h2)
        if r < 0.7:
            m = self.c([5, 10, 20, 25])
            return "%s minutter %s %s" % (cardinal(m), self.c(["over", "i"]), hour12(h if self.r.random() < 0.5 else h2))
        return self.time24()

    def time24(self):
        H, M = self.n(0, 23), self.c([0, 0, self.n(1, 59), self.n(1, 59), 15, 30, 45])
        s = "klokken " + (hour12(H) if H > 0 else "nul")
        if M == 0:
            return s
        if M < 10:
            return s + " nul " + cardinal(M)
        return s + " " + cardinal(M)

    def date(self):
        mi = self.n(0, 11)
        name, days = MONTHS[mi]
        return "den %s %s" % (ORDINALS[self.n(1, days)], name)

    def temp(self):
        t = self.n(0, 35)
        if self.r.random() < 0.25:
            return "minus " + cardinal(self.n(1, 20))
        return cardinal(t)

    def day(self):
        r = self.r.random()
        if r < 0.4:
            return "på " + self.c(WEEKDAYS)
        return self.c(["i dag", "i morgen", "i overmorgen", "i aften", "i nat", "i weekenden",
                       "i næste uge", "på " + self.c(WEEKDAYS) + " " + self.date()])

    def meters(self):
        return cardinal(self.c([20, 30, 50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 800, 900]))

    def count_item(self):
        sg, pl = self.c(ITEMS)
        k = self.n(1, 12)
        if k == 1 or self.r.random() < 0.3:
            return sg
        return cardinal(k) + " " + pl

    def phone(self):
        parts = []
        for _ in range(4):
            v = self.n(0, 99)
            parts.append(cardinal(v) if v >= 10 else "nul " + cardinal(v))
        return " ".join(parts)

    def digits(self):
        return " ".join(cardinal(self.n(0, 9)) for _ in range(self.n(3, 6)))

    def price(self):
        r = self.r.random()
        if r < 0.6:
            return cardinal(self.n(2, 999)) + " kroner"
        if r < 0.8:
            return cardinal(self.n(2, 99)) + " kroner og halvtreds øre"
        return cardinal(self.n(1000, 25000)) + " kroner"


def _T(g):
    """All templates: each returns (text without final punctuation, end mark)."""
    c, n = g.c, g.n
    return [
        # time and dates
        lambda: ("klokken er " + g.time().replace("klokken ", ""), "."),
        lambda: ("hvad er klokken", "?"),
        lambda: ("toget mod %s afgår %s fra spor %s" % (c(TOWNS), g.time24(), cardinal(n(1, 12))), "."),
        lambda: ("bussen til %s kører %s" % (c(TOWNS), g.time()), "."),
        lambda: ("mødet begynder %s %s" % (g.time(), g.day()), "."),
        lambda: ("i dag er det %s %s" % (c(WEEKDAYS), g.date()), "."),
        lambda: ("%s har fødselsdag %s" % (c(NAMES), g.date()), "."),
        lambda: ("vi holder ferie fra %s til %s" % (g.date(), g.date()), "."),
        lambda: ("butikken åbner %s og lukker %s" % (g.time(), g.time()), "."),
        lambda: ("jeg kommer hjem %s" % c(WHEN + ["om %s minutter" % cardinal(n(2, 59))]), "."),
        lambda: ("kan vi mødes %s %s" % (g.day(), c(["om morgenen", "om eftermiddagen", "om aftenen", g.time()])), "?"),
        lambda: ("flyet fra %s lander %s" % (c(TOWNS), g.time24()), "."),
        lambda: ("toget er %s minutter forsinket" % cardinal(n(2, 59)), "."),
        lambda: ("din tid hos lægen er %s %s %s" % (c(WEEKDAYS), g.date(), g.time()), "."),
        lambda: ("pakken bliver leveret på %s mellem klokken %s og %s" % (c(WEEKDAYS), hour12(n(6, 12)), cardinal(n(13, 22))), "."),
        lambda: ("vi ses på %s %s" % (c(WEEKDAYS), g.time()), "."),
        lambda: ("skal vi spise %s %s" % (c(MEALS), g.time()), "?"),
        lambda: ("husk mødet med %s %s %s" % (c(NAMES), g.day(), g.time()), "."),
        lambda: ("der er %s minutter til toget kører" % cardinal(n(2, 59)), "."),
        # weather
        lambda: ("%s bliver det %s med %s grader" % (c(["i morgen", "i dag", "i weekenden", "på " + c(WEEKDAYS), "i nat"]), c(W_ADJ), g.temp()), "."),
        lambda: ("i %s er der %s og %s grader" % (c(TOWNS), c(W_NOUN), g.temp()), "."),
        lambda: ("vinden er %s fra %s" % (c(WIND_ADJ), c(DIRS)), "."),
        lambda: ("der er varslet %s i %s %s" % (c(W_NOUN), c(REGIONS), c(DAYPARTS)), "."),
        lambda: ("temperaturen falder til minus %s grader i nat" % cardinal(n(1, 20)), "."),
        lambda: ("det regner i %s, men solen skinner i %s" % (c(TOWNS), c(TOWNS)), "."),
        lambda: ("vinden kommer fra %s med %s meter i sekundet" % (c(DIRS), cardinal(n(1, 30))), "."),
        lambda: ("i weekenden bliver det %s og %s" % (c(W_ADJ), c(W_ADJ)), "."),
        lambda: ("der kommer %s %s %s" % (c(SHOWER_ADJ), c(SHOWERS), c(DAYPARTS)), "."),
        lambda: ("det bliver %s grader og %s %s" % (g.temp(), c(W_ADJ), g.day()), "."),
        lambda: ("husk %s, det bliver %s %s" % (c(CLOTHES), c(W_ADJ), c(DAYPARTS)), "."),
        lambda: ("hvordan bliver vejret i %s %s" % (c(TOWNS + REGIONS), c(DAYPARTS)), "?"),
        # directions
        lambda: ("drej til %s om %s meter" % (c(LR), g.meters()), "."),
        lambda: ("tag den %s afkørsel i rundkørslen" % c(ORDINALS[1:6]), "."),
        lambda: ("kør ligeud i %s kilometer" % cardinal(n(1, 80)), "."),
        lambda: ("fortsæt mod %s ad %s" % (c(DIRS), c(["motorvejen", "landevejen", "hovedvejen"] + STREETS)), "."),
        lambda: ("du er fremme ved %s %s" % (c(STREETS), cardinal(n(1, 150))), "."),
        lambda: ("følg skiltene mod %s" % c(TOWNS), "."),
        lambda: ("%s ligger %s kilometer %s for %s" % (c(TOWNS), cardinal(n(2, 300)), c(DIRS), c(TOWNS)), "."),
        lambda: ("hvor ligger %s" % c(PLACES), "?"),
        lambda: ("%s ligger på %s side af %s" % (c(PLACES), c(LR), c(STREETS)), "."),
        lambda: ("gå over vejen og drej til %s ved %s" % (c(LR), c(LANDMARKS)), "."),
        lambda: ("der er %s kilometer fra %s til %s" % (cardinal(n(2, 400)), c(TOWNS), c(TOWNS)), "."),
        lambda: ("hvor langt er der til %s" % c(TOWNS + PLACES), "?"),
        lambda: ("tag bus nummer %s mod %s" % (cardinal(n(1, 399)), c(TOWNS + PLACES)), "."),
        lambda: ("%s er %s meter længere fremme på %s hånd" % (c(PLACES), g.meters(), c(["venstre", "højre"])), "."),
        lambda: ("vend om og kør tilbage mod %s" % c(TOWNS + LANDMARKS), "."),
        # everyday
        lambda: ("%s, %s" % (c(GREETINGS).lower(), c(NAMES)), c([".", "!"])),
        lambda: ("%s, %s" % (c(PHRASES).lower(), c(NAMES)), None),
        lambda: ("%s, %s" % (c(GREETINGS).lower(), c(PHRASES).lower()), None),
        lambda: ("jeg vil gerne have %s" % g.count_item(), c([".", ", tak."])),
        lambda: ("det koster %s" % g.price(), "."),
        lambda: ("husk at købe %s og %s" % (c(GROCERIES), c(GROCERIES)), "."),
        lambda: ("%s bor i %s og arbejder i %s" % (c(NAMES), c(TOWNS), c(TOWNS)), "."),
        lambda: ("jeg hedder %s, og jeg bor i %s" % (c(NAMES), c(TOWNS)), "."),
        lambda: ("kan du ringe til %s %s" % (c(NAMES), c(WHEN)), "?"),
        lambda: ("%s kommer %s" % (c(NAMES), c(WHEN + ["på " + c(WEEKDAYS)])), "."),
        lambda: ("mit telefonnummer er %s" % g.phone(), "."),
        lambda: ("koden er %s" % g.digits(), "."),
        lambda: ("min adresse er %s %s i %s" % (c(STREETS), cardinal(n(1, 150)), c(TOWNS)), "."),
        lambda: ("jeg skal med toget fra %s til %s %s" % (c(TOWNS), c(TOWNS), g.day()), "."),
        lambda: ("%s og %s tager til %s %s" % (c(NAMES), c(NAMES), c(TOWNS), g.day()), "."),
        lambda: ("har du set %s" % c(NAMES), "?"),
        lambda: ("%s er gået hjem %s" % (c(NAMES), c(["", "til " + c(NAMES), "fra " + c(PLACES)])), "."),
        lambda: ("vi har brug for %s %s" % (cardinal(n(2, 40)), c(ITEMS)[1]), "."),
        lambda: ("der står %s mennesker i køen ved %s" % (cardinal(n(2, 60)), c(PLACES)), "."),
        lambda: ("%s er %s år gammel" % (c(NAMES), cardinal(n(2, 99))), "."),
        lambda: ("værelse nummer %s ligger på %s sal" % (cardinal(n(1, 500)), c(ORDINALS[1:9])), "."),
        lambda: ("kan jeg få %s" % g.count_item(), "?"),
    ]


def _finish(body, mark):
    body = re.sub(r"\s+", " ", body).strip()
    body = body[0].upper() + body[1:]
    if mark is None:
        first = body.split(",")[0]
        mark = "?" if any(first.lower() == q.lower() for q in QUESTIONS) or \
            any(body.lower().startswith(q.lower()) for q in QUESTIONS) and body.count(",") == 0 else "."
    if mark.startswith(","):
        return body + mark
    return body + mark


def raw_sentence(rng, template=None):
    g = Gen(rng)
    ts = _T(g)
    t = rng.randrange(len(ts)) if template is None else template
    body, mark = ts[t]()
    return _finish(body, mark)


N_TEMPLATES = len(_T(Gen(None)))


def norm(text):
    """Normalisation for splits and WER: lower case, punctuation removed."""
    t = text.lower()
    t = re.sub(r"[.,?!:;\"]", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def bucket(sentence):
    return int(hashlib.md5(norm(sentence).encode("utf-8")).hexdigest(), 16) % 100


def split_of(sentence):
    b = bucket(sentence)
    return "test" if b < 8 else "dev" if b < 10 else "train"


def utterance_text(rng, split, p_two=0.15):
    """A sentence (or two, 15 %) of the given split.

    train: sentences are drawn from the template mixture and rejected when
    their hash bucket is not train (90 % pass).  dev/test: the template is
    chosen first, uniformly, and then its sentences are drawn until one
    falls in the split (another template after 100 misses), so held-out
    sets have the template mix of the training set; drawing whole
    sentences and rejecting them would make templates with few distinct
    sentences (a fixed phrase that happens to hash into the split)
    dominate the small held-out buckets."""
    k = 2 if rng.random() < p_two else 1
    out = []
    while len(out) < k:
        if split == "train":
            s = raw_sentence(rng)
            if split_of(s) == split:
                out.append(s)
            continue
        t = rng.randrange(N_TEMPLATES)
        for _ in range(100):
            s = raw_sentence(rng, t)
            if split_of(s) == split:
                out.append(s)
                break
    return " ".join(out)


def vocabulary(texts):
    words = set()
    for t in texts:
        words.update(norm(t).split())
    return words


if __name__ == "__main__":
    import random
    import sys
    r = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    tr = [utterance_text(r, "train") for _ in range(50000)]
    te = [utterance_text(r, "test") for _ in range(2000)]
    vt, ve = vocabulary(tr), vocabulary(te)
    print("train words", len(vt), "test words", len(ve), "test-only", sorted(ve - vt))
    print("test sentences also in train:", len(set(te) & set(tr)))
    for t in tr[:40]:
        print(t)
