#!/bin/sh
# Recipes of the ELF inputs in elf/: run in this directory with gcc, ld,
# strip and objcopy on PATH. The committed files are the ones vectors.json
# was computed from; rebuilding gives other sha1/md5 ids.
set -eu
mkdir -p elf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int main(void){return 0;}\n' >"$tmp/main.c"
printf 'int f(int x){return x+1;}\n' >"$tmp/lib.c"
cc -O1 -o elf/sha1 -Wl,--build-id=sha1 "$tmp/main.c"
cc -O1 -o elf/md5 -Wl,--build-id=md5 "$tmp/main.c"
cc -O1 -o elf/none -Wl,--build-id=none "$tmp/main.c"
cc -O1 -o elf/hex -Wl,--build-id=0x0123456789abcdef "$tmp/main.c"
# The debug information names no directory of the machine that built it.
cc -O1 -g -ffile-prefix-map="$tmp"=/src -fdebug-prefix-map="$(pwd)"=. -o elf/debug -Wl,--build-id=sha1 "$tmp/main.c"
cp elf/sha1 elf/stripped && strip elf/stripped
cc -O1 -shared -fPIC -o elf/lib.so -Wl,--build-id=sha1 "$tmp/lib.c"
# A note only in a section no segment loads: a relocatable object.
cc -O1 -c -o "$tmp/lib.o" "$tmp/lib.c"
printf '\004\000\000\000\004\000\000\000\003\000\000\000GNU\000\336\255\276\357' >"$tmp/note"
objcopy --add-section .note.gnu.build-id="$tmp/note" --set-section-flags .note.gnu.build-id=alloc,readonly "$tmp/lib.o" elf/section-note.o
# A broken section header table: e_shoff points past the end.
cp elf/sha1 elf/broken-sections
printf '\377\377\377\377\000\000\000\000' | dd of=elf/broken-sections bs=1 seek=40 conv=notrunc 2>/dev/null
# Not ELF at all.
printf 'plain bytes\n' >elf/plain
# Hand-made: an ELF64 file whose PT_NOTE holds a 5-byte id, and an ELF32
# file with a PT_NOTE build-id (PyPTO reads 64-bit files only).
python3 - <<'PY'
import struct
def elf64(build_id):
    h = bytearray(64); h[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", h, 32, 64); struct.pack_into("<HH", h, 54, 56, 1)
    note = struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id
    p = bytearray(56); struct.pack_into("<I", p, 0, 4)
    struct.pack_into("<Q", p, 8, 120); struct.pack_into("<Q", p, 32, len(note))
    return bytes(h + p + note)
def elf32(build_id):
    h = bytearray(52); h[:6] = b"\x7fELF\x01\x01"
    struct.pack_into("<I", h, 28, 52); struct.pack_into("<HH", h, 42, 32, 1)
    note = struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id
    p = bytearray(32); struct.pack_into("<I", p, 0, 4)
    struct.pack_into("<I", p, 4, 84); struct.pack_into("<I", p, 16, len(note))
    return bytes(h + p + note)
open("elf/odd", "wb").write(elf64(bytes([1, 2, 3, 4, 5])))
open("elf/elf32", "wb").write(elf32(bytes(range(20))))
open("elf/synthetic", "wb").write(elf64(bytes(range(20))))
PY
# A stand-in GCC driver for the compiler records: --version, the
# -print-prog-name answers (../libexec/NAME beside the real file), and
# COLLECT_GCC in -v output (FAKEGCC_DRIVER, else the name it was invoked
# by); --show-config prints nothing, as a ccache without redirects.
cat >"$tmp/fakegcc.c" <<'C'
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
int main(int argc, char **argv) {
	char self[PATH_MAX];
	if (!realpath("/proc/self/exe", self)) return 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--version")) { printf("fakegcc (vectors) 1.0\nnot a compiler\n"); return 0; }
		if (!strncmp(argv[i], "-print-prog-name=", 17)) { printf("%s/../libexec/%s\n", dirname(self), argv[i] + 17); return 0; }
		if (!strcmp(argv[i], "-v")) { const char *d = getenv("FAKEGCC_DRIVER"); fprintf(stderr, "COLLECT_GCC=%s\n", d ? d : argv[0]); return 0; }
		if (!strcmp(argv[i], "--show-config")) return 0;
	}
	return 1;
}
C
cc -O1 -o elf/fakegcc -Wl,--build-id=0xfa4ec0ffee "$tmp/fakegcc.c"
