"""Names and free text typed by raters: normalised, cleaned of invisible characters, and compared by a
look-alike key so that one rater cannot take another's identity with a name that only looks the same."""

from __future__ import annotations

import unicodedata

from .errors import EvalkitError

NAME_LIMIT = 100

# Bidirectional overrides and isolates, and the zero-width characters: invisible, and able to make one string
# display as another ("ann\u202egro" shows as "annorg").
_INVISIBLE = {chr(c) for c in (*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0x061C, 0xFEFF,
                               0x00AD, 0x180E)}

# The look-alikes that matter in practice (Unicode TR39's confusables, abridged): Cyrillic and Greek letters that
# render as Latin ones, and the digit / letter pairs of common fonts. Applied after NFKC and casefolding.
_CONFUSABLE = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ѕ": "s", "і": "l", "ї": "l", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ı": "l",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "l", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ω": "w", "0": "o", "1": "l", "i": "l", "|": "l", "5": "s",
})


class InputError(EvalkitError):
    """Text a rater typed that cannot be used as it is; nothing was stored."""


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Cn") or ch in _INVISIBLE


def clean_text(value, what: str, limit: int, *, multiline: bool = True) -> str:
    """Free text (a comment, a skip reason) as it is stored: NFC, control and invisible formatting characters
    removed (newlines and tabs kept when multiline), trimmed, at most `limit` characters."""
    if not isinstance(value, str):
        raise InputError(f"{what} must be text", "type plain text")
    value = unicodedata.normalize("NFC", value)
    keep = "\n\t" if multiline else ""
    value = "".join(ch for ch in value if ch in keep or not _is_control(ch)).strip()
    if len(value) > limit:
        raise InputError(f"{what} is {len(value)} characters; the limit is {limit}",
                         f"shorten it to {limit} characters or fewer")
    return value


def clean_name(value) -> str:
    """A rater's display name: NFC, single-spaced, no control or invisible characters (refused, not silently
    dropped: the rater should see the name that will be stored)."""
    if not isinstance(value, str):
        raise InputError("the name must be text", "type your name")
    name = unicodedata.normalize("NFC", value)
    bad = sorted({f"U+{ord(ch):04X}" for ch in name if _is_control(ch)})
    if bad:
        raise InputError(f"the name contains invisible or control characters ({', '.join(bad)})",
                         "type the name with visible letters, digits and spaces only")
    name = " ".join(name.split())
    if not name:
        raise InputError("the name is empty", "type your name")
    if len(name) > NAME_LIMIT:
        raise InputError(f"the name is {len(name)} characters; the limit is {NAME_LIMIT}", "use a shorter name")
    return name


def name_key(name: str) -> str:
    """The look-alike key: two names with the same key may not belong to two identities. NFKC folds width and
    compatibility forms, casefold folds case, the table folds Cyrillic/Greek look-alikes and 0/o, 1/l/i; marks,
    spaces and punctuation are dropped ("Ann Lee", "annlee", "ann-lee", "Аnn Lee" with a Cyrillic А all meet)."""
    s = unicodedata.normalize("NFKC", name).casefold()
    s = "".join(ch for ch in unicodedata.normalize("NFD", s) if unicodedata.category(ch) != "Mn")
    s = s.translate(_CONFUSABLE).replace("rn", "m").replace("vv", "w")
    return "".join(ch for ch in s if ch.isalnum())
