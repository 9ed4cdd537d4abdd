// The df -> lambda step's generalised eigenproblem K v = d (G + 1e-9 K) v of
// one base-learner (kpl/gam_penalty.hpp): kpl's own solver (Cholesky, the
// squared singular values of L^-1 F with K = F F^T by a pivoted QR and
// one-sided Jacobi) against LAPACK's dsygvd through OpenBLAS, on the
// G = B^T W B of a cubic B-spline basis of 2000 uniform rows, k = 24, second
// differences: the GAM's default learner.
//
// Besides the time, each run reports the low 24 bits of the mantissa of the
// smallest non-null eigenvalue (`low_bits`), exactly, and of the lambda that
// gives df 4 (`lambda_low_bits`): run it under other OPENBLAS_NUM_THREADS or
// OPENBLAS_CORETYPE values to see whether a solver's bits depend on them.
// kpl needs them not to: the GAM's lambda must have the same bits on every
// process of a group and for any thread count (issue "MPI scale-out").
#include <kpl/bspline.hpp>
#include <kpl/gam.hpp>
#include <kpl/gam_penalty.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#ifdef KPL_PERF_HAVE_LAPACK
extern "C" void dsygvd_(const int* itype, const char* jobz, const char* uplo, const int* n,
                        double* a, const int* lda, double* b, const int* ldb, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info);
#endif

namespace {

constexpr int basis_size = 24;

struct Problem {
  std::vector<double> gram, penalty;
};

// G = B^T W B of a cubic learner of k functions at 2000 uniform x with
// weights in [0.5, 1.5): the matrices a fit hands to the eigensolver.
Problem make_problem(int k) {
  Problem made;
  made.gram.assign(k * k, 0.0);
  made.penalty = kpl::difference_penalty(k, 2);
  kpl::BsplineMesh mesh;
  mesh.basis_size = k;
  std::mt19937_64 engine(5);
  double values[kpl::bspline_max_degree + 1];
  for (int row = 0; row < 2000; ++row) {
    const double x = double(engine() >> 11) * 0x1.0p-53;
    const double weight = 0.5 + double(engine() >> 11) * 0x1.0p-53;
    const int first = kpl::bspline_row(mesh, x, values);
    for (int a = 0; a <= mesh.degree; ++a)
      for (int b = 0; b <= mesh.degree; ++b)
        made.gram[(first + a) * k + first + b] += weight * values[a] * values[b];
  }
  return made;
}

// The default learner (k = 24).
const Problem& learner_problem() {
  static const Problem problem = make_problem(basis_size);
  return problem;
}

double low_bits(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return double(bits & 0xffffff);
}

// The smallest eigenvalue of the penalised part (the null space's are ~0)
// and the lambda of df 4 (mboost's trace(2S - S^T S)).
void report(benchmark::State& state, const std::vector<double>& descending) {
  state.counters["low_bits"] = low_bits(descending[basis_size - 3]);
  double low = 0, high = 1;
  const auto df = [&](double lambda) {
    return kpl::degrees_of_freedom(descending, lambda, kpl::DfDefinition::trace_2s_sts);
  };
  while (df(high) > 4) high *= 2;
  for (int step = 0; step < 200 && high - low > 1e-16 * high; ++step)
    (df(0.5 * (low + high)) > 4 ? low : high) = 0.5 * (low + high);
  state.counters["lambda_low_bits"] = low_bits(0.5 * (low + high));
}

void BM_LearnerEigenvalues_Own(benchmark::State& state) {
  const auto& problem = learner_problem();
  std::vector<double> eigenvalues;
  for (auto _ : state) {
    eigenvalues = kpl::demmler_reinsch_eigenvalues(problem.gram, problem.penalty, basis_size);
    benchmark::DoNotOptimize(eigenvalues.data());
  }
  report(state, eigenvalues);
}
BENCHMARK(BM_LearnerEigenvalues_Own)->Unit(benchmark::kMicrosecond);

#ifdef KPL_PERF_HAVE_LAPACK
// dsygvd(itype 1, eigenvalues only): A = K, B = G + 1e-9 K, as mboost's ridge.
std::vector<double> lapack_eigenvalues(const Problem& problem) {
  std::vector<double> a(problem.penalty), b(problem.gram), w(basis_size);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] += 1e-9 * problem.penalty[i];
  const int itype = 1, n = basis_size, lwork = 2 * basis_size + 1, liwork = 1;
  std::vector<double> work(lwork);
  std::vector<int> iwork(liwork);
  int info = 0;
  dsygvd_(&itype, "N", "U", &n, a.data(), &n, b.data(), &n, w.data(), work.data(), &lwork,
          iwork.data(), &liwork, &info);
  if (info != 0) w.assign(basis_size, std::nan(""));
  for (double& value : w) value = std::fabs(value);
  std::sort(w.begin(), w.end(), std::greater<>());
  return w;
}

void BM_LearnerEigenvalues_Lapack(benchmark::State& state) {
  const auto& problem = learner_problem();
  std::vector<double> eigenvalues;
  for (auto _ : state) {
    eigenvalues = lapack_eigenvalues(problem);
    benchmark::DoNotOptimize(eigenvalues.data());
  }
  report(state, eigenvalues);
}
BENCHMARK(BM_LearnerEigenvalues_Lapack)->Unit(benchmark::kMicrosecond);
#endif

// The whole of one learner's penalty as a fit computes it (kpl::penalise_learner:
// rank, eigenvalues, lambda of df 4, M and R) for basis sizes 24 and 32 (the
// GPU fits' benchmarks use 32). `lambda_low_bits` as above.
void BM_PenaliseLearner(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const Problem problem = make_problem(k);
  kpl::LearnerPenalty penalty;
  for (auto _ : state) {
    penalty = kpl::penalise_learner(problem.gram, problem.penalty, k, 4.0,
                                    kpl::DfDefinition::trace_2s_sts, "benchmark", 2);
    benchmark::DoNotOptimize(penalty.inverse.data());
  }
  state.counters["lambda_low_bits"] = low_bits(penalty.lambda);
}
BENCHMARK(BM_PenaliseLearner)->ArgName("k")->Arg(24)->Arg(32)->Unit(benchmark::kMicrosecond);

// Every learner's penalty in a fit of p learners of k = 32 (the GPU fits'
// benchmarks' shape), on the host's threads as a fit on CPUs computes them
// (impl::gam_learner_penalties: the fits' `lambda_s` without the offset and
// the copy of M and R to the device). `threads`: the host's.
void BM_LearnerPenalties(benchmark::State& state) {
  constexpr int k = 32;
  const std::int64_t learners = state.range(0), block = std::int64_t(k) * k;
  const Problem problem = make_problem(k);
  std::vector<double> grams(learners * block);
  for (std::int64_t j = 0; j < learners; ++j)
    std::copy(problem.gram.begin(), problem.gram.end(), grams.begin() + j * block);
  const auto host_gram = [&](std::int64_t e) { return grams[e]; };
  kpl::GamOptions options;
  options.basis_size = k;
  for (auto _ : state) {
    const auto penalties = kpl::impl::gam_learner_penalties(host_gram, options, learners);
    benchmark::DoNotOptimize(penalties.data());
  }
  state.counters["threads"] =
      std::min<double>(learners, Kokkos::DefaultHostExecutionSpace().concurrency() > 1
                                     ? Kokkos::DefaultHostExecutionSpace().concurrency()
                                     : kpl::impl::gam_usable_cpus());
}
BENCHMARK(BM_LearnerPenalties)->ArgName("p")->Arg(100)->Unit(benchmark::kMicrosecond);

// The same p learners by one team each (kpl/impl/gam_penalise_on_device.hpp)
// on the default execution space: on a GPU, what a fit runs instead of the
// host's search, from G in device memory to M and R there.
void BM_LearnerPenaltiesByTeams(benchmark::State& state) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  constexpr int k = 32;
  const std::int64_t learners = state.range(0), block = std::int64_t(k) * k;
  const Problem problem = make_problem(k);
  Kokkos::View<double*, Kokkos::HostSpace> host_gram("gram", learners * block);
  for (std::int64_t j = 0; j < learners; ++j)
    std::copy(problem.gram.begin(), problem.gram.end(), host_gram.data() + j * block);
  const auto gram = Kokkos::create_mirror_view_and_copy(Memory(), host_gram);
  kpl::impl::GamPenaltyOutputs<Memory> outputs;
  outputs.lambda = Kokkos::View<double*, Memory>("lambda", learners);
  outputs.df = Kokkos::View<double*, Memory>("df", learners);
  outputs.status = Kokkos::View<int*, Memory>("status", learners);
  outputs.inverse = Kokkos::View<double*, Memory>("inverse", learners * block);
  outputs.reduction = Kokkos::View<double*, Memory>("reduction", learners * block);
  const kpl::GamOptions options;
  const auto inputs =
      kpl::impl::gam_penalty_inputs(k, options.differences, options.df, options.df_definition);
  const Space space;
  for (auto _ : state) {
    kpl::impl::gam_penalties_on_device(space, inputs, gram, outputs);
    space.fence();
  }
  const auto status = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outputs.status);
  state.counters["left_to_the_host"] = double(
      std::count(status.data(), status.data() + learners, kpl::impl::gam_penalty_for_the_host));
}
BENCHMARK(BM_LearnerPenaltiesByTeams)
    ->ArgName("p")
    ->Arg(100)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
