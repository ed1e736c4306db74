"""The description language, pattern builders and measured-matrix import."""

import re

import numpy as np
import pytest

from petacomm.topology import pattern as pat
from petacomm.topology.measured import load_matrix_file, read_profile_log
from petacomm.topology.pattern_language import PatternSyntaxError, parse_pattern
from petacomm.units import (
    format_bytes,
    format_exact_size,
    format_seconds,
    is_whole_number,
    parse_size,
)


def pairs(phase):
    return sorted(zip(phase.src.tolist(), phase.dst.tolist(), strict=True))


def test_sizes():
    assert parse_size("1MiB") == 2**20
    assert parse_size("64KiB") == 65536
    assert parse_size("1.5MB") == 1.5e6
    assert parse_size("512") == 512 and parse_size("8B") == 8
    assert format_bytes(3 * 2**20) == "3.00 MiB"
    with pytest.raises(ValueError, match="unknown size unit 'MiX'"):
        parse_size("1MiX")


def test_every_size_unit():
    # Binary prefixes (and bare K, M, G, T) are powers of 1024, decimal ones of 1000, in any
    # letter case; written out rather than computed.
    expected = {
        "1KiB": 1024, "1K": 1024, "1kB": 1000, "1KB": 1000,
        "1MiB": 1048576, "1m": 1048576, "1MB": 1000000,
        "1GiB": 1073741824, "1G": 1073741824, "1GB": 1000000000,
        "1TiB": 1099511627776, "2T": 2199023255552, "1TB": 1000000000000, "1tb": 1000000000000,
        "1e3": 1000, "2.5e1KiB": 25600,
    }  # fmt: skip
    assert {text: parse_size(text) for text in expected} == expected


def test_exact_sizes_name_the_largest_unit_they_are_a_whole_number_of():
    expected = {
        1023: "1023 B", 1024: "1 KiB", 1536: "1536 B", 3072: "3 KiB", 1 << 20: "1 MiB",
        (1 << 20) + 1024: "1025 KiB", 3 << 20: "3 MiB", 1 << 30: "1 GiB", 5 << 30: "5 GiB",
        1 << 40: "1024 GiB", 0: "0 B",
    }  # fmt: skip
    assert {n: format_exact_size(n) for n in expected} == expected


def test_byte_counts_switch_units_at_1024():
    expected = {
        0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", -2048: "-2.00 KiB", 1536: "1.50 KiB",
        1 << 20: "1.00 MiB", 5 << 30: "5.00 GiB",
        3 << 40: "3.00 TiB", 1 << 50: "1024.00 TiB",
    }  # fmt: skip
    assert {n: format_bytes(n) for n in expected} == expected


def test_durations_switch_units_at_each_thousand():
    expected = {
        2.5: "2.500 s", 1.0: "1.000 s", 0.999: "999.000 ms", 1e-3: "1.000 ms",
        2e-6: "2.000 us", 1e-6: "1.000 us", 5e-9: "5.000 ns", 0.0: "0.000 ns",
        -0.25: "-250.000 ms",
    }  # fmt: skip
    assert {t: format_seconds(t) for t in expected} == expected


def test_whole_numbers_are_ascii_digits_only():
    for text, whole in [("12", True), ("0", True), ("", False), ("1.0", False), ("-1", False),
                        ("\u00b2", False), ("\u0664", False), ("1\u0664", False)]:  # fmt: skip
        assert is_whole_number(text) is whole, text


def test_grid_rank_orders():
    row = pat.LogicalGrid((2, 3))
    col = pat.LogicalGrid((2, 3), order="column")
    assert row.coordinates(1).tolist() == [0, 1]  # last coordinate fastest
    assert col.coordinates(1).tolist() == [1, 0]  # first coordinate fastest
    assert row.ranks([[1, 2]]).tolist() == [5] and col.ranks([[1, 2]]).tolist() == [5]


def test_star_and_box_neighbour_counts():
    # 128x128 open grid: star = 4*128*128 - 4*128 boundary losses; box adds diagonals.
    star = parse_pattern("grid2d 128x128 star 1MiB")
    assert star.phases[0].num_messages == 4 * 128 * 128 - 4 * 128
    box = parse_pattern("grid2d 128x128 box 1MiB")
    assert box.phases[0].num_messages == 8 * 128 * 128 - 6 * 128 * 2 + 4
    periodic = parse_pattern("grid3d 4x4x4 periodic box 1KiB")
    assert periodic.phases[0].num_messages == 26 * 64
    assert periodic.total_bytes == 26 * 64 * 1024
    line = parse_pattern("grid1d 5 star 8")
    assert pairs(line.phases[0]) == [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (3, 4), (4, 3)]


def test_star_neighbours_of_one_rank():
    p = parse_pattern("grid2d 3x4 periodic column-major star 1")
    grid = p.grid
    ph = p.phases[0]
    r = int(grid.ranks([[1, 1]])[0])
    got = sorted(grid.coordinates(ph.dst[ph.src == r]).tolist())
    assert got == [[0, 1], [1, 0], [1, 2], [2, 1]]


def test_dimension_wise_alltoall_and_diagonals():
    p = parse_pattern("grid2d 3x4 rows 1KiB")
    ph = p.phases[0]
    assert ph.num_messages == 3 * 4 * 3
    assert np.all(ph.src // 4 == ph.dst // 4)  # same row (row-major: rank // 4)
    p = parse_pattern("grid 2x3x4 plane 0,2 8")
    ph = p.phases[0]
    grid = p.grid
    cs, cd = grid.coordinates(ph.src), grid.coordinates(ph.dst)
    assert np.all(cs[:, 1] == cd[:, 1]) and ph.num_messages == 3 * 8 * 7
    p = parse_pattern("grid 4x4 diagonals 8")
    cs, cd = p.grid.coordinates(p.phases[0].src), p.grid.coordinates(p.phases[0].dst)
    assert np.all(cs[:, 1] - cs[:, 0] == cd[:, 1] - cd[:, 0])
    # Diagonals of lengths 1,2,3,4,3,2,1 -> sum k(k-1) messages.
    assert p.phases[0].num_messages == 2 * (0 + 2 + 6) + 12
    p = parse_pattern("grid 4x4 periodic antidiagonals 8")
    cs, cd = p.grid.coordinates(p.phases[0].src), p.grid.coordinates(p.phases[0].dst)
    assert np.all((cs.sum(axis=1) - cd.sum(axis=1)) % 4 == 0)
    assert p.phases[0].num_messages == 4 * 4 * 3


def test_alltoall_ring_offsets_and_phases():
    p = parse_pattern(
        "# two phases\nranks 6\nphase exchange x3\n  alltoall 1KiB\nphase shift\n  ring 2 both"
    )
    assert [(ph.name, ph.repeat, ph.num_messages) for ph in p.phases] == [
        ("exchange", 3, 30),
        ("shift", 1, 12),
    ]
    assert p.total_bytes == 3 * 30 * 1024 + 12 * 2
    p = parse_pattern("grid 4x4 periodic offsets (2,0) (0,-1) 64KiB")
    assert p.phases[0].num_messages == 32
    m = p.matrix()
    assert m[0, 8] == 65536 and m[0, 3] == 65536


@pytest.mark.parametrize(
    "text, line, column, expected",
    [
        ("grid2d 128x128 box 1MiX", 1, 20, "a message size"),
        ("grid2d 128 box 1MiB", 1, 8, "2 dimensions for grid2d"),
        ("box 1MiB", 1, 1, "a 'grid' statement before 'box'"),
        ("grid 4x4\nstar", 2, 5, "a message size"),
        ("grid 4x4 wobble", 1, 10, "a grid option"),
        ("grid 4x4\n  line 3 8", 2, 8, "an axis in 0..1"),
        ("grid 4x4x4x4 star 8", 1, 14, "needs 1 or 2 or 3 dimensions"),
        ("ring 8", 1, 1, "a 'grid' or 'ranks' statement"),
        ("grid 2x2\nphase empty\nphase full\nstar 1", 2, 1, "traffic statements in phase"),
        ("grid 4x4 offsets (1,0,0) 8", 1, 18, "an offset with 2 component(s)"),
        ("grid 4x4; ranks 7", 1, 17, "16 ranks"),
        ("", 1, 1, "at least one traffic statement"),
        ("grid 4x4 periodic=1 star 8", 1, 10, "periodic= with 2"),
        # Numbers no int64 or float holds: refused where written, not by an OverflowError
        # (320 digits), Python's 4,300-digit limit, or a wrapped offset (1 message of 3).
        ("ranks 4; phase a x" + "9" * 320 + "; ring 8", 1, 18, "x999999999999999999"),
        ("ranks " + "9" * 5000 + "; ring 8", 1, 7, "a positive rank count below 10^18"),
        ("grid2d 4x" + "9" * 5000 + " box 8", 1, 8, "integers from 1 to 10^18 - 1"),
        ('ranks 4\nmatrix "m.csv', 2, 8, "a closing quote"),  # it opened 'm.cs'
        ('ranks 4\nmatrix "', 2, 8, "a closing quote"),
        ("grid 3 periodic; offsets (9223372036854775807) 8", 1, 26, "from -2147483647"),
    ],
)
def test_syntax_errors_give_line_column_expected(text, line, column, expected):
    with pytest.raises(PatternSyntaxError) as err:
        parse_pattern(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert expected in err.value.expected
    assert str(err.value).startswith(f"pattern line {line}, column {column}: expected")


def test_phases_fold_with_their_repeat_counts():
    # Phase A (x3): 0->1 10 B, 1->2 20 B. Phase B (x2): 0->1 5 B, 2->2 7 B (to itself).
    a = pat.Phase("A", [0, 1], [1, 2], [10, 20], repeat=3)
    b = pat.Phase("B", [0, 2], [1, 2], [5, 7], repeat=2)
    p = pat.CommPattern(3, [a, b])
    assert p.num_messages == 2 * 3 + 2 * 2
    want = np.zeros((3, 3))
    want[0, 1], want[1, 2], want[2, 2] = 3 * 10 + 2 * 5, 3 * 20, 2 * 7
    assert np.array_equal(p.matrix(), want)
    src, dst, nb = p.edges()  # self-messages dropped, pairs summed over the phases
    assert (src.tolist(), dst.tolist(), nb.tolist()) == ([0, 1], [1, 2], [40.0, 60.0])
    # The mapping optimisers' graph: both directions of a pair summed, symmetric.
    from petacomm.topology.mapping_search import communication_graph

    graph = communication_graph(p).toarray()
    assert np.array_equal(graph, [[0, 40, 0], [40, 0, 60], [0, 60, 0]])


def test_default_ranks_for_ring():
    p = parse_pattern("ring 1KiB", default_ranks=5)
    assert p.nranks == 5 and p.phases[0].num_messages == 5


def test_matrix_csv_dense_and_triplets(tmp_path):
    dense = tmp_path / "m.csv"
    dense.write_text("# bytes\n0,10,0\n5,0,0\n0,0,0\n")
    p = load_matrix_file(dense)
    assert p.nranks == 3 and pairs(p.phases[0]) == [(0, 1), (1, 0)]
    assert p.matrix()[0, 1] == 10
    trip = tmp_path / "t.csv"
    trip.write_text("rank,peer,bytes\n0,3,100\n3,0,50\n")
    p = load_matrix_file(trip)
    assert p.nranks == 4 and p.matrix()[3, 0] == 50
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1\n2,x\n")
    with pytest.raises(ValueError, match="line 2, column 2: expected a number, got 'x'"):
        load_matrix_file(bad)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("0,1\n2\n")
    with pytest.raises(ValueError, match="line 2: expected 2 values"):
        load_matrix_file(ragged)
    # A spreadsheet's export: a UTF-8 byte order mark and CRLF lines (the mark was read as
    # part of the first column's name, which then matched no source column).
    exported = tmp_path / "exported.csv"
    exported.write_bytes(b"\xef\xbb\xbfsrc,dst,bytes\r\n0,2,100\r\n2,0,40\r\n")
    p = load_matrix_file(exported)
    assert p.nranks == 3 and p.matrix()[0, 2] == 100 and p.matrix()[2, 0] == 40


def test_matrix_npy_and_language_import(tmp_path):
    m = np.zeros((4, 4))
    m[0, 2] = 7
    np.save(tmp_path / "m.npy", m)
    assert load_matrix_file(tmp_path / "m.npy").matrix()[0, 2] == 7
    p = parse_pattern("phase measured\n  matrix m.npy\nphase again\n  ring 1", base_dir=tmp_path)
    assert p.nranks == 4 and [ph.num_messages for ph in p.phases] == [1, 4]
    with pytest.raises(PatternSyntaxError, match="a readable matrix file"):
        parse_pattern("matrix nothere.csv", base_dir=tmp_path)


def test_a_npy_header_declaring_more_than_the_file_holds_is_refused_before_allocating(
    tmp_path, capsys
):
    # A header of 100000 x 100000 made np.load allocate 80 GB: "out of memory", no option.
    from numpy.lib import format as npy

    from petacomm.cli import main

    path = tmp_path / "huge.npy"
    with open(path, "wb") as out:
        header = {"descr": "<f8", "fortran_order": False, "shape": (100_000, 100_000)}
        npy.write_array_header_1_0(out, header)
        out.write(bytes(64))
    message = (
        f"{path}: the .npy header declares a 100000 x 100000 array of float64 (74.51 GiB) but "
        "the file holds 64 B of data (a truncated or damaged file)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        load_matrix_file(path)
    assert main(["map", "--network", "torus:4x4", "--matrix", str(path)]) == 2
    assert capsys.readouterr().err == f"petacomm map: error: --matrix: {message}\n"


@pytest.mark.parametrize(
    "text, column",
    [
        ("grid2d 4x4 line \u0661 1KiB", 17),  # Arabic-Indic one: read as axis 1
        ("grid2d 4x4 line \u00b2 1KiB", 17),  # superscript two: int()'s own words
        ("grid3d 2x2x4 plane 0,\u0661 1KiB", 20),
    ],
)
def test_axes_are_ascii_digits_only(text, column):
    with pytest.raises(
        PatternSyntaxError, match=f"^pattern line 1, column {column}: expected an axis"
    ):
        parse_pattern(text)
    assert parse_pattern(text.replace("\u0661", "1").replace("\u00b2", "1")).nranks > 0


def test_profile_log_errors(tmp_path):
    log = tmp_path / "log.json"
    log.write_text('{"schema": \n  "petacomm.profile",, }')
    with pytest.raises(ValueError, match="not JSON"):
        read_profile_log(log)
    with pytest.raises(ValueError, match="no such profile log"):
        read_profile_log(tmp_path / "absent.json")


def test_statements_of_a_phase_are_concatenated_in_order_with_their_orders_renumbered():
    # Worked by hand: three statements' messages, the second's ordered (message 1 after 0).
    parts = [
        pat.Phase("p", [0, 1, 2, 3], [1, 2, 3, 0], 8.0, 2),
        pat.Phase("p", [0, 1], [1, 2], 16.0, 2, after=([1], [0])),
        pat.Phase("p", [0, 1, 2, 3], [1, 2, 3, 0], 32.0, 2),
    ]
    whole = pat.Phase.concatenated(parts)
    assert whole.src.tolist() == [0, 1, 2, 3, 0, 1, 0, 1, 2, 3]
    assert whole.nbytes.tolist() == [8.0] * 4 + [16.0] * 2 + [32.0] * 4
    assert [a.tolist() for a in whole.after] == [[5], [4]]  # shifted past the first four
    assert (whole.name, whole.repeat) == ("p", 2)
    # Line and column of a token late in a long file (found by bisection now).
    many = "ranks 4\n" + "ring 1KiB\n" * 3000 + "ring 1KiB bogus\n"
    with pytest.raises(PatternSyntaxError, match="line 3002, column 11"):
        parse_pattern(many)
