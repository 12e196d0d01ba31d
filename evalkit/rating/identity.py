"""Names and free text typed by raters: normalised, cleaned of invisible characters, and compared by a
look-alike key so that one rater cannot take another's identity with a name that only looks the same.

The key is the skeleton of Unicode's confusables data (UTS #39, "Unicode Security Mechanisms"), as shipped by the
`confusable-homoglyphs` package, made case-insensitive: two names with the same key may not belong to two
identities. Names are refused outright when they hold a character that renders as nothing (a control or format
character, a Default_Ignorable code point such as a Hangul filler or a variation selector)."""

from __future__ import annotations

import functools
import unicodedata

from ..errors import EvalkitError

NAME_LIMIT = 100

# Unicode's Default_Ignorable_Code_Point property (DerivedCoreProperties.txt): characters a renderer shows as
# nothing, among them the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the variation selectors (U+FE00–FE0F,
# U+E0100–E01EF), the zero-width characters, the bidirectional overrides and the soft hyphen. Python's unicodedata
# has no accessor for the property, and its list changes seldom. U+2800 (Braille blank) is not ignorable but also
# shows as a blank.
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


class InputError(EvalkitError):
    """Text a rater typed that cannot be used as it is; nothing was stored."""


def is_invisible(ch: str) -> bool:
    """A control, format, private-use, surrogate or unassigned character, or one that renders as nothing."""
    if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Cn"):
        return True
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES)


def clean_text(value, what: str, limit: int, *, multiline: bool = True) -> str:
    """Free text (a comment, a skip reason) as it is stored: NFC, control and invisible formatting characters
    removed (newlines and tabs kept when multiline), trimmed, at most `limit` characters. Text far over the limit
    is refused before any other work."""
    if not isinstance(value, str):
        raise InputError(f"{what} must be text", "type plain text")
    if len(value) > 2 * limit + 64:  # normalising cannot bring this under the limit: refuse before working on it
        raise InputError(f"{what} is {len(value)} characters; the limit is {limit}",
                         f"shorten it to {limit} characters or fewer")
    value = unicodedata.normalize("NFC", value)
    keep = "\n\t" if multiline else ""
    value = "".join(ch for ch in value if ch in keep or not is_invisible(ch)).strip()
    if len(value) > limit:
        raise InputError(f"{what} is {len(value)} characters; the limit is {limit}",
                         f"shorten it to {limit} characters or fewer")
    return value


def clean_name(value) -> str:
    """A rater's display name: NFC, single-spaced, no control or invisible characters (refused, not silently
    dropped: the rater should see the name that will be stored). The length is checked first, before any work."""
    if not isinstance(value, str):
        raise InputError("the name must be text", "type your name")
    if len(value) > 4 * NAME_LIMIT:
        raise InputError(f"the name is {len(value)} characters; the limit is {NAME_LIMIT}", "use a shorter name")
    name = unicodedata.normalize("NFC", value)
    bad = sorted({f"U+{ord(ch):04X}" for ch in name if is_invisible(ch)})
    if bad:
        raise InputError(f"the name contains invisible or control characters ({', '.join(bad)})",
                         "type the name with visible letters, digits and spaces only")
    name = " ".join(name.split())
    if not name:
        raise InputError("the name is empty", "type your name")
    if len(name) > NAME_LIMIT:
        raise InputError(f"the name is {len(name)} characters; the limit is {NAME_LIMIT}", "use a shorter name")
    return name


@functools.cache
def skeleton_map() -> dict[str, str]:
    """UTS #39's confusables mapping, one code point -> its prototype (a string), from the data file the
    `confusable-homoglyphs` package ships (generated from Unicode's confusables.txt).

    That file lists each source/prototype pair in both directions, so the direction is read back: a prototype is
    never a source (the mapping is idempotent), a source has exactly one prototype, and a prototype may be a
    sequence. A character listed with several others is a prototype; one listed with a single character is that
    character's source when that character is listed with others or is a sequence. The few pairs listed only with
    each other map to the ASCII member, else the lower code point (either way both get the same key)."""
    import json
    from importlib.resources import files

    raw = json.loads(files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))

    def bare(s: str) -> str:  # right-to-left entries are wrapped in direction marks for display
        return s.replace("\u200e", "").replace("\u200f", "")

    listed: dict[str, set[str]] = {}
    for k, entries in raw.items():
        listed.setdefault(bare(k), set()).update(bare(e["c"]) for e in entries)
    out = {}
    for src, others in listed.items():
        if len(src) != 1 or len(others) != 1:
            continue
        (proto,) = others
        if len(proto) > 1 or len(listed.get(proto, ())) > 1:
            out[src] = proto
        elif listed.get(proto) == {src} and (proto.isascii(), -ord(proto[0])) > (src.isascii(), -ord(src)):
            out[src] = proto
    return out


def _small_capital(ch: str) -> str | None:
    """LATIN LETTER SMALL CAPITAL B -> b: a small capital is the capital's glyph at the height of a small letter,
    and names are compared without case (UTS #39 maps a few small capitals only to each other, e.g. в -> ʙ)."""
    name = unicodedata.name(ch, "")
    head, sep, letter = name.partition(" LETTER SMALL CAPITAL ")
    if not sep or len(letter) != 1 or head not in ("LATIN", "GREEK", "CYRILLIC"):
        return None
    try:
        return unicodedata.lookup(f"{head} SMALL LETTER {letter}")
    except KeyError:
        return None


def _fold(s: str) -> str:
    """Width, compatibility forms and case folded; accents and other combining marks dropped."""
    s = unicodedata.normalize("NFKC", s).casefold()
    return "".join(ch for ch in unicodedata.normalize("NFD", s) if unicodedata.category(ch) != "Mn")


@functools.lru_cache(maxsize=4096)
def name_key(name: str) -> str:
    """The look-alike key: two names with the same key may not belong to two identities.

    Case folding and UTS #39's skeleton alternate until nothing changes (a prototype can itself have a case
    variant that is another character's prototype), small capitals fold to their letter, and i and l share a key
    (the skeleton maps capital I to l, case folding maps it to i). Marks, spaces and punctuation are dropped after
    the mapping ("Ann Lee", "annlee", "ann-lee", "Аnn Lee" with a Cyrillic А, "bօb" with an Armenian օ all meet)."""
    table = skeleton_map()
    s = unicodedata.normalize("NFD", name)  # the skeleton first, as UTS #39 has it (NFKC would turn ϲ into σ)
    for _ in range(6):
        nxt = _fold("".join(_small_capital(ch) or table.get(ch, ch) for ch in s)).replace("i", "l")
        if nxt == s:
            break
        s = nxt
    return "".join(ch for ch in s if ch.isalnum())


# A Hub username or organisation name is ASCII: letters, digits, '-', '_' and '.' (huggingface_hub's validate_repo_id,
# whose namespace is a username or an organisation, "mirrors" the Hub's own check with re.ASCII), and the Hub tells
# two names apart only by more than case ("repo ids are case insensitive across the Hub", huggingface_hub#2090;
# huggingface.co/datasets/GLUE redirects to .../glue, datasets#5421). The OAuth profile keeps the case chosen at
# sign-up (preferred_username "RemiFabre", pollen-robotics/reachy_mini#1105), and a config may list it in another.
# So folding ASCII letters is exact, and is what SQLite's NOCASE and lower() do to the revokes (hub_revokes).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def hub_key(name: str) -> str:
    """A Hub username (or organisation) as the Hub compares it: its ASCII letters in lower case (see above)."""
    return name.translate(_ASCII_LOWER)



def hub_in(name: str, names) -> bool:
    """Whether the Hub username `name` is one of `names` (a config's list), as the Hub compares them."""
    return hub_key(name) in {hub_key(n) for n in names}
