"""The Node runtime's correlation ids, reproduced: seeded ARC4 (`seedrandom` 3.0.5) feeding
`ulid`'s `monotonicFactory` (3.0.x), as `@workflow/core` mints `step_`/`wait_`/`hook_` ids.

Why: a run's replay asks for the same correlation ids it logged, and every core from 4.2.4 to
5.0.0-beta.39 derives them in the workflow VM from `seedrandom(seed)` and
`monotonicFactory(() => Math.random())(time)`; only the seed and the time changed between
the 4.x and the 5.0 cores. Reproducing both lets wfctl tell which rule wrote a run's ids and
rewrite them to what another core's replay will ask for (wfctl/migrate/inflight.py).

With the time fixed for the whole replay, the factory draws 16 characters of randomness at
its first call only; every later id is the previous random part plus one (base 32). So a
run's k-th id is `time + (R + k)`, R being the 16 characters drawn at the first call.
"""

from __future__ import annotations

from collections.abc import Iterator

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_INDEX = {c: i for i, c in enumerate(CROCKFORD)}
RANDOM_LEN = 16  # ulid's RANDOM_LEN: 80 bits
TIME_LEN = 10
_WIDTH = 256
_MASK = 255
_CHUNKS = 6
_START_DENOM = _WIDTH**_CHUNKS
_SIGNIFICANCE = 2**52
_OVERFLOW = 2**53


class SeededRandom:
    """`seedrandom(seed)()` of seedrandom 3.0.5 (ARC4, RC4-drop[256]), draw for draw."""

    def __init__(self, seed: str) -> None:
        key: list[int] = []
        smear = 0
        units = _utf16_units(seed)
        for j, unit in enumerate(units):
            at = j & _MASK
            prior = key[at] if at < len(key) else 0  # JS: undefined * 19 is NaN, ^ NaN is ^ 0
            smear ^= prior * 19
            value = _MASK & (smear + unit)
            if at < len(key):
                key[at] = value
            else:
                key.append(value)
        if not key:
            key = [0]
        s = list(range(_WIDTH))
        j = 0
        for i in range(_WIDTH):
            t = s[i]
            j = _MASK & (j + key[i % len(key)] + t)
            s[i] = s[j]
            s[j] = t
        self._s = s
        self._i = 0
        self._j = 0
        self.draws = 0  # how many numbers `random()` has returned
        self._g(_WIDTH)

    def _g(self, count: int) -> int:
        s, i, j = self._s, self._i, self._j
        r = 0
        for _ in range(count):
            i = _MASK & (i + 1)
            t = s[i]
            j = _MASK & (j + t)
            s[i] = s[j]
            s[j] = t
            r = r * _WIDTH + s[_MASK & (s[i] + t)]
        self._i, self._j = i, j
        return r

    def random(self) -> float:
        """The next double in [0, 1), as JavaScript computes it."""
        n = self._g(_CHUNKS)
        d = _START_DENOM
        x = 0
        while n < _SIGNIFICANCE:
            n = (n + x) * _WIDTH
            d *= _WIDTH
            x = self._g(1)
        while n >= _OVERFLOW:
            n //= 2
            d //= 2
            x >>= 1
        self.draws += 1
        return float(n + x) / float(d)


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[k : k + 2], "little") for k in range(0, len(data), 2)]


def encode_random(rng: SeededRandom) -> str:
    """ulid's `encodeRandom(16, prng)`: each draw is prepended (the first lands last)."""
    out = ""
    for _ in range(RANDOM_LEN):
        out = CROCKFORD[int(rng.random() * 32) % 32] + out
    return out


def encode_time(ms: int) -> str:
    """ulid's `encodeTime(ms, 10)`."""
    out = ""
    for _ in range(TIME_LEN):
        out = CROCKFORD[ms % 32] + out
        ms //= 32
    return out


def decode_time(body: str) -> int:
    """The milliseconds of a ULID's time part."""
    return base32_value(body[:TIME_LEN])


def base32_value(text: str) -> int:
    value = 0
    for c in text:
        value = value * 32 + _INDEX[c]
    return value


def base32_text(value: int, length: int = RANDOM_LEN) -> str:
    out = ""
    for _ in range(length):
        out = CROCKFORD[value % 32] + out
        value //= 32
    if value:
        raise ValueError("base32 overflow")
    return out


def first_random(seed: str, skip: int = 0) -> str:
    """The random part the factory draws at its first call, after `skip` earlier draws of
    the VM's `Math.random` (workflow code or the runtime drawing before the first id)."""
    rng = SeededRandom(seed)
    for _ in range(skip):
        rng.random()
    return encode_random(rng)


def random_parts(seed: str, limit: int) -> Iterator[tuple[int, str]]:
    """(skip, first random part) for skip = 0 .. limit-1, sharing one generator."""
    rng = SeededRandom(seed)
    window: list[float] = [rng.random() for _ in range(RANDOM_LEN)]
    for skip in range(limit):
        yield skip, "".join(CROCKFORD[int(r * 32) % 32] for r in reversed(window))
        window = [*window[1:], rng.random()]


def random_values(seed: str, limit: int) -> Iterator[tuple[int, int]]:
    """`random_parts` as 80-bit values, drawn lazily and rolled in O(1) per window (the first
    draw is the least significant character), for the search over many runs."""
    rng = SeededRandom(seed)
    chars = [int(rng.random() * 32) % 32 for _ in range(RANDOM_LEN)]
    value = sum(c << (5 * i) for i, c in enumerate(chars))
    top = 5 * (RANDOM_LEN - 1)
    for skip in range(limit):
        yield skip, value
        nxt = int(rng.random() * 32) % 32
        value = (value >> 5) | (nxt << top)


def correlation_body(time_ms: int, first: str, ordinal: int) -> str:
    """The ULID of the run's `ordinal`-th id (0-based) under a fixed time and first draw."""
    return encode_time(time_ms) + base32_text(base32_value(first) + ordinal)


URL_ALPHABET = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict"  # nanoid 5
_NANOID_SIZE = 21
_NANOID_STEP = 34  # nanoid's customRandom: ceil(1.6 * 63 * 21 / 64) bytes per batch


def generated_tokens(seed: str, limit: int) -> set[str]:
    """Every hook token `createHook()` without a token could have minted in a run seeded with
    `seed`, whatever number of draws (below `limit`) came before it: nanoid's
    `customRandom(urlAlphabet, 21, size => Uint8Array(size).map(() => 256 * random()))`
    reads one 34-byte batch from its last byte down."""
    rng = SeededRandom(seed)
    draws = [int(rng.random() * 256) & 63 for _ in range(limit + _NANOID_STEP)]
    return {_token(draws, start) for start in range(limit)}


def minted_token(seed: str, start: int) -> str:
    """The token nanoid mints from the `start`-th draw on (e.g. 16: right after a run's first
    id, which is what `createHook()` without a token mints first)."""
    rng = SeededRandom(seed)
    draws = [int(rng.random() * 256) & 63 for _ in range(start + _NANOID_STEP)]
    return _token(draws, start)


def _token(draws: list[int], start: int) -> str:
    return "".join(URL_ALPHABET[draws[start + i]] for i in range(33, 33 - _NANOID_SIZE, -1))
