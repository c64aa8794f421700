#!/usr/bin/env python3
"""Turn Debian's `debian-reference-en` (HTML, installed by scripts/setup) into
one long plain-text English document for `stride validate` (~200K tokens).

    python3 scripts/oracles/make_long_text.py [--out ~/.cache/stride/debian-reference.txt]
"""
import argparse
import html.parser
import os
import re
import sys
from pathlib import Path

SRC = Path("/usr/share/debian-reference")
DEFAULT_OUT = Path.home() / ".cache" / "stride" / "debian-reference.txt"


class TextOnly(html.parser.HTMLParser):
    """Keeps visible text; block elements become paragraph breaks."""

    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "pre", "table", "dt", "dd"}
    SKIP = {"script", "style", "head", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_to_text(page: str) -> str:
    p = TextOnly()
    p.feed(page)
    text = "".join(p.parts)
    paras = [re.sub(r"\s+", " ", para).strip() for para in re.split(r"\n\s*\n", text)]
    return "\n\n".join(x for x in paras if x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    pages = sorted(SRC.glob("ch*.en.html")) + sorted(SRC.glob("ap*.en.html"))
    if not pages:
        print(f"error: no HTML under {SRC}; install debian-reference-en (scripts/setup)", file=sys.stderr)
        return 1
    text = "\n\n".join(html_to_text(p.read_text(encoding="utf-8", errors="replace")) for p in pages)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, args.out)
    print(f"{args.out}: {len(text)} characters from {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
