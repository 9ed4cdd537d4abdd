"""perf/ncu_source_share.py on a made-up kernel: three instructions whose
inline chains and samples are known, so every share is known exactly."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "perf" / "ncu_source_share.py"
spec = importlib.util.spec_from_file_location("ncu_source_share", SCRIPT)
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

DISASM = """\
//--------------------- .text._Z5otherv --------------------------
.text._Z5otherv:
	//## File "/src/kpl/impl/a.hpp", line 1
        /*0000*/                   NOP ;
//--------------------- .text._Z6kernelI5SolveEvT_ --------------------------
.text._Z6kernelI5SolveEvT_:
	//## File "/kokkos/Kokkos_Team.hpp", line 50 inlined at "/src/kpl/impl/step.hpp", line 7
	//## File "/src/kpl/impl/step.hpp", line 7 inlined at "/src/kpl/impl/solve.hpp", line 30
	//## File "/src/kpl/impl/solve.hpp", line 30 inlined at "/kokkos/Kokkos_Launch.hpp", line 95
	//## File "/kokkos/Kokkos_Launch.hpp", line 95
        /*0000*/                   LDG.E R2, [R4.64] ;
	//## File "/src/kpl/impl/solve.hpp", line 31 inlined at "/kokkos/Kokkos_Launch.hpp", line 95
	//## File "/kokkos/Kokkos_Launch.hpp", line 95
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0020*/                   FFMA R1, R2, R3, R1 ;
//--------------------- .text._Z5thirdv --------------------------
"""

SASS = [
    ["Kernel Name", "kernel<Solve>(Solve)"],
    ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"],
    ["0x7f0000000100", "LDG.E R2, [R4.64] ;", "60", "10"],
    ["0x7f0000000110", "BAR.SYNC.DEFER_BLOCKING 0x0 ;", "30", "10"],
    ["0x7f0000000120", "FFMA R1, R2, R3, R1 ;", "10", "80"],
]


def test_chains_name_every_frame_innermost_first():
    chains = tool.inline_chains(DISASM.split("\n"), "kernelI5Solve")
    assert chains[0x00] == [("Kokkos_Team.hpp", 50), ("step.hpp", 7), ("solve.hpp", 30),
                            ("Kokkos_Launch.hpp", 95)]
    # An instruction without its own line table keeps the last one.
    assert chains[0x10] == chains[0x20] == [("solve.hpp", 31), ("Kokkos_Launch.hpp", 95)]
    assert set(chains) == {0x00, 0x10, 0x20}  # nothing from the other functions


def test_innermost_project_frame_takes_the_shares():
    chains = tool.inline_chains(DISASM.split("\n"), "kernelI5Solve")
    rows = tool.instruction_rows(SASS)
    assert rows == [(0x00, 60, 10), (0x10, 30, 10), (0x20, 10, 80)]
    got = tool.shares(chains, rows, tool.re.compile(r"^(?!Kokkos)"))
    assert got == [("step.hpp:7", 0.6, 0.1), ("solve.hpp:31", 0.4, 0.9)]


def test_call_sites_in_one_file():
    chains = tool.inline_chains(DISASM.split("\n"), "kernelI5Solve")
    got = tool.shares(chains, tool.instruction_rows(SASS), tool.re.compile("."), "solve.hpp")
    assert got == [("solve.hpp:30 -> step.hpp:7", 0.6, 0.1),
                   ("solve.hpp:31 -> (own line)", 0.4, 0.9)]


def test_unknown_kernel_is_an_error():
    with pytest.raises(ValueError, match="nokernel"):
        tool.inline_chains(DISASM.split("\n"), "nokernel")


def test_command_line(tmp_path):
    (tmp_path / "d.txt").write_text(DISASM)
    (tmp_path / "s.csv").write_text("\n".join(",".join(f'"{c}"' for c in row) for row in SASS))
    run = subprocess.run([sys.executable, str(SCRIPT), "--disasm", str(tmp_path / "d.txt"),
                          "--sass", str(tmp_path / "s.csv"), "--kernel", "kernelI5Solve"],
                         capture_output=True, text=True, check=True)
    lines = run.stdout.splitlines()
    assert lines[1].split() == ["60.0%", "10.0%", "step.hpp:7"]
    assert lines[2].split() == ["40.0%", "90.0%", "solve.hpp:31"]
