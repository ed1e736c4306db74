#!/usr/bin/env python3
"""Writes the profiler's wrappers from mpi_calls.spec (run by CMake at build time).

Inputs: the spec (one line per call) and the preprocessed mpi.h of the MPI library the
profiler is built against. An MPI wrapper is generated only for calls that mpi.h declares
(``PMPI_<name>``), with the parameter types mpi.h gives and the argument names of the spec;
the POSIX wrappers take their prototypes from the spec.

Every wrapper is built from one model of the call (`Call`): what its arguments mean
(attributes of the spec) decides the statements before and after the real call. The C and
the Fortran wrappers differ only in how an argument is reached (`CLang`, `FortranLang`):
Fortran arguments are pointers converted to C values by name, and the request/status
helpers have Fortran twins with the same members (fortran.hpp).

Outputs (into --out-dir, never committed):
  prof_calls.hpp         call ids and kinds, which calls create/free/complete objects
  prof_calls.cpp         call names and kinds, indexed by id; every MPI call of the spec
  prof_wrappers_c.cpp    the C wrappers (MPI_X -> PMPI_X)
  prof_wrappers_f.cpp    the Fortran wrappers (mpi_x_, mpi_x__, mpi_x, MPI_X and their `use
                         mpi_f08` twins mpi_x_f08_, ... -> next definition)
  prof_wrappers_posix.cpp  the POSIX I/O wrappers (open, read, fwrite, ... -> the C library)
  prof_calls.txt         which spec calls were generated and which mpi.h lacks

Usage: generate_wrappers.py --spec mpi_calls.spec --mpi-h mpi.i --out-dir DIR
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

KINDS = (
    "send",
    "recv",
    "sendrecv",
    "probe",
    "coll",
    "rma_send",
    "rma_recv",
    "rma_sync",
    "req",
    "io_read",
    "io_write",
    "io_other",
    "comm",
    "misc",
    "posix",
)
FLAG_ATTRIBUTES = {"persistent", "recv", "nof"}
VALUE_ATTRIBUTES = {
    "bytes",
    "fbytes",
    "peer",
    "root",
    "comm",
    "win",
    "status",
    "request",
    "complete",
    "flag",
    "start",
    "freereq",
    "newcomm",
    "freecomm",
    "newwin",
    "freewin",
    "message",
    "mrecv",
}
POSIX_ATTRIBUTES = {"returns", "bytes", "fallback", "mode", "as"}
# Attributes that make a call create, free, complete or start MPI objects: such calls keep the
# profiler's books even when they are not recorded (runtime.hpp: kTrack).
LIFECYCLE = {"complete", "start", "freereq", "newcomm", "freecomm", "newwin", "freewin", "message"}
LIFECYCLE |= {"mrecv"}
HANDLE_F2C = {
    "MPI_Comm": "PMPI_Comm_f2c",
    "MPI_Datatype": "PMPI_Type_f2c",
    "MPI_Win": "PMPI_Win_f2c",
    "MPI_File": "PMPI_File_f2c",
    "MPI_Op": "PMPI_Op_f2c",
    "MPI_Group": "PMPI_Group_f2c",
    "MPI_Info": "PMPI_Info_f2c",
    "MPI_Request": "PMPI_Request_f2c",
    "MPI_Message": "PMPI_Message_f2c",
    "MPI_Errhandler": "PMPI_Errhandler_f2c",
}
TYPE_WORDS = {"const", "volatile", "restrict", "struct", "unsigned", "signed"}
FORTRAN_SCALARS = {"MPI_Aint", "MPI_Offset", "MPI_Count"}


class SpecError(Exception):
    pass


@dataclass
class Param:
    name: str
    ctype: str  # type text without the name, arrays as trailing "[]"
    array: bool = False

    def declare(self, name: str | None = None) -> str:
        base = self.ctype
        nm = name or self.name
        if self.array:
            return f"{base} {nm}[]"
        if base.endswith("*"):
            return f"{base}{nm}"
        return f"{base} {nm}"

    @property
    def base(self) -> str:
        """Type without const and pointer/array marks (e.g. 'MPI_Datatype')."""
        text = self.ctype.replace("const", "").replace("*", "").strip()
        return " ".join(text.split())

    @property
    def indirect(self) -> bool:
        return self.array or "*" in self.ctype


@dataclass
class Call:
    name: str
    kind: str
    spec_args: list[str]
    attrs: dict[str, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    line: int = 0
    params: list[Param] = field(default_factory=list)
    ident: str = ""

    @property
    def posix(self) -> bool:
        return self.kind == "posix"

    @property
    def lifecycle(self) -> bool:
        return bool(LIFECYCLE & set(self.attrs))

    def form(self, key: str) -> tuple[str, list[str]]:
        """`complete=` / `start=` as (form, argument names)."""
        return _parse_fn(self.attrs[key])


def parse_spec(path: Path) -> list[Call]:
    calls: list[Call] = []
    seen: set[str] = set()
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split("|", 3)]  # expressions may contain '|'
        if len(parts) != 4:
            raise SpecError(f"{path}:{number}: expected 4 '|'-separated fields, got {len(parts)}")
        name, kind, args, attr_text = parts
        if kind not in KINDS:
            raise SpecError(f"{path}:{number}: unknown kind '{kind}' (known: {', '.join(KINDS)})")
        if name in seen:
            raise SpecError(f"{path}:{number}: '{name}' listed twice")
        seen.add(name)
        call = Call(name=name, kind=kind, spec_args=_split_top(args) if args else [], line=number)
        known = POSIX_ATTRIBUTES if kind == "posix" else VALUE_ATTRIBUTES
        for item in (a.strip() for a in _split_top(attr_text, ";")):
            if not item:
                continue
            if "=" in item:
                key, value = (s.strip() for s in item.split("=", 1))
                if key not in known:
                    raise SpecError(f"{path}:{number}: unknown attribute '{key}'")
                call.attrs[key] = value
            elif item in FLAG_ATTRIBUTES and kind != "posix":
                call.flags.add(item)
            else:
                raise SpecError(f"{path}:{number}: unknown flag '{item}'")
        if kind == "posix" and "returns" not in call.attrs:
            raise SpecError(f"{path}:{number}: a posix line needs returns=TYPE")
        for key in ("complete", "start"):
            if key in call.attrs:
                form, args_of = _parse_fn(call.attrs[key])
                want = {"one": (1, 2), "all": (2, 3), "any": (4,), "some": (5,)}
                if form not in want or len(args_of) not in want[form]:
                    raise SpecError(f"{path}:{number}: bad {key}={call.attrs[key]}")
        calls.append(call)
    for call in calls:
        alias = call.attrs.get("as")
        if alias and alias not in seen:
            raise SpecError(f"{path}:{call.line}: as={alias} names no call of the spec")
    return calls


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Splits on `sep` outside parentheses and brackets."""
    out, depth, current = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        out.append("".join(current).strip())
    return out


def _arg_name(decl: str) -> str:
    match = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*$", decl)
    if not match:
        raise SpecError(f"cannot find the argument name in '{decl}'")
    return match.group(1)


def header_prototypes(text: str) -> dict[str, list[str]]:
    """MPI_<name> -> parameter declarations of PMPI_<name>, from preprocessed mpi.h (the first
    declaration of each name)."""
    protos: dict[str, list[str]] = {}
    for match in re.finditer(r"\bPMPI_(\w+)\s*\(", text):
        name = "MPI_" + match.group(1)
        start = match.end()
        depth, i = 1, start
        while i < len(text) and depth:
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
            i += 1
        inner = " ".join(text[start : i - 1].split())
        if name not in protos:
            protos[name] = _split_top(inner) if inner and inner != "void" else []
    return protos


def header_param(decl: str, spec_name: str) -> Param:
    """Parameter type from a declaration (which may or may not name the parameter)."""
    decl = decl.strip()
    array = False
    while decl.endswith("]"):
        decl = decl[: decl.rindex("[")].rstrip()
        array = True
    tokens = re.findall(r"[A-Za-z_]\w*|\*", decl)
    words = [t for t in tokens if t != "*" and t not in TYPE_WORDS]
    if len(words) >= 2 and tokens[-1] != "*":
        # The last identifier is the parameter's name: drop it.
        decl = decl[: decl.rindex(tokens[-1])].rstrip()
    ctype = " ".join(decl.replace("*", " * ").split()).replace("* *", "**")
    if ctype.endswith("*"):
        ctype = ctype[:-1].rstrip() + " *"
    return Param(name=spec_name, ctype=ctype, array=array)


def _parse_fn(value: str) -> tuple[str, list[str]]:
    match = re.fullmatch(r"(\w+)\((.*)\)", value.strip())
    if not match:
        raise SpecError(f"expected form(args), got '{value}'")
    return match.group(1), [a.strip() for a in match.group(2).split(",")]


# ---------------------------------------------------------------------------------------
# The two languages of MPI wrappers
# ---------------------------------------------------------------------------------------


class CLang:
    """C: the arguments are the C values; MPI is PMPI_<name>."""

    completions = "pp::Completions"
    status_out = "pp::StatusOut"
    request_array = "pp::RequestArray"
    fortran = False

    def __init__(self, call: Call):
        self.call = call

    def raw(self, name: str) -> str:
        """The argument as the caller passed it."""
        return name

    def forward(self, replace: dict[str, str]) -> str:
        args = ", ".join(replace.get(p.name, p.name) for p in self.call.params)
        return f"PMPI_{self.call.name[4:]}({args})"

    def index_base(self) -> str:
        return ""


class FortranLang(CLang):
    """Fortran: the arguments are pointers (`name_f`); C values of the same names are made
    for those the attributes use (fortran_conversions); MPI is the next Fortran binding."""

    completions = "pp::FCompletions"
    status_out = "pp::FStatusOut"
    request_array = "pp::FRequestArray"
    fortran = True

    def raw(self, name: str) -> str:
        return f"{name}_f"

    def forward(self, replace: dict[str, str]) -> str:
        args = [replace.get(p.name, f"{p.name}_f") for p in self.call.params] + ["ierr"]
        return f"prof_fn({', '.join(args)})"

    def index_base(self) -> str:
        return " - 1"  # Fortran indices count from 1


def _peer_expr(call: Call) -> str:
    if "root" in call.attrs:
        return f"pp::peer_root({call.attrs['comm']}, {call.attrs['root']})"
    if "peer" in call.attrs:
        if "win" in call.attrs:
            return f"pp::peer_win({call.attrs['win']}, {call.attrs['peer']})"
        if "comm" in call.attrs:
            return f"pp::peer_comm({call.attrs['comm']}, {call.attrs['peer']})"
        raise SpecError(f"{call.name}: peer= needs comm= or win=")
    return "pp::kPeerNone"


def _count_argument(lang: CLang, name: str | None, before: list[str]) -> str:
    """The request count for a helper: the argument, or 1 for single-request calls."""
    if name is not None:
        return lang.raw(name)
    if lang.fortran:  # the Fortran helpers take the count as Fortran passes it
        if "const MPI_Fint prof_one = 1;" not in before:
            before.append("const MPI_Fint prof_one = 1;")
        return "&prof_one"
    return "1"


@dataclass
class Body:
    before: list[str]  # after the mode test, before the clock starts
    replace: dict[str, str]  # argument -> what to pass to MPI instead
    after: list[str]  # after the call (prof_rc, prof_dt and prof_mode known)


def body(call: Call, lang: CLang) -> Body:
    """The statements around the real call, for either language."""
    a = call.attrs
    ident = f"pp::{call.ident}"
    raw = lang.raw
    before: list[str] = []
    after: list[str] = []
    replace: dict[str, str] = {}
    ok = "prof_rc == MPI_SUCCESS"
    record = "prof_mode == pp::kRecord"

    # ---- objects freed or consumed by the call: forgotten before it ---------------------
    if "mrecv" in a:
        before.append(f"const MPI_Comm prof_mcomm = pp::message_comm(*{a['mrecv']});")
    if "freecomm" in a:
        before.append(f"pp::comm_freeing(*{a['freecomm']});")
    if "freewin" in a:
        before.append(f"pp::win_freeing(*{a['freewin']});")
    if "freereq" in a:
        before.append(f"pp::request_freeing(*{a['freereq']});")
    status_arg = a.get("status")
    if status_arg:
        before.append(f"{lang.status_out} prof_st({raw(status_arg)});")
        replace[status_arg] = "prof_st.arg()"
    if "complete" in a:
        form, args = call.form("complete")
        reqs = args[0] if form == "one" else args[1]
        array = "true" if form in ("all", "some") else "false"
        count = _count_argument(lang, None if form == "one" else args[0], before)
        before.append(
            f"{lang.completions} prof_done({count}, {raw(reqs)}, {raw(args[-1])}, {array});"
        )
        replace[args[-1]] = "prof_done.arg()"
    if "start" in a:
        form, args = call.form("start")
        count = _count_argument(lang, None if form == "one" else args[0], before)
        reqs = args[0] if form == "one" else args[1]
        before.append(f"{lang.request_array} prof_reqs({count}, {raw(reqs)});")

    # ---- after the call: objects created, requests completed or started ----------------
    flag_ok = f"({ok} && *{raw(a['flag'])})" if "flag" in a else ok
    if "newcomm" in a:
        after.append(f"if ({ok}) pp::comm_created(*{a['newcomm']});")
    if "newwin" in a:
        form, args = _parse_fn(a["newwin"])
        after.append(f"if ({ok}) pp::win_created(*{form}, {args[0]});")
    if "message" in a:
        after.append(f"if ({ok}) pp::message_matched(*{a['message']}, {a['comm']});")
    if "complete" in a:
        form, args = call.form("complete")
        base = lang.index_base()
        if form == "one":
            after.append(f"if ({flag_ok}) prof_done.finish(0, 0);")
        elif form == "all":
            after.append(f"if ({flag_ok}) prof_done.finish_all();")
        elif form == "any":
            index = raw(args[2])
            after.append(
                f"if ({flag_ok} && *{index} != MPI_UNDEFINED) prof_done.finish(*{index}{base}, 0);"
            )
        else:  # some
            outcount, indices = raw(args[2]), raw(args[3])
            after.append(
                f"if ({ok} && *{outcount} != MPI_UNDEFINED) "
                f"for (int prof_i = 0; prof_i < *{outcount}; ++prof_i) "
                f"prof_done.finish({indices}[prof_i]{base}, prof_i);"
            )
    if "start" in a:
        form, args = call.form("start")
        n = "1" if form == "one" else (f"*{raw(args[0])}" if lang.fortran else raw(args[0]))
        after.append(
            f"if ({ok}) for (int prof_i = 0; prof_i < {n}; ++prof_i) "
            f"pp::request_started(prof_reqs.get(prof_i), {record});"
        )

    # ---- what is recorded ---------------------------------------------------------------
    bytes_expr = a["fbytes"] if lang.fortran and "fbytes" in a else a.get("bytes", "0")
    if "mrecv" in a:
        peer_expr, comm_for_status = "pp::kPeerAny", "prof_mcomm"
    else:
        peer_expr, comm_for_status = _peer_expr(call), a.get("comm", "MPI_COMM_NULL")
    rec: list[str] = []
    if "request" in a:
        flags = []
        if "persistent" in call.flags:
            flags.append("pp::kReqPersistent")
        if "recv" in call.flags:
            flags.append("pp::kReqRecv")
        flag_text = " | ".join(flags) if flags else "0u"
        start_id = f"pp::{call.ident}_start" if "persistent" in call.flags else "-1"
        rec += [
            f"if ({ok}) {{",
            f"  const uint64_t prof_bytes = {bytes_expr};",
            f"  const int prof_peer = {peer_expr};",
            f"  pp::request_posted({ident}, {start_id}, *{a['request']}, prof_bytes, prof_peer,"
            f" prof_dt, {flag_text}, {comm_for_status});",
            "} else {",
            f"  pp::record({ident}, 0, 0, pp::kPeerNone, prof_dt);",
            "}",
        ]
    elif status_arg:
        bytes_value = bytes_expr if "bytes" in a else "pp::status_bytes(prof_st.get())"
        source = a.get("peer", "MPI_ANY_SOURCE")
        rec += [
            f"if ({ok}) {{",
            f"  const uint64_t prof_bytes = {bytes_value};",
            f"  const int prof_peer = pp::peer_status({comm_for_status}, prof_st.get(), {source});",
            f"  pp::record({ident}, prof_bytes, prof_bytes, prof_peer, prof_dt);",
            "} else {",
            f"  pp::record({ident}, 0, 0, pp::kPeerNone, prof_dt);",
            "}",
        ]
    elif "complete" in a or "start" in a:
        rec.append(f"pp::record({ident}, 0, 0, pp::kPeerNone, prof_dt);")
    else:
        rec += [
            f"const uint64_t prof_bytes = {ok} ? {bytes_expr} : 0;",
            f"pp::record({ident}, prof_bytes, prof_bytes, {peer_expr}, prof_dt);",
        ]
    if call.lifecycle:  # this call may run in kTrack mode: record only in kRecord
        after.append(f"if ({record}) {{")
        after += ["  " + line for line in rec]
        after.append("}")
    else:
        after += rec
    return Body(before, replace, after)


def c_wrapper(call: Call) -> str:
    lang = CLang(call)
    params = ", ".join(p.declare() for p in call.params) or "void"
    b = body(call, lang)
    out = [
        f'extern "C" PETACOMM_PROF_EXPORT int {call.name}({params}) {{',
        f"  const int prof_mode = pp::enter(pp::{call.ident});",
        f"  if (prof_mode == pp::kPass) return {lang.forward({})};",
    ]
    out += ["  " + line for line in b.before]
    out += [
        f"  const uint64_t prof_t0 = pp::call_begin(prof_mode, pp::{call.ident});",
        f"  const int prof_rc = {lang.forward(b.replace)};",
        "  const uint64_t prof_dt = pp::call_end(prof_mode, prof_t0);",
    ]
    out += ["  " + line for line in b.after]
    out += ["  pp::leave();", "  return prof_rc;", "}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Fortran wrappers
# ---------------------------------------------------------------------------------------


def fortran_supported(call: Call) -> str | None:
    """None when a Fortran wrapper can be generated, else the reason."""
    if "nof" in call.flags or call.name.endswith("_c"):
        return "no Fortran binding"
    for p in call.params:
        if p.base == "char" or "function" in p.base or "(" in p.ctype:
            return f"argument {p.name} ({p.ctype}) has no plain Fortran form"
    return None


def fortran_type(p: Param) -> str:
    base = p.base
    if base == "void":
        return "void *"
    if base in FORTRAN_SCALARS:
        return f"{base} *"
    return "MPI_Fint *"


def fortran_conversions(call: Call) -> tuple[list[str], list[str]]:
    """C values named like the arguments, for those the attribute expressions use:
    (statements before the call, statements after it for handles the call returns)."""
    a = call.attrs
    exprs = " ".join(v for k, v in a.items() if k not in ("complete", "start", "flag"))
    used = {p.name for p in call.params if re.search(rf"\b{re.escape(p.name)}\b", exprs)}
    outputs = {a[k] for k in ("request", "newcomm", "message") if k in a}
    if "newwin" in a:
        outputs.add(_parse_fn(a["newwin"])[0])
    before, after = [], []
    for p in call.params:
        if p.name not in used:
            continue
        base = p.base
        if base == "void":
            before.append(f"const void *{p.name} = pp::fortran_buffer({p.name}_f);")
        elif base == "int" and not p.indirect:
            before.append(f"const int {p.name} = static_cast<int>(*{p.name}_f);")
        elif base == "int":
            before.append(f"const int *{p.name} = reinterpret_cast<const int *>({p.name}_f);")
        elif base in FORTRAN_SCALARS and not p.indirect:
            before.append(f"const {base} {p.name} = *{p.name}_f;")
        elif base in HANDLE_F2C:
            f2c = HANDLE_F2C[base]
            if p.name in outputs:
                after.append(f"{base} {p.name}[1] = {{{f2c}(*{p.name}_f)}};")
            elif p.array:
                before.append(f"const MPI_Fint *{p.name} = {p.name}_f;")
            elif p.indirect:  # an in-out handle (freed, consumed): its value before the call
                before.append(f"{base} {p.name}[1] = {{{f2c}(*{p.name}_f)}};")
            else:
                before.append(f"const {base} {p.name} = {f2c}(*{p.name}_f);")
        elif base == "MPI_Status":
            pass  # statuses go through FStatusOut / FCompletions
        else:
            raise SpecError(f"{call.name}: cannot convert Fortran argument {p.name} ({p.ctype})")
    return before, after


def fortran_wrapper(call: Call) -> str:
    reason = fortran_supported(call)
    if reason:
        return f"// {call.name}: no Fortran wrapper ({reason})\n"
    lang = FortranLang(call)
    fparams = ", ".join([f"{fortran_type(p)}{p.name}_f" for p in call.params] + ["MPI_Fint *ierr"])
    pointers = [f"{p.name}_f" for p in call.params]
    fargs = ", ".join(pointers + ["ierr"])
    ftypes = ", ".join([fortran_type(p) for p in call.params] + ["MPI_Fint *"])
    convert_before, convert_after = fortran_conversions(call)
    b = body(call, lang)
    impl = f"prof_f_{call.ident}"
    out = [
        f"using prof_fn_{call.ident} = void (*)({ftypes});",
        f"static void {impl}(void **prof_cache, const char *prof_symbol, {fparams}) {{",
        f"  auto prof_fn = pp::fortran_next<prof_fn_{call.ident}>(prof_cache, prof_symbol);",
        "  if (!prof_fn) {",
        "    *ierr = MPI_ERR_INTERN;",
        "    return;",
        "  }",
        f"  const int prof_mode = pp::enter(pp::{call.ident});",
        "  if (prof_mode == pp::kPass) {",
        f"    {lang.forward({})};",
        "    return;",
        "  }",
    ]
    out += ["  " + line for line in convert_before + b.before]
    out += [
        f"  const uint64_t prof_t0 = pp::call_begin(prof_mode, pp::{call.ident});",
        f"  {lang.forward(b.replace)};",
        "  const int prof_rc = static_cast<int>(*ierr);",
        "  const uint64_t prof_dt = pp::call_end(prof_mode, prof_t0);",
    ]
    out += ["  " + line for line in convert_after + b.after]
    out += ["  pp::leave();", "}"]
    for symbol in fortran_symbols(call.name):
        out.append(
            f'extern "C" PETACOMM_PROF_EXPORT void {symbol}({fparams}) '
            f'{{ static void *cache; {impl}(&cache, "{symbol}", {fargs}); }}'
        )
    # `use mpi_f08` (Open MPI: mpi_x_f08_ -> ompi_x_f -> PMPI_X): the same arguments (a handle
    # type holds one integer) but `ierror` is optional, a null pointer when left out.
    f08_args = ", ".join(pointers + ["ierr ? ierr : &prof_ierr"])
    for symbol in fortran_symbols(call.name + "_f08"):
        out.append(
            f'extern "C" PETACOMM_PROF_EXPORT void {symbol}({fparams}) '
            f'{{ static void *cache; MPI_Fint prof_ierr; {impl}(&cache, "{symbol}", {f08_args}); }}'
        )
    out.append("")
    return "\n".join(out)


def fortran_symbols(name: str) -> list[str]:
    """The names Fortran compilers give the procedure NAME: mpi_x_, mpi_x__, mpi_x, MPI_X."""
    lower = name.lower()
    return [lower + "_", lower + "__", lower, lower.upper()]


# ---------------------------------------------------------------------------------------
# POSIX I/O wrappers
# ---------------------------------------------------------------------------------------


def posix_wrapper(call: Call, ident: str) -> str:
    """A C library function: the real one found with dlsym(RTLD_NEXT), timed as I/O on the
    threads PETACOMM_PROF_IO asks for, outside MPI calls, errno kept."""
    a = call.attrs
    returns = a["returns"]
    variadic = bool(call.spec_args) and call.spec_args[-1] == "..."
    decls = call.spec_args[:-1] if variadic else call.spec_args
    params = [header_param(d, _arg_name(d)) for d in decls]
    if variadic and "mode" not in a:
        raise SpecError(f"{call.name}: a variadic posix call needs mode=")
    declared = ", ".join([p.declare() for p in params] + (["..."] if variadic else []))
    types = ", ".join([p.ctype + ("[]" if p.array else "") for p in params] + (["..."] if variadic else []))
    args = [p.name for p in params] + (["mode"] if variadic else [])
    real = f"prof_real_{call.name}"
    ret_decl = returns if returns.endswith("*") else returns + " "
    out = [f"using {real}_t = {returns} (*)({types});", f"{real}_t {real};"]
    out.append(f'extern "C" PETACOMM_PROF_EXPORT {ret_decl}{call.name}({declared}) {{')
    if variadic:
        out += [
            "  va_list prof_ap;",
            f"  va_start(prof_ap, {params[-1].name});",
            f"  const mode_t mode = pp::mode_arg({a['mode']}, prof_ap);",
            "  va_end(prof_ap);",
        ]
    fallback = a.get("fallback", "pp::posix_missing<" + returns + ">(" + returns + "())")
    out += [
        f'  pp::posix_resolve({real}, "{call.name}");',
        f"  auto prof_invoke = [&]() -> {returns} {{",
        f"    return {real} ? {real}({', '.join(args)}) : static_cast<{returns}>({fallback});",
        "  };",
        f"  if (!pp::io_on(pp::{ident})) return prof_invoke();",
        "  const auto [prof_result, prof_ns] = pp::io_timed(prof_invoke);",
        "  const int prof_errno = errno;",
        f"  pp::record_io(pp::{ident}, static_cast<uint64_t>({a.get('bytes', '0')}), prof_ns);",
        "  errno = prof_errno;",
        "  return prof_result;",
        "}",
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path)
    parser.add_argument("--mpi-h", required=True, type=Path, help="preprocessed mpi.h")
    parser.add_argument("--out-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        calls = parse_spec(args.spec)
        protos = header_prototypes(args.mpi_h.read_text(errors="replace"))
        files = generate(calls, protos)
    except (OSError, SpecError) as err:
        print(f"generate_wrappers: error: {err}", file=sys.stderr)
        return 1
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        _write(args.out_dir / name, text)
    return 0


def generate(calls: list[Call], protos: dict[str, list[str]]) -> dict[str, str]:
    """The generated files by name, for the calls of the spec that `protos` declares."""
    generated: list[Call] = []
    missing: list[str] = []
    ids: list[tuple[str, str, str, bool]] = []  # (ident, name, kind, lifecycle)
    idents: dict[str, str] = {}
    for call in calls:
        call.ident = "k" + re.sub(r"\W", "_", call.name)
        if call.posix:
            if "as" not in call.attrs:
                ids.append((call.ident, call.name, call.kind, False))
                idents[call.name] = call.ident
            continue
        decls = protos.get(call.name)
        if decls is None:
            missing.append(call.name)
            continue
        names = [_arg_name(arg) for arg in call.spec_args]
        if len(decls) != len(names):
            print(
                f"generate_wrappers: warning: {call.name}: mpi.h has {len(decls)} parameters, "
                f"the spec {len(names)}; not wrapped",
                file=sys.stderr,
            )
            missing.append(call.name)
            continue
        call.params = [header_param(d, n) for d, n in zip(decls, names, strict=True)]
        generated.append(call)
        ids.append((call.ident, call.name, call.kind, call.lifecycle))
        if "persistent" in call.flags:
            ids.append((call.ident + "_start", call.name + ":start", call.kind, False))

    spec_mpi = [c.name for c in calls if not c.posix]
    hpp = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        "#pragma once",
        "namespace petacomm::prof {",
        "enum CallId : int {",
    ]
    hpp += [f"  {ident} = {i}," for i, (ident, _, _, _) in enumerate(ids)]
    hpp += [f"  kNumCalls = {len(ids)}", "};"]
    hpp += [
        "extern const char *const kCallNames[];",
        "extern const char *const kCallKinds[];",
        "// Calls that create, free, complete or start objects (followed even when not recorded).",
        "extern const unsigned char kCallLifecycle[];",
        "// Every MPI call of the spec, generated here or not (PETACOMM_PROF_WRAP accepts them).",
        f"constexpr int kNumSpecCalls = {len(spec_mpi)};",
        "extern const char *const kSpecCallNames[];",
        "}  // namespace petacomm::prof",
        "",
    ]
    cpp = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        '#include "prof_calls.hpp"',
        "namespace petacomm::prof {",
        "const char *const kCallNames[] = {",
    ]
    cpp += [f'  "{name}",' for _, name, _, _ in ids]
    cpp += ["};", "const char *const kCallKinds[] = {"]
    cpp += [f'  "{kind}",' for _, _, kind, _ in ids]
    cpp += ["};", "const unsigned char kCallLifecycle[] = {"]
    cpp += [f"  {int(life)},  // {name}" for _, name, _, life in ids]
    cpp += ["};", "const char *const kSpecCallNames[] = {"]
    cpp += [f'  "{name}",' for name in spec_mpi]
    cpp += ["};", "}  // namespace petacomm::prof", ""]

    head = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        '#include "runtime.hpp"',
        "namespace pp = petacomm::prof;",
        "using namespace petacomm::prof;  // the spec's expressions call the helpers unqualified",
        "",
    ]
    c_text = head + [c_wrapper(call) for call in generated]
    f_text = head[:2] + ['#include "fortran.hpp"'] + head[2:]
    f_text += ['static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is not int");', ""]
    f_text += [fortran_wrapper(call) for call in generated]
    posix_text = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        '#include "posix_io.hpp"',
        "namespace pp = petacomm::prof;",
        "using namespace petacomm::prof;  // the spec's expressions call the helpers unqualified",
        "namespace {",
    ]
    posix_calls = [c for c in calls if c.posix]
    posix_text += [posix_wrapper(c, idents[c.attrs.get("as", c.name)]) for c in posix_calls]
    posix_text.append("}  // namespace")
    posix_text += [
        "",
        "// Resolved when the library is loaded, before the program runs.",
        "__attribute__((constructor)) static void prof_resolve_posix() {",
    ]
    posix_text += [f'  pp::posix_resolve(prof_real_{c.name}, "{c.name}");' for c in posix_calls]
    posix_text += ["}", ""]
    summary = [f"generated {len(generated)} wrappers"] + [f"  {c.name}" for c in generated]
    summary += [f"not declared by this mpi.h: {len(missing)}"] + [f"  {m}" for m in missing]
    summary += [f"POSIX wrappers: {len(posix_calls)}"] + [f"  {c.name}" for c in posix_calls]
    return {
        "prof_calls.hpp": "\n".join(hpp),
        "prof_calls.cpp": "\n".join(cpp),
        "prof_wrappers_c.cpp": "\n".join(c_text),
        "prof_wrappers_f.cpp": "\n".join(f_text),
        "prof_wrappers_posix.cpp": "\n".join(posix_text),
        "prof_calls.txt": "\n".join(summary) + "\n",
    }


def _write(path: Path, text: str) -> None:
    """Writes only when the content changed (keeps rebuilds incremental)."""
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
