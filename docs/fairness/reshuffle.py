#!/usr/bin/env python3
"""Re-deals a banco automated shoe from its revealed shuffle key, with nothing but Python.

    python3 reshuffle.py KEY_HEX DECKS [TABLE SHOE]

prints the shoe's whole order (first card out first, the exposed burn card included), and,
given the table and shoe number, the commitment the key must hash to. This is an
independent transcription of the construction banco_table::fairness implements (and
archive.proto states): anyone can compare it with the cards the table dealt.
"""

import hashlib
import struct
import sys

MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


def _rotl(x, n):
    return ((x << n) | (x >> (32 - n))) & MASK32


def _quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & MASK32
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & MASK32
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & MASK32
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & MASK32
    s[b] = _rotl(s[b] ^ s[c], 7)


def chacha20_words(key):
    """The ChaCha20 keystream as 32-bit words: key = the 32-byte key, a 64-bit block
    counter from 0 (words 12-13) and a 64-bit stream id of 0 (words 14-15)."""
    constants = struct.unpack("<4I", b"expand 32-byte k")
    key_words = struct.unpack("<8I", key)
    counter = 0
    while True:
        state = list(constants) + list(key_words) + [
            counter & MASK32, counter >> 32, 0, 0
        ]
        s = state[:]
        for _ in range(10):  # 20 rounds: a column round and a diagonal round, ten times
            _quarter(s, 0, 4, 8, 12)
            _quarter(s, 1, 5, 9, 13)
            _quarter(s, 2, 6, 10, 14)
            _quarter(s, 3, 7, 11, 15)
            _quarter(s, 0, 5, 10, 15)
            _quarter(s, 1, 6, 11, 12)
            _quarter(s, 2, 7, 8, 13)
            _quarter(s, 3, 4, 9, 14)
        for i in range(16):
            yield (s[i] + state[i]) & MASK32
        counter += 1


def u64s(key):
    """64-bit words: two keystream words each, the first the low half."""
    words = chacha20_words(key)
    while True:
        low = next(words)
        high = next(words)
        yield (high << 32) | low


def below(stream, bound):
    """A uniform integer in 0..bound: Lemire's multiply-and-reject."""
    m = next(stream) * bound
    low = m & MASK64
    if low < bound:
        t = ((1 << 64) - bound) % bound
        while low < t:
            m = next(stream) * bound
            low = m & MASK64
    return m >> 64


def order(key, decks):
    """The shoe's order: decks x the 52 cards (AS 2S ... KS AH ... KC), Fisher-Yates from
    the last index down to 1, swapping item i with item below(i + 1)."""
    deck = [rank + suit for suit in "SHDC" for rank in "A23456789TJQK"]
    cards = deck * decks
    stream = u64s(key)
    for i in range(len(cards) - 1, 0, -1):
        j = below(stream, i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def commitment(key, table, shoe):
    return hashlib.sha256(f"banco-shoe-v1\n{table}\n{shoe}\n".encode() + key).hexdigest()


def main(argv):
    if len(argv) not in (3, 5):
        sys.exit(__doc__)
    key = bytes.fromhex(argv[1])
    if len(key) != 32:
        sys.exit("the key is 64 hex digits")
    print(" ".join(order(key, int(argv[2]))))
    if len(argv) == 5:
        print(commitment(key, argv[3], int(argv[4])))


if __name__ == "__main__":
    main(sys.argv)
