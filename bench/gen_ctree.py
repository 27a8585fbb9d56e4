#!/usr/bin/env python3
"""Generate a C source tree for bench/morton-emulated.sh: MODULES directories of FILES
.c files each, a header per module and a few project-wide headers, and a Makefile.

Each .c includes, as real code does, the project's config and type headers, its own module's
header, three other modules' headers (chosen by a seeded generator) and four system headers
(stdio, stdlib, string, stdint: these come from /usr/include, not from the tree). Each file
holds a handful of functions over structs of its module (loops, switches, calls into the
headers' inline helpers), so gcc has real work: the sizes (3-6 KiB of source, 1-2 KiB
headers) are those of a small C project such as util-linux. Deterministic for a seed.

usage: gen_ctree.py DIR [--modules 20] [--files 15] [--seed 1]
"""
import argparse
import os
import random


def header(mod, nfuncs, rng):
    g = f"{mod.upper()}_H"
    out = [f"#ifndef {g}", f"#define {g}", '#include "config.h"', '#include "types.h"', ""]
    out.append(f"struct {mod}_state {{")
    for i in range(rng.randint(4, 9)):
        t = rng.choice(["u32", "u64", "int", "size_t", "const char *", "struct list_head"])
        out.append(f"\t{t} f{i};")
    out.append("};")
    out.append("")
    for i in range(nfuncs):
        out.append(f"int {mod}_op{i}(struct {mod}_state *s, int arg);")
    out.append("")
    out.append(f"static inline u32 {mod}_hash(u32 x)")
    out.append("{")
    out.append(f"\tx ^= x >> {rng.randint(7, 17)};")
    out.append(f"\tx *= 0x{rng.getrandbits(31) | 1:08x}u;")
    out.append("\treturn x ^ (x >> 15);")
    out.append("}")
    out.append(f"#endif /* {g} */")
    return "\n".join(out) + "\n"


def source(mod, idx, mods, rng):
    others = rng.sample([m for m in mods if m != mod], k=min(3, len(mods) - 1))
    out = ["#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
           "#include <stdint.h>", '#include "config.h"', '#include "types.h"',
           '#include "list.h"', f'#include "{mod}.h"']
    out += [f'#include "../{o}/{o}.h"' for o in others]
    out.append("")
    nf = rng.randint(4, 7)
    for f in range(nf):
        name = f"{mod}_f{idx}_{f}"
        out.append(f"static int {name}(struct {mod}_state *s, const int *v, size_t n)")
        out.append("{")
        out.append("\tint acc = 0;")
        out.append("\tfor (size_t i = 0; i < n; i++) {")
        out.append(f"\t\tswitch (v[i] % {rng.randint(3, 7)}) {{")
        for c in range(3):
            o = rng.choice(others)
            out.append(f"\t\tcase {c}: acc += (int){o}_hash((u32)v[i] + {rng.randint(1, 999)}); break;")
        out.append(f"\t\tdefault: acc ^= (int){mod}_hash((u32)acc);")
        out.append("\t\t}")
        out.append("\t}")
        out.append(f"\tif (s && acc > {rng.randint(100, 100000)})")
        out.append("\t\tacc -= (int)sizeof(*s);")
        out.append("\treturn acc;")
        out.append("}")
        out.append("")
    out.append(f"int {mod}_op{idx}(struct {mod}_state *s, int arg)")
    out.append("{")
    out.append(f"\tint v[{rng.randint(8, 64)}];")
    out.append("\tfor (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)")
    out.append("\t\tv[i] = arg * (int)i;")
    out.append("\tint r = 0;")
    for f in range(nf):
        out.append(f"\tr += {mod}_f{idx}_{f}(s, v, sizeof(v) / sizeof(v[0]));")
    out.append('\tif (r == 42)')
    out.append(f'\t\tfprintf(stderr, "{mod}: %d\\n", r);')
    out.append("\treturn r;")
    out.append("}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--modules", type=int, default=20)
    ap.add_argument("--files", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    mods = [f"m{i:02d}" for i in range(a.modules)]
    os.makedirs(os.path.join(a.dir, "include"), exist_ok=True)
    common = {
        "config.h": "#ifndef CONFIG_H\n#define CONFIG_H\n#define HAVE_STDINT 1\n#define VERSION \"1.0\"\n"
                    + "".join(f"#define OPT_{i} {i}\n" for i in range(60)) + "#endif\n",
        "types.h": "#ifndef TYPES_H\n#define TYPES_H\n#include <stddef.h>\n#include <stdint.h>\n"
                   "typedef uint32_t u32;\ntypedef uint64_t u64;\n"
                   "struct list_head { struct list_head *next, *prev; };\n#endif\n",
        "list.h": "#ifndef LIST_H\n#define LIST_H\n#include \"types.h\"\n"
                  "static inline void list_init(struct list_head *h) { h->next = h->prev = h; }\n"
                  "static inline int list_empty(const struct list_head *h) { return h->next == h; }\n"
                  "static inline void list_add(struct list_head *n, struct list_head *h)\n"
                  "{ n->next = h->next; n->prev = h; h->next->prev = n; h->next = n; }\n#endif\n",
    }
    for name, text in common.items():
        with open(os.path.join(a.dir, "include", name), "w") as f:
            f.write(text)
    objs = []
    for m in mods:
        d = os.path.join(a.dir, m)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{m}.h"), "w") as f:
            f.write(header(m, a.files, rng))
        for i in range(a.files):
            with open(os.path.join(d, f"{m}_{i:02d}.c"), "w") as f:
                f.write(source(m, i, mods, rng))
            objs.append(f"{m}/{m}_{i:02d}.o")
    with open(os.path.join(a.dir, "Makefile"), "w") as f:
        f.write("CC ?= gcc\nCFLAGS ?= -O0 -Iinclude\n\nOBJS = " + " \\\n\t".join(objs) + "\n\n")
        f.write("all: libproj.a\n\nlibproj.a: $(OBJS)\n\tar rcs $@ $(OBJS)\n\n")
        f.write("%.o: %.c\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n")
        f.write("clean:\n\trm -f $(OBJS) libproj.a\n")


if __name__ == "__main__":
    main()
