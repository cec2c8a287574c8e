"""The English the assistant reads by rule, in one place: every hand-written word list and phrasing pattern
of the package (how abstracts state what a paper does, how questions and criteria are framed, how a chat
refers to sources, how an abstract introduces its name). What is learned from data (the framing terms, the
turn and decision models) lives in assistant/data; the embedder's vocabulary of words is
:func:`assistant.embed.embedder.vocabulary_words`. Nothing here imports the rest of the package."""

from __future__ import annotations

import re


# --- How abstracts say what a paper does (evidence.py, synthesis.py) -----------------------------------------------

#: Abbreviations whose period ends no sentence (sentences.py).
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "etc.", "vs.", "cf.", "Fig.", "Eq.", "Sec.", "approx.", "resp.", "w.r.t.")

#: "we", "this paper", "this work" and up to two words ("we further propose"): the paper speaking of itself.
BY_THE_PAPER = r"\b(?:we|this paper|this work)\s+(?:\w+\s+){0,2}?"

#: The verbs a paper introduces what it is with.
INTRODUCING = "propose|introduce|present|develop"

#: A sentence that states what its paper contributes ("we propose ...", "this paper introduces ...").
CONTRIBUTION_RE = re.compile(BY_THE_PAPER + "(?:" + INTRODUCING + "|show|demonstrate|find|study|investigate|"
                             r"analy[sz]e|establish|derive|prove)", re.I)

#: A sentence that leans on the one before it ("This ...", "Finally, ...", "To address these, ..."): quoted only
#: with that one.
LEANS_ON_PREVIOUS = re.compile(
    r"^\W*(?:this|these|those|such|it|its|they|their|there|finally|moreover|furthermore|"
    r"additionally|in addition|however|also|thus|hence|therefore|then|second(?:ly)?|third(?:ly)?|"
    r"lastly|besides|to (?:address|tackle|overcome|this end)|building on|based on (?:this|these))\b",
    re.I)

#: A sentence whose subject is the paper or its authors ("We address this challenge with LogitProd, ..."): where a
#: summary starts when no sentence says what the paper contributes in CONTRIBUTION_RE's words (201 of 1,595 abstracts
#: of the bundled corpus and the arXiv training slices).
BY_THE_AUTHORS = re.compile(r"\b(?:we|this paper|this work)\s+\w", re.I)

#: A contribution sentence that introduces what the paper is (not what it finds): where a summary starts.
INTRODUCES = re.compile(BY_THE_PAPER + "(?:" + INTRODUCING + ")", re.I)

#: Words every abstract writes, which label no theme of a summary or map (besides bm25s's English stopwords).
LABEL_STOPWORDS = frozenset({
    "propose", "proposed", "method", "methods", "approach", "model", "models", "results", "paper", "show", "novel",
    "based", "using", "existing", "performance", "framework", "achieves", "state-of-the-art", "experiments",
    "demonstrate", "task", "tasks", "across", "between", "improves", "improve", "improved", "improving", "while",
    "without", "however", "via", "also", "well", "new", "significantly", "effective", "effectively", "efficient", "key",
    "leading", "address", "enables", "including", "background", "objective", "objectives", "conclusions", "conclusion",
    "findings",
    # words that link sentences and say nothing of a theme ("browsers, websites, conversely")
    "besides", "furthermore", "moreover", "therefore", "thus", "hence", "additionally", "meanwhile", "nevertheless",
    "nonetheless", "instead", "whereas", "conversely", "consequently", "specifically", "notably", "finally",
    "particularly", "predominantly", "typically", "recently", "largely", "mainly", "often", "still"})

#: A question that asks where the code or data is ("is there a github repo?"): then a link may be quoted.
ASKS_FOR_LINK = re.compile(r"\b(?:code|github|repo(?:sitory)?|url|link)\b", re.I)

#: Where the code or data is: quoted only when the question asks for a link.
LINK = re.compile(r"https?://|github\.com|\\url\{", re.I)

#: "we introduce CLASH, a ... dataset": where `which` reads what a kind of paper contributes (synthesis.py).
INTRODUCES_OBJECT = re.compile(
    r"\b(?:we|this paper|this work|our work)\b[^.]{0,60}?\b(?:introduce|propose|present|release|"
    r"construct|build|curate|create|develop|collect|compile|contribute)[sd]?\b", re.I)

#: Words of "a new, large-scale benchmark" that say nothing about what the thing is.
OBJECT_FILLER = {"a", "an", "the", "new", "novel", "first", "large", "scale", "large-scale", "comprehensive",
                 "high", "quality", "high-quality", "public", "publicly", "open", "of", "for", "to", "in", "on"}


# --- How questions and criteria are framed (retrieve.py, synthesis.py) ---------------------------------------------

#: A criterion's framing: whole words only ("in" of "introduce" is not framing).
CRITERION_LEADIN = re.compile(r"^\s*(?:(?:which|what|how many|list|find|show me|are there|is there)\b)?\s*"
                              r"(?:(?:papers?|works?|studies|articles?)\b)?\s*"
                              r"(?:(?:that|which|about|on|in|do|does)\b)?\s*", re.I)

#: "papers that introduce / propose / release X": a kind of paper rather than a topic. Such a paper says
#: so in a sentence like "we introduce CLASH, a ... dataset of 345 dilemmas", which no similarity to
#: "papers that introduce a new benchmark or dataset" finds (it listed 4 of 21).
KIND_OF_PAPER = re.compile(r"^\s*(?:(?:which|what|list|find|show(?:\s+me)?|are\s+there(?:\s+any)?)\s+)?"
                           r"(?:(?:papers?|works?|studies)\s+(?:(?:that|which)\s+)?)?"
                           r"(?:introduce|propose|present|release|"
                           r"contribute|construct|build|curate|create|collect)s?\s+(.+?)[\s?.!]*$", re.I)

#: The commands an error or doctor line may tell the user to run on the index (service/api.py names the index
#: they should act on).
ADVISABLE = ("ingest", "doctor", "remove", "chat", "papers", "show", "ask")

#: A criterion asking for what papers do not do ("papers that do not use neural networks"): `which` finds papers by
#: what they say they do, and would list those that do.
NEGATED_CRITERION = re.compile(r"\b(?:do|does|did|are|is|can)\s+not\b|\b(?:don't|doesn't|didn't|aren't|isn't|"
                               r"can't|cannot|never)\b|"
                               # what to leave out: "RL papers other than offline RL", "LLM papers except safety"
                               r"\b(?:other\s+than|except|excluding|apart\s+from|aside\s+from)\b|"
                               r"\bnot\s+(?:about|on|using|based\s+on|related\s+to|involving|concerning)\b", re.I)

#: Words a question is built of, mended too though no abstract need have them ("Which paeprs ...", "waht is
#: ...?"): the area rules and the quoted sentences read them.
FRAMING_WORDS = ("papers", "paper", "works", "studies", "study", "studied", "research", "literature", "articles",
                 "approaches", "methods", "exists", "anyone", "what", "which", "where", "there", "does", "about")


# --- How an LLM states a verdict on `which` (synthesis.py) ---------------------------------------------------------

#: The model's reply says no paper qualifies.
NONE_VERDICT = re.compile(r"\W*(?:none|no\b|nothing|neither|not\b|0\b)", re.I)

#: The model's reply lists the papers that qualify ("Sources: [1], 3 and 4").
LISTED_NUMBERS = re.compile(r"\W*(?:(?:sources?|papers?|numbers?)\b\s*:?\s*)?"
                            r"(\[?\d+\]?(?:\s*(?:,|;|&|\band\b|\s)\s*\[?\d+\]?)*)", re.I)


# --- How a chat refers to the last answer's sources (conversation.py) ----------------------------------------------

#: Ordinal words and their places in a Sources list ("last": the last one).
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
            "fifth": 5, "5th": 5, "sixth": 6, "6th": 6, "seventh": 7, "7th": 7, "eighth": 8, "8th": 8,
            "ninth": 9, "9th": 9, "tenth": 10, "10th": 10, "last": -1}

#: The ordinals as one alternation, longest first.
ORDINAL_WORDS = "|".join(sorted(ORDINALS, key=len, reverse=True))

#: What a reference calls a source ("the second one", "the first two papers").
SOURCE_NOUN = r"(?:ones?|papers?|sources?|results?|works?|stud(?:y|ies)|articles?|references?|citations?|hits?)"

#: How references are joined ("[1] and [3]", "the first, second or third").
JOIN = r"\s*(?:,|&|\band\b|\bor\b|\bvs\.?|\bversus\b)\s*"

#: "paper 2", "source #3", "papers 1 and 3", and "#2", "#1 vs #3" alone (a list's number written as a hashtag;
#: not a paper id's "...a894271a85#8", nor "C#").
NUMBERED_SOURCE = re.compile(
    rf"(?:\b(?:papers?|sources?|results?|refs?|references?|citations?)\s*#?\s*|(?<![\w#])#)"
    rf"(\d{{1,2}}(?:{JOIN}#?\s*\d{{1,2}})*)\b",
    re.I)

#: "the second one", "the first and third papers", "the last one". A bare ordinal ("the second") counts only
#: before punctuation or a verb, so "the first step" is not a reference.
ORDINAL_SOURCE = re.compile(
    rf"\bthe\s+((?:{ORDINAL_WORDS})(?:{JOIN}(?:the\s+)?(?:{ORDINAL_WORDS}))*)\b"
    rf"(?:\s+{SOURCE_NOUN}\b|(?=\s*(?:[?.,!;:)]|$|(?:say|says|said|do|does|did|use|uses|propose|proposes|claim|"
    r"claims|report|reports|show|shows|find|finds|mean|means|handle|handles|achieve|achieves|address|addresses|"
    r"measure|measures|evaluate|evaluates|need|needs|work|works|compare|about|on|in|with)\b)))", re.I)

#: Stemmed words that say what to do with the papers, not what about them ("compare [1] and [2]").
FILLER_STEMS = {"tell", "me", "more", "about", "what", "how", "doe", "do", "is", "are", "the", "a", "an", "and",
                "or", "compar", "explain", "describ", "summar", "summari", "it", "them", "they", "thi", "that", "these",
                "those", "one", "on", "of", "in", "with", "pleas", "detail", "can", "you", "say", "said", "between",
                "differ", "contrast", "versu", "vs", "show", "give", "to"}

#: Stemmed words that ask what the papers are: "compare [1] and [2]", "describe the second one".
GIST_STEMS = {"compar", "explain", "describ", "summar", "summari", "tell", "differ", "contrast", "versu", "vs"}

#: A question that sets papers side by side ("compare it with DeepEyes", "how does that stack up against X?",
#: "is X better than it?"): a follow-up naming another paper is then about both, else about the one it names.
COMPARING = re.compile(r"\b(?:compar\w*|contrast\w*|differ\w*|vs\.?|versus|against|than|similar\w*|unlike|both)\b",
                       re.I)

#: Where a criterion lists alternatives ("proteins, molecules or DNA", "benchmark/dataset").
ALTERNATIVES = re.compile(r",|/|\bor\b")

#: Counts a run of sources is asked with ("the first two").
COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "2": 2, "3": 3, "4": 4, "5": 5}

#: "the first two", "the top 3 papers", "the last two": a run of the Sources list.
RUN_OF_SOURCES = re.compile(rf"\b(?:the\s+)?(first|top|last)\s+({'|'.join(COUNT_WORDS)})\b(?:\s+{SOURCE_NOUN}\b)?",
                            re.I)


# --- How an abstract introduces its name, and what a title may not end on (titles.py) ------------------------------

#: A sentence where the paper introduces what it is named ("we propose Qronos, ...").
TITLE_INTRODUCES = re.compile(
    r"\b(?:we|this paper|this work|here we)\s+(?:\w+\s+){0,2}?"
    r"(?:propose|introduce|present|develop|design|release|construct|curate|call|dub|term)s?d?\b", re.I)

#: A capitalised word a name may be made of ("Qronos", "LLM-as-a-Judge").
NAME_WORD = r"[A-Z][\w.]*(?:[\-–][\w.]+)*"


#: A name as the shown title reads it: also a coined word opening in lower case ("iTRIALSPACE", "neuralCAD-Edit"),
#: an apostrophe ("HERO'S JOURNEY") and a version number after it ("WBCBench 2026", "Cosmos 3").
SHOWN_NAME_WORD = r"(?:[A-Z][\w.'’]*|[a-z]+[A-Z][\w.]*)(?:[\-–][\w.]+)*"


def named_pattern(expansion: int, word: str = NAME_WORD, versioned: bool = False) -> re.Pattern:
    """A name opening an introducing sentence's object (``word``s, then a version number when ``versioned``), an
    expansion of up to ``expansion`` characters in parentheses after it, then what it is (``Qronos---a new ...``)."""
    version = r"(?:\s\d[\w.]*)?" if versioned else ""
    return re.compile(
        r"^\W*(?:a\s+(?:[\w\-]+\s+){0,6}?(?:called|named|dubbed|termed)\s+)?[*_`\\{]*(?:\\(?:emph|textbf|textsc)\{)?"
        r"(" + word + r"(?:\s" + word + r"){0,3}" + version + r")[*_`}]*"
        r"\s*(?:\(([^)]{1,%d})\))?\s*(?:,|:|—|---|--|–)\s*((?:a|an|the)\b[^.;:]{5,120})?" % expansion)


#: "we propose a new architectural element, ASIDE, that ...": what it is, then its name between commas.
APPOSITIVE_NAME = re.compile(r"^\W*((?:a|an|the)\s[^,;:.]{3,90}?),\s*[*_`]*(" + NAME_WORD + r")[*_`]*\s*(?:,|\(|$)")

#: The shown title also reads an introduction later in a sentence that "we" or "this work" opens
#: ("This work explores the trade-off ... and introduces RESFL, an integrated solution ...").
INTRODUCES_LATE = re.compile(
    r"\b(?:we|this (?:paper|work|study|report|article|thesis|manuscript|letter)|here we|our work)\b[^.!?]{0,160}?\b"
    r"(?:(?:propos|introduc|present|describ|develop|design|releas|construct|curat)(?:es?|ed|ing|s)?|call|dub|term"
    r"|address\w*\s+[^.!?]{0,40}?\bwith)\b", re.I)

#: "a method called X", "dubbed X".
CALLED_NAME = re.compile(r"\b(?:called|named|dubbed|termed|coined)\s+[*_`\\{]*(?:\\(?:emph|textbf|textsc)\{)?("
                         + NAME_WORD + r")")

#: Words a title keeps in lower case.
TITLE_SMALL_WORDS = {"of", "for", "and", "in", "with", "to", "the", "via", "on", "a", "an", "by", "from"}

#: An introduced object that opens as a noun phrase ("a novel approach to ..."): a title when no name is introduced.
OPENS_NOUN_PHRASE = re.compile(r"\s*(?:a|an|the|two|three|new|novel)\b", re.I)

#: Words a name's first word may not be: it opens a sentence, it coins nothing.
NOT_COINED = {"a", "an", "the", "this", "these", "our", "we", "in", "it", "to", "first", "novel", "new"}

#: Capitalised words that open a sentence's object without naming anything.
NOT_NAMES = {"a", "an", "the", "this", "these", "our", "we", "in", "it", "to", "first", "novel", "new", "two",
             "three", "several", "both", "each", "such", "here", "there", "they", "its", "their"}

#: Where a noun phrase ends: a relative clause, an apposition, a participle, a new clause.
PHRASE_END = re.compile(r"\s+(?:that|which|where|whereby|wherein|who|whose|while|whereas|but|thereby|so that|"
                        r"designed|trained|built|grounded|tailored|centered|spanning|consisting|comprising|allowing|"
                        r"enabling|using|leading)\b"
                        r"|\s+and\s+(?:show|shows|demonstrate|find|prove|evaluate|use|apply|analy[sz]e|release|"
                        r"provide|establish|study|investigate|introduce|propose|present)\b"
                        r"|\s*[,;:]|\s+[-–—]+\s|---|\s+\[|\s*—")

#: A word that may open a list of modifiers ("fine-grained, identity-preserving ...").
LIST_MODIFIER = re.compile(r"^[a-z]+(?:-[a-z]+)+$|^[a-z]+(?:ed|al|ive|ing|ic|ous|ent|able|ful)$")

#: Prepositions a noun phrase may go on with.
PREPOSITIONS = {"of", "for", "in", "with", "via", "on", "by", "from"}

#: Words after a bare noun phrase ("a framework", "a new benchmark") that go on to say what it is or does: a title
#: reads on through them ("a framework that integrates ...", "a benchmark designed for ...").
CLAUSE_GOES_ON = {"that", "which", "designed", "tailored", "built", "trained", "grounded", "centered", "consisting",
                  "comprising", "spanning", "enabling", "allowing", "using"}

#: Where such a clause ends: punctuation, a dash, a bracket, or another clause ("..., while", "... and show").
CLAUSE_STOP = re.compile(r"\s*[,;:(\[]|\s+[-–—]+\s|---|\s*—|\.\s"
                         r"|\s+(?:while|whereas|but|thereby|so that|which|where|whether|how|what|if)\b"
                         r"|\s+and\s+(?:show|shows|demonstrate|find|prove|evaluate|use|apply|release|provide|"
                         r"achieve)\b")

#: Words that point back to what the abstract said before: a title read alone cannot hold them ("... that
#: converts such resources", "... that addresses both jointly").
ANAPHORA = {"this", "these", "those", "such", "both", "it", "its", "them", "their", "they", "aforementioned", "above"}

#: Where a noun phrase too long for a title may be cut: before a preposition that opens its last modifier.
CUT_BEFORE = PREPOSITIONS | {"under", "across", "through", "over", "into", "without", "against", "among", "within",
                             "beyond", "toward", "towards", "at", "using", "via", "during", "after", "before",
                             "around", "upon", "onto", "about"}

#: Words that open a subordinate clause, not the sentence's subject ("While X has ..., Y ...").
SUBORDINATE_OPENERS = {"while", "although", "though", "despite", "under", "as", "since", "when", "with", "in",
                       "given", "because", "whereas", "unlike", "beyond", "for", "to", "after", "before", "through",
                       "by", "if"}

#: Verbs that end the subject of an abstract's first sentence ("Sequence modeling | is dominated by ...").
SUBJECT_ENDING_VERB = re.compile(
    r"\s(?:is|are|was|were|has|have|had|can|could|may|remains?|aims?|seeks?|offers?|achieves?|"
    r"exhibits?|leverages?|requires?|lacks?|measures?|faces?|struggles?|suffers?|relies|rely|enables?|"
    r"shows?|demonstrates?|excels?|plays?|learns?|provides?|poses?|yields?|allows?|depends?|"
    r"involves?|typically|often|increasingly|usually)\b")

#: Words a title may not end on: the phrase would read as cut.
DANGLING_WORDS = TITLE_SMALL_WORDS | {"and", "or", "as", "at", "that", "which", "is", "are", "such", "its", "their",
                                      "both", "between", "into", "over", "under", "without", "across", "using",
                                      "toward", "towards", "around", "upon", "onto", "about", "through", "within",
                                      "against", "among", "beyond", "during"}


#: A finite verb, where a noun phrase has ended.
FINITE_VERB = re.compile(r"\s(?:is|are|was|were|can|could|may|might|will|would|should|must|has|have|had|does|do)\s")

#: Words after a comma that end a noun phrase rather than go on with its list of modifiers.
LIST_BREAKS = {"and", "or", "but", "we", "it", "which", "that", "where", "while", "the", "a", "an", "this", "its",
               "their", "our", "as", "to", "with", "for", "in", "on", "by", "of", "called", "named", "dubbed"}

#: "we study / this paper investigates / we show that ...": what the paper itself does, read where it introduces
#: nothing; the words after it (to a phrase's end) say what it is about better than the field its first sentence
#: opens with ("Large language models ...").
STUDIES = re.compile(
    r"(?:^|[.!?]\s+|,\s*)(?:(?:here|in this (?:paper|work|study|article)),?\s+)?"
    r"(?:we|this (?:paper|work|study|report|article|thesis))\s+(?:[a-z]+ly\s+)?(?:first\s+)?"
    r"(?:stud|investigat|examin|explor|analy[sz]|characteriz|formaliz|reformulat|revisit|address|tackl|quantif|"
    r"initiat|focus|ask|show|consider|test|seek|aim)[a-z]*\s+"
    r"(?:(?:on|to|whether|what|how|why|if|that)\s+)?", re.I)

#: What follows "we study ..." that is not what is studied ("we show in this paper that ...", "we study it").
NOT_STUDIED = re.compile(r"(?:we|our|it|they|this|these|us|in this|here)\b", re.I)

#: A first sentence that opens with what the authors do to a noun phrase: "We uncover the hidden lattice ...".
AUTHORS_DO = re.compile(r"(?:(?:in this (?:paper|work|study),?\s+)?we|this (?:paper|work|study|report|article))\s+"
                        r"(?:[a-z]+ly\s+)?[a-z]+\s+(?=(?:the|a|an)\s)", re.I)

# --- How a venue is written (export.py) ----------------------------------------------------------------------------

#: What makes a short line a venue rather than any heading: a year, an acronym or CamelCase name (ICLR,
#: NeurIPS, arXiv), or a word venues are named with.
VENUE_SIGN = re.compile(r"\b(?:19|20)\d{2}\b|[A-Z]{2,}|[a-z][A-Z]|\b(?:Proceedings|Conference|Workshop|Journal|"
                        r"Transactions|Symposium|Letters|Review)\b")

# --- What a plain-text list labels (text/textlist.py) ------------------------------------------------------------

#: Labels of a "Title: ... / Authors: ... / Abstract: ..." block in a plain-text list.
LIST_LABELS = ("title", "authors", "author", "abstract", "summary")

#: Lower-case particles a surname written first may open with ("van der Berg, Anna", "de la Cruz, Maria").
NAME_PARTICLES = ("van", "von", "der", "den", "de", "del", "della", "la", "le", "da", "di", "du", "dos", "das", "ter",
                  "ten", "bin", "al", "el", "y")

#: Words that ask for a list and name nothing in it ("which papers", "list all papers"): a `which` criterion of
#: these and framing words alone is refused.
LISTING_WORDS = ("which", "list", "all", "every", "show", "give", "me", "any", "some", "please")
