"""--json on every command: stdout holds exactly one JSON object (one line) with
the command, its exit status and its summary, whatever the outcome (success,
not converged, bad input, usage error, a resource failure, a parse error);
the human summary stays on stderr; hostile file names still give valid JSON."""
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import (INPUTS, KPL, assert_no_output, describe, make_deconv, make_nnls, run_kpl,
                      write_h5)

STATUSES = ["converged", "max_iterations", "numerical_issue", "passive_set_full",
            "dependent_columns", "kkt_not_met"]


def summary(res, status, command):
    """The one JSON document on stdout, after checking the exit status, that
    stdout holds that one line alone, and the members every summary has."""
    rc, out, err = res
    assert rc == status, f"expected exit {status}, got {describe(res)}"
    assert out.endswith("\n") and out.count("\n") == 1, f"not one line on stdout: {describe(res)}"
    document = json.loads(out)
    assert isinstance(document, dict), out
    assert document["command"] == command
    assert document["exit_status"] == status
    if status == 0:
        assert "error" not in document, out
    else:
        # the error is the message on stderr, word for word
        assert document["error"] in err.splitlines(), f"error not on stderr: {describe(res)}"
    return document


def ran(document):
    """Members of a run that got as far as starting Kokkos."""
    assert document["processes"] == 1
    assert isinstance(document["execution_space"], str) and document["execution_space"]
    assert document["seconds"]["total"] >= 0


def statuses(document, total):
    counts = document["status_counts"]
    assert list(counts) == STATUSES
    assert all(isinstance(n, int) and n >= 0 for n in counts.values())
    assert sum(counts.values()) == total
    return counts


# ------------------------------------------------------------- successes

def test_info(run):
    document = summary(run("info", "--json"), 0, "info")
    ran(document)
    assert document["kpl_version"].count(".") == 2
    assert document["kokkos_version"] and document["kokkos_kernels_version"]
    assert "Serial" in document["enabled_backends"] or "OpenMP" in document["enabled_backends"]
    assert document["default_execution_space"] == document["execution_space"]
    assert document["default_concurrency"] >= 1 and document["host_concurrency"] >= 1
    assert isinstance(document["mpi_layer"], bool)
    assert document["device"] is None or document["device"]["memory_bytes"] > 0
    # what `kpl info` prints on stdout goes to stderr
    rc, out, err = run("info", "--json")
    assert "enabled backends" in err and "enabled backends" not in out


def test_info_without_json_is_unchanged(run):
    rc, out, err = run("info")
    assert rc == 0 and "enabled backends" in out and "{" not in out


def test_self_check(run, tmp_path):
    res = run("self-check", "--input", INPUTS / "self_check.h5", "--output", "report.h5", "--json")
    document = summary(res, 0, "self-check")
    ran(document)
    assert document["output"] == "report.h5" and (tmp_path / "report.h5").is_file()
    checks = document["checks"]
    assert len(checks) > 0 and all(check["passed"] for check in checks)
    assert document["passed"] == len(checks) and document["failed"] == 0
    assert {"backend", "check", "value", "reference", "relative_error", "tolerance"} <= set(checks[0])
    assert "self-check passed on every enabled backend" in res[2]


def test_self_check_failure_exits_4_with_the_error(run, tmp_path):
    shutil.copy(INPUTS / "self_check.h5", tmp_path / "wrong.h5")
    with h5py.File(tmp_path / "wrong.h5", "a") as f:
        f["vector"].attrs["sum"] = 1.0
    document = summary(run("self-check", "--input", "wrong.h5", "--json"), 4, "self-check")
    assert document["output"] is None
    assert document["failed"] >= 1 and document["passed"] + document["failed"] == len(document["checks"])
    assert document["error"].startswith("kpl: self-check: ") and "checks failed" in document["error"]


def test_nnls(run, h5, tmp_path):
    A, b = make_nnls(B=8, m=30, n=12)
    h5("in.h5", A=A, b=b)
    res = run("nnls", "--input", "in.h5", "--output", "out.h5", "--json")
    document = summary(res, 0, "nnls")
    ran(document)
    assert (document["input"], document["output"]) == ("in.h5", "out.h5")
    assert (document["systems"], document["rows"], document["columns"]) == (8, 30, 12)
    assert document["precision"] == "double"
    counts = statuses(document, 8)
    with h5py.File(tmp_path / "out.h5", "r") as f:
        written = np.bincount(f["status"][...], minlength=len(STATUSES))
    assert list(counts.values()) == list(written)
    assert document["seconds"]["solve"] >= 0
    assert document["systems_per_second"] is None or document["systems_per_second"] > 0
    assert document["balance"]["processes"] == 1
    assert document["balance"]["systems_min"] == document["balance"]["systems_max"] == 8
    # the human summary stays on stderr
    assert "kpl nnls: 8 systems of 30 x 12" in res[2]


def test_nnls_shipped_input_statuses_sum_to_systems(run):
    res = run("nnls", "--input", INPUTS / "nnls_gauss_small.h5", "--output", "x.h5",
              "--precision", "float", "--json")
    document = summary(res, 0, "nnls")
    assert document["systems"] == 16 and document["precision"] == "float"
    assert statuses(document, 16)["converged"] == 16


def test_deconv(run, h5):
    pulse, waveforms = make_deconv(W=20, m=64)
    h5("in.h5", pulse=pulse, waveforms=waveforms)
    document = summary(run("deconv", "--input", "in.h5", "--output", "out.h5", "--json"), 0, "deconv")
    ran(document)
    assert (document["input"], document["output"]) == ("in.h5", "out.h5")
    assert document["waveforms"] == 20 and document["chunks"] == 1
    assert document["waveforms_per_chunk"] == 20
    statuses(document, 20)
    assert document["seconds"]["deconvolution"] >= 0
    assert document["waveforms_per_second"] is None or document["waveforms_per_second"] > 0
    assert document["balance"]["waveforms_max"] == 20


def test_deconv_in_chunks(run):
    res = run("deconv", "--input", INPUTS / "deconv_lvis_small.h5", "--output", "out.h5",
              "--memory-budget", "2MiB", "--json")
    document = summary(res, 0, "deconv")
    chunks, per_chunk = document["chunks"], document["waveforms_per_chunk"]
    assert document["waveforms"] == 100 and chunks > 1 and (chunks - 1) * per_chunk < 100 <= chunks * per_chunk
    assert f"100 waveforms in {chunks} chunk(s) of up to {per_chunk} in" in res[2]
    assert statuses(document, 100)["converged"] == 100


def test_gam_fit_and_predict(run, h5, gam_data, tmp_path):
    h5("in.h5", X=gam_data["X"], y=gam_data["y"])
    res = run("gam", "fit", "--input", "in.h5", "--output", "model.h5", "--mstop", 25, "--json")
    document = summary(res, 0, "gam fit")
    ran(document)
    assert (document["input"], document["output"]) == ("in.h5", "model.h5")
    assert (document["observations"], document["covariates"], document["mstop"]) == (200, 3, 25)
    assert document["family"] == "gaussian" and document["mstop_chosen_by"] is None
    with h5py.File(tmp_path / "model.h5", "r") as f:
        assert document["final_risk"] == pytest.approx(f["risk"][-1], rel=1e-12)
    assert set(document["seconds"]) >= {"basis", "lambda_search", "boosting", "total"}

    res = run("gam", "predict", "--model", "model.h5", "--input", "in.h5", "--output", "p.h5",
              "--partial-effects", "--type", "response", "--json")
    document = summary(res, 0, "gam predict")
    ran(document)
    assert (document["model"], document["input"], document["output"]) == ("model.h5", "in.h5", "p.h5")
    assert document["rows"] == 200 and document["partial_effects"] is True
    assert document["type"] == "response"
    assert document["seconds"]["predict"] >= 0
    assert "kpl gam predict: 200 predictions" in res[2]


def test_gam_fit_cross_validation(run, h5, gam_data):
    h5("in.h5", X=gam_data["X"], y=gam_data["y"])
    res = run("gam", "fit", "--input", "in.h5", "--output", "model.h5", "--mstop", 20, "--cv", 3,
              "--json")
    document = summary(res, 0, "gam fit")
    assert document["mstop_chosen_by"] == {"method": "cross-validation", "folds": 3}
    assert 0 <= document["mstop"] <= 20 and document["seconds"]["mstop_choice"] > 0


def test_simulate_deconv(run, tmp_path):
    res = run("simulate", "deconv", "--waveforms", 7, "--samples", 60, "--seed", 5, "--noise", 0.5,
              "--output", "s.h5", "--json")
    document = summary(res, 0, "simulate deconv")
    ran(document)
    assert document["output"] == "s.h5" and (tmp_path / "s.h5").is_file()
    assert (document["waveforms"], document["samples"], document["seed"]) == (7, 60, 5)
    assert document["noise"] == 0.5


def test_simulate_gam(run):
    res = run("simulate", "gam", "--n", 30, "--p", 4, "--informative", 2, "--seed", 9,
              "--noise-variance", 0.25, "--output", "g.h5", "--json")
    document = summary(res, 0, "simulate gam")
    assert document["output"] == "g.h5"
    assert (document["observations"], document["covariates"], document["informative"]) == (30, 4, 2)
    assert (document["seed"], document["noise_variance"]) == (9, 0.25)


def test_help_goes_to_stderr(run):
    rc, out, err = res = run("nnls", "--help", "--json")
    document = summary(res, 0, "nnls")
    assert set(document) == {"command", "exit_status"}
    assert "--json" in err and "--max-iterations" in err


@pytest.mark.parametrize("command", [["info"], ["self-check"], ["nnls"], ["deconv"], ["gam", "fit"],
                                     ["gam", "predict"], ["simulate", "deconv"], ["simulate", "gam"]])
def test_every_command_offers_json(run, command):
    rc, out, err = run(*command, "--help")
    assert rc == 0 and "--json" in out and "JSON" in out


# -------------------------------------------------------------- failures

def test_bad_input_exits_2_naming_the_file(run, tmp_path):
    document = summary(run("nnls", "--input", "absent.h5", "--output", "out.h5", "--json"), 2, "nnls")
    ran(document)
    assert document["error"].startswith("kpl: bad input: ") and "absent.h5" in document["error"]
    assert_no_output(tmp_path / "out.h5")


def test_bad_input_of_every_command(run, h5, tmp_path):
    h5("empty.h5", nothing=np.zeros(3))
    for command in (["nnls"], ["deconv"], ["gam", "fit"]):
        document = summary(run(*command, "--input", "empty.h5", "--output", "out.h5", "--json"), 2,
                           " ".join(command))
        assert "empty.h5" in document["error"], document
    document = summary(run("gam", "predict", "--model", "empty.h5", "--input", "empty.h5",
                           "--output", "out.h5", "--json"), 2, "gam predict")
    assert "empty.h5" in document["error"]
    document = summary(run("self-check", "--input", "empty.h5", "--json"), 2, "self-check")
    assert "empty.h5" in document["error"]
    assert_no_output(tmp_path / "out.h5")


@pytest.mark.parametrize("argv, command, option", [
    (["nnls", "--input", "in.h5", "--output", "o.h5", "--max-iterations", "0"], "nnls", "--max-iterations"),
    (["deconv", "--input", "in.h5", "--output", "o.h5", "--tolerance", "nan"], "deconv", "--tolerance"),
    (["gam", "fit", "--input", "in.h5", "--output", "o.h5", "--basis-size", "1000"], "gam fit", "--basis-size"),
    (["simulate", "deconv", "--samples", "10", "--output", "o.h5"], "simulate deconv", "--samples"),
    (["nnls", "--input", "in.h5", "--output", "o.h5", "--bogus"], "nnls", "--bogus"),
    (["nnls", "--output", "o.h5"], "nnls", "--input"),
])
def test_out_of_range_option_exits_1(run, tmp_path, argv, command, option):
    """CLI11's own checks: the parse fails, and the JSON says so all the same."""
    document = summary(run(*argv, "--json"), 1, command)
    assert option in document["error"] and document["error"].startswith("kpl: ")
    assert_no_output(tmp_path / "o.h5")


@pytest.mark.parametrize("argv, command, regex", [
    (["simulate", "gam", "--p", "5", "--informative", "9", "--output", "o.h5"], "simulate gam",
     "--informative 9 exceeds --p 5"),
    (["deconv", "--input", str(INPUTS / "deconv_lvis_small.h5"), "--output", "o.h5",
      "--memory-budget", "1kb"], "deconv", "--memory-budget: 1024 bytes is below"),
    (["--kokkos-threads=0", "info"], "info", "--kokkos-threads"),
])
def test_usage_error_found_by_kpl_exits_1(run, tmp_path, argv, command, regex):
    document = summary(run(*argv, "--json"), 1, command)
    assert regex in document["error"]
    assert_no_output(tmp_path / "o.h5")


def test_json_with_a_value(run):
    summary(run("info", "--json=true"), 0, "info")
    document = summary(run("nnls", "--bogus", "--json=true"), 1, "nnls")
    assert "kpl: " in document["error"]
    rc, out, err = run("info", "--json=false")
    assert rc == 0 and "enabled backends" in out and "{" not in out


def test_unknown_commands_give_json(run):
    document = summary(run("frobnicate", "--json"), 1, None)
    assert "frobnicate" in document["error"]
    document = summary(run("gam", "frob", "--json"), 1, "gam")
    assert "unknown gam command 'frob'" in document["error"]


def test_strict_not_converged_exits_3(run, tmp_path):
    res = run("nnls", "--input", INPUTS / "nnls_gauss_small.h5", "--output", "out.h5",
              "--max-iterations", 2, "--strict", "--json")
    document = summary(res, 3, "nnls")
    counts = statuses(document, 16)
    assert counts["converged"] < 16
    assert document["error"] == (f"kpl nnls: --strict: {16 - counts['converged']} of 16 systems "
                                 "did not converge")
    assert document["output"] == "out.h5" and (tmp_path / "out.h5").is_file()


def test_strict_deconv_not_converged_exits_3(run):
    res = run("deconv", "--input", INPUTS / "deconv_lvis_small.h5", "--output", "out.h5",
              "--max-iterations", 1, "--strict", "--json")
    document = summary(res, 3, "deconv")
    assert statuses(document, 100)["converged"] < 100
    assert "waveforms did not converge" in document["error"]


def test_resource_failure_exits_4(run, tmp_path):
    res = run("simulate", "deconv", "--waveforms", "100000000000", "--samples", "1000",
              "--output", "out.h5", "--json")
    document = summary(res, 4, "simulate deconv")
    assert "bytes" in document["error"] and "are free" in document["error"]
    assert_no_output(tmp_path / "out.h5")


# ------------------------------------------------------- hostile names

HOSTILE = [b'q"uote.h5', b"back\\slash.h5", b"new\nline.h5", b"tab\tand\x01ctl.h5",
           b"caf\xc3\xa9 \xe2\x82\xac.h5", b"bad\xff\x80byte.h5", b"mixed\"\\\n\xfe\xc3\xa9.h5"]


def raw_run(args, cwd):
    """kpl with byte arguments; (status, stdout bytes, stderr bytes)."""
    p = subprocess.run([os.fsencode(KPL), *args], capture_output=True, timeout=60, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def expected_name(raw):
    # each byte that is not UTF-8 becomes U+FFFD (the names here have single ones)
    return raw.decode("utf-8", errors="replace")


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_output_name(tmp_path, name):
    rc, out, err = raw_run([b"simulate", b"gam", b"--n", b"20", b"--p", b"2", b"--informative", b"1",
                            b"--output", name, b"--json"], tmp_path)
    assert rc == 0, err
    assert os.path.isfile(os.path.join(os.fsencode(tmp_path), name))
    text = out.decode("utf-8")  # strict: the document is valid UTF-8
    assert text.count("\n") == 1 and text.endswith("\n")
    document = json.loads(text)
    assert document["output"] == expected_name(name)
    assert name in err  # stderr keeps the bytes


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_name_in_the_error(tmp_path, name):
    rc, out, err = raw_run([b"nnls", b"--input", name, b"--output", b"out.h5", b"--json"], tmp_path)
    assert rc == 2, err
    document = json.loads(out.decode("utf-8"))
    assert document["exit_status"] == 2
    assert expected_name(name) in document["error"]
    assert document["error"] == expected_name(err.rstrip(b"\n"))


def test_json_is_one_document_even_with_stale_partials(run, tmp_path):
    """Notes on stderr (a removed partial file) stay off stdout."""
    (tmp_path / "out.h5.partial-999999").write_bytes(b"left by a killed run")
    res = run("simulate", "gam", "--n", 20, "--p", 2, "--informative", 1, "--output", "out.h5",
              "--json")
    summary(res, 0, "simulate gam")
    assert "removed" in res[2]
