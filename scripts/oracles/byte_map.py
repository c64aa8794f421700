"""GPT-2's byte-to-unicode map, shared by the tiny models' tokenizers.

Kept free of other imports: hf_to_gguf.py loads it beside llama.cpp's own
gguf-py, which must not meet the installed gguf package.
"""


def bytes_to_unicode() -> dict:
    """GPT-2's printable stand-ins for the 256 byte values."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}
