#!/usr/bin/env python3
"""Static µop count of the AVX2 int8 prefill inner loops: stride's staged Q4_K and Q6_K tiles
against ik_llama.cpp's AVX2 Q4_K_R4 and Q6_K_R4 x Q8_K GEMMs (the kernels its `-rtr 1` runs for
Q4_K and Q6_K weights), with llvm-mca.

Both translation units are compiled to assembly as their builds compile them for an AVX2-only
target (-O3 -mavx2 -mfma -mf16c; ik's also -mavx), the steady-state loop holding the most
vpmaddubsw of the named function is cut out (the innermost loop ending in a backward jump), and
llvm-mca runs it per -mcpu (Zen 2, Zen 3, Skylake by default). Every figure is normalized to
32 int8 multiply-adds (32 weights of one row times one token: one vpmaddubsw's work), so tiles
of different shapes (stride: 8 rows x 4 tokens, ik: 4 rows x 8 tokens) compare directly.
The per-superblock work that ik's inner loop leaves outside (scales, mins: once per 256
weights) and stride's staging of the weights (once per 64-token block) are counted the same
way, amortized over the work they serve: ik's as one straight superblock (that work, then 8
copies of the inner loop's body), stride's staging apart.

  bench/micro/uop_count.py [--ik-src DIR] [--mcpu znver2 znver3 skylake] [--out bench/out/uop_count.md]

Needs c++ (GCC) and llvm-mca (LLVM 14+). A static count: what a core of that kind would issue
for the loop, not a measured speed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_IK = Path.home() / ".cache/stride/ik-llama-src/ik_llama_cpp_python-0.1.5/vendor/ik_llama.cpp"
JUMP = re.compile(r"^\s+(j[a-z]+)\s+(\.L\w+)")
LABEL = re.compile(r"^(\.L\w+):")


def compile_asm(cmd, out, reuse):
    if not (reuse and out.exists()):
        subprocess.run(cmd + ["-S", "-o", str(out)], check=True)
    return out.read_text().splitlines()


def demangle(names):
    res = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE, text=True, check=True)
    return res.stdout.splitlines()


def function_body(lines, pattern):
    """The lines of the first function whose demangled name matches PATTERN."""
    starts = [(i, l[:-1]) for i, l in enumerate(lines) if re.match(r"^_Z[\w.]+:$", l)]
    # GCC folds identical instantiations into one body (-fipa-icf) and names the others with .set.
    aliases = dict(m.groups() for l in lines if (m := re.match(r"^\s+\.set\s+(_Z[\w.]+),\s*(_Z[\w.]+)", l)))
    at = {n: i for i, n in starts}
    starts += [(at[target], alias) for alias, target in aliases.items() if target in at]
    names = demangle([n for _, n in starts])
    for (i, _), name in zip(starts, names):
        if re.search(pattern, name):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(".size")), len(lines))
            return name, lines[i:end]
    raise SystemExit(f"no function matching {pattern!r}")


def is_insn(line):
    s = line.strip()
    return bool(s) and not s.startswith((".", "#")) and not s.endswith(":")


def loops(body):
    """(start, end) line ranges of the loops: a label and the backward jump to it."""
    labels = {m.group(1): i for i, l in enumerate(body) if (m := LABEL.match(l))}
    out = []
    for i, l in enumerate(body):
        m = JUMP.match(l)
        if m and m.group(2) in labels and labels[m.group(2)] < i:
            out.append((labels[m.group(2)], i))
    return out


def count(body, lo, hi, mnemonic):
    return sum(1 for l in body[lo:hi + 1] if l.split()[:1] == [mnemonic])


def hot_loop(body):
    """The line range of the innermost loop with the most vpmaddubsw (ties: the shortest)."""
    all_loops = loops(body)
    innermost = [(a, b) for a, b in all_loops
                 if not any(a <= a2 and b2 <= b and (a2, b2) != (a, b) for a2, b2 in all_loops)]
    cands = [(count(body, a, b, "vpmaddubsw"), -(b - a), a, b) for a, b in innermost]
    cands = [c for c in cands if c[0] > 0]
    if not cands:
        raise SystemExit("no loop with vpmaddubsw")
    _, _, a, b = max(cands)
    return a, b


def insns(body, a, b, skip=None):
    return [l for i, l in enumerate(body[a:b + 1], a)
            if is_insn(l) and not (skip and skip[0] <= i <= skip[1])]


def mca(lines, mcpu):
    """llvm-mca's summary of LINES on MCPU: µops and cycles per iteration, pressure per port."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    try:
        res = subprocess.run(["llvm-mca", f"-mcpu={mcpu}", "-iterations=200", "-resource-pressure",
                              "-instruction-info=0", f.name], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, check=True)
    finally:
        os.unlink(f.name)
    out = res.stdout
    it = int(re.search(r"Iterations:\s+(\d+)", out).group(1))
    uops = int(re.search(r"Total uOps:\s+(\d+)", out).group(1)) / it
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / it
    rthr = float(re.search(r"Block RThroughput:\s+([\d.]+)", out).group(1))
    # "Resource pressure per iteration:" then a header of [n] names and a line of values.
    m = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", out)
    names, vals = m.group(1).split(), m.group(2).split()
    res_names = dict(re.findall(r"\[(\d+(?:\.\d+)?)\]\s+-\s+(\S+)", out))
    ports = {}
    for n, v in zip(names, vals):
        if v != "-":
            ports[res_names.get(n.strip("[]"), n)] = float(v)
    return {"uops": uops, "cycles": cycles, "rthroughput": rthr, "ports": ports}


def describe(name, lines, macs, mcpus):
    """Rows of one loop: per cpu, per-iteration and per-32-MAC figures and the busiest ports."""
    n_mul = sum(1 for l in lines if l.split()[:1] in (["vpmaddubsw"], ["vpmaddwd"]))
    rows = []
    for cpu in mcpus:
        r = mca(lines, cpu)
        per = macs / 32
        top = sorted(r["ports"].items(), key=lambda kv: -kv[1])[:3]
        rows.append((name, cpu, len(lines), r["uops"], r["cycles"], r["uops"] / per, r["cycles"] / per,
                     n_mul / per, ", ".join(f"{p} {v / per:.2f}" for p, v in top)))
    return rows


def hot_loop_rows(body, path, label, mcpus):
    """llvm-mca rows of BODY's hot loop (hot_loop), its instructions written to PATH; LABEL(n)
    names it from its vpmaddubsw per iteration. Returns (rows, (start, end, n, instructions))."""
    a, b = hot_loop(body)
    lines = insns(body, a, b)
    n = count(body, a, b, "vpmaddubsw")
    path.write_text("\n".join(lines) + "\n")
    return describe(label(n), lines, 32 * n, mcpus), (a, b, n, lines)


def stride_rows(asm, qtype, work, mcpus):
    """stride's staged tile loop over the staged blocks (8 rows x 4 tokens x 32 weights per
    iteration; its own function, or inlined into run_group_staged) and the staging loop
    (8 rows x 32 weights, once per 64-token block)."""
    group = f"run_group_staged<stride::packed::k{qtype}>"
    try:
        _, body = function_body(asm, rf"tile_staged<stride::packed::k{qtype}, 4>")
    except SystemExit:
        _, body = function_body(asm, group)
    rows, _ = hot_loop_rows(body, work / f"stride_{qtype}_tile.s",
                            lambda n: f"stride {qtype} staged tile, 8 rows x {n // 8} tokens", mcpus)
    _, body = function_body(asm, group)
    # The staging loop: the one that stores the 8 vectors of a staged block.
    stores = lambda a2, b2: sum(1 for l in body[a2:b2 + 1]  # noqa: E731
                                if l.split()[:1] in (["vmovdqa"], ["vmovaps"]) and re.search(r",\s*-?\d*\(%", l))
    stage = [(a2, b2) for a2, b2 in loops(body) if stores(a2, b2) >= 8 and count(body, a2, b2, "vpand") >= 4]
    if stage:
        a2, b2 = min(stage, key=lambda r: r[1] - r[0])
        st = insns(body, a2, b2)
        (work / f"stride_{qtype}_stage.s").write_text("\n".join(st) + "\n")
        rows += describe(f"stride {qtype} staging (per 64-token block)", st, 32 * 8 * 64, mcpus)
    return rows


def ik_rows(asm, qtype, fn, work, mcpus):
    """ik's kernel FN (4 interleaved rows x 8 tokens): its inner loop over the 32-weight blocks,
    the rest of the superblock loop (once per 256 weights), and the two as one straight
    superblock (the rest followed by 8 copies of the inner loop's body)."""
    _, body = function_body(asm, fn)
    rows, (a, b, n, inner) = hot_loop_rows(body, work / f"ik_{qtype}_tile.s",
                                           lambda n: f"ik {qtype}_R4 inner loop, 4 rows x 8 tokens", mcpus)
    outer = [(a2, b2) for a2, b2 in loops(body) if a2 < a and b2 > b]
    per_sb = 256 * 4 * 8  # MACs of one superblock of 4 rows x 8 tokens
    if outer and 32 * n < per_sb:
        a2, b2 = min(outer, key=lambda r: r[1] - r[0])
        rest = insns(body, a2, b2, skip=(a, b))
        straight = [l for l in rest if not JUMP.match(l)]
        inner_body = [l for l in inner if not JUMP.match(l)]
        whole = straight + inner_body * (per_sb // (32 * n)) + [rest[-1]] if rest else inner
        (work / f"ik_{qtype}_superblock.s").write_text("\n".join(whole) + "\n")
        rows += describe(f"ik {qtype}_R4 superblock (rest + inner x {per_sb // (32 * n)})", whole, per_sb, mcpus)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ik-src", type=Path, default=DEFAULT_IK, help="ik_llama.cpp source tree")
    ap.add_argument("--mcpu", nargs="+", default=["znver2", "znver3", "skylake"])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/out/uop_count.md")
    ap.add_argument("--keep", type=Path, help="directory to keep the assembly and the cut loops in")
    ap.add_argument("--reuse", action="store_true", help="take the assembly already in --keep")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="uop_count.")) if not args.keep else args.keep
    work.mkdir(parents=True, exist_ok=True)
    flags = ["-O3", "-DNDEBUG", "-mavx2", "-mfma", "-mf16c", "-std=gnu++20"]
    ours = compile_asm(["c++", "-DSTRIDE_ISA_LEVEL=0", "-DSTRIDE_ISA_NS=avx2", '-DSTRIDE_ISA_TARGET="avx2,fma,f16c"',
                        "-DSTRIDE_ISA_TILE_MODEL=0", f"-I{ROOT / 'src'}", *flags,
                        str(ROOT / "src/kernels/isa/packed_tiles.cpp")], work / "stride_packed_tiles_avx2.s", args.reuse)
    ggml = args.ik_src / "ggml/src"
    ik = compile_asm(["c++", "-DGGML_USE_IQK_MULMAT", "-D_GNU_SOURCE", f"-I{ggml / '../include'}", f"-I{ggml}",
                      "-mavx", *flags, str(ggml / "iqk/iqk_gemm_kquants.cpp")], work / "ik_gemm_kquants_avx2.s", args.reuse)
    rows = []
    for qtype, ik_fn in (("Q4_K", "mul_mat_q4_k_r4_q8_k<8>"), ("Q6_K", "mul_mat_q6_k_r4_q8_k<8>")):
        rows += stride_rows(ours, qtype, work, args.mcpu)
        rows += ik_rows(ik, qtype, ik_fn, work, args.mcpu)
    head = ("| loop | -mcpu | insns/iter | µops/iter | cycles/iter | µops/32 MAC | cycles/32 MAC "
            "| multiplies/32 MAC | busiest resources (per 32 MAC) |\n|---|---|---|---|---|---|---|---|---|\n")
    table = head + "".join(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | {r[5]:.2f} | {r[6]:.3f} | "
                           f"{r[7]:.3f} | {r[8]} |\n" for r in rows)
    ver = subprocess.run(["llvm-mca", "--version"], stdout=subprocess.PIPE, text=True).stdout
    ver = next((l.strip() for l in ver.splitlines() if "version" in l), "llvm-mca")
    gcc = subprocess.run(["c++", "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    text = (f"# Static µop count of the AVX2 Q4_K and Q6_K prefill inner loops\n\n{gcc}; {ver}. "
            f"A MAC is one int8 multiply-add; 32 MAC = 32 weights of one row x one token.\n\n{table}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    print(f"assembly and loops: {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
