"""Plain-text call transcripts: roster, speaker lines and turns, and the Q&A pairing of those turns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from streams.core.chunkers.base import ChunkDraft
from streams.core.chunkers.finance.blocks import Block, Context, turn_body
from streams.core.chunkers.finance.pages import kept_lines
from streams.core.text import Span

_EXEC_HEADERS = re.compile(
    r"^(company participants|executives|company representatives|corporate participants|"
    r"management|company speakers)\s*:?$",
    re.I,
)
_ANALYST_HEADERS = re.compile(r"^(conference call participants|analysts|other participants)\s*:?$", re.I)
_QA_HEADER = re.compile(
    r"^(question[- ]and[- ]answer( session)?|questions? (and|&) answers?|q ?& ?a( session)?)\s*:?$", re.I
)
REMARKS_HEADER = re.compile(r"^(prepared remarks|presentation|opening remarks)\s*:?$", re.I)
_ROSTER_LINE = re.compile(r"^([A-Z][\w.'’\-]*(?:\s+[A-Za-z][\w.'’\-]*){0,4})\s+[-–—]\s+(.+)$")
_SPEAKER_PREFIX = re.compile(r"^[AQ]\s+[-–—]\s+")
# A bare name line: capitalised words, where a word may end in a period only as an initial ("J."), an
# honorific or suffix ("Dr.", "Jr."), or at the very end ("Jane Doe."). "Yep. OK. Gotcha. Great." is a
# question's opening line, not a speaker.
_NAME_WORD = r"(?:[A-Z]\.|(?:Mr|Mrs|Ms|Dr|Jr|Sr|St)\.|[A-Z][\w'’\-]*)"
_NAME_LINE = re.compile(rf"^{_NAME_WORD}(?:\s+(?:{_NAME_WORD}|de|van|von|da|del|la|le)){{1,4}}\.?$")
_NOT_NAMES = frozenset(
    {
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "good",
        "okay",
        "ok",
        "yes",
        "yeah",
        "sure",
        "great",
        "well",
        "so",
    }
    | {
        "and",
        "but",
        "the",
        "now",
        "next",
        "our",
        "we",
        "in",
        "on",
        "for",
        "with",
        "this",
        "that",
        "all",
        "question",
    }
)
_UNIDENTIFIED = re.compile(r"^(unidentified|unknown)\s+[a-z ]+$", re.I)
_ROLE_ABBREV = (
    ("chief executive officer", "CEO"),
    ("chief financial officer", "CFO"),
    ("chief operating officer", "COO"),
    ("chief technology officer", "CTO"),
    ("investor relations", "IR"),
)


def _speaker_name(line: str) -> str:
    """'A - Jane Doe.' / 'Jane Doe - Acme Corp.' -> 'Jane Doe' (typographic apostrophes made plain)."""
    name = _SPEAKER_PREFIX.sub("", line.strip()).strip()
    m = _ROSTER_LINE.match(name)
    if m:
        name = m.group(1)
    return " ".join(name.rstrip(".").replace("’", "'").split())


def _match_name(name: str, names: Sequence[str]) -> str | None:
    """The roster name for a speaker line: exact, else a unique same-last-name entry (Jeff/Jeffrey), else a
    unique entry with the same first name and a last name differing by one letter (roster typos)."""
    if name in names:
        return name
    last = _last_name(name)
    same_last = [n for n in names if _last_name(n) == last]
    if len(same_last) == 1:
        return same_last[0]
    first = name.split()[0].lower() if name.split() else ""
    close = [n for n in names if n.split()[0].lower() == first and _one_edit(_last_name(n), last)]
    return close[0] if len(close) == 1 else None


def _one_edit(a: str, b: str) -> bool:
    """True when a and b differ by at most one inserted, deleted or replaced character."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def abbreviate_role(title: str) -> str:
    out = title.strip()
    for long, short in _ROLE_ABBREV:
        out = re.sub(long, short, out, flags=re.I)
    return out


@dataclass(slots=True)
class _Roster:
    executives: dict[str, str] = field(default_factory=dict)  # name -> role
    analysts: dict[str, str] = field(default_factory=dict)  # name -> firm
    end: int = 0  # index of the first line after the roster
    spans: list[Span] = field(default_factory=list)


def _parse_roster(text: str, lines: Sequence[Span]) -> _Roster:
    roster = _Roster()
    mode = ""
    for index, (s, e) in enumerate(lines[:200]):
        line = text[s:e].strip()
        if _EXEC_HEADERS.match(line):
            mode = "exec"
        elif _ANALYST_HEADERS.match(line):
            mode = "analyst"
        elif mode and line.startswith("[") and line.endswith("]"):
            continue  # transcription artefact inside a roster
        elif mode and (m := _ROSTER_LINE.match(line)):
            name, detail = " ".join(m.group(1).replace("’", "'").split()), m.group(2).strip()
            if mode == "exec":
                roster.executives[name] = abbreviate_role(detail)
            else:
                roster.analysts[name] = detail.rstrip(".").strip()
        elif mode:
            roster.end = index
            break
        else:
            continue
        roster.spans.append((s, e))
        roster.end = index + 1
    return roster


def _is_speaker_line(line: str, roster: _Roster, known: set[str]) -> bool:
    """Speaker lines: Operator, roster names, 'A - Name', unidentified speakers, bare 2-5 word names."""
    raw = line.strip()
    name = _speaker_name(raw)
    if not name or len(raw) > 60:
        return False
    if name == "Operator" or name in known or _match_name(name, [*roster.executives, *roster.analysts]):
        return True
    if _UNIDENTIFIED.match(name) or _SPEAKER_PREFIX.match(raw):
        return True
    first = raw.split()[0].lower().strip(".,")
    return bool(_NAME_LINE.match(raw)) and not raw.endswith(("?", "!", ",")) and first not in _NOT_NAMES


def _last_name(name: str) -> str:
    parts = name.split()
    return parts[-1].lower() if parts else ""


def _firm_from_operator(operator_text: str, analyst: str) -> str:
    """The firm an Operator names when introducing this analyst ("... from Jane Doe with Acme Bank")."""
    last = _last_name(analyst)
    if not last:
        return ""
    pattern = re.compile(
        rf"{re.escape(last)}\s*(?:,\s*)?(?:from|with|of|at)\s+(?:the\s+line\s+of\s+)?"
        r"([A-Z][\w&.'’\-]*(?:\s+(?:[A-Z][\w&.'’\-]*|&|and|de|du))*)",
        re.I,
    )
    m = pattern.search(operator_text)
    return m.group(1).strip().rstrip(".") if m else ""


def transcript_blocks(ctx: Context) -> list[Block]:
    """Text transcript -> participants para, speaker turns (with Q&A flags)."""
    text = ctx.doc.text
    lines = kept_lines(text, 0, len(text), ctx.dropped)
    roster = _parse_roster(text, lines)
    blocks: list[Block] = []
    head_end = roster.end
    if not roster.spans:
        head_end = 0
        while head_end < len(lines) and not _is_speaker_line(text[slice(*lines[head_end])], roster, set()):
            head_end += 1
    if head_end:
        blocks.append(
            Block(
                "para",
                lines[0][0],
                lines[head_end - 1][1],
                title="Participants",
                units=list(lines[:head_end]),
            )
        )
    known: set[str] = set()
    in_qa = False
    current: Block | None = None
    last_operator = ""
    for s, e in lines[head_end:]:
        line = text[s:e]
        if _QA_HEADER.match(line.strip()):
            in_qa, current = True, None
            continue
        if REMARKS_HEADER.match(line.strip()):
            current = None
            continue
        if _is_speaker_line(line, roster, known):
            name = _speaker_name(line)
            known.add(name)
            current = _turn_block(name, line, (s, e), roster, last_operator, in_qa)
            blocks.append(current)
            continue
        if current is None:
            current = Block("turn", s, e, speaker="Unknown speaker", in_qa=in_qa)
            blocks.append(current)
        current.units.append((s, e))
        current.end = e
        if current.is_operator:
            last_operator = text[current.start : current.end]
    _mark_first_question(blocks)
    _mark_moderated_questions(text, blocks)
    return blocks


def _turn_block(name: str, line: str, span: Span, roster: _Roster, operator_text: str, in_qa: bool) -> Block:
    """A speaker turn: Operator, an executive (roster role) or, in Q&A, an analyst (roster firm)."""
    block = Block("turn", span[0], span[1], speaker=name, in_qa=in_qa)
    prefix = line.strip()[:1] if _SPEAKER_PREFIX.match(line.strip()) else ""
    if name == "Operator":
        block.is_operator, block.role = True, "Operator"
        return block
    executive = _match_name(name, list(roster.executives)) if prefix != "Q" else None
    analyst = _match_name(name, list(roster.analysts)) if prefix != "A" else None
    if executive and analyst != name:
        block.speaker, block.role = executive, roster.executives[executive]
        return block
    if analyst or prefix == "Q" or (in_qa and prefix != "A" and not re.match(r"(?i)unidentified company", name)):
        block.is_analyst, block.role = True, "Analyst"
        block.speaker = analyst or name
        block.firm = roster.analysts.get(analyst or "", "") or _firm_from_operator(operator_text, name)
    return block


def _mark_first_question(blocks: list[Block]) -> None:
    """Without a Q&A header the Q&A starts at the first analyst (question) turn."""
    if any(b.in_qa for b in blocks):
        return
    started = False
    for block in blocks:
        if block.kind == "turn" and block.is_analyst:
            started = True
        if started and block.kind == "turn":
            block.in_qa = True


def _mark_moderated_questions(text: str, blocks: list[Block]) -> None:
    """A Q&A where management reads out collected questions (no analyst ever speaks): the moderator's
    turns that ask something become the questions, attributed to the moderator with role "Moderator"."""
    qa_turns = [b for b in blocks if b.kind == "turn" and b.in_qa and not b.is_operator]
    if not qa_turns or any(b.is_analyst for b in qa_turns):
        return
    moderator = qa_turns[0].speaker
    for block in qa_turns:
        if block.speaker == moderator and "?" in text[turn_body(block)[0] : turn_body(block)[1]]:
            block.is_analyst, block.role = True, "Moderator"


@dataclass(slots=True)
class Pair:
    """One question (possibly with a leading pleasantry) and every answer up to the next question."""

    start: int
    question: Block
    answers: list[Block] = field(default_factory=list)
    lead: list[Block] = field(default_factory=list)
    lead_answers: list[Block] = field(default_factory=list)  # management remarks before the question

    @property
    def questions(self) -> list[Block]:
        return [*self.lead, self.question]


def is_pleasantry(text: str, turn: Block) -> bool:
    """A short analyst turn without a question mark ("Thanks, good morning.")."""
    said = text[turn_body(turn)[0] : turn_body(turn)[1]]
    return "?" not in said and len(said.split()) < 25


def merge_pleasantries(text: str, pairs: list[Pair]) -> list[Pair]:
    """Fold greeting and thank-you exchanges into the same analyst's real question.

    A greeting pair followed by the same analyst's next turn joins that pair (its answers stay in
    order); a closing thank-you without answers joins the analyst's previous pair.
    """
    out: list[Pair] = []
    carry: Pair | None = None
    for pair in pairs:
        if carry is not None and carry.question.speaker == pair.question.speaker:
            pair = Pair(carry.start, pair.question, [*carry.answers, *pair.answers], [*carry.lead, carry.question])
            carry = None
        elif carry is not None:
            out.append(carry)
            carry = None
        closing = not pair.answers and is_pleasantry(text, pair.question)
        if closing and out and out[-1].question.speaker == pair.question.speaker:
            out[-1].answers.append(pair.question)
            continue
        if is_pleasantry(text, pair.question) and all(is_pleasantry(text, a) for a in pair.answers):
            carry = pair
            continue
        out.append(pair)
    if carry is not None:
        out.append(carry)
    return out


def qa_count(drafts: list[ChunkDraft]) -> int:
    return sum(1 for d in drafts if d.content_type == "qna")
