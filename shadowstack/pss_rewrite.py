#!/usr/bin/env python3
"""Parallel shadow stack instrumentation of GCC's x86-64 assembly (docs/shadow-stacks.md).

Every function's entry copies its return address (at (%rsp)) to OFFSET(%rsp), a region mapped
parallel to the stack by the runtime (shadowstack/runtime.c); every `ret` and every direct tail
call (`jmp SYMBOL`) first compares the return address with its copy and calls
__oscar_pss_fail on a mismatch (check mode, the default), or writes the copy back over it
(overwrite mode, the dissertation's figures 2.9 and 2.10).

Addressing (offset): "gs" (the default) addresses the copy as %gs:-0x80(%rsp): the runtime sets
the GS segment base to OFFSET + 0x80 once per process (WRGSBASE; threads and fork children inherit it), so
no instruction loads the offset ("gs-random": the same code, and a marker that makes the runtime
draw OFFSET per process). An integer N is the older scheme: `movabsq $N, %r11` before each
access, (%rsp,%r11); "random": N loaded from the runtime's read-only page through the GOT.

Registers: %r11 (and, with an integer or "random", %r10 in prologues of functions that never
mention %r10: the static chain of GCC's nested functions) is scratch at function entry and at
`ret` in the SysV ABI, and the status flags are not preserved across calls, so no register or
flag needs saving.

Leaves that cannot write memory: a function with no call, no jump out of it, no inline
assembly, no .cold part and no instruction that writes memory (other than pushing registers)
gets no instrumentation: nothing it executes can change its return address (what another thread
or a signal handler could do is out of reach of the entry copy anyway: docs/shadow-stacks.md).

Usage as a library: rewrite(text, mode, offset) -> text. As a program:
    pss_rewrite.py [--mode=check|overwrite] [--offset=gs|gs-random|N|random] IN.s OUT.s
"""

import re
import sys

# About -2.12 TiB; must match PSS_FIXED_OFFSET in runtime.c. Not a page multiple: the copy and
# the return address differ in bits 0-11 (see PSS_SKEW in runtime.c).
DEFAULT_OFFSET = -0x21f3b5c7080
MARKER = "# oscar-pss: instrumented"
ABI_SYMBOL = "__oscar_pss_abi_21f3b5c7000"  # defined by runtime.c: shadows mapped at that offset
ABI_SYMBOL_GS = "__oscar_pss_abi_gs"  # code addressing the copy through the GS base
# The copy with the GS base (= the offset + 0x80, runtime.c's PSS_SKEW). Not %gs:(%rsp): the CPU
# took that for the same stack slot as the return address (%rsp) and stalled check mode's cmp.
GS_SLOT = "%gs:-0x80(%rsp)"

_TYPE_FN = re.compile(r'^\s*\.type\s+("?)([^",\s]+)\1\s*,\s*[@%]function\b')
_LABEL = re.compile(r'^("?)([^\s":#]+)\1:\s*(?:#.*)?$')
_RET = re.compile(r'^\s*(?:(?:rep|repz|bnd|notrack)\s*;?\s*)?retq?\s*(?:#.*)?$')
_TAILJMP = re.compile(r'^\s*(?:bnd\s+)?jmpq?\s+([A-Za-z_$][^\s#*%()]*)\s*(?:#.*)?$')
_ENDBR = re.compile(r'^\s*endbr(64|32)\s*(?:#.*)?$')
_COLD = re.compile(r'\.cold(\.\d+)?$')
_SIZE = re.compile(r'^\s*\.size\s+("?)([^",\s]+)\1\s*,')
_IFUNC_TYPE = re.compile(r'^\s*\.type\s+("?)([^",\s]+)\1\s*,\s*[@%]gnu_indirect_function\b')
_SET = re.compile(r'^\s*\.set\s+"?([^",\s]+)"?\s*,\s*"?([^",\s]+)"?\s*$')
# A section switch; group 3 is the COMDAT group of GCC's "axG" sections (C++ inline functions,
# templates): a patch site's record goes into the same group, so the linker drops it with the
# function's code when it keeps another copy.
_SECTION = re.compile(r'^\s*\.(?:section\s+([^,\s]+)(?:\s*,\s*"([^"]*)"(?:\s*,\s*[@%]\w+)?'
                      r'(?:\s*,\s*("?)([^",\s]+)\3\s*,\s*comdat)?)?|(text|data|bss)\b)')


def _is_instruction(line):
    s = line.strip()
    if not s or s.startswith("#") or s.startswith("."):
        return False
    if _LABEL.match(s):
        return False
    return True


def _offset_operand(offset):
    if offset == "random":
        # Per-process offset, chosen by the runtime at load time (read-only afterwards).
        return None
    return int(offset)


def _load_offset(offset, pic):
    """Instructions that put the offset in %r11."""
    if offset == "random":
        if True:  # through the GOT even in executables: no copy relocation of the variable
            return ["\tmovq\t__oscar_pss_offset@GOTPCREL(%rip), %r11",
                    "\tmovq\t(%r11), %r11"]
        return ["\tmovq\t__oscar_pss_offset(%rip), %r11"]
    return ["\tmovabsq\t$%d, %%r11" % int(offset)]


def _gs(offset):
    return isinstance(offset, str) and offset.startswith("gs")


def _prologue(offset, pic, use_r10):
    if _gs(offset):
        return ["\tmovq\t(%rsp), %r11", "@SITE@", "\tmovq\t%r11, " + GS_SLOT]
    load = _load_offset(offset, pic)
    if use_r10:
        return (["\tmovq\t(%rsp), %r10"] + load + ["\tmovq\t%r10, (%rsp,%r11)"])
    # %r10 carries a static chain here: copy memory to memory through the stack
    # (pop computes its address after incrementing %rsp, so it lands at entry %rsp + offset).
    return load + ["\tpushq\t(%rsp)", "\t.cfi_adjust_cfa_offset 8",
                   "\tpopq\t(%rsp,%r11)", "\t.cfi_adjust_cfa_offset -8"]


def _epilogue(mode, offset, pic, fail_label):
    if _gs(offset):
        if mode == "overwrite":
            return ["@SITE@", "\tmovq\t%s, %%r11" % GS_SLOT, "\tmovq\t%r11, (%rsp)"]
        return ["@SITE@", "\tmovq\t%s, %%r11" % GS_SLOT, "\tcmpq\t%r11, (%rsp)",
                "\tjne\t" + fail_label]
    load = _load_offset(offset, pic)
    if mode == "overwrite":
        return load + ["\tmovq\t(%rsp,%r11), %r11", "\tmovq\t%r11, (%rsp)"]
    return load + ["\tmovq\t(%rsp,%r11), %r11", "\tcmpq\t%r11, (%rsp)",
                   "\tjne\t" + fail_label]


# Patch sites (GS addressing): the runtime, when it cannot set the GS base (no FSGSBASE, or
# OSCAR_PSS_GS=patch), rewrites each `movq %r11, %gs:-0x80(%rsp)` / `movq %gs:-0x80(%rsp), %r11`
# (6 bytes) into `call THUNK; nop`, THUNK being one of the two below (one copy per linked module:
# COMDAT). Each site is recorded as a 32-bit PC-relative word in section oscar_pss_gs_sites, and
# a constructor of the highest priority (also COMDAT) hands the module's table and thunks to the
# runtime's __oscar_pss_gs_patch before the module's other constructors run. The thunks run at
# function entry or at a return, where the 16 bytes below %rsp are free (the red zone of a
# function that has not started, or of one that has ended); they keep every register but %r11,
# and the flags.
SITES_SECTION = "oscar_pss_gs_sites"


def _gs_thunk(name, move):
    """One patch thunk: the shadow slot's address is %rsp + 16 + the offset (16: the return
    address and the saved %rax), `move` the instruction between it and %r11."""
    return """\
\t.hidden\t{0}
\t.type\t{0}, @function
{0}:
\t.cfi_startproc
\tpushq\t%rax
\t.cfi_adjust_cfa_offset 8
\tmovq\t__oscar_pss_offset@GOTPCREL(%rip), %rax
\tmovq\t(%rax), %rax
\t{1}
\tpopq\t%rax
\t.cfi_adjust_cfa_offset -8
\tret
\t.cfi_endproc
\t.size\t{0}, .-{0}
""".format(name, move)


_GS_SUPPORT = """\
\t.section\t.text.__oscar_pss_gs_support,"axG",@progbits,__oscar_pss_gs_register,comdat
\t.p2align 4
""" + _gs_thunk("__oscar_pss_gs_store", "movq\t%r11, 16(%rsp,%rax)") + \
    _gs_thunk("__oscar_pss_gs_load", "movq\t16(%rsp,%rax), %r11") + """\
\t.hidden\t__oscar_pss_gs_register
\t.type\t__oscar_pss_gs_register, @function
__oscar_pss_gs_register:
\t.cfi_startproc
\t.hidden\t__start_oscar_pss_gs_sites
\t.hidden\t__stop_oscar_pss_gs_sites
\tleaq\t__start_oscar_pss_gs_sites(%rip), %rdi
\tleaq\t__stop_oscar_pss_gs_sites(%rip), %rsi
\tleaq\t__oscar_pss_gs_store(%rip), %rdx
\tleaq\t__oscar_pss_gs_load(%rip), %rcx
\tjmp\t__oscar_pss_gs_patch@PLT
\t.cfi_endproc
\t.size\t__oscar_pss_gs_register, .-__oscar_pss_gs_register
\t.section\t.init_array.00000,"awG",@init_array,__oscar_pss_gs_register,comdat
\t.p2align 3
\t.quad\t__oscar_pss_gs_register"""


def _site_record(label, group):
    flags = '"aG",@progbits,%s,comdat' % group if group else '"a",@progbits'
    return ["\t.pushsection\t%s,%s" % (SITES_SECTION, flags), "\t.p2align 2",
            "\t.long\t%s-." % label, "\t.popsection"]


def _fail_stub(fail_label, name_label, offset):
    # Placed right after the `ret` (or tail jump) it serves, before any label or CFI
    # directive that follows, so its unwind state is exactly the one at the `ret`.
    suffix = "_gs" if _gs(offset) else "_random" if offset == "random" else ""
    return [fail_label + ":", "\tleaq\t%s(%%rip), %%rdi" % name_label,
            "\tcall\t__oscar_pss_fail%s@PLT" % suffix]


# Instructions that read their last (memory) operand without writing it.
_READ_ONLY = re.compile(r'^(v?u?comis[sd]|cmp[bwlq]?|test[bwlq]?|bt[wlq]?|v?ptest|push[wlq]?|'
                        r'prefetch\w*|nop[wlq]?|v?pcmp\w*|v?cmp\w*[sp][sd])$')
# Instructions that write memory other than through their last operand (string operations,
# exchanges, x87 and state stores with one operand are caught by the operand test).
_ALWAYS_WRITES = re.compile(r'^(rep\w*|movs[bwlq]?|stos[bwlq]?|xchg\w*|xadd\w*|cmpxchg\w*|'
                            r'lock|enter|call\w*|syscall|int\w*|xsave\w*|fxsave\w*|maskmov\w*|'
                            r'v?pscatter\w*|vscatter\w*|vpmaskmov\w*|vmaskmov\w*)$')


def _operands(rest):
    ops, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return ops


def _may_write_memory(line):
    """Conservative: True unless the instruction surely writes no memory (pushes aside)."""
    s = line.split("#", 1)[0].strip()
    if not s:
        return False
    parts = s.split(None, 1)
    mnem = parts[0]
    if mnem in ("ret", "retq", "leave", "leaveq") or mnem.startswith("pop") and (
            len(parts) > 1 and parts[1].strip().startswith("%")):
        return False
    if _ALWAYS_WRITES.match(mnem) or ";" in s:
        return True
    if mnem.startswith("j"):
        return False  # jumps are classified separately
    if len(parts) == 1:
        return mnem not in ("cltq", "cqto", "cltd", "cwtl", "nop", "ud2", "pause", "lfence",
                            "mfence", "sfence", "vzeroupper", "cdqe", "cqo")
    ops = _operands(parts[1])
    last = ops[-1] if ops else ""
    # A register is "%name"; "%fs:40" and "%gs:(%rax)" are memory.
    memory = "(" in last or ":" in last or not (last.startswith("%") or last.startswith("$"))
    if not memory:
        return False
    return not _READ_ONLY.match(mnem)


def _store_free_leaves(lines, functions):
    """Functions that call nothing, never leave but by `ret`, and write no memory."""
    ok = {}
    current = None
    in_app = False
    for line in lines:
        s = line.strip()
        if s in ("#APP", "#NO_APP"):
            in_app = s == "#APP"
            if current:
                ok[current] = False
            continue
        m = _LABEL.match(s)
        if m and m.group(2) in functions:
            name = m.group(2)
            if _COLD.search(name):
                ok[_COLD.sub("", name)] = False
                current = None
            else:
                current = name
                ok.setdefault(name, True)
            continue
        if current is None:
            continue
        m = _SIZE.match(line)
        if m and m.group(2) == current:
            current = None
            continue
        if not _is_instruction(line) or in_app:
            continue
        mnem = s.split(None, 1)[0]
        if mnem.startswith("j"):
            target = s.split("#", 1)[0].split(None, 1)[1:]
            target = target[0].strip() if target else ""
            if "*" in target or not target.startswith(".L"):
                ok[current] = False  # a (conditional) tail call or an indirect jump
            continue
        if _may_write_memory(line):
            ok[current] = False
    return {f for f, v in ok.items() if v}


def rewrite(text, mode="check", offset="gs", pic=False):
    if MARKER in text:
        return text
    lines = text.split("\n")
    # Pass 1: function names, and which functions mention %r10 (static chain, or used by
    # the code itself: then the prologue does not touch %r10).
    functions = set()
    for line in lines:
        m = _TYPE_FN.match(line)
        if m:
            functions.add(m.group(2))
    mentions_r10 = set()
    current = None
    for line in lines:
        m = _LABEL.match(line.strip())
        if m and m.group(2) in functions:
            current = m.group(2)
        elif current and "%r10" in line:
            mentions_r10.add(current)
    skip = _store_free_leaves(lines, functions)
    # IFUNC resolvers (`.type F, @gnu_indirect_function` + `.set F, RESOLVER`: ifunc attributes,
    # target_clones) run while the dynamic linker relocates their module, before any
    # constructor: no GS base yet, no shadow mapped, no PLT to report through. They run once,
    # before main, on no input: left alone.
    ifuncs = set()
    for line in lines:
        m = _IFUNC_TYPE.match(line)
        if m:
            ifuncs.add(m.group(2))
    for line in lines:
        m = _SET.match(line)
        if m and m.group(1) in ifuncs:
            skip.add(m.group(2))
    out = [MARKER]
    in_app = False
    current = None          # function whose body we are in (for a .cold part: its parent)
    instrumented = set()    # functions whose entry got the prologue
    pending_prologue = None
    names = {}              # function -> label of its name string
    strings = []
    counter = 0
    group = None            # COMDAT group of the current section
    sites = []              # labels of the GS instructions (patch sites)

    def emit(instrs):
        for ins in instrs:
            if ins == "@SITE@":
                label = ".Lpss_gs%d" % len(sites)
                sites.append(label)
                out.append(label + ":")
                out.extend(_site_record(label, group))
            else:
                out.append(ins)

    for line in lines:
        s = line.strip()
        m = _SECTION.match(line)
        if m and not in_app:
            group = m.group(4) if m.group(2) and "G" in m.group(2) else None
        if s == "#APP":
            in_app = True
            out.append(line)
            continue
        if s == "#NO_APP":
            in_app = False
            out.append(line)
            continue
        if in_app:
            if pending_prologue:
                pending_prologue = None  # naked function (body is inline asm): left alone
            out.append(line)
            continue
        m = _LABEL.match(s)
        if m and m.group(2) in functions:
            name = m.group(2)
            if _COLD.search(name):
                current = _COLD.sub("", name)
                pending_prologue = None
            else:
                current = name
                pending_prologue = name
            out.append(line)
            continue
        if pending_prologue and _is_instruction(line):
            name = pending_prologue
            pending_prologue = None
            t = _TAILJMP.match(line)
            if _RET.match(line) or (t and not t.group(1).startswith(".L")):
                # Peephole: a function that returns or tail-calls at once needs no copy (the
                # return address is untouched; the tail callee copies it itself).
                out.append(line)
                continue
            if name in skip:
                out.append(line)
                continue
            if _ENDBR.match(line):
                out.append(line)
                emit(_prologue(offset, pic, name not in mentions_r10))
                instrumented.add(name)
                continue
            emit(_prologue(offset, pic, name not in mentions_r10))
            instrumented.add(name)
            out.append(line)
            continue
        active = current in instrumented
        is_ret = active and _RET.match(line)
        is_tail = False
        if active and not is_ret:
            t = _TAILJMP.match(line)
            if t and not t.group(1).startswith(".L") and ".cold" not in t.group(1):
                is_tail = True
        if is_ret or is_tail:
            counter += 1
            fail = ".Lpss_fail%d" % counter
            emit(_epilogue(mode, offset, pic, fail))
            out.append(line)
            if mode != "overwrite":
                if current not in names:
                    names[current] = ".Lpss_name%d" % len(names)
                    strings.append((names[current], current))
                out.extend(_fail_stub(fail, names[current], offset))
            continue
        m = _SIZE.match(line)
        if m and m.group(2) == current:
            current = None
        out.append(line)
    if instrumented:
        # Ties the object to a runtime that maps shadows at this fixed offset: with another
        # liboscar_pss.so, linking or loading fails with this symbol's name instead of the
        # program faulting on an unmapped shadow.
        out += ['\t.pushsection\t.data.rel.ro.oscar_pss_abi,"aw",@progbits', "\t.p2align 3",
                "\t.quad\t%s" % (ABI_SYMBOL_GS if _gs(offset) else ABI_SYMBOL),
                "\t.popsection"]
    if _gs(offset) and instrumented:
        # Tells the runtime that this code needs the GS base (weak: one per object is fine).
        out += ['\t.pushsection\t.rodata.oscar_pss_gs,"a",@progbits',
                "\t.weak\t__oscar_pss_uses_gs",
                "\t.type\t__oscar_pss_uses_gs, @object",
                "\t.size\t__oscar_pss_uses_gs, 1",
                "__oscar_pss_uses_gs:", "\t.byte\t1", "\t.popsection"]
    if sites:
        out.append(_GS_SUPPORT)
    if offset in ("random", "gs-random") and instrumented:
        # Tells the runtime to draw a per-process offset (weak: one per object is fine).
        out += ['\t.pushsection\t.rodata.oscar_pss_random,"a",@progbits',
                "\t.weak\t__oscar_pss_uses_random",
                "\t.type\t__oscar_pss_uses_random, @object",
                "\t.size\t__oscar_pss_uses_random, 1",
                "__oscar_pss_uses_random:", "\t.byte\t1", "\t.popsection"]
    if strings:
        out.append('\t.section\t.rodata.oscar_pss_names,"aMS",@progbits,1')
        for label, name in strings:
            out.append("%s:" % label)
            out.append('\t.string\t"%s"' % name.replace("\\", "\\\\").replace('"', '\\"'))
    # The object refers to the runtime's symbols; keep its .note.GNU-stack as the compiler
    # wrote it (already in `lines`).
    return "\n".join(out)


def main(argv):
    mode, offset, pic = "check", "gs", False
    args = []
    for a in argv[1:]:
        if a.startswith("--mode="):
            mode = a.split("=", 1)[1]
        elif a.startswith("--offset="):
            v = a.split("=", 1)[1]
            offset = v if v in ("random", "gs", "gs-random") else int(v, 0)
        elif a == "--pic":
            pic = True
        else:
            args.append(a)
    if mode not in ("check", "overwrite") or len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(args[0], encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    with open(args[1], "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(rewrite(text, mode, offset, pic))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
