"""The module's life with Kokkos and Python threads: the GIL released while
kpl computes, calls from several threads, Kokkos started once and finished
at exit (or never started), and what a forked child is told."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import kpl

RNG = np.random.default_rng(31)
A = RNG.standard_normal((200, 150))
B = RNG.standard_normal((64, 200))
# Enough systems that one solve lasts long enough to see other threads run
# during it on a fast, idle machine (B's 64 can finish too soon to tell).
B_LONG = RNG.standard_normal((512, 200))


def test_other_python_threads_run_while_kpl_computes():
    stamps, stop = [], threading.Event()

    def tick():  # needs the GIL for every stamp
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.002)

    ticker = threading.Thread(target=tick)
    ticker.start()
    while not stamps:
        time.sleep(0.001)
    start = time.perf_counter()
    kpl.nnls(A, B_LONG, gradient="residual")
    end = time.perf_counter()
    stop.set()
    ticker.join()
    quarter = (end - start) / 4
    assert end - start > 0.05, "the solve is too short to tell"
    # Holding the GIL, kpl would let the ticker in only before or after it.
    middle = [t for t in stamps if start + quarter < t < end - quarter]
    assert len(middle) >= 5, (len(middle), end - start)


def test_calls_from_several_threads_give_the_answers_of_one():
    problems = [(RNG.standard_normal((60, 40)), RNG.standard_normal((32, 60)))
                for _ in range(4)]
    alone = [kpl.nnls(a, b) for a, b in problems]
    together = [None] * len(problems)

    def solve(i):
        together[i] = kpl.nnls(*problems[i])

    threads = [threading.Thread(target=solve, args=(i,)) for i in range(len(problems))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for one, other in zip(alone, together):
        for field in one._fields:
            assert np.array_equal(getattr(one, field), getattr(other, field))


def python(script, **environment):
    """Runs a script in a fresh interpreter (this one's, this PYTHONPATH)."""
    env = dict(os.environ, **environment)
    process = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                             capture_output=True, timeout=120, env=env)
    return process.returncode, process.stdout.decode(), process.stderr.decode()


def test_import_alone_starts_nothing_and_exits_cleanly():
    status, out, err = python("""
        import kpl
        assert not kpl.initialized()
        print("imported")
    """)
    assert (status, out, err) == (0, "imported\n", "")


def test_kokkos_finishes_at_exit_after_work():
    status, out, err = python("""
        import numpy as np, kpl
        x = kpl.nnls(np.eye(3), np.ones(3)).x
        model = kpl.gam.fit(np.random.default_rng(1).uniform(size=(50, 2)), np.arange(50.0),
                            mstop=3)
        assert kpl.initialized()
        print(x.tolist())
    """)
    # Kokkos 3.4 prints to stderr about Views left at finalize; nothing may be.
    assert (status, out, err) == (0, "[1.0, 1.0, 1.0]\n", "")


def test_initialize_once_with_threads():
    status, out, err = python("""
        import kpl
        kpl.initialize(threads=1)
        print(kpl.info()["concurrency"])
        try:
            kpl.initialize()
        except RuntimeError as error:
            print(error)
    """)
    assert status == 0, err
    assert out == "1\nkpl.initialize: Kokkos is already initialised\n"


def test_a_forked_child_is_told_not_hung():
    status, out, err = python("""
        import os, numpy as np, kpl
        kpl.nnls(np.eye(2), np.ones(2))
        child = os.fork()
        if child == 0:
            try:
                kpl.nnls(np.eye(2), np.ones(2))
                os._exit(1)
            except RuntimeError as error:
                print(error, flush=True)
                os._exit(0)
        assert os.waitpid(child, 0)[1] == 0
    """)
    assert status == 0, err
    assert "forked process" in out and "'spawn'" in out


def test_kokkos_failing_to_start_is_an_exception_not_an_abort():
    # Kokkos refuses a malformed thread count in its environment variable; the
    # thread that tried to start it must be joined before the error is raised.
    status, out, err = python("""
        import kpl
        try:
            kpl.info()
        except RuntimeError as error:
            print("raised:", error)
    """, KOKKOS_NUM_THREADS="abc")
    assert status == 0, err
    assert out.startswith("raised:"), (out, err)
    assert "terminate" not in err
