"""Text for the tokenizers whose normalizer is a Unicode normal form
(make_tokenizers.py --kind qwen2|nfkc|form-nfc|form-nfd|form-nfkc|form-nfkd):
character pools for the generated strings, and strings that take every
character with normalization data through the four forms.

The characters are Python's unicodedata's (Unicode 14.0 on Python 3.11), a
source independent of the runtime's tables; those assigned after Unicode 9.0
are kept in, since Hugging Face leaves them alone and the runtime must too.
"""
import unicodedata


def _span(lo, hi):
    return [chr(c) for c in range(lo, hi + 1)]


POOLS = {
    # Marks of many classes (220 below, 230 above, 1 overlays, 202 attached,
    # Hebrew and Arabic points, Tibetan vowels), to be reordered and composed.
    "marks": _span(0x300, 0x36F) + _span(0x591, 0x5C7) + _span(0x64B, 0x65F) + _span(0xF71, 0xF84) +
             _span(0x1DC0, 0x1DFF) + _span(0x20D0, 0x20F0) + ["\u093C", "\u094D", "\u3099", "\u309A"],
    "bases": list("aAeEiIoOuUnNcCsSzZyY") + ["\u0391", "\u03B9", "\u0415", "\u0430", "\u05D0", "\u0627", "\u0915",
                                             "\u304B", "\u30CF", "\u00E9", "\u00C5", "\u1E9B", "\u0F40"],
    # Conjoining jamo (leading, vowel, trailing, and U+11A7, which is no
    # trailing consonant to composition), compatibility jamo, syllables.
    "jamo": _span(0x1100, 0x1112) + _span(0x1161, 0x1175) + _span(0x11A7, 0x11C2) + _span(0x3131, 0x314E) +
            ["\uAC00", "\uAC01", "\uD4DB", "\uD7A3", "\uB098"],
    # Compatibility characters: ligatures, full- and half-width forms,
    # circled and squared signs, super- and subscripts, fractions, math
    # letters, Arabic presentation forms, CJK compatibility ideographs.
    "compat": _span(0xFB00, 0xFB06) + _span(0xFF01, 0xFF5E) + _span(0xFF61, 0xFF9F) + _span(0x2460, 0x24FF) +
              _span(0x3300, 0x3357) + _span(0x2070, 0x209C) + _span(0x2150, 0x2189) + _span(0x1D400, 0x1D44F) +
              ["\uFDFA", "\uFDFB", "\uFB50", "\uFEF5", "\uF900", "\uFA10", "\U0002FA1D", "\u00A0", "\u00BD", "\u2126",
               "\u212B", "\u017F", "\u2025", "\u2474", "\u33FF", "\u3250", "\U0001F100", "\U0001F16A", "\uFE36"],
    # Composition exclusions, singletons, characters decomposing to
    # non-starters.
    "excluded": _span(0x958, 0x95F) + ["\u2ADC", "\u0340", "\u0341", "\u0343", "\u0344", "\u0374", "\u037E",
                                        "\u0387", "\u0F73", "\u0F75", "\u0F81", "\U0001D15E", "\U0001D1BB", "\u2329"],
    # Assigned after Unicode 9.0 with a class or a decomposition: to Hugging
    # Face, plain characters.
    "after9": ["\u0898", "\u1DFA", "\u0C3C", "\U0001E4EC", "\U00010EFD", "\U0001E08F", "\U0001E2AE", "\U00010F46",
               "\U00016FF0", "\uA7F2", "\U0001E030", "\U0001FBF0", "\U0001F16C", "\U00011938", "\U00011935",
               "\U00011930", "\u1CF4", "\u08D3"],
    "words": ["Caf\u00E9", "Cafe\u0301", "fine", "\uFB01ne", "\uFF46\uFF49\uFF4E\uFF45", "\uAC00\uB098",
              "\u1100\u1161\u1102\u1161", " \u0301", "\u0301"],
}


def every_character():
    """Strings that take each character with a decomposition or a combining
    class through normalization alone, between marks of other classes and
    after a starter; each canonical pair written out; every Hangul syllable,
    as itself and as jamo."""
    out = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        d = unicodedata.decomposition(ch)
        if not d and not unicodedata.combining(ch):
            continue
        out.append(ch)
        out.append("a\u0316" + ch + "\u0301\u0334" + ch + "e")
        if d and not d.startswith("<"):
            parts = [chr(int(x, 16)) for x in d.split()]
            out.append("".join(parts))
            out.append(parts[0] + "\u0323" + "".join(parts[1:]) + "\u0323")
    for lead in range(19):
        for vowel in range(21):
            lv = 0xAC00 + (lead * 21 + vowel) * 28
            jamo = chr(0x1100 + lead) + chr(0x1161 + vowel)
            out.append("".join(chr(lv + t) for t in range(28)))
            out.append("".join(jamo + chr(0x11A7 + t) for t in range(28)) + chr(lv) + "\u11A8" + chr(lv + 1) + "\u11A8")
    return out
