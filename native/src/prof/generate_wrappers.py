#!/usr/bin/env python3
"""Writes the profiler's MPI wrappers from mpi_calls.spec (run by CMake at build time).

Inputs: the spec (one line per call) and the preprocessed mpi.h of the MPI library the
profiler is built against. A wrapper is generated only for calls that mpi.h declares
(``PMPI_<name>``), with the parameter types mpi.h gives (so const-ness and handle types
always match that library) and the argument names of the spec.

Outputs (into --out-dir, never committed):
  prof_calls.hpp       call ids, kinds, number of calls
  prof_calls.cpp       call names and kinds, indexed by id
  prof_wrappers_c.cpp  the C wrappers (MPI_X -> PMPI_X)
  prof_wrappers_f.cpp  the Fortran wrappers (mpi_x_, mpi_x__, mpi_x, MPI_X -> next definition)
  prof_calls.txt       which spec calls were generated and which mpi.h lacks

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
    def wrapped(self) -> bool:
        return self.kind != "posix"


def parse_spec(path: Path) -> list[Call]:
    calls: list[Call] = []
    seen: set[str] = set()
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split("|")]
        if len(parts) != 4:
            raise SpecError(f"{path}:{number}: expected 4 '|'-separated fields, got {len(parts)}")
        name, kind, args, attr_text = parts
        if kind not in KINDS:
            raise SpecError(f"{path}:{number}: unknown kind '{kind}' (known: {', '.join(KINDS)})")
        if name in seen:
            raise SpecError(f"{path}:{number}: '{name}' listed twice")
        seen.add(name)
        call = Call(name=name, kind=kind, spec_args=_split_top(args) if args else [], line=number)
        for item in (a.strip() for a in attr_text.split(";")):
            if not item:
                continue
            if "=" in item:
                key, value = (s.strip() for s in item.split("=", 1))
                if key not in VALUE_ATTRIBUTES:
                    raise SpecError(f"{path}:{number}: unknown attribute '{key}'")
                call.attrs[key] = value
            elif item in FLAG_ATTRIBUTES:
                call.flags.add(item)
            else:
                raise SpecError(f"{path}:{number}: unknown flag '{item}'")
        calls.append(call)
    return calls


def _split_top(text: str) -> list[str]:
    """Splits on commas outside parentheses and brackets."""
    out, depth, current = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
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
    """PMPI_<name> -> list of parameter declarations, from preprocessed mpi.h."""
    protos: dict[str, list[str]] = {}
    for match in re.finditer(r"\bPMPI_(\w+)\s*\(", text):
        name = match.group(1)
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
            protos["MPI_" + name] = _split_top(inner) if inner and inner != "void" else []
    return protos


def header_param(decl: str, spec_name: str) -> Param:
    """Parameter type from a header declaration (which may or may not name it)."""
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


# ---------------------------------------------------------------------------------------
# C wrappers
# ---------------------------------------------------------------------------------------


def _call_args(call: Call, replace: dict[str, str] | None = None) -> str:
    replace = replace or {}
    return ", ".join(replace.get(p.name, p.name) for p in call.params)


def _parse_fn(value: str) -> tuple[str, list[str]]:
    match = re.fullmatch(r"(\w+)\((.*)\)", value.strip())
    if not match:
        raise SpecError(f"expected form(args), got '{value}'")
    return match.group(1), [a.strip() for a in match.group(2).split(",")]


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


def body(call: Call, fortran: bool) -> list[str]:
    """The statements between the pass-through test and the return, shared by C and Fortran.

    In the Fortran wrapper the C-typed locals named like the arguments exist (converted
    from the Fortran arguments) and `prof_real()` forwards the original arguments.
    """
    a = call.attrs
    ident = call.ident
    lines: list[str] = []
    status_arg = a.get("status")
    complete = a.get("complete")
    call_expr = "prof_real()" if fortran else f"PMPI_{call.name[4:]}({{args}})"
    replace: dict[str, str] = {}

    # ---- before the call ----------------------------------------------------------------
    if status_arg and not fortran:
        lines.append("MPI_Status prof_status_local;")
        lines.append(
            f"MPI_Status *prof_st = ({status_arg} == MPI_STATUS_IGNORE) ? &prof_status_local"
            f" : {status_arg};"
        )
        replace[status_arg] = "prof_st"
    if "mrecv" in a:
        lines.append(f"const MPI_Comm prof_mcomm = pp::message_comm(*{a['mrecv']});")
    if "freecomm" in a:
        lines.append(f"pp::comm_freeing(*{a['freecomm']});")
    if "freewin" in a:
        lines.append(f"pp::win_freeing(*{a['freewin']});")
    if "freereq" in a:
        lines.append(f"pp::request_freeing(*{a['freereq']});")
    if complete:
        form, args = _parse_fn(complete)
        if not fortran:
            if form == "one":
                req, st = args
                lines.append(f"pp::Snapshot prof_snap(1, {req});")
                lines.append("MPI_Status prof_status_local;")
                lines.append(
                    f"MPI_Status *prof_st = ({st} == MPI_STATUS_IGNORE && prof_snap.needs_status())"
                    f" ? &prof_status_local : {st};"
                )
                replace[st] = "prof_st"
            elif form in ("all", "some"):
                n, reqs, sts = args[0], args[1], args[-1]
                lines.append(f"pp::Snapshot prof_snap({n}, {reqs});")
                lines.append(
                    f"MPI_Status *prof_st = prof_snap.statuses({sts} == MPI_STATUSES_IGNORE ?"
                    f" nullptr : {sts});"
                )
                replace[sts] = "prof_st"
            elif form == "any":
                n, reqs, _idx, st = args
                lines.append(f"pp::Snapshot prof_snap({n}, {reqs});")
                lines.append("MPI_Status prof_status_local;")
                lines.append(
                    f"MPI_Status *prof_st = ({st} == MPI_STATUS_IGNORE && prof_snap.needs_status())"
                    f" ? &prof_status_local : {st};"
                )
                replace[st] = "prof_st"
            else:
                raise SpecError(f"{call.name}: unknown complete form '{form}'")
    lines.append("const uint64_t prof_t0 = pp::now_ns();")
    lines.append(f"const int prof_rc = {call_expr.format(args=_call_args(call, replace))};")
    lines.append("const uint64_t prof_t1 = pp::now_ns();")
    lines.append("const uint64_t prof_dt = prof_t1 - prof_t0;")

    # ---- after the call -----------------------------------------------------------------
    if fortran and status_arg:
        lines.append("MPI_Status prof_status_c;")
        lines.append("MPI_Status *prof_st = &prof_status_c;")
        lines.append("if (prof_rc == MPI_SUCCESS) PMPI_Status_f2c(prof_fst, prof_st);")
    bytes_expr = a.get("fbytes") if fortran and "fbytes" in a else a.get("bytes", "0")
    if "mrecv" in a:
        peer_expr = "pp::kPeerAny"
        comm_for_status = "prof_mcomm"
    else:
        peer_expr = _peer_expr(call)
        comm_for_status = a.get("comm", "MPI_COMM_NULL")
    flag_ok = f"(prof_rc == MPI_SUCCESS && *{a['flag']})" if "flag" in a else "prof_rc == MPI_SUCCESS"

    if "newcomm" in a:
        lines.append(f"if (prof_rc == MPI_SUCCESS) pp::comm_created(*{a['newcomm']});")
    if "newwin" in a:
        form, args = _parse_fn(a["newwin"])
        lines.append(f"if (prof_rc == MPI_SUCCESS) pp::win_created(*{form}, {args[0]});")
    if "message" in a:
        lines.append(
            f"if (prof_rc == MPI_SUCCESS) pp::message_matched(*{a['message']}, {a['comm']});"
        )

    if "request" in a:
        req = a["request"]
        flags = []
        if "persistent" in call.flags:
            flags.append("pp::kReqPersistent")
        if "recv" in call.flags:
            flags.append("pp::kReqRecv")
        flag_text = " | ".join(flags) if flags else "0u"
        start_id = f"pp::{ident}_start" if "persistent" in call.flags else "-1"
        lines.append("if (prof_rc == MPI_SUCCESS) {")
        lines.append(f"  const uint64_t prof_bytes = {bytes_expr};")
        lines.append(f"  const int prof_peer = {peer_expr};")
        lines.append(
            f"  pp::request_posted(pp::{ident}, {start_id}, *{req}, prof_bytes, prof_peer,"
            f" prof_dt, {flag_text}, {comm_for_status});"
        )
        lines.append("} else {")
        lines.append(f"  pp::record(pp::{ident}, 0, 0, pp::kPeerNone, prof_dt);")
        lines.append("}")
    elif status_arg:
        explicit = "bytes" in a
        lines.append("if (prof_rc == MPI_SUCCESS) {")
        if explicit:
            lines.append(f"  const uint64_t prof_bytes = {bytes_expr};")
        else:
            lines.append("  const uint64_t prof_bytes = pp::status_bytes(prof_st);")
        source = a.get("peer", "MPI_ANY_SOURCE")
        lines.append(
            f"  const int prof_peer = pp::peer_status({comm_for_status}, prof_st, {source});"
        )
        lines.append(f"  pp::record(pp::{ident}, prof_bytes, prof_bytes, prof_peer, prof_dt);")
        lines.append("} else {")
        lines.append(f"  pp::record(pp::{ident}, 0, 0, pp::kPeerNone, prof_dt);")
        lines.append("}")
    elif complete:
        form, args = _parse_fn(complete)
        if form == "one":
            lines.append(f"if ({flag_ok}) prof_snap.complete(0, prof_st);")
        elif form == "all":
            lines.append(f"if ({flag_ok}) prof_snap.complete_all(prof_st);")
        elif form == "any":
            index = args[2]
            base = " - 1" if fortran else ""
            lines.append(
                f"if ({flag_ok} && *{index} != MPI_UNDEFINED) prof_snap.complete(*{index}{base},"
                " prof_st);"
            )
        elif form == "some":
            outcount, indices = args[2], args[3]
            base = " - 1" if fortran else ""
            lines.append(
                f"if (prof_rc == MPI_SUCCESS && *{outcount} != MPI_UNDEFINED) "
                f"for (int prof_i = 0; prof_i < *{outcount}; ++prof_i) "
                f"prof_snap.complete({indices}[prof_i]{base}, prof_st ? prof_st + prof_i : nullptr);"
            )
        lines.append(f"pp::record(pp::{ident}, 0, 0, pp::kPeerNone, prof_dt);")
    elif "start" in a:
        form, args = _parse_fn(a["start"])
        if form == "one":
            lines.append(f"if (prof_rc == MPI_SUCCESS) pp::request_started(*{args[0]});")
        else:
            n, reqs = args
            lines.append(
                f"if (prof_rc == MPI_SUCCESS) for (int prof_i = 0; prof_i < {n}; ++prof_i) "
                f"pp::request_started({reqs}[prof_i]);"
            )
        lines.append(f"pp::record(pp::{ident}, 0, 0, pp::kPeerNone, prof_dt);")
    else:
        lines.append(f"const uint64_t prof_bytes = prof_rc == MPI_SUCCESS ? {bytes_expr} : 0;")
        lines.append(
            f"pp::record(pp::{ident}, prof_bytes, prof_bytes, {peer_expr}, prof_dt);"
        )
    return lines


def c_wrapper(call: Call) -> str:
    params = ", ".join(p.declare() for p in call.params) or "void"
    args = _call_args(call)
    real = f"PMPI_{call.name[4:]}"
    out = [
        f"extern \"C\" PETACOMM_PROF_EXPORT int {call.name}({params}) {{",
        f"  if (!pp::enter(pp::{call.ident})) return {real}({args});",
    ]
    out += ["  " + line for line in body(call, fortran=False)]
    out += ["  pp::leave();", "  return prof_rc;", "}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Fortran wrappers
# ---------------------------------------------------------------------------------------

FORTRAN_SCALARS = {"MPI_Aint", "MPI_Offset", "MPI_Count"}


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


def fortran_param(p: Param) -> str:
    return f"{fortran_type(p)}{p.name}_f"


def fortran_locals(call: Call, used: set[str]) -> tuple[list[str], list[str]]:
    """C-typed locals named like the arguments: (before the call, after the call)."""
    before, after = [], []
    a = call.attrs
    outputs = set()
    for key in ("request", "newcomm", "message"):
        if key in a:
            outputs.add(a[key])
    if "newwin" in a:
        outputs.add(_parse_fn(a["newwin"])[0])
    for p in call.params:
        if p.name not in used:
            continue
        base = p.base
        if base == "void":
            before.append(f"const void *{p.name} = pp::fortran_buffer({p.name}_f);")
        elif base == "int" and not p.indirect:
            before.append(f"const int {p.name} = static_cast<int>(*{p.name}_f);")
        elif base == "int":
            before.append(
                f"int *{p.name} = reinterpret_cast<int *>({p.name}_f);"
                " static_assert(sizeof(MPI_Fint) == sizeof(int), \"MPI_Fint is not int\");"
            )
        elif base in FORTRAN_SCALARS and not p.indirect:
            before.append(f"const {base} {p.name} = *{p.name}_f;")
        elif base in HANDLE_F2C:
            f2c = HANDLE_F2C[base]
            if p.name in outputs:
                after.append(f"{base} {p.name}[1] = {{ {f2c}(*{p.name}_f) }};")
            elif p.array:
                before.append(f"const MPI_Fint *{p.name} = {p.name}_f;")
            elif p.indirect:
                before.append(f"{base} {p.name}[1] = {{ {f2c}(*{p.name}_f) }};")
            else:
                before.append(f"const {base} {p.name} = {f2c}(*{p.name}_f);")
        elif base == "MPI_Status":
            pass
        else:
            raise SpecError(f"{call.name}: cannot convert Fortran argument {p.name} ({p.ctype})")
    return before, after


def fortran_wrapper(call: Call) -> str:
    reason = fortran_supported(call)
    if reason:
        return f"// {call.name}: no Fortran wrapper ({reason})\n"
    a = call.attrs
    exprs = " ".join(a.values())
    used = {p.name for p in call.params if re.search(rf"\b{re.escape(p.name)}\b", exprs)}
    for p in call.params:
        if re.search(rf"\b{re.escape(p.name)}_f\b", a.get("fbytes", "")):
            used.add(p.name)
    fparams = ", ".join([fortran_param(p) for p in call.params] + ["MPI_Fint *ierr"])
    fargs = ", ".join([f"{p.name}_f" for p in call.params] + ["ierr"])
    ftypes = ", ".join([fortran_type(p) for p in call.params] + ["MPI_Fint *"])
    # Fortran completion calls need their own request/status handling.
    complete = a.get("complete")
    status_arg = a.get("status")
    lower = call.name.lower()
    out = [f"using prof_fn_{call.ident} = void (*)({ftypes});"]
    impl = f"prof_f_{call.ident}"
    out.append(f"static void {impl}(void **prof_cache, const char *prof_symbol, {fparams}) {{")
    out.append(
        f"  auto prof_fn = pp::fortran_next<prof_fn_{call.ident}>(prof_cache, prof_symbol);"
    )
    out.append("  if (!prof_fn) { *ierr = MPI_ERR_INTERN; return; }")
    out.append(f"  if (!pp::enter(pp::{call.ident})) {{ prof_fn({fargs}); return; }}")
    pre_handles = []
    for key in ("freecomm", "freewin", "freereq", "mrecv"):
        if key in a:
            arg = a[key]
            ctype = next(p.base for p in call.params if p.name == arg)
            pre_handles.append(f"  {ctype} {arg}[1] = {{ {HANDLE_F2C[ctype]}(*{arg}_f) }};")
            used.discard(arg)
    before, after = fortran_locals(call, used)
    fwd_args = [f"{p.name}_f" for p in call.params]
    if status_arg:
        out.append("  MPI_Fint prof_fst_local[pp::kFortranStatusSize];")
        out.append(
            f"  MPI_Fint *prof_fst = ({status_arg}_f == MPI_F_STATUS_IGNORE) ? prof_fst_local"
            f" : {status_arg}_f;"
        )
        fwd_args = ["prof_fst" if x == f"{status_arg}_f" else x for x in fwd_args]
    if complete:
        form, args = _parse_fn(complete)
        if form == "one":
            req, st = args
            out.append(f"  MPI_Request prof_creq = PMPI_Request_f2c(*{req}_f);")
            out.append("  pp::Snapshot prof_snap(1, &prof_creq);")
            out.append("  MPI_Fint prof_fst_local[pp::kFortranStatusSize];")
            out.append(
                f"  MPI_Fint *prof_fst = ({st}_f == MPI_F_STATUS_IGNORE && prof_snap.needs_status())"
                f" ? prof_fst_local : {st}_f;"
            )
            fwd_args = ["prof_fst" if x == f"{st}_f" else x for x in fwd_args]
        elif form in ("all", "some", "any"):
            n, reqs = args[0], args[1]
            sts = args[-1]
            out.append(f"  pp::FortranRequests prof_creqs(*{n}_f, {reqs}_f);")
            out.append(f"  pp::Snapshot prof_snap(*{n}_f, prof_creqs.data());")
            ignore = "MPI_F_STATUS_IGNORE" if form == "any" else "MPI_F_STATUSES_IGNORE"
            count = "1" if form == "any" else f"*{n}_f"
            out.append(
                f"  pp::FortranStatuses prof_fsts({count}, {sts}_f == {ignore} ? nullptr :"
                f" {sts}_f, prof_snap.needs_status(), {ignore});"
            )
            fwd_args = ["prof_fsts.data()" if x == f"{sts}_f" else x for x in fwd_args]
    if "start" in a:
        form, args = _parse_fn(a["start"])
        if form == "all":
            out.append(f"  pp::FortranRequests prof_creqs(*{args[0]}_f, {args[1]}_f);")
    out += pre_handles
    for line in before:
        out.append("  " + line)
    fwd = ", ".join(fwd_args + ["ierr"])
    out.append(f"  auto prof_real = [&]() {{ prof_fn({fwd}); return static_cast<int>(*ierr); }};")
    # The shared body, adapted: completions use the converted C requests and statuses.
    lines = body(call, fortran=True)
    adapted: list[str] = []
    for line in lines:
        if line.startswith("const uint64_t prof_t1"):
            adapted.append(line)
            for conv in after:
                adapted.append(conv)
            continue
        adapted.append(line)
    if complete:
        form, _ = _parse_fn(complete)
        fixed = []
        for line in adapted:
            if form == "one":
                line = line.replace(
                    "prof_snap.complete(0, prof_st)", "prof_snap.complete(0, prof_cstatus(prof_fst))"
                )
            else:
                line = line.replace("prof_st ? prof_st + prof_i : nullptr", "prof_fsts.c(prof_i)")
                line = line.replace("prof_snap.complete_all(prof_st)", "prof_snap.complete_all_f(prof_fsts)")
                line = line.replace(", prof_st);", ", prof_fsts.c(0));")
            fixed.append(line)
        adapted = fixed
        if form == "one":
            out.append(
                "  auto prof_cstatus = [&](MPI_Fint *f) { static thread_local MPI_Status s;"
                " PMPI_Status_f2c(f, &s); return &s; };"
            )
    if "start" in a:
        form, args = _parse_fn(a["start"])
        fixed = []
        for line in adapted:
            if form == "one":
                line = line.replace(
                    f"pp::request_started(*{args[0]})",
                    f"pp::request_started(PMPI_Request_f2c(*{args[0]}_f))",
                )
            else:
                line = line.replace(
                    f"pp::request_started({args[1]}[prof_i])",
                    "pp::request_started(prof_creqs.data()[prof_i])",
                )
            fixed.append(line)
        adapted = fixed
    out += ["  " + line for line in adapted]
    out.append("  pp::leave();")
    out.append("}")
    for symbol in (lower + "_", lower + "__", lower, call.name.upper()):
        out.append(
            f"extern \"C\" PETACOMM_PROF_EXPORT void {symbol}({fparams}) "
            f"{{ static void *cache; {impl}(&cache, \"{symbol}\", {fargs}); }}"
        )
    out.append("")
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
    except (OSError, SpecError) as err:
        print(f"generate_wrappers: error: {err}", file=sys.stderr)
        return 1

    generated: list[Call] = []
    missing: list[str] = []
    ids: list[tuple[str, str, str]] = []  # (ident, name, kind)
    for call in calls:
        call.ident = "k" + re.sub(r"\W", "_", call.name)
        if not call.wrapped:
            ids.append((call.ident, call.name, call.kind))
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
        ids.append((call.ident, call.name, call.kind))
        if "persistent" in call.flags:
            ids.append((call.ident + "_start", call.name + ":start", call.kind))

    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    hpp = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        "#pragma once",
        "namespace petacomm::prof {",
        "enum CallId : int {",
    ]
    hpp += [f"  {ident} = {i}," for i, (ident, _, _) in enumerate(ids)]
    hpp += [f"  kNumCalls = {len(ids)}", "};", "extern const char *const kCallNames[];"]
    hpp += ["extern const char *const kCallKinds[];", "}  // namespace petacomm::prof", ""]
    cpp = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        '#include "prof_calls.hpp"',
        "namespace petacomm::prof {",
        "const char *const kCallNames[] = {",
    ]
    cpp += [f'  "{name}",' for _, name, _ in ids]
    cpp += ["};", "const char *const kCallKinds[] = {"]
    cpp += [f'  "{kind}",' for _, _, kind in ids]
    cpp += ["};", "}  // namespace petacomm::prof", ""]

    head = [
        "// Generated by generate_wrappers.py from mpi_calls.spec: do not edit.",
        '#include "runtime.hpp"',
        "namespace pp = petacomm::prof;",
        "using namespace petacomm::prof; // the spec's expressions call the helpers unqualified",
        "",
    ]
    c_text = head + [c_wrapper(call) for call in generated]
    f_text = head + ['#include "fortran.hpp"', ""]
    f_text += [fortran_wrapper(call) for call in generated]
    _write(out / "prof_calls.hpp", "\n".join(hpp))
    _write(out / "prof_calls.cpp", "\n".join(cpp))
    _write(out / "prof_wrappers_c.cpp", "\n".join(c_text))
    _write(out / "prof_wrappers_f.cpp", "\n".join(f_text))
    summary = [f"generated {len(generated)} wrappers"] + [f"  {c.name}" for c in generated]
    summary += [f"not declared by this mpi.h: {len(missing)}"] + [f"  {m}" for m in missing]
    _write(out / "prof_calls.txt", "\n".join(summary) + "\n")
    return 0


def _write(path: Path, text: str) -> None:
    """Writes only when the content changed (keeps rebuilds incremental)."""
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
