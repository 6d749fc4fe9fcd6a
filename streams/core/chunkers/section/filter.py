"""The file filter (docs/strategies.md#section-1-scope-and-the-file-filter): which files of a notice are the
solicitation's text, and which are its forms, templates, questionnaires and samples.

The words are read from the file name even where its spaces were lost (`Draft_RFPfor_Engineering_Services`,
`StatementOfWork`, `statementofwork`), and, when the name decides nothing, from the document's own title
lines. Excludes win over includes; a word matches a keyword whole or as its prefix (`requirements`), never
inside another word (`performance` is not a `form`). Pure: the publisher applies it per document.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from streams.core.chunkers.section.options import FILTER_EXCLUDE, FILTER_INCLUDE

#: The seed's lists are `section` options (`include_keywords`, `exclude_keywords`); these are their defaults.
DEFAULT_INCLUDE = FILTER_INCLUDE
DEFAULT_EXCLUDE = FILTER_EXCLUDE

#: The acronyms among the default includes, and any keyword this short: they match a whole word (or its
#: plural), never as a prefix (`soo` is not `soon`, `sow` not `sowing`); other keywords match a prefix too
#: (`work` in `workplan`, `requirement` in `requirements`).
_ACRONYMS = frozenset({"sow", "pws", "soo", "qasp", "rfp", "rfq", "rfi"})
_SHORT = 3
#: Excludes this short are whole words only, never a piece of a run that lost its spaces: `form` ends
#: `inform` and starts `formwork` (a construction specification's subject).
_SHORT_EXCLUDE = 4
#: Title lines read when the file name decides nothing.
_TITLE_LINES = 6
#: Short words a run-together name hides between its keywords (`RFPfor`, `statementofwork`).
_GLUE = ("for", "of", "and", "the", "to", "with", "on", "in", "a")
#: Words a file name glues to an acronym (`qaspfinal`, `pwsdraft`, `sowattachment`, `pwsv2`): known, so a
#: run can be read through them, but no keyword.
_NAME_WORDS = (
    "final",
    "draft",
    "attachment",
    "attach",
    "att",
    "exhibit",
    "appendix",
    "annex",
    "revised",
    "rev",
    "signed",
    "clean",
    "redline",
    "updated",
    "update",
    "copy",
    "part",
    "section",
    "vol",
    "volume",
    "v",
)


def _is_acronym(keyword: str) -> bool:
    return keyword in _ACRONYMS or len(keyword) <= _SHORT


def _pieces(run: str, vocabulary: Sequence[str]) -> list[str]:
    """Split a lowercase run that lost its spaces into keywords (or their plurals), glue words and words
    file names glue to acronyms, longest first with backtracking; the run itself when it cannot be read
    that way, or when the reading starts with a glue word (`in`+`form` is the word `inform`)."""
    known = sorted({*vocabulary, *(k + "s" for k in vocabulary), *_GLUE, *_NAME_WORDS}, key=len, reverse=True)

    def split(position: int) -> list[str] | None:
        if position == len(run):
            return []
        for word in known:
            if run.startswith(word, position):
                rest = split(position + len(word))
                if rest is not None:
                    return [word, *rest]
        return None

    found = split(0) if len(run) <= 60 else None
    return [run] if found is None or found[0] in _GLUE else found


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


def _words(document_name: str, vocabulary: Sequence[str]) -> list[tuple[str, bool]]:
    """(word, whole) for the lowercase words of a file name; `whole` is False for a piece read out of a
    run that lost its spaces."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", document_name)
    words: list[tuple[str, bool]] = []
    for token in re.split(r"[^A-Za-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", stem)):
        for part in _split_caps(token, vocabulary) if token else []:
            low = part.lower()
            words.append((low, True))
            pieces = _pieces(low, vocabulary)
            if len(pieces) > 1:
                words += [(piece, False) for piece in pieces]
    return words


def name_words(document_name: str, vocabulary: Sequence[str] = ()) -> list[str]:
    """Lowercase words of a file name: split at non-letters, at lower-to-upper case changes, after an
    acronym glued to the next word (`RFPfor`, `SOWAttachment`, `QASPfinal`), and inside runs that spell
    known keywords (`statementofwork`, `qaspfinal`); such a run is also kept whole, so a plain word still
    matches."""
    return [word for word, _ in _words(document_name, vocabulary)]


def _matches(word: str, keyword: str) -> bool:
    """An acronym is the whole word or its plural; any other keyword is also a word's prefix."""
    if _is_acronym(keyword):
        return word in (keyword, keyword + "s")
    return word.startswith(keyword)


def _decide(
    words: list[tuple[str, bool]], include: Sequence[str], exclude: Sequence[str], where: str
) -> tuple[bool, str] | None:
    for word, whole in words:
        for bad in exclude:  # whole words only: a 'form' is not 'formal' nor 'formula'
            if word in (bad, bad + "s") and (whole or len(bad) > _SHORT_EXCLUDE):
                return False, f"excluded: {where} contains '{bad}'"
    for word, _ in words:
        for good in include:
            if _matches(word, good):
                return True, f"included: {where} contains '{good}'"
    return None


#: The names an included acronym stands for, as a title spells them out.
_SPELLED = {
    "quality assurance surveillance plan": "qasp",
    "performance work statement": "pws",
    "statement of objectives": "soo",
    "request for proposal": "rfp",
    "request for quotation": "rfq",
    "request for information": "rfi",
}


def _spelled(words: list[str]) -> str | None:
    """The acronym a title line spells out in full ("Quality Assurance Surveillance Plan": qasp), if any."""
    line = " ".join(words)
    for phrase, acronym in _SPELLED.items():
        if re.search(rf"\b{phrase}s?\b", line):
            return acronym
    return None


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
    decided = _decide(_words(document_name, (*include, *exclude)), include, exclude, "file name")
    if decided is not None:
        return decided
    for line in _title_lines(text):
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", line)]
        where = f"title line {line[:60]!r}"
        decided = _decide([(w, True) for w in words], include, exclude, where)
        if decided is not None:
            return decided
        spelled = _spelled(words)
        if spelled is not None and spelled in include:
            return True, f"included: {where} spells '{spelled}'"
    return False, "excluded: neither the file name nor the title lines have an include keyword"
