"""The matrix product's register tiles keep their accumulators in registers, on every instruction
set the kernels are compiled for, whatever machine runs the test; so do the blocked convolution's
tiles of AVX-512 and AVX2 (kernels/conv/nchwc_tiles.h, ConvTile; CONV_VARIANTS below).

kernels/gemm/gemm.cc is compiled to assembly as model libraries compile it (backend/compiler.cc's
flags), for AVX2 + FMA (x86-64-v3) and AVX-512 (x86-64-v4). In each tile function Tile<R, P>, the
loop over K (the innermost loop with FMAs) may not move a vector register to or from the stack:
a register tile whose accumulators spill runs at a fraction of the FMA peak, and a machine without
AVX2-only cores never shows it in a timing. (It happened: GELU's fit in the tile's epilogue made
GCC keep half the accumulators of AVX2's 6 x 16 tile on the stack in every dense layer, 35% of the
peak instead of 80%.)

  check_tile_registers.py CXX SOURCE_DIR DLPACK_INCLUDE_DIR
"""
import re
import subprocess
import sys
import tempfile

FLAGS = ["-std=c++17", "-O3", "-fno-trapping-math", "-fno-math-errno", "-fPIC", "-fvisibility=hidden", "-S", "-w"]
# Tile<R, P> in kiln::kernels' anonymous namespace, mangled.
TILE = re.compile(r"^(_ZN4kiln7kernels12_GLOBAL__N_14TileILi(\d+)ELi(\d+)EEEv[\w.]*):$")
LABEL = re.compile(r"^(\.L\w+):")
JUMP = re.compile(r"^\s+j\w+\s+(\.L\w+)")
# A vector moved to or from the stack: addressed by %rsp, or by %rbp where the function made it
# its frame pointer (elsewhere GCC may use %rbp as an ordinary register).
STACK_VECTOR = re.compile(r"%[xyz]mm\d+.*\(%rsp\)|\(%rsp\).*%[xyz]mm\d+")
FRAME_VECTOR = re.compile(r"%[xyz]mm\d+.*\(%rbp\)|\(%rbp\).*%[xyz]mm\d+")


def functions(assembly):
    """(name, rows, panels, lines) of each tile function in the assembly."""
    lines = assembly.splitlines()
    found = []
    for i, line in enumerate(lines):
        match = TILE.match(line)
        if not match:
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(".cfi_endproc")), len(lines))
        found.append((match.group(1), int(match.group(2)), int(match.group(3)), lines[i:end]))
    return found


def innermost_fma_loops(lines):
    """The loops (label to backward jump) with FMAs that contain no other loop with FMAs (a loop
    without them, such as the convolution tiles' prefetches of the next weights, may be inside)."""
    labels = {}
    loops = []
    for i, line in enumerate(lines):
        if (match := LABEL.match(line)):
            labels[match.group(1)] = i
        elif (match := JUMP.match(line)) and match.group(1) in labels:
            loops.append((labels[match.group(1)], i))
    fma_loops = [(b, e) for b, e in loops if any("vfmadd" in line for line in lines[b:e + 1])]
    inner = [(b, e) for b, e in fma_loops if not any(b <= b2 and e2 < e for b2, e2 in fma_loops if (b2, e2) != (b, e))]
    return [lines[b:e + 1] for b, e in inner]


def compile_to_assembly(cxx, source_dir, dlpack_dir, march, source, defines=()):
    with tempfile.NamedTemporaryFile(suffix=".s") as out:
        subprocess.run([cxx, *FLAGS, f"-march={march}", *defines, f"-I{source_dir}", f"-I{source_dir}/include",
                        f"-I{dlpack_dir}", f"{source_dir}/{source}", "-o", out.name], check=True)
        return open(out.name).read()


def spills(lines, what):
    """Problems: `what`'s innermost FMA loops moving vectors to or from the stack, or missing."""
    loops = innermost_fma_loops(lines)
    frame_pointer = any(re.match(r"\s+movq\s+%rsp, %rbp", line) for line in lines)
    if not loops:
        return [f"{what} has no loop with FMAs"]
    problems = []
    for loop in loops:
        spilled = [line.strip() for line in loop
                   if STACK_VECTOR.search(line) or (frame_pointer and FRAME_VECTOR.search(line))]
        if spilled:
            problems.append(f"{what}'s loop moves vectors to or from the stack "
                            f"({len(spilled)} of {len(loop)} instructions), e.g. {spilled[0]}")
    return problems


def check(cxx, source_dir, dlpack_dir, march):
    """Problems found in the matrix tiles compiled for `march`, and the tiles checked."""
    assembly = compile_to_assembly(cxx, source_dir, dlpack_dir, march, "kernels/gemm/gemm.cc")
    problems = []
    tiles = functions(assembly)
    for name, rows, panels, lines in tiles:
        problems += spills(lines, f"{march}: Tile<{rows}, {panels}> ({name})")
    return problems, {(rows, panels) for _, rows, panels, _ in tiles}


# The blocked convolution's unchecked tiles ConvTile<OB, NB, T, false, IB, S, L>, mangled.
CONV_TILE = re.compile(r"^(_ZN4kiln7kernels5nchwc8ConvTileILi(\d+)ELi(\d+)ELi(\d+)ELb0ELi(\d+)ELi(\d+)ELi(\d+)EE\w*):$")

# The convolution variants whose tiles are checked: (march, variant compiled, the tile that must be
# among them as (blocks NB, positions T)). AVX-512's two 16-channel blocks with 16-channel input
# blocks compiled in (every 1x1 layer of 16-channel blocks; GCC once kept 9 of their 24
# accumulators on the stack in the input channel loop); AVX2's one 16-channel block of 6 positions
# with 8-channel input blocks (GCC wrote its FMAs in forms that moved accumulators between
# registers and kept some on the stack, until the FMAs were made to accumulate in place,
# FmaInPlace). Not checked: AVX2's three 8-channel blocks of 4 positions (variant 8,0,8,1,8), whose
# 12 accumulators, 3 weights and a broadcast take all 16 registers: GCC keeps 3 accumulators on
# the stack between input blocks (6 moves per 96 FMAs); two blocks of 6 positions, which keep none,
# ran MobileNetV2 2% slower on a Zen 3 core (its 24-channel layers in two tiles).
CONV_VARIANTS = [("x86-64-v4", "16,0,16,1,16", (2, 12)), ("x86-64-v3", "16,0,8,1,16", (1, 6))]


def check_conv_tiles(cxx, source_dir, dlpack_dir, march, variant):
    """Problems in the unchecked convolution tiles of `variant` compiled for `march`, and the
    (blocks, positions) of the tiles checked."""
    assembly = compile_to_assembly(cxx, source_dir, dlpack_dir, march, "kernels/conv/conv2d_nchwc.cc",
                                   ["-DKILN_INSTANTIATE_Conv2DNCHWc", f"-DKILN_INSTANTIATE={variant}"])
    lines = assembly.splitlines()
    problems, tiles = [], set()
    for i, line in enumerate(lines):
        if not (match := CONV_TILE.match(line)):
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(".cfi_endproc")), len(lines))
        ob, nb, t, ib, stride, lanes = (int(match.group(k)) for k in range(2, 8))
        tiles.add((nb, t))
        what = f"{march}: ConvTile<{ob}, {nb}, {t}, false, {ib}, {stride}, {lanes}> ({match.group(1)})"
        problems += spills(lines[i:end], what)
    return problems, tiles


def main():
    cxx, source_dir, dlpack_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    # The full tile of each instruction set (kernels/kernel_config.h: rows x panels).
    expected_full_tile = {"x86-64-v3": (6, 1), "x86-64-v4": (8, 3)}
    failures = []
    for march, full in expected_full_tile.items():
        problems, tiles = check(cxx, source_dir, dlpack_dir, march)
        failures += problems
        if full not in tiles:
            failures.append(f"{march}: the full tile Tile<{full[0]}, {full[1]}> was not found among {sorted(tiles)}")
        print(f"{march}: {len(tiles)} tile functions checked, {len(problems)} problems")
    for march, variant, wanted in CONV_VARIANTS:
        problems, tiles = check_conv_tiles(cxx, source_dir, dlpack_dir, march, variant)
        failures += problems
        if wanted not in tiles:
            failures.append(f"{march}: variant {variant} has no convolution tile of {wanted[0]} blocks x {wanted[1]} "
                            f"positions among {sorted(tiles)}")
        print(f"{march}: variant {variant}: {len(tiles)} convolution tile functions checked, {len(problems)} problems")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
