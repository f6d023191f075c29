#!/usr/bin/env python3
"""Extract the gfx9 AMDGPU code objects from host binaries, libraries and bundles.

    python3 bundles.py OUT_DIR FILE_OR_DIR...

Walks every regular file given (folders recursively). A file is one of:
- an AMDGPU ELF code object (EM_AMDGPU = 224): taken as it is;
- a clang offload bundle (magic `__CLANG_OFFLOAD_BUNDLE__`): its entries are read;
- any other file (a host ELF with `.hip_fatbin`, an archive, ...): scanned for offload
  bundle magics, whose entries are read.

An offload bundle is: the 24-byte magic, a little-endian u64 entry count, then per entry
u64 offset (from the magic), u64 size, u64 id length and the id (`hipv4-amdgcn-amd-amdhsa--
gfx90a:xnack-`). Entries that are AMDGPU ELF objects for gfx900, gfx906, gfx908 or gfx90a
are written to OUT_DIR/<target>/<sha1>.co (one file per distinct object, so the same kernel
shipped in two binaries is disassembled once). Prints a count per target.
"""

import hashlib
import mmap
import os
import struct
import sys

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
# EF_AMDGPU_MACH values (the low byte of e_flags) of the targets the tables hold.
MACH = {0x2C: "gfx900", 0x2F: "gfx906", 0x30: "gfx908", 0x3F: "gfx90a"}


def amdgpu_target(blob):
    """The target name of an AMDGPU ELF (None for anything else or another processor)."""
    if len(blob) < 64 or blob[:4] != ELF_MAGIC or blob[4] != 2:
        return None
    (machine,) = struct.unpack_from("<H", blob, 18)
    if machine != EM_AMDGPU:
        return None
    (flags,) = struct.unpack_from("<I", blob, 48)
    return MACH.get(flags & 0xFF)


def bundle_entries(buf, start):
    """The (id, bytes) entries of the offload bundle at `start` of `buf` (empty if torn)."""
    pos = start + len(MAGIC)
    if pos + 8 > len(buf):
        return []
    (count,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    if count > 4096:
        return []
    out = []
    for _ in range(count):
        if pos + 24 > len(buf):
            return out
        offset, size, id_len = struct.unpack_from("<QQQ", buf, pos)
        pos += 24
        if id_len > 4096 or pos + id_len > len(buf):
            return out
        ident = bytes(buf[pos : pos + id_len]).decode("ascii", "replace")
        pos += id_len
        lo = start + offset
        if size == 0 or lo + size > len(buf):
            continue
        out.append((ident, buf[lo : lo + size]))
    return out


def code_objects(path):
    """Every (target, bytes) gfx9 code object in the file at `path`."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return
    if size < 64:
        return
    with open(path, "rb") as f:
        try:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):
            return
        with buf:
            target = amdgpu_target(buf[:64])
            if target:
                yield target, bytes(buf)
                return
            at = buf.find(MAGIC)
            while at >= 0:
                for _, blob in bundle_entries(buf, at):
                    t = amdgpu_target(blob[:64])
                    if t:
                        yield t, bytes(blob)
                at = buf.find(MAGIC, at + len(MAGIC))


def files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                for n in names:
                    full = os.path.join(root, n)
                    if os.path.isfile(full) and not os.path.islink(full):
                        yield full
        elif os.path.isfile(p):
            yield p


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    counts = {}
    for path in files(sys.argv[2:]):
        for target, blob in code_objects(path):
            d = os.path.join(out, target)
            os.makedirs(d, exist_ok=True)
            name = os.path.join(d, hashlib.sha1(blob).hexdigest() + ".co")
            if not os.path.exists(name):
                with open(name, "wb") as f:
                    f.write(blob)
                counts[target] = counts.get(target, 0) + 1
    for t in sorted(counts):
        print(f"{t}: {counts[t]} new code object(s)")


if __name__ == "__main__":
    main()
