"""The matrix product's register tiles keep their accumulators in registers, on every instruction
set the kernels are compiled for, whatever machine runs the test.

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
    """The loops (label to backward jump) with FMAs that contain no other loop."""
    labels = {}
    loops = []
    for i, line in enumerate(lines):
        if (match := LABEL.match(line)):
            labels[match.group(1)] = i
        elif (match := JUMP.match(line)) and match.group(1) in labels:
            loops.append((labels[match.group(1)], i))
    inner = [(b, e) for b, e in loops if not any(b <= b2 and e2 < e for b2, e2 in loops if (b2, e2) != (b, e))]
    return [lines[b:e + 1] for b, e in inner if any("vfmadd" in line for line in lines[b:e + 1])]


def check(cxx, source_dir, dlpack_dir, march):
    """Problems found in the tiles compiled for `march`, and the number of tiles checked."""
    with tempfile.NamedTemporaryFile(suffix=".s") as out:
        subprocess.run([cxx, *FLAGS, f"-march={march}", f"-I{source_dir}", f"-I{source_dir}/include", f"-I{dlpack_dir}",
                        f"{source_dir}/kernels/gemm/gemm.cc", "-o", out.name], check=True)
        assembly = open(out.name).read()
    problems = []
    tiles = functions(assembly)
    for name, rows, panels, lines in tiles:
        loops = innermost_fma_loops(lines)
        frame_pointer = any(re.match(r"\s+movq\s+%rsp, %rbp", line) for line in lines)
        if not loops:
            problems.append(f"{march}: Tile<{rows}, {panels}> ({name}) has no loop with FMAs")
        for loop in loops:
            spilled = [line.strip() for line in loop
                       if STACK_VECTOR.search(line) or (frame_pointer and FRAME_VECTOR.search(line))]
            if spilled:
                problems.append(f"{march}: Tile<{rows}, {panels}>'s K loop moves vectors to or from the stack "
                                f"({len(spilled)} of {len(loop)} instructions), e.g. {spilled[0]}")
    return problems, {(rows, panels) for _, rows, panels, _ in tiles}


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
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
