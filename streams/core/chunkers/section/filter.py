"""Seed 002's file filter: which files of a notice are the solicitation's text, and which are its forms,
templates, questionnaires and samples.

The words are read from the file name even where its spaces were lost (`Draft_RFPfor_Engineering_Services`,
`StatementOfWork`, `statementofwork`), and, when the name decides nothing, from the document's own title
lines. Excludes win over includes; a word matches a keyword whole or as its prefix (`requirements`), never
inside another word (`performance` is not a `form`). Pure: the publisher applies it per document.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from streams.core.options import FILTER_EXCLUDE, FILTER_INCLUDE

#: The seed's lists are `section` options (`include_keywords`, `exclude_keywords`); these are their defaults.
DEFAULT_INCLUDE = FILTER_INCLUDE
DEFAULT_EXCLUDE = FILTER_EXCLUDE

#: Keywords of this length or less are acronyms: they match whole, not as a prefix.
_ACRONYM = 4
#: Title lines read when the file name decides nothing.
_TITLE_LINES = 6
#: Short words a run-together name hides between its keywords (`RFPfor`, `statementofwork`).
_GLUE = ("for", "of", "and", "the", "to", "with", "on", "in", "a")


def _pieces(run: str, vocabulary: Sequence[str]) -> list[str]:
    """Split a lowercase run that lost its spaces into known keywords and glue words, longest first; the run
    itself when it cannot be read that way."""
    known = sorted({*vocabulary, *_GLUE}, key=len, reverse=True)
    found: list[str] = []
    position = 0
    while position < len(run):
        for word in known:
            if run.startswith(word, position):
                found.append(word)
                position += len(word)
                break
        else:
            return [run]
    return found


def _split_caps(token: str, vocabulary: Sequence[str]) -> list[str]:
    """An upper-case run glued to lower case: `RFPfor` is an acronym and a word when the whole run is a
    known acronym, `SOWAttachment` an acronym and a capitalised word otherwise."""
    glued = re.fullmatch(r"([A-Z]{2,})([a-z].*)", token)
    if not glued:
        return [token]
    caps, rest = glued.groups()
    if caps.lower() in vocabulary or len(caps) == 2:
        return [caps, rest]
    return [caps[:-1], caps[-1] + rest]


def name_words(document_name: str, vocabulary: Sequence[str] = ()) -> list[str]:
    """Lowercase words of a file name: split at non-letters, at lower-to-upper case changes, after an
    acronym glued to the next word (`RFPfor`, `SOWAttachment`, `QASPfinal`), and inside runs that spell
    known keywords (`statementofwork`); such a run is also kept whole, so a plain word still matches."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", document_name)
    words: list[str] = []
    for token in re.split(r"[^A-Za-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", stem)):
        for part in _split_caps(token, vocabulary) if token else []:
            low = part.lower()
            words.append(low)
            pieces = _pieces(low, vocabulary)
            if len(pieces) > 1:
                words += pieces
    return words


def _matches(word: str, keyword: str) -> bool:
    if len(keyword) <= _ACRONYM:
        return word in (keyword, keyword + "s")
    return word.startswith(keyword) or word == keyword + "s"


def _decide(words: list[str], include: Sequence[str], exclude: Sequence[str], where: str) -> tuple[bool, str] | None:
    for word in words:
        for bad in exclude:  # whole words only: a 'form' is not 'formal' nor 'formula'
            if word in (bad, bad + "s"):
                return False, f"excluded: {where} contains '{bad}'"
    for word in words:
        for good in include:
            if _matches(word, good):
                return True, f"included: {where} contains '{good}'"
    return None


def _initials(words: list[str]) -> list[str]:
    """The initials of every run of three or four words: how a title spells out an acronym."""
    return ["".join(w[0] for w in words[i : i + n]) for n in (3, 4) for i in range(len(words) - n + 1)]


def _title_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        stripped = line.strip(" \t#*_=-|")
        if stripped:
            lines.append(stripped)
        if len(lines) >= _TITLE_LINES:
            break
    return lines


def file_filter_decision(
    document_name: str,
    text: str = "",
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
) -> tuple[bool, str]:
    """(allowed, reason): the file name decides when it names a keyword, else the document's title lines."""
    include = DEFAULT_INCLUDE if include is None else tuple(k.lower() for k in include)
    exclude = DEFAULT_EXCLUDE if exclude is None else tuple(k.lower() for k in exclude)
    decided = _decide(name_words(document_name, (*include, *exclude)), include, exclude, "file name")
    if decided is not None:
        return decided
    for line in _title_lines(text):
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", line)]
        where = f"title line {line[:60]!r}"
        decided = _decide(words, include, exclude, where)
        if decided is not None:
            return decided
        for spelled in _initials(words):  # "Quality Assurance Surveillance Plan" spells qasp
            if spelled in include and len(spelled) <= _ACRONYM:
                return True, f"included: {where} spells '{spelled}'"
    return False, "excluded: neither the file name nor the title lines have an include keyword"
