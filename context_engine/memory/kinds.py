"""The kinds of candidate term, from the most lenient admission rule to the strictest
(`context_engine.memory.observe.admits`)."""

NAME, COMPOUND, PHRASE, WORD, COMMON = "name", "compound", "phrase", "word", "common"
UNMARKED = "unmarked"  # two common words, never marked: "brass lung", "trust ledgers"
KIND_ORDER = (NAME, COMPOUND, PHRASE, WORD, COMMON, UNMARKED)
