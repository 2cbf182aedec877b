"""What runs, from a cubin: one SHA-256 per entry point, blind to line tables and to the other entries.

nvcc is built with `-lineinfo` (ncu and compute-sanitizer name source lines with it).  That puts the source
line numbers into the cubin, so a comment that moves a line changes the file's bytes while every instruction
stays the same.  The evidence key (study/measure/evidence.py) must follow the instructions, not the text, so it reads
the cubin's ELF sections and, for one entry `E`, hashes only what the GPU executes or is configured with:

* `.text.E` (the SASS), `.nv.constant0.E` (the parameter bank), `.nv.info.E` (parameter layout, barriers,
  exit offsets ...), the size of `.nv.shared.E`;
* `.text.E`'s relocations, by symbol *name* (indices change when other entries do), and, recursively, the
  same sections of every non-inlined device function they reach;
* the records of the global `.nv.info` that name E (its register count, frame and stack sizes);
* every section that belongs to no entry and is not debug or tool information (e.g. `__constant__` data).

Left out: `.debug_*`, `.nv_debug_*` (line tables, PTX text), `.note.*` (tool versions), the symbol and string
tables, and other entries' sections.  tests/test_evidence.py proves the two directions: a build with and
without `-lineinfo`, and one with a comment added, give the same keys; a changed instruction does not.
"""
from __future__ import annotations

import hashlib
import struct
from pathlib import Path

_SKIP_PREFIXES = (".debug", ".nv_debug", ".note", ".rela.debug", ".rel.debug", ".rela.nv_debug",
                  ".rel.nv_debug", ".nv.shared.reserved")
_SKIP = {"", ".symtab", ".strtab", ".shstrtab", ".nv.info", ".nv.callgraph"}
_PER_ENTRY = (".text.", ".nv.info.", ".nv.constant0.", ".nv.shared.", ".rela.text.", ".rel.text.",
              ".nv.local.")
SHT_NOBITS, SHT_RELA, SHT_REL = 8, 4, 9
_PARAM_CBANK = 0x0A


class _Elf:
    def __init__(self, data: bytes):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF (cubin)")
        self.data = data
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx]
        self.sections = []
        for (name, typ, _flags, _addr, off, size, link, info, _align, entsize) in raw:
            self.sections.append(dict(name=self._str(names[4], name), type=typ, off=off, size=size, link=link,
                                      info=info, entsize=entsize))
        self.by_name = {s["name"]: i for i, s in enumerate(self.sections)}
        symtab = next((s for s in self.sections if s["name"] == ".symtab"), None)
        self.symbols: list[tuple[str, int]] = []          # (name, section index)
        self.values: dict[str, tuple[int, int, int]] = {}  # name -> (section index, offset, size)
        if symtab:
            strtab = self.sections[symtab["link"]]
            for j in range(symtab["size"] // 24):
                st_name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab["off"] + 24 * j)
                name = self._str(strtab["off"], st_name)
                self.symbols.append((name, shndx))
                self.values[name] = (shndx, value, size)

    def _str(self, table_off: int, index: int) -> str:
        end = self.data.index(b"\0", table_off + index)
        return self.data[table_off + index:end].decode()

    def symbol_name(self, index: bytes) -> bytes:
        j, = struct.unpack("<I", index)
        return (self.symbols[j][0] if j < len(self.symbols) else f"#{j}").encode()

    def body(self, i: int) -> bytes:
        s = self.sections[i]
        return b"" if s["type"] == SHT_NOBITS else self.data[s["off"]:s["off"] + s["size"]]

    def relocations(self, i: int) -> list[tuple[int, int, str, int]]:
        """(offset, type, symbol name, addend) of a REL/RELA section, by name rather than symbol index."""
        s = self.sections[i]
        width = 24 if s["type"] == SHT_RELA else 16
        out = []
        for j in range(s["size"] // width):
            off, info = struct.unpack_from("<QQ", self.data, s["off"] + width * j)
            addend = struct.unpack_from("<q", self.data, s["off"] + width * j + 16)[0] if width == 24 else 0
            sym = self.symbols[info >> 32][0] if (info >> 32) < len(self.symbols) else f"#{info >> 32}"
            out.append((off, info & 0xFFFFFFFF, sym, addend))
        return out

    def info_records(self, body: bytes) -> list[tuple[int, int, bytes]]:
        """(format, attribute, payload) records of an .nv.info section."""
        out, pos = [], 0
        while pos + 4 <= len(body):
            fmt, attr = body[pos], body[pos + 1]
            if fmt == 0x04:                              # EIFMT_SVAL: a 16-bit size, then the payload
                size, = struct.unpack_from("<H", body, pos + 2)
                out.append((fmt, attr, body[pos + 4:pos + 4 + size]))
                pos += 4 + size
            else:                                        # EIFMT_NVAL / BVAL / HVAL: 2 bytes of value inline
                out.append((fmt, attr, body[pos + 2:pos + 4]))
                pos += 4
        return out


def _section_digest(elf: _Elf, name: str, h, seen: set[str]) -> None:
    if name in seen or name not in elf.by_name:
        return
    seen.add(name)
    i = elf.by_name[name]
    s = elf.sections[i]
    body = elf.body(i)
    if name.startswith(".nv.info."):            # EIATTR_PARAM_CBANK names a symbol by index: use its name
        body = repr([(f, a, elf.symbol_name(p[:4]) + p[4:] if f == 0x04 and a == _PARAM_CBANK else p)
                     for f, a, p in elf.info_records(body)]).encode()
    h.update(name.encode() + b"\0" + str(s["size"]).encode() + b"\0" + body + b"\0")


def entry_digests(cubin: Path | str | bytes, entries) -> dict[str, str]:
    """SHA-256 of what entry `e` runs, for each e in `entries` (KeyError if the cubin has no such entry)."""
    data = cubin if isinstance(cubin, bytes) else Path(cubin).read_bytes()
    elf = _Elf(data)
    functions = {n[len(".text."):] for n in elf.by_name if n.startswith(".text.")}
    sym_index = {name: j for j, (name, _) in enumerate(elf.symbols)}
    shared = hashlib.sha256()
    for i, s in enumerate(elf.sections):            # sections of no entry, debug and tool info left out
        n = s["name"]
        if n in _SKIP or n.startswith(_SKIP_PREFIXES) or n.startswith(_PER_ENTRY):
            continue
        if s["type"] in (SHT_RELA, SHT_REL):
            target = elf.sections[s["info"]]["name"] if s["info"] < len(elf.sections) else ""
            if target.startswith(_SKIP_PREFIXES):
                continue
            shared.update(repr(elf.relocations(i)).encode())
        else:
            shared.update(n.encode() + b"\0" + elf.body(i))
    global_info = elf.info_records(elf.body(elf.by_name[".nv.info"])) if ".nv.info" in elf.by_name else []
    out = {}
    for entry in entries:
        if entry not in functions:
            raise KeyError(f"{entry}: no such entry in the cubin (has {sorted(functions)[:8]} ...)")
        h = hashlib.sha256(shared.digest())
        seen: set[str] = set()
        todo = [entry]
        while todo:                                  # the entry, then every function its code refers to
            fn = todo.pop()
            for prefix in (".text.", ".nv.constant0.", ".nv.info.", ".nv.shared.", ".nv.local."):
                _section_digest(elf, prefix + fn, h, seen)
            for rel in (".rela.text.", ".rel.text."):
                if rel + fn in elf.by_name:
                    relocs = elf.relocations(elf.by_name[rel + fn])
                    h.update(repr(relocs).encode())
                    todo += [sym for _, _, sym, _ in relocs if sym in functions and ".text." + sym not in seen]
            j = sym_index.get(fn)
            for fmt, attr, payload in global_info:   # per-function records: the first 4 bytes name the symbol
                if fmt == 0x04 and len(payload) >= 4 and struct.unpack_from("<I", payload)[0] == j:
                    h.update(bytes([attr]) + payload[4:])
        out[entry] = h.hexdigest()
    return out


EXPORT_PREFIX = "study_"


def exports(cubin: Path | str | bytes) -> dict[str, int]:
    """The launch facts a .cu file exports with STUDY_EXPORT (gemm_common.cuh): `extern "C" __device__ const int
    study_<name>` globals, read from their initial values in `.nv.global.init`, by name without the prefix."""
    data = cubin if isinstance(cubin, bytes) else Path(cubin).read_bytes()
    elf = _Elf(data)
    out = {}
    for name, (shndx, value, size) in elf.values.items():
        if name.startswith(EXPORT_PREFIX) and size == 4 and 0 < shndx < len(elf.sections):
            zero = elf.sections[shndx]["type"] == SHT_NOBITS     # nvcc puts a 0 in .nv.global, which has no bytes
            out[name[len(EXPORT_PREFIX):]] = 0 if zero else struct.unpack_from("<i", elf.body(shndx), value)[0]
    return out


_KPARAM_INFO = 0x17


def param_sizes(cubin: Path | str | bytes, entry: str) -> list[int]:
    """The byte size of each of an entry's parameters, in order, from its EIATTR_KPARAM_INFO records (what the
    driver's cuFuncGetParamInfo reports on a GPU): a launcher's declared parameters are checked against it
    offline."""
    data = cubin if isinstance(cubin, bytes) else Path(cubin).read_bytes()
    elf = _Elf(data)
    section = f".nv.info.{entry}"
    if section not in elf.by_name:
        raise KeyError(f"no entry {entry!r} in the cubin")
    sizes = {}
    for fmt, attr, payload in elf.info_records(elf.body(elf.by_name[section])):
        if fmt == 0x04 and attr == _KPARAM_INFO:
            _index, ordinal, _offset, flags = struct.unpack_from("<IHHI", payload)
            sizes[ordinal] = (flags >> 18) & 0x3FFF
    return [sizes[i] for i in range(len(sizes))]
