"""--json under mpiexec: rank 0 alone prints the summary, so stdout holds one
JSON document whatever the number of ranks, on success and on failure (a
parse error every rank sees, a bad input of one rank that every rank agrees
on)."""
import json

import pytest

from conftest import INPUTS, no_partials, run_kpl, run_mpmd

NNLS = INPUTS / "nnls_gauss_small.h5"
DECONV = INPUTS / "deconv_lvis_small.h5"


def one_document(status, out, err, expected_status):
    assert status == expected_status, err
    assert out.count("\n") == 1 and out.endswith("\n"), f"stdout:\n{out}\nstderr:\n{err}"
    document = json.loads(out)
    assert document["exit_status"] == expected_status
    return document


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("command, input_path, items", [("nnls", NNLS, "systems"),
                                                        ("deconv", DECONV, "waveforms")])
def test_rank_0_alone_prints_the_summary(tmp_path, ranks, command, input_path, items):
    status, out, err = run_kpl(ranks, command, "--input", input_path, "--output",
                               tmp_path / "out.h5", "--json")
    document = one_document(status, out, err, 0)
    assert document["command"] == command and document["processes"] == ranks
    total = document[items]
    assert sum(document["status_counts"].values()) == total
    balance = document["balance"]
    assert balance["processes"] == ranks
    assert balance[items + "_min"] <= balance[items + "_max"] <= total
    no_partials(tmp_path)


def test_info_text_goes_to_stderr(tmp_path):
    status, out, err = run_kpl(2, "info", "--json", cwd=tmp_path)
    document = one_document(status, out, err, 0)
    assert document["processes"] == 2 and "enabled backends" in err


def test_parse_error_on_every_rank(tmp_path):
    status, out, err = run_kpl(2, "nnls", "--input", NNLS, "--output", tmp_path / "out.h5",
                               "--max-iterations", "0", "--json")
    document = one_document(status, out, err, 1)
    assert document["command"] == "nnls" and "--max-iterations" in document["error"]


def test_bad_input_of_one_rank(tmp_path):
    output = tmp_path / "out.h5"
    status, out, err = run_mpmd([["nnls", "--input", NNLS, "--output", output, "--json"],
                                 ["nnls", "--input", tmp_path / "absent.h5", "--output", output,
                                  "--json"]])
    document = one_document(status, out, err, 2)
    assert "absent.h5" in document["error"] and "(on process 1)" in document["error"]
    assert not output.exists()
    no_partials(tmp_path)
