#!/usr/bin/env python3
"""Converts a tiny random-weight HF folder to GGUF with llama.cpp's own
convert_hf_to_gguf.py, from the llama.cpp source that the llama-cpp-python
0.3.36 sdist vendors (unpacked under ~/.cache/stride/llama-src on first use).

Usage (CLI):     hf_to_gguf.py HF_DIR OUT.gguf [--outtype f32|f16|bf16|q8_0]
Usage (library): convert(hf_dir, out_path, outtype="f32")

The tiny models have no tokenizer of their own, and the converter needs one.
This adds a complete byte-level BPE tokenizer.json to a temporary copy of the
folder: 255 byte tokens plus one merge "Ġ Ġ" -> token 255 (byte 0xFF never
occurs in UTF-8), the same vocabulary as tiny_gguf.py writes. Its
pre-tokenizer hash is unknown to the converter, which then refuses; it is
reported as "gpt-2" (what a byte-level BPE without a pre-tokenizer regex of its
own is). Gemma-2 and Phi-3, whose converters read a SentencePiece model, read
this tokenizer.json the way byte-level BPE families do. Everything else (tensor names, Q/K permutations, norms, fused
tensors, RoPE metadata) is the converter's.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from byte_map import bytes_to_unicode  # noqa: E402

VERSION = "0.3.36"
CACHE = Path(os.environ.get("STRIDE_CACHE", Path.home() / ".cache" / "stride"))


def llama_source() -> Path:
    """The vendored llama.cpp tree, unpacked from the sdist if needed."""
    base = CACHE / "llama-src"
    src = base / f"llama_cpp_python-{VERSION}" / "vendor" / "llama.cpp"
    if (src / "convert_hf_to_gguf.py").is_file() and (src / "conversion").is_dir():
        return src
    base.mkdir(parents=True, exist_ok=True)
    sdist = base / f"llama_cpp_python-{VERSION}.tar.gz"
    if not sdist.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", f"llama_cpp_python=={VERSION}",
                        "--no-deps", "--no-binary", ":all:", "-d", str(base)],
                       check=True, stdout=subprocess.DEVNULL)
    tmp = Path(tempfile.mkdtemp(dir=base, prefix="src."))
    prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers()
                   if m.name.startswith(prefix + "convert_hf_to_gguf.py")
                   or m.name.startswith(prefix + "conversion/")
                   or m.name.startswith(prefix + "gguf-py/")]
        tar.extractall(tmp, members=members, filter="data")
    dest = base / f"llama_cpp_python-{VERSION}"
    if not dest.exists():
        (tmp / f"llama_cpp_python-{VERSION}").rename(dest)
    else:  # a partial tree (the full sdist unpack of build_llama_bench) lacks these parts
        for part in ("convert_hf_to_gguf.py", "conversion", "gguf-py"):
            target = src / part
            if not target.exists():
                (tmp / prefix / part).rename(target)
    shutil.rmtree(tmp, ignore_errors=True)
    return src


def byte_level_tokenizer(vocab_size: int) -> dict:
    """tokenizer.json: GPT-2's byte-to-unicode map, ids 0..254 = bytes 0..254."""
    byte_char = bytes_to_unicode()
    vocab = {byte_char[b]: b for b in range(255)}
    vocab["ĠĠ"] = 255
    for i in range(256, vocab_size):
        vocab[f"<extra_{i}>"] = i
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": False},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [["Ġ", "Ġ"]]},
    }


def _with_tokenizer(hf_dir: Path, tmp: Path) -> Path:
    folder = tmp / "hf"
    shutil.copytree(hf_dir, folder)
    cfg = json.loads((folder / "config.json").read_text())
    text_cfg = cfg.get("text_config", cfg)
    if not (folder / "tokenizer.json").exists():
        (folder / "tokenizer.json").write_text(json.dumps(byte_level_tokenizer(text_cfg["vocab_size"])))
        # Family tokenizer classes (Qwen2Tokenizer, ...) add their own special
        # tokens past the vocabulary unless given ones inside it: pad = byte 0,
        # eos = byte 2 (the ids the tiny configs use).
        (folder / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1 << 20,
            "unk_token": None, "bos_token": None, "eos_token": "\u0102", "pad_token": "\u0100"}))
    return folder


def convert(hf_dir, out_path, outtype: str = "f32") -> None:
    """In a child process: the converter needs the vendored gguf-py, and the
    caller may already have imported the installed gguf package."""
    subprocess.run([sys.executable, os.path.abspath(__file__), str(hf_dir), str(out_path),
                    "--outtype", outtype], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE if os.environ.get("STRIDE_VERBOSE") is None else None)


def _convert_here(hf_dir, out_path, outtype: str) -> None:
    if "gguf" in sys.modules:
        raise RuntimeError("the installed gguf package is loaded; the converter needs its own")
    src = llama_source()
    for p in (str(src), str(src / "gguf-py")):
        if p not in sys.path:
            sys.path.insert(0, p)
    import conversion.base as base  # noqa: E402  (the vendored converter)
    import conversion.gemma as gemma  # noqa: E402
    import conversion.phi as phi  # noqa: E402
    import convert_hf_to_gguf  # noqa: E402

    # Gemma-2's and Phi-3's vocab readers want a SentencePiece tokenizer.model;
    # the tiny folders carry the byte-level tokenizer.json instead.
    for cls in (gemma.Gemma2Model, phi.Phi3MiniModel):
        cls.set_vocab = base.TextModel._set_vocab_gpt2

    original = base.TextModel.get_vocab_base_pre
    if not getattr(original, "_stride_tiny", False):
        def get_vocab_base_pre(self, tokenizer):
            try:
                return original(self, tokenizer)
            except NotImplementedError:
                return "gpt-2"
        get_vocab_base_pre._stride_tiny = True
        base.TextModel.get_vocab_base_pre = get_vocab_base_pre

    with tempfile.TemporaryDirectory() as tmp:
        folder = _with_tokenizer(Path(hf_dir), Path(tmp))
        argv = sys.argv
        sys.argv = ["convert_hf_to_gguf.py", str(folder), "--outfile", str(out_path),
                    "--outtype", outtype]
        try:
            convert_hf_to_gguf.main()
        finally:
            sys.argv = argv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("out")
    ap.add_argument("--outtype", default="f32", choices=["f32", "f16", "bf16", "q8_0"])
    args = ap.parse_args()
    _convert_here(args.hf_dir, args.out, args.outtype)


if __name__ == "__main__":
    main()
