/* fatbin_list.c - lists the GPU code inside an object or fatbin file, as
 * `cuobjdump --list-elf / --list-ptx` would, for machines without
 * cuobjdump (it is not part of every CUDA installation):
 *
 *     fatbin_list FILE      prints one line per entry: "elf sm_80" or "ptx sm_90"
 *
 * A fatbin (nvcc -fatbin) is a 16-byte header, magic 0xBA55ED50, version 1,
 * header size, then the size of the entries; each entry has a header with
 * its kind (1 PTX, 2 ELF), header size, payload size and the arch (10 *
 * major + minor) at offset 28.  Exit 0 when at least one fatbin was found
 * and every one parsed, 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fatbin_list FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 20, len = 0, n;
    unsigned char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf)
        return 1;
    int found = 0, bad = 0;
    for (size_t off = 0; off + 16 <= len; off += 8) {
        if (rd(buf + off, 4) != 0xBA55ED50u || rd(buf + off + 4, 2) != 1)
            continue;
        uint64_t hsize = rd(buf + off + 6, 2), fsize = rd(buf + off + 8, 8);
        if (hsize < 16 || off + hsize + fsize > len) {
            bad++;
            continue;
        }
        found++;
        size_t e = off + hsize, end = off + hsize + fsize;
        while (e + 32 <= end) {
            unsigned kind = (unsigned)rd(buf + e, 2);
            uint64_t eh = rd(buf + e + 4, 4), es = rd(buf + e + 8, 8);
            unsigned arch = (unsigned)rd(buf + e + 28, 4);
            if (eh < 32 || e + eh + es > end) {
                bad++;
                break;
            }
            printf("%s sm_%u\n", kind == 1 ? "ptx" : kind == 2 ? "elf" : "other", arch);
            e += eh + es;
        }
        off = end - 8 >= off ? ((end + 7) & ~(size_t)7) - 8 : off;
    }
    free(buf);
    if (!found)
        fprintf(stderr, "fatbin_list: no fatbin in %s\n", argv[1]);
    return found && !bad ? 0 : 1;
}
