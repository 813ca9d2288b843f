"""How sensitive a fact is, and whether it may be stored at all: the memory's detectors,
deterministic code that calls no model. Nothing is re-exported here; import from the module
that holds what you need.

- `assessment`: the entry points (`assess`, `categorize`, `combine`, `parse_level`,
  `refuse_credentials`), and the levels and borderline choices they promise.
- `categories`: the category set, each category's floor, and the categories found by pattern.
- `vocabulary`: the word lists the detectors match (relationships, names, jobs, health, beliefs…).
- `text`: the fact tokenised once for every detector (`Text`), and what a detector finds.
- `checksums`: Luhn, IBAN mod-97, US Social Security and UK National Insurance number rules.
- `rules`: the table of patterns for what a fact reveals in so many words.
- `people`: people's names in a person context (a pet's name is not one).
- `health`: health terms said of a person, as a topic, or of an animal.
- `numbers`: card, bank, ID and phone numbers, and email addresses.
"""
