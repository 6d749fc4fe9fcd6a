"""Gold-span question corpora of the project's own making, over documents in ../shared/corpora.

Chroma's three corpora are prose; these add the kinds the service is built for: an earnings release
with tables read through the project's own PDF ingest path, an earnings-call transcript and a
solicitation. Each `<name>.json` here holds only offsets and hashes, never document text (the
documents may not be copied into the repository): the source path relative to ../shared/corpora,
how the corpus text is built from it, the sha256 of that text, and per question the evidence spans
as [start, end) character offsets with a short sha256 of each span's text. A change in the source
or in the ingest path that moves the text shows up as a text hash mismatch, never as silently
misplaced spans.

A corpus marked `"held_out": true` was added after the strategies' defaults were settled and is
kept out of the tuning pool (`--corpora gold`): it is scored only as `--corpora holdout`, so its
figures stay a test of documents the defaults were never fitted to.

A corpus with `"joins": "<id>"` adds questions to one of Chroma's corpora (its source is that corpus's
file in chunking_eval): in a pool with Chroma's corpora its questions join that corpus, which is then
scored on both sets, so a corpus with few questions of Chroma's gets enough for a verdict of its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from streams.core.document import assemble
from streams.ingest.files import decode_text, page_events

BUILDS = ("text", "ingest")
SPAN_HASH_CHARS = 16
#: Questions a corpus needs: with fewer, one standard error of a corpus's recall margin passes 4 points,
#: and a per-corpus verdict at one standard error says little (52 questions gave ±6.1 on 2026-11-27).
MIN_QUESTIONS = 100
COPIED_RUN = 8  # words in a row shared with the document that make a question a copy, not a question


class GoldError(ValueError):
    """A gold corpus that cannot be rebuilt or whose text no longer matches its offsets."""


@dataclass(frozen=True)
class GoldQuestion:
    question: str
    spans: tuple[tuple[int, int], ...]
    span_hashes: tuple[str, ...]


@dataclass(frozen=True)
class GoldCorpus:
    """One corpus file: where the text comes from, its hash, and the questions' spans."""

    name: str
    kind: str
    source: str
    build: str
    text_sha256: str
    text_chars: int
    questions: tuple[GoldQuestion, ...]
    held_out: bool = False
    joins: str | None = None  # the Chroma corpus id these questions are asked of, when they add to one

    @property
    def corpus_id(self) -> str:
        """The corpus these questions score in a pool: the Chroma corpus it joins, else its own name."""
        return self.joins or self.name


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def span_hash(span: str) -> str:
    """A short sha256 of one span's text: enough to catch a moved offset, too short to matter as a copy."""
    return text_hash(span)[:SPAN_HASH_CHARS]


def gold_names(held_out: bool | None = None) -> list[str]:
    """The corpora shipped with the package, by file name: all of them, or only the tuning pool
    (`held_out=False`) or only the held-out ones (`held_out=True`)."""
    folder = resources.files(__name__)
    names = sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))
    return names if held_out is None else [n for n in names if load_gold(n).held_out is held_out]


def load_gold(name: str) -> GoldCorpus:
    folder = resources.files(__name__)
    resource = folder / f"{name}.json"
    if not resource.is_file():
        raise GoldError(f"no gold corpus {name!r}; known: {', '.join(gold_names())}")
    return parse_gold(name, json.loads(resource.read_text(encoding="utf-8")))


def read_gold(path: Path) -> GoldCorpus:
    """A corpus file anywhere (`bench gold --out`), named by its file name as the shipped ones are."""
    return parse_gold(path.stem, json.loads(path.read_text(encoding="utf-8")))


def parse_gold(name: str, data: dict[str, Any]) -> GoldCorpus:
    if data.get("build") not in BUILDS:
        raise GoldError(f"{name}: build must be one of {BUILDS}, not {data.get('build')!r}")
    if not isinstance(data.get("held_out", False), bool):
        raise GoldError(f"{name}: held_out must be true or false, not {data['held_out']!r}")
    joins = data.get("joins")
    if joins is not None and (not isinstance(joins, str) or not joins or data["build"] != "text"):
        raise GoldError(f"{name}: joins must name a Chroma corpus, and the file be built as text, not {joins!r}")
    questions = tuple(
        GoldQuestion(
            q["question"],
            tuple((int(s), int(e)) for s, e in q["spans"]),
            tuple(q["span_sha256"]),
        )
        for q in data["questions"]
    )
    return GoldCorpus(
        name=name,
        kind=data["kind"],
        source=data["source"],
        build=data["build"],
        text_sha256=data["text_sha256"],
        text_chars=int(data["text_chars"]),
        questions=questions,
        held_out=data.get("held_out", False),
        joins=joins,
    )


def build_document(corpus: GoldCorpus, shared: Path) -> tuple[str, Any]:
    """(corpus text, assembled document or None).

    `text`: the file decoded as the ingest path decodes text files (UTF-8, else Windows-1252) with
    universal newlines, as Chroma reads its corpora; the bench wraps it in one page. `ingest`: the
    file through `page_events` and `assemble`, so the text is the document stream a chunker worker
    sees (pages joined with their separators) and the bench chunks that very document.
    """
    path = shared / corpus.source
    if not path.is_file():
        raise GoldError(f"{corpus.name}: source {path} not found")
    if corpus.build == "text":
        text = decode_text(path.read_bytes())[0].replace("\r\n", "\n").replace("\r", "\n")
        return text, None

    document = assemble(page_events(path, doc_id=corpus.name))
    return document.text, document


def span_problems(corpus: GoldCorpus, text: str) -> list[str]:
    """Everything wrong with the corpus against its rebuilt text; empty when the offsets hold."""
    if text_hash(text) != corpus.text_sha256:
        stored = f"{len(text)} chars, {corpus.text_chars} stored"
        return [f"{corpus.name}: text sha256 differs from the stored one ({stored}); the source or the ingest changed"]
    problems: list[str] = []
    for number, q in enumerate(corpus.questions, start=1):
        if not q.spans or len(q.spans) != len(q.span_hashes):
            problems.append(f"{corpus.name} q{number}: spans and hashes do not pair up")
            continue
        for (start, end), digest in zip(q.spans, q.span_hashes, strict=True):
            where = f"{corpus.name} q{number} [{start}, {end})"
            if not 0 <= start < end <= len(text):
                problems.append(f"{where}: outside the text or empty")
                continue
            span = text[start:end]
            if span != span.strip():
                problems.append(f"{where}: starts or ends with whitespace")
            if _inside_word(text, start) or _inside_word(text, end):
                problems.append(f"{where}: starts or ends inside a word")
            if span_hash(span) != digest:
                problems.append(f"{where}: span hash differs")
    return problems


def copied_run(question: str, text: str) -> str | None:
    """The first run of `COPIED_RUN` words of the question that the document holds word for word
    (whitespace normalised), or None: a question that quotes its answer tests string matching."""
    flat = " ".join(text.split())
    words = question.rstrip("?").split()
    runs = (" ".join(words[i : i + COPIED_RUN]) for i in range(max(0, len(words) - COPIED_RUN + 1)))
    return next((run for run in runs if run in flat), None)


def corpus_from_evidence(
    name: str,
    kind: str,
    source: str,
    build: str,
    text: str,
    rows: list[dict[str, Any]],
    held_out: bool = False,
    kept: tuple[GoldQuestion, ...] = (),
    joins: str | None = None,
    asked: int = 0,
) -> tuple[GoldCorpus, list[str]]:
    """A gold corpus from questions with verbatim evidence (`{"question", "evidence": [str, ...]}`), after
    the questions `kept` from an earlier file, and every reason it is not fit to ship: evidence that is not
    in the text exactly once, a question that is not a question or quotes the document, a repeated question,
    too few questions, and whatever `span_problems` finds in the offsets. Kept questions keep their offsets
    as they are; rows are numbered after them. `asked` counts the questions the Chroma corpus it `joins`
    has already, toward the minimum. The evidence text itself never reaches the corpus file."""
    if build not in BUILDS:
        raise GoldError(f"build must be one of {BUILDS}, not {build!r}")
    problems: list[str] = []
    questions: list[GoldQuestion] = list(kept)
    seen: set[str] = {q.question for q in kept}
    for number, row in enumerate(rows, start=len(kept) + 1):
        question, evidence = str(row.get("question", "")).strip(), row.get("evidence") or []
        if isinstance(evidence, str):  # one piece given bare rather than as a list of one
            evidence = [evidence]
        where = f"{name} q{number}"
        if not question.endswith("?"):
            problems.append(f"{where}: does not end with '?'")
        if question in seen:
            problems.append(f"{where}: asked twice")
        seen.add(question)
        run = copied_run(question, text)
        if run:
            problems.append(f"{where}: repeats {COPIED_RUN} words of the document: {run!r}")
        spans = []
        for piece in evidence:
            count = text.count(piece)
            if count != 1:
                problems.append(f"{where}: evidence found {count} times, not once: {piece[:40]!r}")
                continue
            start = text.index(piece)
            spans.append((start, start + len(piece)))
        if not evidence:
            problems.append(f"{where}: no evidence")
        spans.sort()
        questions.append(GoldQuestion(question, tuple(spans), tuple(span_hash(text[s:e]) for s, e in spans)))
    if len(questions) + asked < MIN_QUESTIONS:
        have = f"{len(questions)} questions" + (f" and {asked} of {joins}'s" if joins else "")
        problems.append(f"{name}: {have}, at least {MIN_QUESTIONS} needed")
    corpus = GoldCorpus(name, kind, source, build, text_hash(text), len(text), tuple(questions), held_out, joins)
    problems.extend(p for p in span_problems(corpus, text) if "do not pair up" not in p)
    return corpus, problems


def dump_gold(corpus: GoldCorpus) -> str:
    """The corpus file: one question per line, so a review reads it row by row."""
    head: dict[str, Any] = {"name": corpus.name, "kind": corpus.kind, "source": corpus.source, "build": corpus.build}
    if corpus.held_out:
        head["held_out"] = True
    if corpus.joins:
        head["joins"] = corpus.joins
    head |= {"text_sha256": corpus.text_sha256, "text_chars": corpus.text_chars}
    lines = ["{", *(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items())]
    rows = [
        json.dumps(
            {"question": q.question, "spans": [list(s) for s in q.spans], "span_sha256": list(q.span_hashes)},
            ensure_ascii=False,
        )
        for q in corpus.questions
    ]
    lines += [
        '  "questions": [',
        *(f"    {row}," for row in rows[:-1]),
        *(f"    {row}" for row in rows[-1:]),
        "  ]",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _inside_word(text: str, at: int) -> bool:
    return 0 < at < len(text) and text[at - 1].isalnum() and text[at].isalnum()


__all__ = [
    "MIN_QUESTIONS",
    "GoldCorpus",
    "GoldError",
    "GoldQuestion",
    "build_document",
    "copied_run",
    "corpus_from_evidence",
    "dump_gold",
    "gold_names",
    "load_gold",
    "parse_gold",
    "read_gold",
    "span_hash",
    "span_problems",
    "text_hash",
]
