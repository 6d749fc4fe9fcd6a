"""Sealed records: a document's records on the topics, encrypted with that document's own key.

Crypto-shredding. Kafka cannot delete one record from a log, noida-db does not compact, and a document's
text is on topics kept for ever (pages, assembled documents, chunks, dead letters, changelogs). With
document keys on, every record that carries a document's text is sealed with AES-256-GCM under a key
of that document's alone; a purge deletes the key, and every copy in every log becomes ciphertext that
nothing can read. The envelope (all plain but the ciphertext):

    0xC5 0x53 | version 1 | u16 key-id length | key id (the qualified doc id, UTF-8) | 8-byte key generation
    | 12-byte nonce | ciphertext with its 16-byte tag

The key id and generation are the additional data, so a record cannot be moved under another document's
key. The generation tells a key made again (the document published after its purge) from the one
deleted. This module is pure: keys come from a key ring (streams.runtime.keyring).
"""

from __future__ import annotations

import os
import struct

MAGIC = b"\xc5\x53"
VERSION = 1
GEN_BYTES = 8
NONCE_BYTES = 12
KEY_BYTES = 32


class Shredded(Exception):
    """A sealed record whose key is gone (its document was purged), or that no key ring can open here."""

    def __init__(self, key_id: str, reason: str = "its document's key is gone (purged)") -> None:
        super().__init__(f"sealed record of {key_id!r}: {reason}")
        self.key_id = key_id


def is_sealed(raw: bytes | None) -> bool:
    return raw is not None and raw[:2] == MAGIC


def new_key() -> tuple[bytes, bytes]:
    """A fresh (generation, key) for one document."""
    return os.urandom(GEN_BYTES), os.urandom(KEY_BYTES)


def _aad(key_id: bytes, gen: bytes) -> bytes:
    return struct.pack(">H", len(key_id)) + key_id + gen


def seal(key_id: str, gen: bytes, key: bytes, payload: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    kid = key_id.encode("utf-8")
    nonce = os.urandom(NONCE_BYTES)
    aad = _aad(kid, gen)
    return MAGIC + bytes([VERSION]) + aad + nonce + AESGCM(key).encrypt(nonce, payload, aad)


def envelope(raw: bytes) -> tuple[str, bytes]:
    """(key id, generation) of a sealed record; ValueError for bytes that only look sealed."""
    if not is_sealed(raw) or len(raw) < 5 or raw[2] != VERSION:
        raise ValueError("not a sealed record of a version this project reads")
    (length,) = struct.unpack(">H", raw[3:5])
    end = 5 + length + GEN_BYTES
    if len(raw) < end + NONCE_BYTES + 16:
        raise ValueError("sealed record is truncated")
    return raw[5 : 5 + length].decode("utf-8", "replace"), raw[5 + length : end]


def open_sealed(raw: bytes, key: bytes) -> bytes:
    """The payload of a sealed record under its key; Shredded when the key does not open it."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    key_id, gen = envelope(raw)
    kid = key_id.encode("utf-8")
    start = 5 + len(kid) + GEN_BYTES
    nonce, body = raw[start : start + NONCE_BYTES], raw[start + NONCE_BYTES :]
    try:
        return AESGCM(key).decrypt(nonce, body, _aad(kid, gen))
    except InvalidTag:
        raise Shredded(key_id, "the key does not open it (tampered, or another generation's)") from None
