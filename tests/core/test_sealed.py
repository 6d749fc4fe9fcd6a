"""Sealed records: what opens them, and everything that does not."""

from __future__ import annotations

import pytest

from streams.core.sealed import MAGIC, Shredded, envelope, new_key, open_sealed, seal


def test_a_sealed_record_opens_only_under_its_key_id_generation_and_key() -> None:
    gen, key = new_key()
    sealed = seal("acme#minutes", gen, key, b"The east pier.")
    assert sealed.startswith(MAGIC) and b"east pier" not in sealed
    assert envelope(sealed) == ("acme#minutes", gen)
    assert open_sealed(sealed, key) == b"The east pier."
    assert seal("acme#minutes", gen, key, b"The east pier.") != sealed  # a fresh nonce each time
    with pytest.raises(Shredded, match="does not open it"):
        open_sealed(sealed, new_key()[1])
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(Shredded, match="does not open it"):
        open_sealed(tampered, key)
    moved = seal("globex#minutes", gen, key, b"x")  # another document's id over the same key
    body = moved.replace(b"globex#minutes", b"acme#minutes\x00\x00")
    with pytest.raises((Shredded, ValueError)):
        open_sealed(body, key)
    with pytest.raises(ValueError, match="truncated"):
        envelope(sealed[:20])
