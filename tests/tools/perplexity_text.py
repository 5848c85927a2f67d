"""The fixed English text of genc's perplexity figures (docs/quantization.md):
licence texts every Debian 12 system has (/usr/share/common-licenses, from
the essential package base-files), concatenated in this order with a newline
between them; their sha256 are checked, so a figure is always over the same
text (24,693 tokens with SmolLM2's tokenizer.json).

  python3 tests/tools/perplexity_text.py OUT.txt
"""
import hashlib
import sys

LICENSES = [  # name, sha256 (base-files 12.4+deb12u11)
    ("GPL-3", "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986"),
    ("LGPL-2.1", "dc626520dcd53a22f727af3ee42c770e56c97a64fe3adb063799d8ab032fe551"),
    ("Apache-2.0", "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"),
    ("MPL-2.0", "fab3dd6bdab226f1c08630b1dd917e11fcb4ec5e1e020e2c16f83a0a13863e85"),
    ("GFDL-1.3", "110535522396708cea37c72a802c5e7e81391139f5f7985631c93ef242b206a4"),
]


def text(root="/usr/share/common-licenses"):
    parts = []
    for name, sha in LICENSES:
        path = f"{root}/{name}"
        try:
            data = open(path, "rb").read()
        except OSError as e:
            raise SystemExit(f"perplexity_text: error: cannot read {path}: {e.strerror}")
        if hashlib.sha256(data).hexdigest() != sha:
            raise SystemExit(f"perplexity_text: error: {path} is not the text the figures were measured on "
                             f"(sha256 {hashlib.sha256(data).hexdigest()})")
        parts.append(data.decode("utf-8"))
    return "\n".join(parts)


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write(text())
